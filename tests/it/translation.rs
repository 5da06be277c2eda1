//! What each adapter family puts on the wire, and what it makes of every
//! answer, including malformed ones, checked byte for byte against a
//! scripted gRPC server. One module per API group, and one for the
//! statuses the proxy fails with, which every group shares.

mod disk;
mod errors;
mod filesystem;
mod iscsi;
mod smb;
mod system;
mod volume;

use crate::common::TestNode;
use csi_proxy_client::{ApiGroup, ApiVersion, CsiProxy, Error, Operation};

/// A raw server for `group` `version` and a client pinned to it.
async fn pinned(
    group: ApiGroup,
    version: ApiVersion,
) -> (
    TestNode,
    csi_proxy_client::testing::ScriptedServer,
    CsiProxy,
) {
    let node = TestNode::new();
    let raw = node.raw(group, version).await;
    let proxy = node.connect(group, version).await;
    (node, raw, proxy)
}

fn assert_invalid_response<T: std::fmt::Debug>(result: Result<T, Error>, operation: Operation) {
    match result {
        Err(Error::InvalidResponse { operation: op, .. }) => assert_eq!(op, operation),
        other => panic!("expected InvalidResponse from {operation}, got {other:?}"),
    }
}
