//! The vocabulary layer stays a layer: the modules that name things every
//! other layer speaks of (versions, groups, operations, errors, ...)
//! import nothing above them, and no circle runs among them. A module
//! that reaches up from here (to the transport, the client, the crate
//! root's re-exports) drags what is above into everything below. Above
//! it, the layers under the client ([`UNDER_THE_CLIENT`]) keep their
//! order too: the availability rules know nothing of negotiation, and
//! neither knows the client.
//!
//! The test reads the sources: every `crate::<module>` path in a
//! module's code (its own submodules included; comments, doc links and
//! `#[cfg(test)]` items left out) is an edge, and each edge must go down
//! the list.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The vocabulary modules, lowest first: each may use only the modules
/// listed before it (and its own submodules). A module that is not here
/// is above all of them; a name reached through the crate root
/// (`crate::HostCause`) is too, since the root re-exports from every
/// layer.
///
/// - `version`: `ApiVersion`, `Stability`; needs nothing.
/// - `group`: `ApiGroup`.
/// - `registry`: the wire facts per group-version (and so
///   `ApiGroup::versions`).
/// - `capability`: `Operation`, `Support`.
/// - `host_cause`: `HostCause`.
/// - `server_owner`: `ServerOwner` (who serves an endpoint), which
///   `Error::UntrustedServer` names.
/// - `served_by`: `ServedBy` (what serves a group), which negotiation,
///   metrics and health name.
/// - `error`: `Error`, `ErrorKind`, `Delivery`, `ConnectionError`, and
///   the `FromStr` of the names whose parse fails with an `Error`.
/// - `csi_status`: the CSI codes of an `Error`.
const VOCABULARY: &[&str] = &[
    "version",
    "group",
    "registry",
    "capability",
    "host_cause",
    "server_owner",
    "served_by",
    "error",
    "csi_status",
];

/// The layers above the vocabulary and under the client, lowest first,
/// each using only the vocabulary and the layers listed before it:
///
/// - `retry`: `RetryPolicy`, the schedule of attempts.
/// - `transport`: pipes and sockets, server trust, the HTTP/2 channel.
/// - `metrics`: the names and recorders of the measurements.
/// - `availability`: when to look for the proxy, how long to wait.
/// - `negotiate`: per group, the best version the node serves (and the
///   waits for it, on the availability rules).
const UNDER_THE_CLIENT: &[&str] = &["retry", "transport", "metrics", "availability", "negotiate"];

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The files of module `name`: `src/<name>.rs`, and everything under
/// `src/<name>/` but its test modules (`tests.rs`, `tests/`), which the
/// crate declares `#[cfg(test)] mod tests;` (tests may use anything).
fn files_of(name: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for path in entries.flatten().map(|entry| entry.path()) {
            if path.file_stem().is_some_and(|stem| stem == "tests") {
                continue;
            }
            if path.is_dir() {
                walk(&path, files);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let mut files = Vec::new();
    let file = src().join(format!("{name}.rs"));
    if file.exists() {
        files.push(file);
    }
    walk(&src().join(name), &mut files);
    files.sort();
    files
}

/// The code of a source file: without comments (doc links name what they
/// like) and without `#[cfg(test)]` items (tests may use anything).
fn code_of(text: &str) -> String {
    let mut code = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            skip_item(&mut lines);
            continue;
        }
        let line = line.split("//").next().unwrap_or("");
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// Skips the item after an attribute line: up to its `;`, or through the
/// braces it opens.
fn skip_item<'a>(lines: &mut impl Iterator<Item = &'a str>) {
    let mut depth = 0usize;
    let mut opened = false;
    for line in lines {
        let code = line.split("//").next().unwrap_or("");
        for c in code.chars() {
            match c {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        if (opened && depth == 0) || (!opened && code.trim_end().ends_with(';')) {
            return;
        }
    }
}

/// The first segments of the `crate::` paths in `code`: `crate::a::B`
/// gives `a`, `crate::{a::B, c}` gives `a` and `c`, and a name reached
/// through the root (`crate::HostCause`) gives `crate root (HostCause)`.
fn modules_used(code: &str) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        // `$crate::` is a macro's, and `some_crate::` another crate's.
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        let heads: Vec<&str> = match rest.strip_prefix('{') {
            Some(list) => {
                let list = &list[..list.find('}').unwrap_or(list.len())];
                list.split(',').map(str::trim).collect()
            }
            None => vec![rest],
        };
        for head in heads {
            let name: String = head
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if name.is_empty() {
                continue;
            }
            if name.starts_with(|c: char| c.is_uppercase()) || !src_module_exists(&name) {
                used.insert(format!("crate root ({name})"));
            } else {
                used.insert(name);
            }
        }
    }
    used
}

fn src_module_exists(name: &str) -> bool {
    src().join(format!("{name}.rs")).exists() || src().join(name).join("mod.rs").exists()
}

/// Each module's edges to other modules, with the files that make each.
fn edges(modules: &[&'static str]) -> BTreeMap<&'static str, BTreeMap<String, BTreeSet<String>>> {
    let mut edges = BTreeMap::new();
    for &module in modules {
        let files = files_of(module);
        assert!(!files.is_empty(), "no source for module {module}");
        let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let shown = file
                .strip_prefix(src().parent().unwrap())
                .unwrap_or(&file)
                .display()
                .to_string();
            for used in modules_used(&code_of(&text)) {
                if used != module {
                    out.entry(used).or_default().insert(shown.clone());
                }
            }
        }
        edges.insert(module, out);
    }
    edges
}

/// A circle among the modules of `edges`, if there is one.
fn circle(edges: &BTreeMap<&'static str, BTreeMap<String, BTreeSet<String>>>) -> Option<String> {
    fn visit<'a>(
        module: &'a str,
        edges: &'a BTreeMap<&'static str, BTreeMap<String, BTreeSet<String>>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<String> {
        if let Some(start) = path.iter().position(|m| *m == module) {
            let mut circle = path[start..].to_vec();
            circle.push(module);
            return Some(circle.join(" -> "));
        }
        if !done.insert(module) {
            return None;
        }
        path.push(module);
        for next in edges.get(module).into_iter().flat_map(|out| out.keys()) {
            if let Some(found) = visit(next, edges, path, done) {
                return Some(found);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|module| visit(module, edges, &mut Vec::new(), &mut done))
}

/// The edges of `checked` that do not go down `layers` (lowest first), in
/// words, and a circle among them if there is one.
fn wrong_edges(layers: &[&'static str], checked: &[&'static str]) -> Vec<String> {
    let edges = edges(checked);
    let mut wrong = Vec::new();
    for &module in checked {
        let rank = layers.iter().position(|m| *m == module).unwrap();
        for (used, files) in &edges[module] {
            let files = files.iter().cloned().collect::<Vec<_>>().join(", ");
            match layers.iter().position(|m| m == used) {
                None => wrong.push(format!(
                    "{module} uses {used}, which is above these layers ({files})"
                )),
                Some(at) if at >= rank => wrong.push(format!(
                    "{module} uses {used}, which is listed above it ({files})"
                )),
                Some(_) => {}
            }
        }
    }
    if let Some(circle) = circle(&edges) {
        wrong.push(format!("a circle: {circle}"));
    }
    wrong
}

#[test]
fn the_vocabulary_imports_nothing_above_it_and_has_no_circle() {
    let wrong = wrong_edges(VOCABULARY, VOCABULARY);
    assert!(
        wrong.is_empty(),
        "the vocabulary layer reaches up or runs in a circle:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_layers_under_the_client_import_nothing_above_them() {
    let layers = [VOCABULARY, UNDER_THE_CLIENT].concat();
    let wrong = wrong_edges(&layers, UNDER_THE_CLIENT);
    assert!(
        wrong.is_empty(),
        "a layer under the client reaches up or runs in a circle:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_reader_sees_paths_through_lists_and_the_root_but_not_comments() {
    let code = code_of(
        "use crate::{error::Error, version};\n\
         /// [`X`](crate::transport::ServerTrust)\n\
         fn f() -> crate::HostCause { todo!() } // crate::client\n\
         #[cfg(test)]\n\
         mod tests {\n    use crate::negotiate;\n}\n\
         #[cfg(test)]\n\
         use crate::metrics;\n\
         $crate::x(); other_crate::y();\n",
    );
    let used: Vec<String> = modules_used(&code).into_iter().collect();
    assert_eq!(used, ["crate root (HostCause)", "error", "version"]);
}
