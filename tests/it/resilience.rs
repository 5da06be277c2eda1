//! A proxy that starts late, restarts, goes away and comes back with other
//! versions; retries that never repeat a mutation; deadlines; many tasks on
//! one client. Every client here has the default settings. Over Unix
//! sockets here, and over named pipes when built for Windows.

mod deadlines;
mod outages;
mod restarts;
mod retries;
mod sharing;
mod startup;

use std::time::Duration;

use crate::common::node::FakeNode;
use csi_proxy_client::{
    health::VersionChange, ApiGroup, ApiVersion as V, CsiProxy, CsiProxyBuilder, Result,
};

/// A node whose proxy serves `group` at `version`, and a client with every
/// default: the tests here hold for what drivers get without tuning
/// anything.
async fn serving(group: ApiGroup, version: V) -> (FakeNode, CsiProxy) {
    let node = FakeNode::serving([(group, version)]).await;
    let proxy = node.client().await;
    (node, proxy)
}

/// Connects `client` with `require(Disk)`, waiting up to `wait` for it.
async fn connect_requiring_disk(client: CsiProxyBuilder, wait: Duration) -> Result<CsiProxy> {
    client
        .require(ApiGroup::Disk)
        .wait_for_proxy(wait)
        .connect()
        .await
}

/// The changes received so far, as (from, to).
fn received(
    changes: &mut tokio::sync::broadcast::Receiver<VersionChange>,
) -> Vec<(Option<V>, Option<V>)> {
    let mut seen = Vec::new();
    while let Ok(change) = changes.try_recv() {
        seen.push((change.from, change.to));
    }
    seen
}
