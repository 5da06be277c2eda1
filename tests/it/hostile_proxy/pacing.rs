//! Endpoints no call gets through (GOAWAY at once, closed after the
//! handshake, HTTP/1) and a backend that never sends: looked at on a
//! schedule, never in a loop, with no tasks piling up, and a call told the
//! failure it met rather than a bare timeout.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::{Endpoint, Raw};
use crate::common::TestNode;
use csi_proxy_client::{
    api::{DiskApi, DiskLocation},
    async_trait, ApiGroup, Backends, CallOptions, CsiProxy, Error, Operation, Result,
};

/// A default client of `node` for disk only, connected while the endpoint
/// answers.
async fn disk_client(node: &TestNode) -> CsiProxy {
    let client = node.client_builder().groups([ApiGroup::Disk]);
    client.connect().await.unwrap()
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// Looks at most every 20 ms doubling to 250 ms: in `secs` seconds, at
/// most this many connections (with room for a caller's and the
/// background's looks side by side, and a slow machine).
fn paced_connections(secs: u64) -> usize {
    (6 + 4 * secs as usize) * 2 + 4
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_that_says_goaway_at_once_is_neither_spun_on_nor_multiplied() {
    let node = TestNode::new();
    let endpoint = Endpoint::raw(&node, Raw::GoAwayAfterSettings).await;
    let proxy = disk_client(&node).await;
    let tasks_at_start = alive_tasks();

    // A call: refused unprocessed, or sent on a connection already gone,
    // on the schedule only, and answered with that failure (not sent).
    let hasty = proxy.with_call_options(CallOptions::default().deadline(Duration::from_secs(2)));
    let before = endpoint.count();
    let err = hasty
        .disk()
        .unwrap()
        .list_disk_locations()
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Transport {
                maybe_sent: false,
                ..
            }
        ),
        "{err}"
    );
    let during = endpoint.count() - before;
    assert!(
        during <= paced_connections(2),
        "{during} connections in 2 s"
    );

    // Idle: the client looks on its schedule, not in a loop.
    let before = endpoint.count();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let idle = endpoint.count() - before;
    assert!(idle <= paced_connections(3), "{idle} connections in 3 s");
    assert!(idle >= 2, "it keeps looking: {idle}");
    let tasks = alive_tasks();
    assert!(
        tasks <= tasks_at_start + 8,
        "{tasks_at_start} -> {tasks} tasks"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_that_closes_after_the_handshake_is_neither_spun_on_nor_multiplied() {
    let node = TestNode::new();
    let endpoint = Endpoint::raw(&node, Raw::CloseAfterHandshake).await;
    let proxy = disk_client(&node).await;
    let tasks_at_start = alive_tasks();

    let before = endpoint.count();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let idle = endpoint.count() - before;
    assert!(idle <= paced_connections(3), "{idle} connections in 3 s");
    let tasks = alive_tasks();
    assert!(
        tasks <= tasks_at_start + 8,
        "{tasks_at_start} -> {tasks} tasks"
    );

    // A call ends at its deadline, with the failure it met rather than a
    // bare timeout, having connected on the schedule only.
    let hasty = proxy.with_call_options(CallOptions::default().deadline(Duration::from_secs(1)));
    let before = endpoint.count();
    let err = hasty
        .disk()
        .unwrap()
        .list_disk_locations()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err}");
    let during = endpoint.count() - before;
    assert!(
        during <= paced_connections(1),
        "{during} connections in 1 s"
    );
}

#[tokio::test]
async fn an_endpoint_that_speaks_http1_is_no_proxy() {
    let node = TestNode::new();
    let _endpoint = Endpoint::raw(&node, Raw::Http1).await;
    let err = node
        .client_builder()
        .groups([ApiGroup::Disk])
        .require(ApiGroup::Disk)
        .retry(csi_proxy_client::RetryPolicy::none())
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err}");
    let text = format!("{err} {:?}", std::error::Error::source(&err));
    assert!(text.contains("SETTINGS"), "{text}");
}

/// A disk backend whose every call fails as certainly not sent.
#[derive(Default)]
struct NeverSent {
    calls: AtomicUsize,
}

#[async_trait]
impl DiskApi for NeverSent {
    async fn list_disk_locations(&self) -> Result<std::collections::BTreeMap<u32, DiskLocation>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Err(Error::Transport {
            address: "mock".into(),
            operation: Some(Operation::ListDiskLocations),
            maybe_sent: false,
            source: Arc::new(std::io::Error::other("the mock sends nothing")),
        })
    }
}

#[tokio::test]
async fn a_backend_that_keeps_failing_unsent_is_paced_and_its_failure_reported() {
    let mock = Arc::new(NeverSent::default());
    let proxy = CsiProxy::from_backends(Backends {
        disk: Some(mock.clone()),
        ..Backends::default()
    })
    .with_call_options(CallOptions::default().deadline(Duration::from_secs(1)));
    let err = proxy
        .disk()
        .unwrap()
        .list_disk_locations()
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Transport {
                maybe_sent: false,
                ..
            }
        ),
        "the real failure, not a bare timeout: {err}"
    );
    let calls = mock.calls.load(Ordering::SeqCst);
    // 0, 20, 40, 80, 160, 250, 250, 250 ms: about eight in a second.
    assert!((3..=12).contains(&calls), "{calls} calls in 1 s");
}
