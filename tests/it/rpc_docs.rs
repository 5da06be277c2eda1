//! Each RPC of the lists (`src/rpcs/<group>.rs`) is documented where a
//! reader of the host backend looks for it: a row of its own in the table
//! of operations of docs/host-process.md, which says how the backend
//! serves it and how far that was verified. A method added to a list
//! without its row fails here, as one without its capability row fails
//! `the_documented_capability_table_is_the_code_table`.

use std::path::PathBuf;

fn read(relative: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The methods of a group's RPC list: each entry's `fn name(&self`.
fn methods_of(list: &str) -> Vec<String> {
    list.lines()
        .filter_map(|line| line.trim_start().strip_prefix("fn "))
        .filter_map(|rest| rest.split_once("(&self"))
        .map(|(name, _)| name.to_owned())
        .collect()
}

#[test]
fn every_rpc_has_a_row_in_the_host_backend_table() {
    let doc = read("docs/host-process.md");
    let mut checked = 0;
    for group in ["disk", "filesystem", "smb", "volume", "iscsi", "system"] {
        let methods = methods_of(&read(&format!("src/rpcs/{group}.rs")));
        assert!(!methods.is_empty(), "no methods found in the {group} list");
        for method in methods {
            let row = format!("| {group} | `{method}` |");
            let rows = doc.lines().filter(|line| line.starts_with(&row)).count();
            assert_eq!(rows, 1, "docs/host-process.md: {row} ...");
            checked += 1;
        }
    }
    assert_eq!(
        checked,
        csi_proxy_client::Operation::ALL.len() - 1,
        "one method is two operations"
    );
}

#[test]
fn the_methods_of_a_list_are_read_from_its_entries() {
    let list = "            /// Docs.\n            fn rescan(&self) -> () = {\n\
                /// fn not_this(&self)\n            fn mount_volume(&self, volume: &VolumeId) -> ()";
    assert_eq!(methods_of(list), ["rescan", "mount_volume"]);
}
