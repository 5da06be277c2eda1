//! A small YAML writer for the manifests: block style only, keys in the
//! order given, strings quoted whenever a reader could take them for
//! anything but the same string. No dependency, and the same bytes for
//! the same input.

use std::fmt::Write as _;

/// A YAML node.
#[derive(Clone, Debug)]
pub(crate) enum Node {
    /// A string, written plain when that is unambiguous, else quoted.
    Str(String),
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A mapping, in this order; each entry may carry a comment above it.
    Map(Vec<Entry>),
    /// A sequence.
    List(Vec<Node>),
}

/// One key of a mapping.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    comment: Option<String>,
    key: String,
    value: Node,
}

/// A string node.
pub(crate) fn s(text: impl Into<String>) -> Node {
    Node::Str(text.into())
}

/// A list of strings.
pub(crate) fn strings<I, T>(items: I) -> Node
where
    I: IntoIterator<Item = T>,
    T: Into<String>,
{
    Node::List(items.into_iter().map(|item| s(item)).collect())
}

/// A mapping built entry by entry.
#[derive(Default)]
pub(crate) struct MapBuilder(Vec<Entry>);

impl MapBuilder {
    /// `key: value`.
    pub(crate) fn with(mut self, key: &str, value: Node) -> Self {
        self.0.push(Entry {
            comment: None,
            key: key.to_owned(),
            value,
        });
        self
    }

    /// `key: value`, with a comment above it.
    pub(crate) fn noted(mut self, comment: &str, key: &str, value: Node) -> Self {
        self.0.push(Entry {
            comment: Some(comment.to_owned()),
            key: key.to_owned(),
            value,
        });
        self
    }

    /// `key: value` when there is a value.
    pub(crate) fn maybe(self, key: &str, value: Option<Node>) -> Self {
        match value {
            Some(value) => self.with(key, value),
            None => self,
        }
    }

    /// The mapping.
    pub(crate) fn done(self) -> Node {
        Node::Map(self.0)
    }
}

/// A new mapping.
pub(crate) fn map() -> MapBuilder {
    MapBuilder::default()
}

/// `node` as a YAML document (a mapping at the top), with `header`
/// (comment lines, without their `#`) above it.
pub(crate) fn document(header: &str, node: &Node) -> String {
    let mut out = String::new();
    for line in header.lines() {
        comment_line(&mut out, 0, line);
    }
    match node {
        Node::Map(entries) => write_entries(&mut out, 0, entries, false),
        other => {
            let _ = writeln!(out, "{}", scalar(other));
        }
    }
    out
}

fn comment_line(out: &mut String, indent: usize, line: &str) {
    let pad = " ".repeat(indent);
    if line.is_empty() {
        let _ = writeln!(out, "{pad}#");
    } else {
        let _ = writeln!(out, "{pad}# {line}");
    }
}

/// A mapping's entries at `indent`; with `first_inline`, the first key
/// goes on the line already begun (a list item's `- `).
fn write_entries(out: &mut String, indent: usize, entries: &[Entry], first_inline: bool) {
    for (at, entry) in entries.iter().enumerate() {
        let inline = first_inline && at == 0;
        if let Some(comment) = &entry.comment {
            // A comment above a list item's first key goes above the `- `,
            // which the caller wrote already: keep it beside the key.
            for line in comment.lines() {
                if inline {
                    continue;
                }
                comment_line(out, indent, line);
            }
        }
        if !inline {
            out.push_str(&" ".repeat(indent));
        }
        out.push_str(&quote(&entry.key));
        out.push(':');
        write_value(out, indent, &entry.value);
    }
}

/// What follows `key:` at `indent`.
fn write_value(out: &mut String, indent: usize, value: &Node) {
    match value {
        Node::Map(entries) if entries.is_empty() => out.push_str(" {}\n"),
        Node::List(items) if items.is_empty() => out.push_str(" []\n"),
        Node::Map(entries) => {
            out.push('\n');
            write_entries(out, indent + 2, entries, false);
        }
        Node::List(items) => {
            out.push('\n');
            write_items(out, indent + 2, items);
        }
        scalar_node => {
            let _ = writeln!(out, " {}", scalar(scalar_node));
        }
    }
}

fn write_items(out: &mut String, indent: usize, items: &[Node]) {
    let pad = " ".repeat(indent);
    for item in items {
        match item {
            Node::Map(entries) if !entries.is_empty() => {
                if let Some(comment) = &entries[0].comment {
                    for line in comment.lines() {
                        comment_line(out, indent, line);
                    }
                }
                out.push_str(&pad);
                out.push_str("- ");
                write_entries(out, indent + 2, entries, true);
            }
            Node::List(inner) if !inner.is_empty() => {
                out.push_str(&pad);
                out.push_str("-\n");
                write_items(out, indent + 2, inner);
            }
            Node::Map(_) => {
                let _ = writeln!(out, "{pad}- {{}}");
            }
            Node::List(_) => {
                let _ = writeln!(out, "{pad}- []");
            }
            scalar_node => {
                let _ = writeln!(out, "{pad}- {}", scalar(scalar_node));
            }
        }
    }
}

fn scalar(node: &Node) -> String {
    match node {
        Node::Str(text) => quote(text),
        Node::Int(number) => number.to_string(),
        Node::Bool(value) => value.to_string(),
        Node::Map(_) | Node::List(_) => unreachable!("collections are written as blocks"),
    }
}

/// `text` as a YAML scalar that reads back as the same string: plain when
/// that is safe, else double-quoted with escapes.
pub(crate) fn quote(text: &str) -> String {
    if plain_is_safe(text) {
        return text.to_owned();
    }
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            '\t' => quoted.push_str("\\t"),
            c if c.is_control() || c == '\u{feff}' => {
                let _ = write!(quoted, "\\u{:04x}", u32::from(c));
            }
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// Whether `text` may be written plain: only characters that mean nothing
/// in a block scalar, a first character that starts no other kind of
/// node, and nothing a YAML 1.1 or 1.2 reader takes for a number, a
/// boolean or a null.
fn plain_is_safe(text: &str) -> bool {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "._/-\\:$()=@+, ".contains(c);
    let Some(first) = text.chars().next() else {
        return false;
    };
    let starts_well = first.is_ascii_alphabetic()
        || "/\\$".contains(first)
        || (first == '-' && text.chars().nth(1).is_some_and(|c| c == '-'));
    let keyword = [
        "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~",
    ]
    .contains(&text.to_ascii_lowercase().as_str());
    starts_well
        && !keyword
        && text.chars().all(allowed)
        && !text.ends_with([' ', ':'])
        && !text.contains(": ")
        && !text.contains(" -")
        && !text.contains(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_that_could_be_read_otherwise_are_quoted() {
        for text in [
            "", "true", "No", "~", "1.0", "0.1.0", "29643", "- x", "a: b", "a #b", "#x", "*x",
            "&x", "!x", "[x", "{x", "'x", "\"x", "x:", " x", "x ", "%x", "|", ">", "a\nb",
        ] {
            assert!(quote(text).starts_with('"'), "{text:?} -> {}", quote(text));
        }
        for text in [
            "windows",
            r"\\.\pipe\csi-proxy-disk-v1",
            r"unix://C:\csi\csi.sock",
            "--kind",
            "$(NODE_NAME)",
            r"NT AUTHORITY\SYSTEM",
            "registry.k8s.io/sig-storage/livenessprobe:v2.19.0",
        ] {
            assert_eq!(quote(text), text);
        }
        assert_eq!(quote("a\"b\\c"), r#""a\"b\\c""#);
    }

    #[test]
    fn blocks_nest_with_comments_and_empty_collections() {
        let node = map()
            .noted("why", "a", s("x"))
            .with(
                "b",
                Node::List(vec![
                    map()
                        .noted("first", "k", Node::Int(1))
                        .with("l", Node::Bool(true))
                        .done(),
                    s("plain"),
                ]),
            )
            .with("c", map().done())
            .with("d", Node::List(Vec::new()))
            .done();
        let text = document("head", &node);
        assert_eq!(
            text,
            "# head\n# why\na: x\nb:\n  # first\n  - k: 1\n    l: true\n  - plain\nc: {}\nd: []\n"
        );
    }
}
