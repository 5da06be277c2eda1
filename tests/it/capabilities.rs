//! Every operation at every one of the 23 wire versions, over real gRPC:
//! each either reaches the RPC the capability table names in that version's
//! generated service, is emulated through the RPCs the table says, or fails
//! with `Unsupported` without sending anything.

use std::collections::BTreeSet;

use crate::common::{every_version, TestNode, STUB_MESSAGE};
use csi_proxy_client::testing::sample;
use csi_proxy_client::{ApiGroup, Code, Error, Operation, Support};

fn service(group: ApiGroup) -> &'static str {
    match group {
        ApiGroup::Disk => "Disk",
        ApiGroup::Filesystem => "Filesystem",
        ApiGroup::Smb => "Smb",
        ApiGroup::Volume => "Volume",
        ApiGroup::Iscsi => "Iscsi",
        ApiGroup::System => "System",
    }
}

#[tokio::test]
async fn every_operation_at_every_version_goes_where_the_table_says() {
    let node = TestNode::serving_everything().await;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for (group, version) in every_version() {
        // The RPCs the version's operations reached natively, as sent.
        let mut reached = BTreeSet::new();
        let proxy = node.connect(group, version).await;
        assert_eq!(proxy.version(group), Some(version));
        for op in Operation::of_group(group) {
            let before = node.paths().len();
            let result = sample::call(&proxy, op).await;
            let sent = node.paths()[before..].to_vec();
            let rpc_path = |rpc: &str| format!("/{version}.{}/{rpc}", service(group));
            match op.support(version) {
                Support::Native(rpc) => {
                    // The stub service of exactly this version answered.
                    match &result {
                        Err(Error::Host {
                            code: Code::Unimplemented,
                            message,
                            ..
                        }) => {
                            assert_eq!(message, STUB_MESSAGE, "{group} {version} {op}")
                        }
                        other => panic!("{group} {version} {op}: {other:?}"),
                    }
                    assert_eq!(sent, [rpc_path(rpc)], "{group} {version} {op}");
                    reached.insert(rpc.to_owned());
                }
                Support::Emulated => {
                    assert_eq!(op, Operation::GetDiskNumberByName);
                    assert_eq!(sent, [rpc_path("ListDiskIDs")], "{version}");
                }
                Support::Unsupported => {
                    match result {
                        Err(Error::Unsupported {
                            operation,
                            served,
                            needed,
                        }) => {
                            assert_eq!((operation, served), (op, version));
                            assert_eq!(Some(needed), op.available_since());
                            assert!(needed > version);
                        }
                        other => panic!("{group} {version} {op}: {other:?}"),
                    }
                    assert!(sent.is_empty(), "{group} {version} {op} sent {sent:?}");
                }
                other => panic!("{op}: a kind of support this test does not know: {other:?}"),
            }
        }
        // None skipped: the calls reached every RPC the version's `.proto`
        // (the wire contract, not the table) has, and no other.
        let file = root.join(format!("proto/{group}/{version}/api.proto"));
        let proto = std::fs::read_to_string(&file).unwrap();
        let in_proto: BTreeSet<String> = rpcs_of(&proto).into_iter().map(str::to_owned).collect();
        assert_eq!(
            reached,
            in_proto,
            "{group} {version}: reached, and {}",
            file.display()
        );
    }
}

/// The RPC names of a `.proto` file: its `rpc Name(` lines.
fn rpcs_of(proto: &str) -> Vec<&str> {
    proto
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("rpc "))
        .filter_map(|rest| rest.split_once('('))
        .map(|(name, _)| name.trim())
        .collect()
}

/// The other half of the table's check: every RPC a version's `.proto` has
/// (the wire contract, which wire-check holds to CSI Proxy's) is the
/// native RPC of one of the group's operations at that version. A row that
/// says `No` where the version has the RPC would make the client refuse a
/// call the proxy serves, and only this test sees it.
#[test]
fn every_rpc_a_version_has_is_an_operation_of_that_version() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut checked = 0;
    for (group, version) in every_version() {
        let file = root.join(format!("proto/{group}/{version}/api.proto"));
        let proto = std::fs::read_to_string(&file).unwrap();
        let rpcs = rpcs_of(&proto);
        assert!(!rpcs.is_empty(), "{}", file.display());
        for rpc in rpcs {
            let served = Operation::of_group(group)
                .any(|op| matches!(op.support(version), Support::Native(name) if name == rpc));
            assert!(served, "{group} {version}: {rpc} is no operation's RPC");
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked}");
}

#[test]
fn the_rpcs_of_a_proto_are_read_from_its_rpc_lines() {
    let proto =
        "service Disk {\n  // rpc Old(\n  rpc Rescan(RescanRequest) returns (RescanResponse) {}\n}";
    assert_eq!(rpcs_of(proto), ["Rescan"]);
}
