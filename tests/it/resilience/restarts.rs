//! Readers that call without a pause while the proxy restarts, upgrades
//! and downgrades under them: no read fails, and every call goes to the
//! version served now, which `version_changes()` names.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::{received, serving};
use crate::common::node::FakeNode;
use crate::common::wait_until;
use csi_proxy_client::{ApiGroup, ApiVersion as V, CsiProxy, Error, RetryPolicy};

/// Runs `readers` tasks calling `ListDiskIDs` until told to stop; returns
/// (successes, failures).
fn spawn_readers(
    proxy: &CsiProxy,
    readers: usize,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinSet<(usize, Vec<Error>)> {
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..readers {
        let (proxy, stop) = (proxy.clone(), stop.clone());
        tasks.spawn(async move {
            let (mut ok, mut failed) = (0, Vec::new());
            while !stop.load(Ordering::Relaxed) {
                match proxy.disk().unwrap().list_disk_ids().await {
                    Ok(ids) => {
                        assert!(ids.contains_key(&1));
                        ok += 1;
                    }
                    Err(e) => failed.push(e),
                }
            }
            (ok, failed)
        });
    }
    tasks
}

/// Stops the readers, checks that no read failed, and returns how many
/// succeeded.
async fn stop_readers(
    stop: &AtomicBool,
    mut readers: tokio::task::JoinSet<(usize, Vec<Error>)>,
) -> usize {
    stop.store(true, Ordering::Relaxed);
    let (mut ok, mut failed) = (0, Vec::new());
    while let Some(done) = readers.join_next().await {
        let (o, f) = done.unwrap();
        ok += o;
        failed.extend(f);
    }
    assert!(
        failed.is_empty(),
        "{} of {} reads failed, e.g. {:?}",
        failed.len(),
        ok + failed.len(),
        failed.first()
    );
    ok
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_ride_through_fifty_restarts() {
    let served = [(ApiGroup::Disk, V::V1)];
    let mut node = FakeNode::serving(served).await;
    // Every restart here cuts a read in flight on purpose, so one read can
    // be cut several times in a row. Re-sending what may have been sent is
    // bounded by the retry policy (3 by default, which guards the proxy
    // against a request that crashes it each time); this test allows more.
    // Outages that are not timed against calls are ridden through with the
    // default policy (the tests below).
    let proxy = node
        .client_builder()
        .retry(RetryPolicy::default().with_max_retries(20))
        .connect()
        .await
        .unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let readers = spawn_readers(&proxy, 8, stop.clone());
    // Each restart comes after a read reached this incarnation of the proxy
    // (however slow the machine), so every restart cuts into live traffic.
    for _ in 0..50 {
        let before = node.fake.calls().len();
        wait_until("a read arrived", || node.fake.calls().len() != before).await;
        node.fake.restart(served).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    let ok = stop_readers(&stop, readers).await;
    assert!(ok > 0 && node.fake.calls().len() >= 50, "only {ok} reads");
    assert_eq!(proxy.version(ApiGroup::Disk), Some(V::V1));
    assert!(node.fake.calls().iter().all(|c| c.version == V::V1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_follow_an_upgrade_and_a_downgrade() {
    let (mut node, proxy) = serving(ApiGroup::Disk, V::V1BETA2).await;
    assert_eq!(proxy.version(ApiGroup::Disk), Some(V::V1BETA2));
    let mut changes = proxy.version_changes();

    let stop = Arc::new(AtomicBool::new(false));
    let readers = spawn_readers(&proxy, 4, stop.clone());
    for (set, expected) in [(V::V1, V::V1), (V::V1BETA2, V::V1BETA2), (V::V1, V::V1)] {
        tokio::time::sleep(Duration::from_millis(30)).await;
        node.fake.restart([(ApiGroup::Disk, set)]).await.unwrap();
        // A caller that looked between stop and start saw the group
        // missing (`to: None`); the change that counts names the version.
        let found = async {
            loop {
                let change = changes.recv().await.unwrap();
                assert_eq!(change.group, ApiGroup::Disk);
                if change.to.is_some() {
                    return change.to;
                }
            }
        };
        let found = tokio::time::timeout(Duration::from_secs(10), found).await;
        assert_eq!(found.unwrap(), Some(expected));
        // Every call since the swap went to the one version served now.
        tokio::time::sleep(Duration::from_millis(30)).await;
        node.fake.clear_calls();
        wait_until("calls reach the new version", || {
            !node.fake.calls().is_empty()
        })
        .await;
        let calls = node.fake.calls();
        assert!(calls.iter().all(|c| c.version == expected), "{calls:?}");
        assert_eq!(proxy.version(ApiGroup::Disk), Some(expected));
    }
    let ok = stop_readers(&stop, readers).await;
    assert!(ok > 0);
}

#[tokio::test]
async fn version_changes_are_reported() {
    let (mut node, proxy) = serving(ApiGroup::Volume, V::V1BETA1).await;
    let mut changes = proxy.version_changes();
    node.fake
        .restart([(ApiGroup::Volume, V::V1), (ApiGroup::Volume, V::V1BETA1)])
        .await
        .unwrap();
    proxy
        .volume()
        .unwrap()
        .list_volumes_on_disk(1, None)
        .await
        .unwrap();
    // Gone (unless the call found the new proxy before the end of the old
    // connection was recorded), then back on the newer version.
    let seen = received(&mut changes);
    let gone_and_back = [(Some(V::V1BETA1), None), (None, Some(V::V1))];
    let swapped = [(Some(V::V1BETA1), Some(V::V1))];
    assert!(seen == gone_and_back || seen == swapped, "{seen:?}");
    // The new version's features are there at once.
    proxy
        .volume()
        .unwrap()
        .list_volumes_on_disk(1, Some(2))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_ride_through_outages_of_seconds_and_an_upgrade() {
    let (mut node, proxy) = serving(ApiGroup::Disk, V::V1BETA2).await;
    let mut changes = proxy.version_changes();
    let stop = Arc::new(AtomicBool::new(false));
    let readers = spawn_readers(&proxy, 8, stop.clone());

    tokio::time::sleep(Duration::from_millis(500)).await;
    node.fake.stop_all().await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    node.fake.serve(ApiGroup::Disk, V::V1BETA2).await.unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;

    node.fake.stop_all().await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    // Back as an upgraded proxy: every disk version, newest first. (A look
    // that lands while a proxy is still creating its endpoints, oldest
    // first, can pick an older version and stay there; see the README.)
    node.fake
        .serve_all(
            ApiGroup::Disk
                .versions()
                .iter()
                .rev()
                .map(|&v| (ApiGroup::Disk, v)),
        )
        .await
        .unwrap();
    wait_until("a read on v1", || {
        node.fake.calls().iter().any(|c| c.version == V::V1)
    })
    .await;
    let returned = node
        .fake
        .calls()
        .iter()
        .position(|c| c.version == V::V1)
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop_readers(&stop, readers).await;
    // After the return, every read went to the version served then.
    let calls = node.fake.calls();
    assert!(calls[returned..].iter().all(|c| c.version == V::V1));
    assert_eq!(proxy.version(ApiGroup::Disk), Some(V::V1));
    // Each outage was seen: gone, back, gone, back upgraded.
    let seen = received(&mut changes);
    assert_eq!(
        seen,
        [
            (Some(V::V1BETA2), None),
            (None, Some(V::V1BETA2)),
            (Some(V::V1BETA2), None),
            (None, Some(V::V1)),
        ]
    );
}
