//! The Rust that picks by layout, made of every group's `layout` lines:
//! `Layout` itself, the client's adapter of each and the fake proxy's
//! server of each. An exhaustive match of hand-written arms was one more
//! place a new layout had to be named.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::catalogue::{Group, Layout};

/// Each layout of every group, with its group, in the catalogue's order.
fn every_layout(groups: &[Group]) -> impl Iterator<Item = (&Group, &Layout)> {
    (groups.iter()).flat_map(|group| group.layouts.iter().map(move |layout| (group, layout)))
}

/// The fake proxy's server of a layout: `NumberedVolumeServer`, named
/// apart from the client's adapter (`NumberedVolume`).
pub fn server_name(layout: &Layout) -> syn::Ident {
    format_ident!("{}Server", layout.name)
}

/// `src/registry/layout.rs`: `Layout`, a variant per layout of the
/// catalogue, named and documented as the catalogue names and documents it.
pub fn layout_enum(groups: &[Group]) -> TokenStream {
    let variants = every_layout(groups).map(|(_, Layout { docs, name, .. })| {
        quote! {
            #(#docs)*
            #name,
        }
    });
    quote! {
        //! The message layouts, as the catalogue (`catalogue/<group>.rs`)
        //! declares them.

        /// The message layouts: versions of a group whose messages are
        /// identical on the wire share one. The client's adapters
        /// (`adapter_for`) and the fake proxy's servers (`routes_for`) are
        /// both chosen by it.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum Layout {
            #(#variants)*
        }
    }
}

/// `src/adapter/layouts.rs`: `adapter_for`, the adapter of each layout.
pub fn adapter_for(groups: &[Group]) -> TokenStream {
    let modules = groups.iter().map(|g| format_ident!("{}", g.file));
    let arms = every_layout(groups).map(|(group, layout)| {
        let (module, variant, name) = (format_ident!("{}", group.file), &group.group, &layout.name);
        quote!(Layout::#name => Adapter::#variant(Arc::new(#module::#name::new(wire))),)
    });
    quote! {
        //! The client's adapter of each message layout.

        use std::sync::Arc;

        use super::{#(#modules,)* Adapter, WireClient};
        use crate::registry::Layout;

        /// Every layout's adapter. The match is exhaustive: a layout the
        /// catalogue declares has its adapter generated beside it.
        pub(super) fn adapter_for(layout: Layout, wire: WireClient) -> Adapter {
            match layout {
                #(#arms)*
            }
        }
    }
}

/// `src/testing/fake_proxy/routing/layouts.rs`: `routes_for`, the fake
/// proxy's server of each layout on its group's backend.
pub fn routes_for(groups: &[Group]) -> TokenStream {
    let modules = groups.iter().map(|g| format_ident!("{}", g.file));
    let arms = every_layout(groups).map(|(group, layout)| {
        let (module, name) = (format_ident!("{}", group.file), &layout.name);
        let server = server_name(layout);
        let release = layout
            .server_release
            .then(|| quote!(release: release.clone(),));
        quote! {
            Layout::#name => endpoint.routes(#module::#server {
                api: backends.#module.clone()?,
                #release
            }),
        }
    });
    quote! {
        //! The fake proxy's server of each message layout.

        use super::Endpoint;
        use crate::client::Backends;
        use crate::registry::Layout;
        use crate::testing::fake_proxy::{#(#modules,)* ReleaseCell};

        /// The routes of one endpoint: its layout's server on top of
        /// `backends`, if the group has a backend.
        pub(in crate::testing::fake_proxy) fn routes_for(
            endpoint: Endpoint,
            layout: Layout,
            backends: &Backends,
            release: &ReleaseCell,
        ) -> Option<tonic::service::Routes> {
            Some(match layout {
                #(#arms)*
            })
        }
    }
}
