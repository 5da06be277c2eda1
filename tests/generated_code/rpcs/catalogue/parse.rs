//! A group's catalogue file read with syn: `use` lines and one trait, whose
//! attributes say what its signatures cannot (`catalogue/README.md`).

use proc_macro2::TokenStream;
use syn::meta::ParseNestedMeta;
use syn::parse::{ParseStream, Parser};
use syn::spanned::Spanned;
use syn::{
    parse_quote, Attribute, Expr, ExprLit, ExprStruct, FieldPat, FieldValue, FnArg,
    GenericArgument, Ident, Item, ItemTrait, Lit, LitStr, Member, Pat, PathArguments, ReturnType,
    Signature, Token, TraitItem, TraitItemFn, Type, TypePath,
};

use super::{
    names, AnswerField, Carried, Group, Layout, Messages, Method, OperationRow, RequestField,
    Support, LEGACY_ERROR,
};

/// The group of `file` (its name without `.rs`), as its syntax says.
pub(super) fn group(file: String, syntax: &syn::File) -> syn::Result<Group> {
    let mut imports = Vec::new();
    let mut api = None;
    for item in &syntax.items {
        match item {
            Item::Use(u) => imports.extend(names(&u.tree, &[])),
            Item::Trait(t) if api.is_none() => api = Some(t),
            other => return Err(error(other, "a catalogue is `use` lines and one trait")),
        }
    }
    let Some(api) = api else {
        return Err(syn::Error::new(
            proc_macro2::Span::call_site(),
            "a catalogue holds one trait",
        ));
    };
    trait_group(file, imports, api)
}

/// The group the trait and its attributes describe.
fn trait_group(file: String, imports: Vec<super::Import>, api: &ItemTrait) -> syn::Result<Group> {
    if !api.supertraits.is_empty() || !api.generics.params.is_empty() {
        return Err(error(
            &api.ident,
            "the trait is plain: its group is `#[group(...)]`",
        ));
    }
    let mut docs = Vec::new();
    let mut group = None;
    let mut layouts = Vec::new();
    for attr in &api.attrs {
        match attr_name(attr).as_str() {
            "doc" => docs.push(attr.clone()),
            "group" if group.is_none() => group = Some(group_attr(attr)?),
            "layout" => layouts.push(layout(attr)?),
            _ => {
                return Err(error(
                    attr,
                    "the trait takes docs, one `#[group(...)]` and its `#[layout(...)]`s",
                ))
            }
        }
    }
    let Some((group, group_operation)) = group else {
        return Err(error(
            &api.ident,
            "the trait names its group: `#[group(Variant, operations = GroupOperation)]`",
        ));
    };
    let methods = (api.items.iter())
        .map(|item| match item {
            TraitItem::Fn(method) => self::method(method),
            other => Err(error(other, "the trait holds methods only")),
        })
        .collect::<syn::Result<_>>()?;
    Ok(Group {
        file,
        imports,
        docs,
        api: api.ident.clone(),
        group,
        group_operation,
        layouts,
        methods,
    })
}

/// `#[group(Volume, operations = VolumeOperation)]`
fn group_attr(attr: &Attribute) -> syn::Result<(Ident, Ident)> {
    let mut operations = None;
    let group = named(attr, |meta| match key(&meta).as_str() {
        "operations" => once(&mut operations, &meta, meta.value()?.parse()?),
        _ => Err(meta.error("`#[group]` takes `operations = GroupOperation`")),
    })?;
    Ok((
        group,
        required(operations, attr, "operations = GroupOperation")?,
    ))
}

/// `#[layout(Name, wire = crate::wire::<group>::<version>, doc = "...", server_release)]`
fn layout(attr: &Attribute) -> syn::Result<Layout> {
    let (mut wire, mut doc, mut server_release) = (None, None, false);
    let name = named(attr, |meta| match key(&meta).as_str() {
        "wire" => once(
            &mut wire,
            &meta,
            meta.value()?.call(syn::Path::parse_mod_style)?,
        ),
        "doc" => once(&mut doc, &meta, meta.value()?.parse()?),
        "server_release" => flag(&mut server_release, &meta),
        _ => Err(meta.error("`#[layout]` takes `wire = path`, `doc = \"...\"`, `server_release`")),
    })?;
    Ok(Layout {
        docs: doc_lines(&required(doc, attr, "doc = \"...\"")?),
        name,
        wire: required(wire, attr, "wire = crate::wire::<group>::<version>")?,
        server_release,
    })
}

/// A method: its docs and signature, and its attributes.
fn method(method: &TraitItemFn) -> syn::Result<Method> {
    let (args, answer) = signature(&method.sig)?;
    let mut docs = Vec::new();
    let mut operations = Vec::new();
    let (mut select, mut check) = (None, None);
    let mut carried = Vec::new();
    for attr in &method.attrs {
        match attr_name(attr).as_str() {
            "doc" => docs.push(attr.clone()),
            "operation" => operations.push(operation(attr)?),
            "pick" if select.is_none() => select = Some(attr.parse_args()?),
            "check" if check.is_none() => check = Some(attr.parse_args()?),
            "wire" => carried.push(self::carried(attr, &args)?),
            _ => {
                return Err(error(
                    attr,
                    "a method takes docs, `#[operation(...)]`s, one `#[pick(...)]`, \
                     one `#[check(...)]` and a `#[wire(...)]` per layout",
                ))
            }
        }
    }
    match (operations.len(), &select) {
        (0, _) => {
            return Err(error(
                &method.sig.ident,
                "a method is one `#[operation(...)]` or more",
            ))
        }
        (1, Some(_)) => {
            return Err(error(
                &method.sig.ident,
                "`#[pick]` is for several operations",
            ))
        }
        (1, None) | (_, Some(_)) => {}
        (_, None) => {
            return Err(error(
                &method.sig.ident,
                "a method of several operations picks one: `#[pick(expression)]`",
            ))
        }
    }
    Ok(Method {
        docs,
        name: method.sig.ident.clone(),
        args,
        answer,
        select,
        operations,
        check,
        default: method.default.clone(),
        carried,
    })
}

/// `async fn name(&self, arg: Type, ...) -> Result<Answer>`: the arguments
/// and the answer.
fn signature(sig: &Signature) -> syn::Result<(Vec<(Ident, Type)>, Type)> {
    let form = "a method is `async fn name(&self, argument: Type, ...) -> Result<Answer>`";
    if sig.asyncness.is_none() || !sig.generics.params.is_empty() {
        return Err(error(&sig.ident, form));
    }
    let mut inputs = sig.inputs.iter();
    match inputs.next() {
        Some(FnArg::Receiver(me)) if me.reference.is_some() && me.mutability.is_none() => {}
        _ => return Err(error(&sig.ident, form)),
    }
    let args = inputs
        .map(|input| match input {
            FnArg::Typed(arg) => match &*arg.pat {
                Pat::Ident(name) if name.by_ref.is_none() && name.mutability.is_none() => {
                    Ok((name.ident.clone(), (*arg.ty).clone()))
                }
                other => Err(error(other, form)),
            },
            FnArg::Receiver(other) => Err(error(other, form)),
        })
        .collect::<syn::Result<_>>()?;
    let answer = match &sig.output {
        ReturnType::Type(_, ty) => result_of(ty),
        ReturnType::Default => None,
    };
    Ok((args, answer.ok_or_else(|| error(sig, form))?))
}

/// `T` of `Result<T>`.
fn result_of(ty: &Type) -> Option<Type> {
    let Type::Path(TypePath { qself: None, path }) = ty else {
        return None;
    };
    let [segment] = path.segments.iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    let PathArguments::AngleBracketed(generics) = &segment.arguments else {
        return None;
    };
    match generics.args.iter().collect::<Vec<_>>()[..] {
        [GenericArgument::Type(answer)] if segment.ident == "Result" => Some(answer.clone()),
        _ => None,
    }
}

/// `#[operation(Variant, name = "...", effect = Reads, doc = "...",
/// since(VERSION = Support, ...), read_by_release)]`
fn operation(attr: &Attribute) -> syn::Result<OperationRow> {
    let (mut name, mut effect, mut doc, mut history) = (None, None, None, None);
    let mut read_by_release = false;
    let variant = named(attr, |meta| match key(&meta).as_str() {
        "name" => once(&mut name, &meta, meta.value()?.parse()?),
        "effect" => once(&mut effect, &meta, self::effect(meta.value()?)?),
        "doc" => once(&mut doc, &meta, meta.value()?.parse()?),
        "since" => {
            let mut rows = Vec::new();
            meta.parse_nested_meta(|row| {
                let since = row.path.require_ident()?.clone();
                rows.push((since, support(&row.value()?.parse()?)?));
                Ok(())
            })?;
            once(&mut history, &meta, rows)
        }
        "read_by_release" => flag(&mut read_by_release, &meta),
        _ => Err(meta.error(
            "`#[operation]` takes `name = \"...\"`, `effect = ...`, `doc = \"...\"`, \
             `since(VERSION = Support, ...)` and `read_by_release`",
        )),
    })?;
    Ok(OperationRow {
        docs: doc_lines(&required(doc, attr, "doc = \"...\"")?),
        variant,
        name: required(name, attr, "name = \"NewestRpcName\"")?,
        effect: required(effect, attr, "effect = Reads")?,
        history: required(history, attr, "since(V1ALPHA1 = Native(\"Rpc\"), ...)")?,
        read_by_release,
    })
}

/// `Reads`, `Mutates` or `SlowlyMutates`.
fn effect(input: ParseStream) -> syn::Result<Ident> {
    let effect: Ident = input.parse()?;
    match effect.to_string().as_str() {
        "Reads" | "Mutates" | "SlowlyMutates" => Ok(effect),
        _ => Err(error(
            &effect,
            "the effect is Reads, Mutates or SlowlyMutates",
        )),
    }
}

/// `Native("Rpc")`, `Emulated` or `No`.
fn support(expr: &Expr) -> syn::Result<Support> {
    let named = |expr: &Expr, name: &str| matches!(expr, Expr::Path(p) if p.path.is_ident(name));
    let native = match expr {
        Expr::Call(call) if named(&call.func, "Native") => {
            match call.args.iter().collect::<Vec<_>>()[..] {
                [Expr::Lit(ExprLit {
                    lit: Lit::Str(rpc), ..
                })] => Some(rpc.clone()),
                _ => None,
            }
        }
        _ => None,
    };
    match native {
        Some(rpc) => Ok(Support::Native(rpc)),
        None if named(expr, "Emulated") => Ok(Support::Emulated),
        None if named(expr, "No") => Ok(Support::No),
        None => Err(error(
            expr,
            "a version serves an operation as Native(\"Rpc\"), Emulated or No",
        )),
    }
}

/// `#[wire(Layout, absent)]`, `#[wire(Layout, by_hand = name)]` or
/// `#[wire(Layout, request = ..., client_only(...), response = ..., answer = ...)]`.
fn carried(attr: &Attribute, args: &[(Ident, Type)]) -> syn::Result<(Ident, Carried)> {
    let (mut absent, mut by_hand) = (false, None);
    let (mut request, mut client_fields, mut response, mut answer) = (None, None, None, None);
    let layout = named(attr, |meta| match key(&meta).as_str() {
        "absent" => flag(&mut absent, &meta),
        "by_hand" => once(&mut by_hand, &meta, meta.value()?.parse()?),
        "request" => once(&mut request, &meta, meta.value()?.parse::<ExprStruct>()?),
        "client_only" => {
            let mut fields = Vec::new();
            meta.parse_nested_meta(|field| {
                fields.push((field.path.require_ident()?.clone(), field.value()?.parse()?));
                Ok(())
            })?;
            once(&mut client_fields, &meta, fields)
        }
        "response" => once(&mut response, &meta, Pat::parse_single(meta.value()?)?),
        "answer" => once(&mut answer, &meta, meta.value()?.parse()?),
        _ => Err(meta.error(
            "`#[wire]` takes `absent`, `by_hand = name`, or `request = ...`, \
             `client_only(...)`, `response = ...` and `answer = ...`",
        )),
    })?;
    let messages = (request, response);
    let extras = client_fields.is_some() || answer.is_some();
    let carried = match (absent, by_hand, messages) {
        (true, None, (None, None)) if !extras => Carried::Absent,
        (false, Some(name), (None, None)) if !extras => Carried::ByHand(name),
        (false, None, (Some(request), Some(response))) => {
            let (request, fields) = request_fields(&request, args)?;
            let (response, answer_fields) = answer_fields(&response)?;
            Carried::Messages(Box::new(Messages {
                request,
                fields,
                client_fields: client_fields.unwrap_or_default(),
                response,
                answer_fields,
                answer,
            }))
        }
        _ => {
            return Err(error(
                attr,
                "a layout carries a method `absent`, `by_hand = name`, \
                 or in `request = ...` and `response = ...`",
            ))
        }
    };
    Ok((layout, carried))
}

/// `Request { field: Kind(argument), field: argument, argument }`
fn request_fields(
    request: &ExprStruct,
    args: &[(Ident, Type)],
) -> syn::Result<(Ident, Vec<RequestField>)> {
    let name = plain_name(
        &request.path,
        request.qself.is_none() && request.rest.is_none(),
    )
    .ok_or_else(|| error(request, "a request is `Request { field: ..., ... }`"))?;
    let fields = (request.fields.iter())
        .map(|value| request_field(value, args))
        .collect::<syn::Result<_>>()?;
    Ok((name, fields))
}

/// `field: Kind(argument)`, `field: argument` or `argument`.
fn request_field(value: &FieldValue, args: &[(Ident, Type)]) -> syn::Result<RequestField> {
    let form = "a request field is `field: Kind(argument)` or `field: argument`; \
                a field only the client sets is in `client_only(field = expression)`";
    let Member::Named(field) = &value.member else {
        return Err(error(value, form));
    };
    let (kind, arg) = match &value.expr {
        Expr::Path(arg) => (None, &arg.path),
        Expr::Call(call) => match (&*call.func, &call.args.iter().collect::<Vec<_>>()[..]) {
            (Expr::Path(kind), [Expr::Path(arg)]) => (Some(kind.path.clone()), &arg.path),
            _ => return Err(error(value, form)),
        },
        _ => return Err(error(value, form)),
    };
    let arg = arg.get_ident().ok_or_else(|| error(arg, form))?;
    if !args.iter().any(|(name, _)| name == arg) {
        return Err(error(
            arg,
            format!("`{arg}` is not an argument of the method"),
        ));
    }
    Ok(RequestField {
        field: field.clone(),
        kind,
        arg: arg.clone(),
    })
}

/// `Response { field: Kind(field), field, error: LegacyError }`
fn answer_fields(response: &Pat) -> syn::Result<(Ident, Vec<AnswerField>)> {
    let form = "a response is `Response { field: Kind(field), field, ... }`";
    let Pat::Struct(response) = response else {
        return Err(error(response, form));
    };
    let name = plain_name(
        &response.path,
        response.qself.is_none() && response.rest.is_none(),
    )
    .ok_or_else(|| error(response, form))?;
    let fields = (response.fields.iter())
        .map(answer_field)
        .collect::<syn::Result<_>>()?;
    Ok((name, fields))
}

/// `field: Kind(field)`, `field` (as it is), or `error: LegacyError`.
fn answer_field(field: &FieldPat) -> syn::Result<AnswerField> {
    let form = "an answer field is `field: Kind(field)` (read by its kind), `field` \
                (as it is) or `error: LegacyError`";
    let Member::Named(name) = &field.member else {
        return Err(error(field, form));
    };
    let binds_name =
        |pat: &Pat| matches!(pat, Pat::Ident(b) if b.ident == *name && b.subpat.is_none());
    let kind = |path: &syn::Path| {
        Some(Type::Path(TypePath {
            qself: None,
            path: path.clone(),
        }))
    };
    let legacy = |path: &syn::Path| path.is_ident(LEGACY_ERROR);
    match &*field.pat {
        pat if binds_name(pat) => Ok((name.clone(), None)),
        // A path of one name, such as `LegacyError`, reads as a binding.
        Pat::Ident(checked) if checked.ident == LEGACY_ERROR => {
            Ok((name.clone(), kind(&checked.ident.clone().into())))
        }
        Pat::TupleStruct(read) if !legacy(&read.path) && read.elems.len() == 1 => {
            match binds_name(&read.elems[0]) {
                true => Ok((name.clone(), kind(&read.path))),
                false => Err(error(
                    &read.elems[0],
                    format!("the field binds its own name: `{name}: Kind({name})`"),
                )),
            }
        }
        other => Err(error(other, form)),
    }
}

/// The name of a request or response: one identifier, nothing else.
fn plain_name(path: &syn::Path, plain: bool) -> Option<Ident> {
    path.get_ident().filter(|_| plain).cloned()
}

/// `#[attr(Name, entry, ...)]`: the name, each entry read by `entry`.
fn named(
    attr: &Attribute,
    entry: impl FnMut(ParseNestedMeta) -> syn::Result<()>,
) -> syn::Result<Ident> {
    attr.parse_args_with(|input: ParseStream| {
        let name = input.parse()?;
        if !input.is_empty() {
            input.parse::<Token![,]>()?;
        }
        syn::meta::parser(entry).parse2(input.parse::<TokenStream>()?)?;
        Ok(name)
    })
}

/// The entry's key, one identifier.
fn key(meta: &ParseNestedMeta) -> String {
    meta.path
        .get_ident()
        .map_or_else(String::new, ToString::to_string)
}

/// The attribute's name, one identifier.
fn attr_name(attr: &Attribute) -> String {
    attr.path()
        .get_ident()
        .map_or_else(String::new, ToString::to_string)
}

/// Keeps an entry's value, given once.
fn once<T>(slot: &mut Option<T>, meta: &ParseNestedMeta, value: T) -> syn::Result<()> {
    match slot.replace(value) {
        None => Ok(()),
        Some(_) => Err(meta.error("given twice")),
    }
}

/// Sets a flag, given once and without a value.
fn flag(slot: &mut bool, meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(Token![=]) || meta.input.peek(syn::token::Paren) {
        return Err(meta.error("a flag takes no value"));
    }
    match std::mem::replace(slot, true) {
        false => Ok(()),
        true => Err(meta.error("given twice")),
    }
}

/// An entry the attribute needs.
fn required<T>(value: Option<T>, attr: &Attribute, entry: &str) -> syn::Result<T> {
    value.ok_or_else(|| {
        let name = attr_name(attr);
        error(attr, format!("`#[{name}]` needs `{entry}`"))
    })
}

/// A doc string as doc lines, as rustdoc reads `#[doc = "..."]`: each
/// line of the string is one, its indentation left out.
fn doc_lines(doc: &LitStr) -> Vec<Attribute> {
    (doc.value().lines())
        .map(|line| {
            let line = format!(" {}", line.trim());
            parse_quote!(#[doc = #line])
        })
        .collect()
}

fn error(at: impl Spanned, message: impl std::fmt::Display) -> syn::Error {
    syn::Error::new(at.span(), message)
}

#[cfg(test)]
mod tests {
    use quote::ToTokens;

    use super::*;

    /// A group of one method, `entry` its attributes.
    fn group_of(entry: &str) -> syn::Result<Group> {
        let text = format!(
            "#[group(Volume, operations = VolumeOperation)]\n\
             #[layout(Numbered, wire = crate::wire::volume::v1, doc = \"v1.\")]\n\
             trait VolumeApi {{\n\
             {entry}\n\
             async fn resize(&self, volume: &VolumeId, size: u64) -> Result<()>;\n\
             }}"
        );
        group("volume".to_owned(), &syn::parse_file(&text)?)
    }

    const ROW: &str =
        "#[operation(Resize, name = \"Resize\", effect = Mutates, doc = \"Resize.\", since(V1 = No))]";

    #[test]
    fn an_entry_is_read_into_the_model() {
        let entry = format!(
            "{ROW}\n#[wire(Numbered, request = ResizeRequest {{ volume_id: VolumeText(volume), size }}, \
             client_only(context = 1), response = ResizeResponse {{ error: LegacyError, bytes: Bytes(bytes) }})]"
        );
        let group = group_of(&entry).unwrap_or_else(|e| panic!("{e}"));
        let method = &group.methods[0];
        assert_eq!(method.answer.to_token_stream().to_string(), "()");
        let Carried::Messages(messages) = &method.carried[0].1 else {
            panic!("carried in messages");
        };
        let kinds: Vec<_> = (messages.fields.iter())
            .map(|f| (f.field.to_string(), f.kind.is_some(), f.arg.to_string()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("volume_id".into(), true, "volume".into()),
                ("size".into(), false, "size".into())
            ]
        );
        assert_eq!(messages.client_fields.len(), 1);
        let answers: Vec<_> = messages
            .value_fields()
            .map(|(f, _)| f.to_string())
            .collect();
        assert_eq!(answers, ["bytes"]);
    }

    #[test]
    fn a_malformed_entry_is_refused_where_it_is_wrong() {
        let wire = |inner: &str| format!("{ROW}\n#[wire(Numbered, {inner})]");
        let cases = [
            (
                ROW.replace("effect = Mutates, ", ""),
                "`#[operation]` needs `effect = Reads`",
            ),
            (ROW.replace("Mutates", "Writes"), "the effect is"),
            (ROW.replace("No", "Native(1)"), "a version serves"),
            (
                ROW.replace("Mutates", "Mutates, retries"),
                "`#[operation]` takes",
            ),
            (format!("{ROW}\n{ROW}"), "picks one: `#[pick(expression)]`"),
            (
                wire("request = R { size: Bytes(size, volume) }, response = S {}"),
                "a request field is",
            ),
            (
                wire("request = R { size: Bytes(bytes) }, response = S {}"),
                "`bytes` is not an argument of the method",
            ),
            (
                wire("request = R {}, response = S { size: Bytes(bytes) }"),
                "the field binds its own name: `size: Kind(size)`",
            ),
            (
                wire("absent, by_hand = resize"),
                "a layout carries a method",
            ),
            (wire("absent, absent"), "given twice"),
        ];
        for (entry, expected) in cases {
            let Err(error) = group_of(&entry) else {
                panic!("{entry}: read");
            };
            assert!(error.to_string().contains(expected), "{entry}: {error}");
            // The method is on lines 4 to 6.
            assert!((4..=6).contains(&error.span().start().line), "{entry}");
        }
    }
}
