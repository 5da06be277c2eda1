//! The source paths the newcomer's documents name exist: ARCHITECTURE.md
//! and CONTRIBUTING.md are read first, and a path that moved sends a
//! reader looking for what is not there.

use std::path::{Path, PathBuf};

const DOCUMENTS: [&str; 2] = ["ARCHITECTURE.md", "CONTRIBUTING.md"];
const ROOTS: [&str; 8] = [
    "src/",
    "catalogue/",
    "tests/",
    "examples/",
    "docs/",
    "scripts/",
    "proto/",
    "deploy/",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `backticked` spans of a line.
fn spans(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

/// Whether `name` (a file, or a folder ending in `/`) is somewhere under
/// `folder`.
fn found_under(folder: &Path, name: &str) -> bool {
    let name = name.trim_end_matches('/');
    if folder.join(name).exists() {
        return true;
    }
    let Ok(entries) = std::fs::read_dir(folder) else {
        return false;
    };
    entries
        .flatten()
        .filter(|entry| entry.path().is_dir())
        .any(|entry| found_under(&entry.path(), name))
}

fn looks_like_a_source_name(span: &str) -> bool {
    let plain = span
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/' | '.'));
    plain && (span.ends_with(".rs") || span.ends_with('/')) && !span.contains("..")
}

#[test]
fn every_path_the_newcomer_documents_name_exists() {
    let mut missing = Vec::new();
    for document in DOCUMENTS {
        let text = std::fs::read_to_string(root().join(document)).unwrap();
        for (number, line) in text.lines().enumerate() {
            // A row that starts at a folder names its files relative to it.
            let mut folder: Option<PathBuf> = None;
            for span in spans(line) {
                // `<group>` and the like stand for any name.
                if span.contains(['<', '*']) {
                    continue;
                }
                if ROOTS.iter().any(|r| span.starts_with(r)) {
                    let path = span.split([' ', ':', '#']).next().unwrap_or(span);
                    if !root().join(path).exists() {
                        missing.push(format!("{document}:{}: {path}", number + 1));
                    }
                    // Later names in the line are beside it, or in it.
                    let full = root().join(path);
                    folder = match path.ends_with('/') {
                        true => Some(full),
                        false => full.parent().map(Path::to_path_buf),
                    };
                } else if let Some(folder) = &folder {
                    if looks_like_a_source_name(span) && !found_under(folder, span) {
                        missing.push(format!(
                            "{document}:{}: {span} (under {})",
                            number + 1,
                            folder.strip_prefix(root()).unwrap_or(folder).display()
                        ));
                    }
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "named but not there:\n{}",
        missing.join("\n")
    );
}
