//! Each RPC of the catalogue (`catalogue/<group>.rs`) is documented where a
//! reader of the host backend looks for it: a row of its own in the table
//! of operations of docs/host-process.md, which says how the backend
//! serves it and how far that was verified. A method added to the catalogue
//! without its row fails here (its row of the capability table of
//! docs/versions.md is generated with the code, by `generated_code`).

use std::path::PathBuf;

fn read(relative: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The methods of a group's catalogue: each `async fn name(`.
fn methods_of(list: &str) -> Vec<String> {
    list.lines()
        .filter_map(|line| line.trim_start().strip_prefix("async fn "))
        .filter_map(|rest| rest.split_once('('))
        .map(|(name, _)| name.to_owned())
        .collect()
}

/// The operation rows of a group's catalogue: its `#[operation(...)]`s.
fn operation_rows_of(list: &str) -> usize {
    list.lines()
        .filter(|line| line.trim_start().starts_with("#[operation("))
        .count()
}

#[test]
fn every_rpc_has_a_row_in_the_host_backend_table() {
    let doc = read("docs/host-process.md");
    let mut rows_read = 0;
    for group in ["disk", "filesystem", "smb", "volume", "iscsi", "system"] {
        let list = read(&format!("catalogue/{group}.rs"));
        let methods = methods_of(&list);
        assert!(
            !methods.is_empty(),
            "no methods found in the {group} catalogue"
        );
        for method in methods {
            let row = format!("| {group} | `{method}` |");
            let rows = doc.lines().filter(|line| line.starts_with(&row)).count();
            assert_eq!(rows, 1, "docs/host-process.md: {row} ...");
        }
        rows_read += operation_rows_of(&list);
    }
    // Every operation was read from the catalogue, so no method was missed.
    assert_eq!(rows_read, csi_proxy_client::Operation::ALL.len());
}

#[test]
fn methods_and_operation_rows_are_read_from_the_entries() {
    let list = "    /// Docs: async fn not_this(&self)\n\
                \x20   #[operation(Rescan, name = \"Rescan\", effect = Mutates)]\n\
                \x20   async fn rescan(&self) -> Result<()>;\n\
                \x20   // #[operation(NotThis)]\n\
                \x20   async fn mount_volume(\n\
                \x20       &self,\n\
                \x20       volume: &VolumeId,\n\
                \x20   ) -> Result<()>;";
    assert_eq!(methods_of(list), ["rescan", "mount_volume"]);
    assert_eq!(operation_rows_of(list), 1);
}
