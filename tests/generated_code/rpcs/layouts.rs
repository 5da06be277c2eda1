//! The Rust made of each message layout: the client's adapter and the
//! fake proxy's server, both read from the same entries, so that each
//! field is written by the rule it is read by.

use std::collections::BTreeSet;

use proc_macro2::{TokenStream, TokenTree};
use quote::{format_ident, quote};
use syn::{Ident, Type};

use super::catalogue::{is_legacy_error, Carried, Group, Layout, Messages, Method};

/// The file name of a layout's code: `NumberedVolume` is `numbered_volume`.
pub fn file_name(layout: &Layout) -> String {
    let mut name = String::new();
    for (i, c) in layout.name.to_string().chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            name.push('_');
        }
        name.push(c.to_ascii_lowercase());
    }
    name
}

/// How `layout` carries `method`; `None`: by the trait's default.
fn carried<'a>(method: &'a Method, layout: &Layout) -> Option<&'a Carried> {
    (method.carried.iter())
        .find(|(name, _)| *name == layout.name)
        .map(|(_, carried)| carried)
}

/// `src/adapter/<group>/<layout>.rs`: the adapter (over a `WireClient`)
/// and the function that builds each request.
pub fn adapter(group: &Group, layout: &Layout) -> TokenStream {
    let Layout {
        docs, name, wire, ..
    } = layout;
    let api = &group.api;
    let mut requests = Vec::new();
    let mut methods = Vec::new();
    for method in &group.methods {
        let Some(carried) = carried(method, layout) else {
            continue; // The trait's default serves it.
        };
        let signature = method.signature();
        let body = match carried {
            Carried::Absent => {
                let operation = method.operation();
                // The arguments are unused, unless they pick the operation.
                let signature = match method.select {
                    Some(_) => signature,
                    None => method.unnamed_signature(),
                };
                methods.push(quote! {
                    #signature {
                        Err(self.wire.unsupported(#operation))
                    }
                });
                continue;
            }
            Carried::ByHand(hand) => {
                let args = method.args.iter().map(|(arg, _)| arg);
                quote!(self.#hand(#(#args),*).await)
            }
            Carried::Messages(messages) => {
                let request = request_function(method, messages);
                let body = client_call(method, messages, &request);
                requests.push(request.definition);
                body
            }
        };
        methods.push(quote!(#signature { #body }));
    }
    let doc = super::wrapped(&format!(
        "The {} group's adapter of the layout `{name}`: the client's half of its entries in \
         `catalogue/{}.rs`.",
        group.display_name(),
        group.file
    ));
    let body = quote! {
        #(#docs)*
        pub(crate) struct #name {
            pub(super) wire: WireClient,
        }

        impl #name {
            pub(crate) fn new(wire: WireClient) -> Self {
                Self { wire }
            }

            #(#requests)*
        }

        #[async_trait::async_trait]
        impl #api for #name {
            #(#methods)*
        }
    };
    quote! {
        #(#![doc = #doc])*

        use crate::adapter::fields::{AnswerField, RequestField};
        use crate::adapter::WireClient;
        use crate::api::#api;
        use crate::capability::Operation;
        use crate::error::Result;
        use #wire as wire;

        #body
    }
}

/// The function that builds a method's request.
struct RequestFunction {
    /// `<method>_request`
    name: Ident,
    /// The arguments the request's fields are made of.
    args: Vec<Ident>,
    definition: TokenStream,
}

/// The request's builder, of the arguments its fields are made of.
fn request_function(method: &Method, messages: &Messages) -> RequestFunction {
    let function = format_ident!("{}_request", method.name);
    let request = &messages.request;
    let fields = messages.fields.iter().map(|f| {
        let (field, arg) = (&f.field, &f.arg);
        match &f.kind {
            Some(kind) => quote!(#field: #kind::to_request(#arg)?),
            None if field == arg => quote!(#field),
            None => quote!(#field: #arg),
        }
    });
    let client_fields = messages
        .client_fields
        .iter()
        .map(|(field, value)| quote!(#field: #value));
    let fields: Vec<_> = fields.chain(client_fields).collect();
    // The arguments the fields are made of, and those the client's own
    // fields' expressions name.
    let client_values = messages.client_fields.iter().map(|(_, value)| value);
    let mut used = idents(quote!(#(#client_values)*));
    used.extend(messages.fields.iter().map(|f| f.arg.to_string()));
    let args: Vec<_> = (method.args.iter())
        .filter(|(arg, _)| used.contains(&arg.to_string()))
        .collect();
    let params = args.iter().map(|(arg, ty)| quote!(#arg: #ty));
    let doc = format!(" The request of `{}`.", method.name);
    let definition = quote! {
        #[doc = #doc]
        pub(crate) fn #function(#(#params),*) -> Result<wire::#request> {
            Ok(wire::#request { #(#fields),* })
        }
    };
    RequestFunction {
        name: function,
        args: args.into_iter().map(|(arg, _)| arg.clone()).collect(),
        definition,
    }
}

/// A method's body that sends its request and reads its answer.
fn client_call(method: &Method, messages: &Messages, request: &RequestFunction) -> TokenStream {
    let operation = method.operation();
    let response = &messages.response;
    let RequestFunction {
        name: function,
        args,
        ..
    } = request;
    let receive = if messages.answer_fields.is_empty() {
        quote!(let _: wire::#response = self.wire.call(operation, request).await?;)
    } else {
        quote!(let response: wire::#response = self.wire.call(operation, request).await?;)
    };
    // The legacy `error` first: a failure it reports is the answer, whatever
    // the other fields hold.
    let (legacy, values): (Vec<_>, Vec<_>) = (messages.answer_fields.iter())
        .partition(|(_, kind)| kind.as_ref().is_some_and(is_legacy_error));
    let reads = legacy.into_iter().chain(values).map(|(field, kind)| {
        let name = field.to_string();
        match kind {
            Some(kind) if is_legacy_error(kind) => {
                quote!(#kind::from_answer(operation, #name, response.#field)?;)
            }
            Some(kind) => {
                quote!(let #field = #kind::from_answer(operation, #name, response.#field)?;)
            }
            None => quote!(let #field = response.#field;),
        }
    });
    let answer = messages.answer();
    quote! {
        let operation = #operation;
        let request = Self::#function(#(#args),*)?;
        #receive
        #(#reads)*
        Ok(#answer)
    }
}

/// `src/testing/fake_proxy/<group>/<layout>.rs`: the fake proxy's server
/// of the layout, which reads each request field by the rule the client
/// writes it with, calls the backend, and writes the answer fields the
/// client reads.
pub fn server(group: &Group, layout: &Layout) -> TokenStream {
    let Layout { name, wire, .. } = layout;
    let (api, group_operation) = (&group.api, &group.group_operation);
    let server = super::by_layout::server_name(layout);
    let arms = group.methods.iter().map(|method| {
        let operations = method.operations.iter().map(|o| &o.variant);
        let pattern = quote!(#(#group_operation::#operations)|*);
        match carried(method, layout) {
            None | Some(Carried::Absent) => quote!(#pattern => Err(not_in_layout(op)),),
            Some(Carried::ByHand(hand)) => quote!(#pattern => self.#hand(op, body).await,),
            Some(Carried::Messages(messages)) => {
                let serve = serve(method, messages);
                quote!(#pattern => { #serve })
            }
        }
    });
    let doc = super::wrapped(&format!(
        "The fake proxy's server of the {} layout `{name}`: the server's half of its entries \
         in `catalogue/{}.rs`.",
        group.display_name(),
        group.file
    ));
    let (release_field, release_import) = match layout.server_release {
        true => (
            quote! {
                /// The release the fake proxy stands for, which the `by hand`
                /// answers of this layout depend on.
                pub(in crate::testing::fake_proxy) release: ReleaseCell,
            },
            quote!(
                use crate::testing::fake_proxy::ReleaseCell;
            ),
        ),
        false => (quote!(), quote!()),
    };
    let struct_doc = format!(" The fake proxy's server of the layout `{name}`.");
    let docs = &layout.docs;
    let body = quote! {
        #[doc = #struct_doc]
        #[doc = ""]
        #(#docs)*
        pub(in crate::testing::fake_proxy) struct #server {
            /// The backend that answers each request.
            pub(in crate::testing::fake_proxy) api: Arc<dyn #api>,
            #release_field
        }

        #[async_trait::async_trait]
        impl WireServer<#group_operation> for #server {
            async fn handle(&self, op: #group_operation, body: &[u8]) -> Answer {
                match op {
                    #(#arms)*
                }
            }
        }
    };
    quote! {
        #(#![doc = #doc])*

        use std::sync::Arc;

        use crate::api::#api;
        use crate::capability::#group_operation;
        use crate::testing::fake_proxy::codec::{decode, host, reply, Answer};
        #[allow(unused_imports)]
        use crate::testing::fake_proxy::fields::{ReadRequest, WriteAnswer};
        #[allow(unused_imports)]
        use crate::testing::fake_proxy::server::{not_in_layout, WireServer};
        #release_import
        use #wire as wire;

        #body
    }
}

/// An arm's body: read the request, call the backend, write the answer.
fn serve(method: &Method, messages: &Messages) -> TokenStream {
    let (request, response) = (&messages.request, &messages.response);
    let reads = messages.fields.iter().map(|f| {
        let (field, arg) = (&f.field, &f.arg);
        match &f.kind {
            Some(kind) => quote!(let #arg = #kind::from_request(request.#field)?;),
            None => quote!(let #arg = request.#field;),
        }
    });
    let args = method.args.iter().map(|(arg, ty)| {
        if !messages.fields.iter().any(|f| f.arg == *arg) {
            panic!("{}: no request field carries `{arg}`", method.name);
        }
        match ty {
            Type::Reference(_) => quote!(&#arg),
            _ => quote!(#arg),
        }
    });
    let name = &method.name;
    let call = quote!(host!(self.api.#name(#(#args),*)));
    let answer = messages.answer();
    let receive = match messages.value_fields().count() {
        0 => quote!(#call;),
        _ => quote!(let #answer = #call;),
    };
    let writes = messages
        .answer_fields
        .iter()
        .map(|(field, kind)| match kind {
            Some(kind) if is_legacy_error(kind) => {
                quote!(#field: #kind::to_answer(()))
            }
            Some(kind) => quote!(#field: #kind::to_answer(#field)),
            None => quote!(#field),
        });
    let decode = match messages.fields.is_empty() {
        true => quote!(let _: wire::#request = decode(body)?;),
        false => quote!(let request: wire::#request = decode(body)?;),
    };
    quote! {
        #decode
        #(#reads)*
        #receive
        reply(wire::#response { #(#writes),* })
    }
}

/// Every identifier in `tokens`.
fn idents(tokens: TokenStream) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for tree in tokens {
        match tree {
            TokenTree::Ident(ident) => {
                found.insert(ident.to_string());
            }
            TokenTree::Group(group) => found.extend(idents(group.stream())),
            TokenTree::Punct(_) | TokenTree::Literal(_) => {}
        }
    }
    found
}
