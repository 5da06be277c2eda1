//! A proxy, or one of its groups, away for a while: what a call and
//! `version_changes()` are told meanwhile, and how it is found again, with
//! or without calls (a probe reading `health()` makes none).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{received, serving};
use crate::common::node::FakeNode;
use crate::common::slow::slow_volume_node;
use crate::common::{quickest_of, wait_until, PIPE_GRACE};
use csi_proxy_client::testing::sample::volume;
use csi_proxy_client::{
    health::{GroupStatus, VersionChange},
    ApiGroup, ApiVersion as V, CallOptions, Error, Operation,
};

#[tokio::test]
async fn a_read_waits_for_the_proxy_until_its_deadline_and_no_longer() {
    let (mut node, proxy) = serving(ApiGroup::Disk, V::V1).await;
    node.fake.stop_all().await;
    // Away, not cut off under the call (which would answer with the
    // broken connection).
    wait_until("the connection ended", || !proxy.is_served(ApiGroup::Disk)).await;
    let deadline = Duration::from_millis(700);
    let hasty = proxy.with_call_options(CallOptions::default().deadline(deadline));
    let started = Instant::now();
    let err = hasty.disk().unwrap().list_disk_ids().await.unwrap_err();
    let waited = started.elapsed();
    // What it waited through, not a bare deadline: the proxy was not there.
    assert!(
        matches!(
            err,
            Error::NotServed {
                group: ApiGroup::Disk,
                ..
            }
        ),
        "{err}"
    );
    assert!(waited >= deadline, "{waited:?}");
    // No longer: a call that did not keep its own deadline would wait for
    // the proxy until the read default (30 s), or for good. The bound is
    // the behaviour, with room for a loaded machine.
    assert!(waited < Duration::from_secs(10), "{waited:?}");
}

#[tokio::test]
async fn a_proxy_that_comes_back_is_found_without_any_call() {
    let (mut node, proxy) = serving(ApiGroup::Disk, V::V1BETA3).await;
    let mut changes = proxy.version_changes();

    node.fake.stop_all().await;
    wait_until("the connection ended", || !proxy.is_served(ApiGroup::Disk)).await;
    // Gone is told at once; the looks in the background while it is away
    // say nothing more, and the health says not served.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(received(&mut changes), [(Some(V::V1BETA3), None)]);
    assert!(!proxy.health().is_ready(&[ApiGroup::Disk]));

    // Back, upgraded: found in the background, with no call made, so that
    // a probe reading `health()` sees it.
    node.fake.serve(ApiGroup::Disk, V::V1).await.unwrap();
    wait_until("found again", || proxy.health().is_ready(&[ApiGroup::Disk])).await;
    assert_eq!(proxy.version(ApiGroup::Disk), Some(V::V1));
    assert_eq!(received(&mut changes), [(None, Some(V::V1))]);
    assert!(node.fake.calls().is_empty(), "looks send no RPC");
}

/// An outage with no call at all, as `version_changes()` tells it: gone,
/// then back, on the same version and on another one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_with_no_calls_is_told_whole() {
    let (mut node, proxy) = serving(ApiGroup::Disk, V::V1).await;
    let mut changes = proxy.version_changes();
    for back in [V::V1, V::V1BETA3] {
        let before = proxy.version(ApiGroup::Disk).unwrap();
        node.fake.stop_all().await;
        wait_until("gone", || proxy.version(ApiGroup::Disk).is_none()).await;
        node.fake.serve(ApiGroup::Disk, back).await.unwrap();
        wait_until("back", || proxy.version(ApiGroup::Disk) == Some(back)).await;
        assert_eq!(
            received(&mut changes),
            [(Some(before), None), (None, Some(back))],
            "back on {back}"
        );
    }
    assert!(node.fake.calls().is_empty(), "no call was made");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_that_disappears_is_reported_and_so_is_its_return() {
    let mut node = FakeNode::serving([(ApiGroup::Disk, V::V1), (ApiGroup::Volume, V::V1)]).await;
    let proxy = node.client().await;
    let mut changes = proxy.version_changes();
    node.fake.stop(ApiGroup::Disk, V::V1).await;
    wait_until("disk is not served", || !proxy.is_served(ApiGroup::Disk)).await;
    assert_eq!(proxy.version(ApiGroup::Disk), None);
    assert_eq!(proxy.version(ApiGroup::Volume), Some(V::V1));

    // The proxy is there (it serves volume), past the grace for one still
    // creating its pipes: a call on disk says at once that it is missing.
    tokio::time::sleep(PIPE_GRACE).await;
    let ((), quickest) = quickest_of(3, || async {
        let err = proxy.disk().unwrap().list_disk_ids().await.unwrap_err();
        assert!(matches!(err, Error::NotServed { .. }), "{err}");
    })
    .await;
    // The bound is the behaviour: at once, not after the grace; the
    // quickest of three calls, so that a stall of the machine is not taken
    // for a wait.
    assert!(quickest < PIPE_GRACE, "{quickest:?}");
    assert_eq!(
        changes.try_recv().unwrap(),
        VersionChange {
            group: ApiGroup::Disk,
            from: Some(V::V1),
            to: None
        }
    );
    assert!(changes.try_recv().is_err(), "one change, not one per look");
    match &proxy.health().group(ApiGroup::Disk).unwrap().status {
        GroupStatus::NotServed {
            since: Some(_),
            last_error: Some(Error::NotServed { .. }),
        } => {}
        other => panic!("{other:?}"),
    }

    node.fake.serve(ApiGroup::Disk, V::V1).await.unwrap();
    proxy.disk().unwrap().list_disk_ids().await.unwrap();
    assert!(proxy.is_served(ApiGroup::Disk));
    assert_eq!(
        changes.try_recv().unwrap(),
        VersionChange {
            group: ApiGroup::Disk,
            from: None,
            to: Some(V::V1)
        }
    );
    assert!(proxy.health().group(ApiGroup::Disk).unwrap().is_served());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_that_stays_away_is_reported_by_what_the_call_knows() {
    let (backend, mut node) = slow_volume_node(300).await;
    let proxy = node.client().await;

    // The format may have reached the host: the caller hears of the broken
    // connection, not of the group being gone since.
    let volumes = proxy.volume().unwrap();
    let format = tokio::spawn(async move { volumes.format_volume(&volume()).await });
    while backend.formats.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    node.fake.stop(ApiGroup::Volume, V::V1).await;
    let result = format.await.unwrap();
    assert!(
        matches!(
            result,
            Err(Error::Transport {
                maybe_sent: true,
                operation: Some(Operation::FormatVolume),
                ..
            })
        ),
        "{result:?}"
    );

    // Calls that certainly were not sent wait for the proxy within their
    // deadline, and send nothing while it is away.
    let hasty =
        proxy.with_call_options(CallOptions::default().deadline(Duration::from_millis(300)));
    let result = hasty.volume().unwrap().get_volume_stats(&volume()).await;
    assert!(matches!(result, Err(Error::NotServed { .. })), "{result:?}");
    let result = hasty.volume().unwrap().format_volume(&volume()).await;
    assert!(matches!(result, Err(Error::NotServed { .. })), "{result:?}");
    assert_eq!(backend.formats.load(Ordering::SeqCst), 1);
    assert_eq!(backend.stats.load(Ordering::SeqCst), 0);
}
