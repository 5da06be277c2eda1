//! The catalogue's grammar (`catalogue/README.md`), read with syn.

use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{braced, bracketed, parenthesized, Attribute, Expr, Ident, ItemUse, Token};

use super::{Carried, Layout, Messages, Method, OperationRow, RequestField, Support};

mod kw {
    syn::custom_keyword!(absent);
    syn::custom_keyword!(by);
    syn::custom_keyword!(check);
    syn::custom_keyword!(default);
    syn::custom_keyword!(hand);
    syn::custom_keyword!(layout);
    syn::custom_keyword!(release);
    syn::custom_keyword!(with);
}

/// A catalogue file as written.
pub(super) struct Parsed {
    pub(super) uses: Vec<ItemUse>,
    pub(super) docs: Vec<Attribute>,
    pub(super) api: Ident,
    pub(super) group: Ident,
    pub(super) group_operation: Ident,
    pub(super) layouts: Vec<Layout>,
    pub(super) methods: Vec<Method>,
}

impl Parse for Parsed {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        Attribute::parse_inner(input)?;
        let mut uses = Vec::new();
        while input.peek(Token![use]) {
            uses.push(input.parse()?);
        }
        let docs = Attribute::parse_outer(input)?;
        input.parse::<Token![trait]>()?;
        let api = input.parse()?;
        input.parse::<Token![:]>()?;
        let group = input.parse()?;
        input.parse::<Token![=>]>()?;
        let group_operation = input.parse()?;
        input.parse::<Token![;]>()?;
        let mut layouts = Vec::new();
        while peek_layout(input) {
            let docs = Attribute::parse_outer(input)?;
            input.parse::<kw::layout>()?;
            let name = input.parse()?;
            input.parse::<Token![in]>()?;
            let wire = input.call(syn::Path::parse_mod_style)?;
            let server_release = input.peek(kw::with);
            if server_release {
                input.parse::<kw::with>()?;
                input.parse::<kw::release>()?;
            }
            input.parse::<Token![;]>()?;
            layouts.push(Layout {
                docs,
                name,
                wire,
                server_release,
            });
        }
        let mut methods = Vec::new();
        while !input.is_empty() {
            methods.push(input.parse()?);
        }
        Ok(Parsed {
            uses,
            docs,
            api,
            group,
            group_operation,
            layouts,
            methods,
        })
    }
}

impl Parse for Method {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let docs = Attribute::parse_outer(input)?;
        input.parse::<Token![fn]>()?;
        let name = input.parse()?;
        let params;
        parenthesized!(params in input);
        params.parse::<Token![&]>()?;
        params.parse::<Token![self]>()?;
        let mut args = Vec::new();
        while !params.is_empty() {
            params.parse::<Token![,]>()?;
            if params.is_empty() {
                break;
            }
            let arg = params.parse()?;
            params.parse::<Token![:]>()?;
            args.push((arg, params.parse()?));
        }
        input.parse::<Token![->]>()?;
        let answer = input.parse()?;
        input.parse::<Token![=]>()?;
        let select = if input.peek(kw::by) {
            input.parse::<kw::by>()?;
            let select = input.parse()?;
            input.parse::<Token![=>]>()?;
            Some(select)
        } else {
            None
        };
        let rows;
        braced!(rows in input);
        let operations = Punctuated::<OperationRow, Token![;]>::parse_terminated(&rows)?
            .into_iter()
            .collect();
        let check = if input.peek(kw::check) {
            input.parse::<kw::check>()?;
            Some(input.parse()?)
        } else {
            None
        };
        let default = if input.peek(kw::default) {
            input.parse::<kw::default>()?;
            Some(input.parse()?)
        } else {
            None
        };
        let mut carried = Vec::new();
        while input.peek(Token![in]) {
            input.parse::<Token![in]>()?;
            let layout = input.parse()?;
            input.parse::<Token![:]>()?;
            carried.push((layout, input.parse()?));
        }
        input.parse::<Token![;]>()?;
        Ok(Method {
            docs,
            name,
            args,
            answer,
            select,
            operations,
            check,
            default,
            carried,
        })
    }
}

impl Parse for OperationRow {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let docs = Attribute::parse_outer(input)?;
        let variant = input.parse()?;
        input.parse::<Token![=]>()?;
        let name = input.parse()?;
        input.parse::<Token![,]>()?;
        let effect: Ident = input.parse()?;
        if !["Reads", "Mutates", "SlowlyMutates"].contains(&effect.to_string().as_str()) {
            return Err(syn::Error::new(
                effect.span(),
                "the effect is Reads, Mutates or SlowlyMutates",
            ));
        }
        input.parse::<Token![,]>()?;
        let rows;
        bracketed!(rows in input);
        let history = Punctuated::<VersionRow, Token![,]>::parse_terminated(&rows)?
            .into_iter()
            .map(|row| (row.since, row.support))
            .collect();
        Ok(OperationRow {
            docs,
            variant,
            name,
            effect,
            history,
        })
    }
}

/// `V1BETA3 => Native("GetDiskStats")`
struct VersionRow {
    since: Ident,
    support: Support,
}

impl Parse for VersionRow {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let since = input.parse()?;
        input.parse::<Token![=>]>()?;
        let how: Ident = input.parse()?;
        let support = match how.to_string().as_str() {
            "Native" => {
                let name;
                parenthesized!(name in input);
                Support::Native(name.parse()?)
            }
            "Emulated" => Support::Emulated,
            "No" => Support::No,
            _ => {
                return Err(syn::Error::new(
                    how.span(),
                    "a version serves an operation as Native(\"Rpc\"), Emulated or No",
                ))
            }
        };
        Ok(VersionRow { since, support })
    }
}

/// Whether a layout's declaration (after its docs) comes next.
fn peek_layout(input: ParseStream) -> bool {
    let fork = input.fork();
    Attribute::parse_outer(&fork).is_ok() && fork.peek(kw::layout)
}

impl Parse for Carried {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.peek(kw::absent) {
            input.parse::<kw::absent>()?;
            return Ok(Carried::Absent);
        }
        if input.peek(kw::by) {
            input.parse::<kw::by>()?;
            input.parse::<kw::hand>()?;
            return Ok(Carried::ByHand(input.parse()?));
        }
        let request = input.parse()?;
        let body;
        braced!(body in input);
        let mut fields = Vec::new();
        while !body.is_empty() && !body.peek(Token![;]) {
            fields.push(body.parse()?);
            if !body.is_empty() && !body.peek(Token![;]) {
                body.parse::<Token![,]>()?;
            }
        }
        let mut client_fields = Vec::new();
        if body.peek(Token![;]) {
            body.parse::<Token![;]>()?;
            while !body.is_empty() {
                let field = body.parse()?;
                body.parse::<Token![:]>()?;
                client_fields.push((field, body.parse()?));
                if !body.is_empty() {
                    body.parse::<Token![,]>()?;
                }
            }
        }
        input.parse::<Token![->]>()?;
        let response = input.parse()?;
        let body;
        braced!(body in input);
        let mut answer_fields = Vec::new();
        while !body.is_empty() {
            let field = body.parse()?;
            let kind = if body.peek(Token![:]) {
                body.parse::<Token![:]>()?;
                Some(body.parse()?)
            } else {
                None
            };
            answer_fields.push((field, kind));
            if !body.is_empty() {
                body.parse::<Token![,]>()?;
            }
        }
        let answer = if input.peek(Token![=>]) {
            input.parse::<Token![=>]>()?;
            Some(input.parse()?)
        } else {
            None
        };
        Ok(Carried::Messages(Box::new(Messages {
            request,
            fields,
            client_fields,
            response,
            answer_fields,
            answer,
        })))
    }
}

impl Parse for RequestField {
    /// `field: Kind(arg)`, `field: arg` or `arg`.
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let field: Ident = input.parse()?;
        if !input.peek(Token![:]) {
            return Ok(RequestField {
                arg: field.clone(),
                field,
                kind: None,
            });
        }
        input.parse::<Token![:]>()?;
        let value: Expr = input.parse()?;
        let single = |expr: &Expr| match expr {
            Expr::Path(p) => p.path.get_ident().cloned(),
            _ => None,
        };
        if let Some(arg) = single(&value) {
            return Ok(RequestField {
                field,
                kind: None,
                arg,
            });
        }
        if let Expr::Call(call) = &value {
            if let (Expr::Path(kind), [arg]) =
                (&*call.func, call.args.iter().collect::<Vec<_>>().as_slice())
            {
                if let Some(arg) = single(arg) {
                    return Ok(RequestField {
                        field,
                        kind: Some(kind.path.clone()),
                        arg,
                    });
                }
            }
        }
        Err(syn::Error::new_spanned(
            value,
            "a request field is `field: Kind(argument)` or `field: argument`; \
             a field only the client sets comes after `;`",
        ))
    }
}
