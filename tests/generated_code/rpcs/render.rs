//! The Rust made of the catalogue: one function per generated file.

use proc_macro2::TokenStream;
use quote::quote;

use super::catalogue::{Group, Support};

/// `src/api/<group>.rs`: the group's public trait. Each method's default
/// answers `NotImplemented` with the method's operation, unless the
/// catalogue gives a default.
pub fn api_trait(group: &Group) -> TokenStream {
    let Group { docs, api, .. } = group;
    let methods = group.methods.iter().map(|method| {
        let docs = &method.docs;
        let signature = method.signature();
        let body = match &method.default {
            Some(default) => quote!(#default),
            None => {
                let operation = method.operation();
                quote!({ crate::api::not_implemented(#operation) })
            }
        };
        quote! {
            #(#docs)*
            #signature #body
        }
    });
    let doc = format!(" The {} group's trait.", group.display_name());
    quote! {
        #![doc = #doc]
        use crate::capability::Operation;
        use crate::error::Result;

        #(#docs)*
        #[async_trait::async_trait]
        // The defaults answer `NotImplemented`, whatever the arguments.
        #[allow(unused_variables)]
        pub trait #api: Send + Sync {
            #(#methods)*
        }
    }
}

/// `src/capability/operations.rs`: `Operation`, its table, and each
/// group's own operation enum.
pub fn operations(groups: &[Group]) -> TokenStream {
    let rows: Vec<_> = groups
        .iter()
        .flat_map(|g| {
            g.methods
                .iter()
                .flat_map(move |m| m.operations.iter().map(move |o| (g, o)))
        })
        .collect();
    let variants = rows.iter().map(|(_, o)| {
        let (docs, variant) = (&o.docs, &o.variant);
        quote!(#(#docs)* #variant,)
    });
    let all = rows.iter().map(|(_, o)| &o.variant);
    let read_by_release = (rows.iter())
        .filter(|(_, o)| o.read_by_release)
        .map(|(_, o)| &o.variant);
    let group_arms = rows.iter().map(|(g, o)| {
        let (variant, group) = (&o.variant, &g.group);
        quote!(Operation::#variant => ApiGroup::#group,)
    });
    let name_arms = rows.iter().map(|(_, o)| {
        let (variant, name) = (&o.variant, &o.name);
        quote!(Operation::#variant => #name,)
    });
    let effect_arms = rows.iter().map(|(_, o)| {
        let (variant, effect) = (&o.variant, &o.effect);
        quote!(Operation::#variant => Effect::#effect,)
    });
    let history_arms = rows.iter().map(|(_, o)| {
        let variant = &o.variant;
        let history = o.history.iter().map(|(since, support)| {
            let support = match support {
                Support::Native(name) => quote!(Support::Native(#name)),
                Support::Emulated => quote!(Support::Emulated),
                Support::No => quote!(Support::Unsupported),
            };
            quote!((ApiVersion::#since, #support),)
        });
        quote!(Operation::#variant => &[#(#history)*],)
    });
    let group_enums = groups.iter().map(group_operations);
    quote! {
        //! `Operation` and its table, and each group's operations as their own
        //! type.

        use super::{Effect, GroupOperation, Support};
        use crate::group::ApiGroup;
        use crate::version::ApiVersion;

        /// Every operation of every group, named after its newest RPC.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum Operation {
            #(#variants)*
        }

        impl Operation {
            /// All operations, grouped by API group.
            pub const ALL: &'static [Operation] = &[#(Operation::#all,)*];

            /// The operations whose older versions' answers are read by the
            /// release (`Operation::read_by_release`).
            pub(super) const READ_BY_RELEASE: &'static [Operation] =
                &[#(Operation::#read_by_release,)*];

            /// The group the operation belongs to.
            pub const fn group(self) -> ApiGroup {
                match self { #(#group_arms)* }
            }

            /// The operation's name: its RPC name in the newest version.
            pub const fn name(self) -> &'static str {
                match self { #(#name_arms)* }
            }

            /// What it does to the host, which picks its retry rule and
            /// its default deadline.
            pub(crate) const fn effect(self) -> Effect {
                match self { #(#effect_arms)* }
            }

            /// How its support changes across versions: from each listed
            /// version on (until the next entry), it is served as given.
            pub(super) fn history(self) -> &'static [(ApiVersion, Support)] {
                match self { #(#history_arms)* }
            }
        }

        #(#group_enums)*
    }
}

/// A group's own operation enum, so that a match over one group's
/// operations is exhaustive without a catch-all arm.
fn group_operations(group: &Group) -> TokenStream {
    let Group {
        group_operation, ..
    } = group;
    let variants: Vec<_> = group
        .methods
        .iter()
        .flat_map(|m| m.operations.iter().map(|o| &o.variant))
        .collect();
    let doc = format!(
        " The operations of the {} group alone, so that a match over one",
        group.group
    );
    quote! {
        #[doc = #doc]
        /// group's operations is exhaustive without a catch-all arm.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[cfg_attr(not(feature = "testing"), allow(dead_code))]
        pub(crate) enum #group_operation {
            #(#variants,)*
        }

        impl From<#group_operation> for Operation {
            fn from(operation: #group_operation) -> Self {
                match operation {
                    #(#group_operation::#variants => Operation::#variants,)*
                }
            }
        }

        impl GroupOperation for #group_operation {
            const ALL: &'static [Self] = &[#(#group_operation::#variants,)*];
        }
    }
}

/// `src/client/handle_traits.rs`: each group trait on the client's handle. Each
/// method runs as its operation on the group's lookout; one with argument
/// checks runs them first, and a refused argument is its answer.
pub fn handle_traits(groups: &[Group]) -> TokenStream {
    let apis = groups.iter().map(|g| &g.api);
    let impls = groups.iter().map(|group| {
        let api = &group.api;
        let methods = group.methods.iter().map(|method| {
            let signature = method.signature();
            let name = &method.name;
            let args = method.args.iter().map(|(arg, _)| arg);
            let run = |operation| {
                quote! {
                    self.lookout
                        .run(#operation, self.options, |api| async move {
                            api.#name(#(#args),*).await
                        })
                        .await
                }
            };
            let operation = method.operation();
            match &method.check {
                None => {
                    let run = run(operation);
                    quote!(#signature { #run })
                }
                Some(check) => {
                    let run = run(quote!(operation));
                    quote! {
                        #signature {
                            let operation = #operation;
                            if let Err(refused) = #check {
                                return self.lookout.refused(operation, refused);
                            }
                            #run
                        }
                    }
                }
            }
        });
        quote! {
            #[async_trait::async_trait]
            impl #api for Handle<dyn #api> {
                #(#methods)*
            }
        }
    });
    quote! {
        //! The group traits on the client's handles: each method runs on the
        //! group's current adapter as its operation (see `Lookout::run`).
        //! A method with argument checks runs them first: a refused argument
        //! is the call's answer at once (`Lookout::refused`), before any wait
        //! for the proxy; nothing is sent.

        use super::handles::Handle;
        use crate::api::{#(#apis),*};
        use crate::capability::Operation;
        use crate::error::Result;

        #(#impls)*
    }
}

/// `src/testing/sample/calls.rs`: a call of each operation with the
/// sample of each argument's name.
pub fn sample_calls(groups: &[Group]) -> TokenStream {
    let apis = groups.iter().map(|g| &g.api);
    let impls = groups.iter().map(|group| {
        let api = &group.api;
        let arms = group.methods.iter().map(|method| {
            let name = &method.name;
            let operations = method.operations.iter().map(|o| &o.variant);
            let args = method.args.iter().map(|(arg, _)| quote!(by_name::#arg(op)));
            quote! {
                #(Operation::#operations)|* => self.#name(#(#args),*).await.map(drop),
            }
        });
        quote! {
            #[async_trait::async_trait]
            impl SampleCall for dyn #api {
                async fn sample_call(&self, op: Operation) -> Result<()> {
                    match op {
                        #(#arms)*
                        // Not one of the group's operations.
                        _ => Err(Error::NotImplemented { operation: op }),
                    }
                }
            }
        }
    });
    quote! {
        //! A call of each operation, each argument the sample of its name.

        use super::{by_name, SampleCall};
        use crate::api::{#(#apis),*};
        use crate::capability::Operation;
        use crate::error::{Error, Result};

        #(#impls)*
    }
}
