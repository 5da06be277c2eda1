//! Reading the RPC catalogue (`catalogue/<group>.rs`, the form is in
//! `catalogue/README.md`) into plain values the renderers walk.

mod parse;

use proc_macro2::TokenStream;
use syn::{Attribute, Block, Expr, Ident, LitStr, Type, UseTree};

/// One group's catalogue.
pub struct Group {
    /// The file's name without `.rs`: `volume`.
    pub file: String,
    /// What the entries' types and expressions name, as the file's `use`
    /// lines say: each name and the path of the module it is in.
    pub imports: Vec<Import>,
    /// The trait's docs.
    pub docs: Vec<Attribute>,
    /// `VolumeApi`.
    pub api: Ident,
    /// The `ApiGroup` variant: `Volume`.
    pub group: Ident,
    /// The group's own operation enum: `VolumeOperation`.
    pub group_operation: Ident,
    /// The group's message layouts.
    pub layouts: Vec<Layout>,
    pub methods: Vec<Method>,
}

/// A name a `use` brings in, and the path of its module.
pub type Import = (Ident, Vec<Ident>);

/// A message layout: the versions of a group whose messages are the same
/// on the wire.
pub struct Layout {
    pub docs: Vec<Attribute>,
    /// `NumberedVolume`: the adapter's and the fake proxy's server's name.
    pub name: Ident,
    /// The generated messages of one of its versions.
    pub wire: syn::Path,
    /// Whether the fake proxy's server keeps the release it stands for
    /// (`server_release`), for `by_hand` answers that differ by release.
    pub server_release: bool,
}

/// One method of the trait, and the operations it is.
pub struct Method {
    pub docs: Vec<Attribute>,
    pub name: Ident,
    pub args: Vec<(Ident, Type)>,
    /// What the method answers on success.
    pub answer: Type,
    /// For a method of several operations: the expression that picks one.
    pub select: Option<Expr>,
    pub operations: Vec<OperationRow>,
    /// The argument check, an expression of type `Result<()>`.
    pub check: Option<Expr>,
    /// The trait's default body, when it is not `NotImplemented`.
    pub default: Option<Block>,
    /// How each layout carries it; a layout not named serves it by the
    /// trait's default.
    pub carried: Vec<(Ident, Carried)>,
}

/// How a layout carries a method.
pub enum Carried {
    /// No version of the layout has it.
    Absent,
    /// By the adapter's and the server's own method of this name.
    ByHand(Ident),
    /// In one request and its answer.
    Messages(Box<Messages>),
}

/// A request, each field made of an argument, and its answer, each field
/// part of what the method answers.
pub struct Messages {
    pub request: Ident,
    pub fields: Vec<RequestField>,
    /// Fields only the client sets (the server ignores them).
    pub client_fields: Vec<(Ident, Expr)>,
    pub response: Ident,
    pub answer_fields: Vec<AnswerField>,
    /// What the method answers, made of the answer fields; none: the one
    /// answer field (the legacy `error` aside), or `()`.
    pub answer: Option<Expr>,
}

/// An answer field and its kind (none: as it is).
pub type AnswerField = (Ident, Option<Type>);

/// A request field made of an argument, by a field kind or as it is.
pub struct RequestField {
    pub field: Ident,
    pub kind: Option<syn::Path>,
    pub arg: Ident,
}

/// The kind of the legacy `error` field of the oldest answers.
pub const LEGACY_ERROR: &str = "LegacyError";

impl Messages {
    /// The answer fields other than the legacy `error`.
    pub fn value_fields(&self) -> impl Iterator<Item = &AnswerField> {
        (self.answer_fields.iter()).filter(|(_, kind)| !kind.as_ref().is_some_and(is_legacy_error))
    }

    /// What the method answers, made of the answer fields.
    pub fn answer(&self) -> TokenStream {
        if let Some(answer) = &self.answer {
            return quote::quote!(#answer);
        }
        let fields: Vec<_> = self.value_fields().map(|(field, _)| field).collect();
        match fields.as_slice() {
            [] => quote::quote!(()),
            [one] => quote::quote!(#one),
            _ => panic!(
                "{}: an answer of several fields says what it makes: `answer = Answer {{ ... }}`",
                self.response
            ),
        }
    }
}

/// Whether an answer field is the legacy `error`.
pub fn is_legacy_error(kind: &Type) -> bool {
    matches!(kind, Type::Path(p) if p.path.is_ident(LEGACY_ERROR))
}

/// One operation: its variant, its newest RPC name, its effect and its
/// support from each listed version on.
pub struct OperationRow {
    pub docs: Vec<Attribute>,
    pub variant: Ident,
    pub name: LitStr,
    pub effect: Ident,
    pub history: Vec<(Ident, Support)>,
    /// Whether an older version's answer to it is read by the release
    /// (`Operation::read_by_release`).
    pub read_by_release: bool,
}

/// How a version serves an operation.
pub enum Support {
    Native(LitStr),
    Emulated,
    No,
}

impl Method {
    /// `async fn name(&self, arg: Type, ...) -> Result<Answer>`
    pub fn signature(&self) -> TokenStream {
        let Method { name, answer, .. } = self;
        let args = self.args.iter().map(|(arg, ty)| quote::quote!(#arg: #ty));
        quote::quote!(async fn #name(&self #(, #args)*) -> Result<#answer>)
    }

    /// The signature, its arguments unnamed: a method that sends nothing.
    pub fn unnamed_signature(&self) -> TokenStream {
        let Method { name, answer, .. } = self;
        let types = self.args.iter().map(|(_, ty)| ty);
        quote::quote!(async fn #name(&self #(, _: #types)*) -> Result<#answer>)
    }

    /// The expression of the operation the method runs as.
    pub fn operation(&self) -> TokenStream {
        match (&self.select, self.operations.as_slice()) {
            (Some(select), _) => quote::quote!(#select),
            (None, [one]) => {
                let variant = &one.variant;
                quote::quote!(Operation::#variant)
            }
            (None, _) => panic!(
                "{}: a method of several operations picks one with `#[pick(expression)]`",
                self.name
            ),
        }
    }
}

/// Reads `catalogue/<file>.rs`.
pub fn read(path: &std::path::Path) -> Group {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let file = path.file_stem().unwrap().to_string_lossy().into_owned();
    let syntax = located(path, syn::parse_file(&text));
    located(path, parse::group(file, &syntax)).checked()
}

/// What was read, or a panic that names where the file is wrong.
fn located<T>(path: &std::path::Path, read: syn::Result<T>) -> T {
    read.unwrap_or_else(|e| {
        let at = e.span().start();
        panic!("{}:{}:{}: {e}", path.display(), at.line, at.column + 1)
    })
}

impl Group {
    /// The group's name as the docs write it.
    pub fn display_name(&self) -> String {
        match self.file.as_str() {
            "iscsi" => "iSCSI".to_owned(),
            "smb" => "SMB".to_owned(),
            other => other.to_owned(),
        }
    }

    /// The imports of the trait's side: what signatures, checks, defaults
    /// and operation picks name. Those of `crate::adapter` are the
    /// layouts' alone.
    pub fn interface_imports(&self) -> impl Iterator<Item = &Import> {
        let layouts =
            |module: &[Ident]| matches!(module, [c, a, ..] if c == "crate" && a == "adapter");
        (self.imports.iter()).filter(move |(_, module)| !layouts(module))
    }

    /// The group, once each method's layouts are known to be the group's,
    /// each named once, and each unnamed one served by a default.
    fn checked(self) -> Self {
        for method in &self.methods {
            for layout in &self.layouts {
                let named = method
                    .carried
                    .iter()
                    .filter(|(l, _)| *l == layout.name)
                    .count();
                match (named, &method.default) {
                    (1, _) | (0, Some(_)) => {}
                    (0, None) => panic!(
                        "catalogue/{}.rs, {}: layout {} does not carry it",
                        self.file, method.name, layout.name
                    ),
                    _ => panic!(
                        "catalogue/{}.rs, {}: layout {} is named twice",
                        self.file, method.name, layout.name
                    ),
                }
            }
            for (layout, _) in &method.carried {
                if !self.layouts.iter().any(|l| l.name == *layout) {
                    panic!(
                        "catalogue/{}.rs, {}: no layout {layout} in the group",
                        self.file, method.name
                    );
                }
            }
        }
        self
    }
}

/// The names a `use` brings in, each with the path of its module.
pub fn names(tree: &UseTree, module: &[Ident]) -> Vec<Import> {
    match tree {
        UseTree::Path(p) => names(&p.tree, &[module, std::slice::from_ref(&p.ident)].concat()),
        UseTree::Name(n) => vec![(n.ident.clone(), module.to_vec())],
        UseTree::Group(g) => g.items.iter().flat_map(|t| names(t, module)).collect(),
        UseTree::Rename(_) | UseTree::Glob(_) => panic!("the catalogue names each import as it is"),
    }
}
