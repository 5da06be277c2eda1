//! The capability table of `docs/versions.md`, made of each operation's
//! rows in the catalogue: one table per group, one row per operation, one
//! column per version of the group (the versions are the registry's, as
//! the crate built from it lists them).

use std::path::Path;

use csi_proxy_client::{ApiGroup, ApiVersion};

use super::catalogue::{Group, OperationRow, Support};

/// The page the table is part of.
pub const PAGE: &str = "docs/versions.md";

/// The lines that open and close the generated part of the page.
const BEGIN: &str = "<!-- @generated from catalogue/ by `CSI_PROXY_REGENERATE=1 cargo test --test generated_code`: do not edit the tables below. -->";
const END: &str = "<!-- end of the generated tables -->";

/// The page with the tables between its markers made of `groups`.
pub fn page(root: &Path, groups: &[Group]) -> String {
    let path = root.join(PAGE);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{PAGE}: {e}"));
    let begin = text
        .find(BEGIN)
        .unwrap_or_else(|| panic!("{PAGE} has no line `{BEGIN}`"));
    let end = text
        .find(END)
        .filter(|&end| end > begin)
        .unwrap_or_else(|| panic!("{PAGE} has no line `{END}` after `{BEGIN}`"));
    let tables: Vec<String> = groups.iter().map(table).collect();
    format!(
        "{}{BEGIN}\n\n{}\n\n{}",
        &text[..begin],
        tables.join("\n\n"),
        &text[end..]
    )
}

/// One group's heading and table: `✓` native (with the RPC's name where
/// the version names it otherwise), `emulated`, or `–`.
fn table(group: &Group) -> String {
    let api_group: ApiGroup = (group.file.parse())
        .unwrap_or_else(|_| panic!("catalogue/{}.rs: no such group", group.file));
    let versions = api_group.versions();
    let mut out = format!("**{api_group}**\n\n| operation |");
    for version in versions {
        out.push_str(&format!(" {version} |"));
    }
    out.push_str(&format!("\n|---|{}", "---|".repeat(versions.len())));
    for row in group.methods.iter().flat_map(|m| &m.operations) {
        let name = row.name.value();
        out.push_str(&format!("\n| {name} |"));
        for &version in versions {
            let cell = match support(row, version) {
                Some(Support::Native(rpc)) if rpc.value() == name => "✓".to_owned(),
                Some(Support::Native(rpc)) => format!("✓ `{}`", rpc.value()),
                Some(Support::Emulated) => "emulated".to_owned(),
                Some(Support::No) | None => "–".to_owned(),
            };
            out.push_str(&format!(" {cell} |"));
        }
    }
    out
}

/// How `version` serves the operation: the row of the newest version up
/// to it, as `Operation::support` reads the same rows.
fn support(row: &OperationRow, version: ApiVersion) -> Option<&Support> {
    (row.history.iter().rev())
        .find(|(since, _)| {
            let since: ApiVersion = (since.to_string().to_lowercase().parse())
                .unwrap_or_else(|_| panic!("{}: no version {since}", row.variant));
            since <= version
        })
        .map(|(_, support)| support)
}
