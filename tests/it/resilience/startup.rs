//! A proxy that is not there yet, or is still creating its endpoints: a
//! driver waits for the groups it requires, a client that looked too early
//! ends on the newest version, and a call its first version lacks waits,
//! within the grace a starting proxy gets, for a newer one.

use std::time::{Duration, Instant};

use super::{connect_requiring_disk, received, serving};
use crate::common::node::FakeNode;
use crate::common::scenario::seeded_host;
use crate::common::{quickest_of, TestNode, PIPE_GRACE};
use csi_proxy_client::testing::{StartOrder, Startup};
use csi_proxy_client::{ApiGroup, ApiVersion as V, CallOptions, Error};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_driver_started_before_the_proxy_waits_for_the_groups_it_requires() {
    let mut node = FakeNode::of(&seeded_host());
    let client = node.client_builder();
    let late = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let served = [(ApiGroup::Disk, V::V1), (ApiGroup::Volume, V::V1)];
        node.fake.serve_all(served).await.unwrap();
        node
    });
    let started = Instant::now();
    let proxy = connect_requiring_disk(client, Duration::from_secs(10))
        .await
        .unwrap();
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(1_900), "{waited:?}");
    // Noticed soon after it came: looks are at most 250 ms apart.
    assert!(waited < Duration::from_secs(4), "{waited:?}");
    assert_eq!(proxy.version(ApiGroup::Disk), Some(V::V1));
    let _node = late.await.unwrap();
    proxy.disk().unwrap().list_disk_ids().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_that_appears_later_is_found_by_its_next_call() {
    let mut node = FakeNode::of(&seeded_host());
    // Nothing required: no wait at connect. The bound is the behaviour;
    // the quickest of three connects, so that a stall of the machine is
    // not taken for a wait.
    let (proxy, quickest) = quickest_of(3, || node.client()).await;
    assert!(quickest < PIPE_GRACE, "{quickest:?}");
    assert!(!proxy.is_served(ApiGroup::Disk));
    let disk = proxy.disk().expect("handles exist before the proxy is up");

    node.fake
        .serve_all([
            (ApiGroup::Disk, V::V1BETA2),
            (ApiGroup::System, V::V1ALPHA1),
        ])
        .await
        .unwrap();
    assert!(disk.list_disk_ids().await.unwrap().contains_key(&1));
    assert_eq!(proxy.version(ApiGroup::Disk), Some(V::V1BETA2));
    let system = proxy.system().unwrap();
    assert_eq!(system.get_bios_serial_number().await.unwrap(), "BIOS-42");
}

#[tokio::test]
async fn waiting_for_a_proxy_that_never_comes_ends_with_not_served() {
    let node = TestNode::new();
    let started = Instant::now();
    let err = connect_requiring_disk(node.client_builder(), Duration::from_secs(1))
        .await
        .unwrap_err();
    let waited = started.elapsed();
    match err {
        Error::NotServed { group, tried } => {
            assert_eq!(group, ApiGroup::Disk);
            assert_eq!(tried.len(), 5, "{tried:?}");
        }
        other => panic!("{other}"),
    }
    assert!(waited >= Duration::from_secs(1), "{waited:?}");
    // And it ends: a wait that did not keep its limit would go on for as
    // long as the proxy stays away, here for good. Generous, for a loaded
    // machine: the limit and one look take about a second.
    assert!(waited < Duration::from_secs(10), "{waited:?}");

    // Zero looks once. The bound is the behaviour: one look, not a wait
    // of the pace's looks (250 ms apart); the quickest of three, so that a
    // stall of the machine is not taken for a wait.
    let (err, quickest) = quickest_of(3, || {
        connect_requiring_disk(node.client_builder(), Duration::ZERO)
    })
    .await;
    assert!(matches!(err, Err(Error::NotServed { .. })), "{err:?}");
    assert!(quickest < Duration::from_millis(500), "{quickest:?}");
}

/// The disk versions, oldest first.
fn disk_versions() -> Vec<(ApiGroup, V)> {
    ApiGroup::Disk
        .versions()
        .iter()
        .map(|&v| (ApiGroup::Disk, v))
        .collect()
}

/// How long after a client adopted a version it may take to end on the
/// newest one that its proxy, starting meanwhile, serves, or a call to
/// hear that no newer one came: the grace for a proxy creating its pipes
/// and one look take about a second. What the bound guards against is a
/// client that stays on the older version for good, or a call that waits
/// out its deadline (30 s for a read), so it leaves a loaded machine (and
/// Wine) ample room.
const SETTLE: Duration = Duration::from_secs(10);

/// A proxy that creates its disk endpoints `order`, 80 ms apart, while a
/// client that requires the disk group waits for it: the client ends on
/// disk v1 within [`SETTLE`] of connecting, and tells the move. Returns
/// the version the client first adopted.
async fn settles_on_the_newest(order: StartOrder) -> V {
    let mut node = FakeNode::of(&seeded_host());
    node.fake
        .set_startup(Startup::staged(order, Duration::from_millis(80)));
    let client = node.client_builder();
    let starting = tokio::spawn(async move {
        // The client looks first, and again while the endpoints appear.
        tokio::time::sleep(Duration::from_millis(30)).await;
        node.fake.serve_all(disk_versions()).await.unwrap();
        node
    });
    let proxy = connect_requiring_disk(client, Duration::from_secs(10))
        .await
        .unwrap();
    let connected = Instant::now();
    let mut changes = proxy.version_changes();
    let first = proxy.version(ApiGroup::Disk).expect("disk is served");
    while proxy.version(ApiGroup::Disk) != Some(V::V1) {
        assert!(
            connected.elapsed() < SETTLE,
            "{order:?}: still on {first} after {:?}",
            connected.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    if first != V::V1 {
        let seen = received(&mut changes);
        assert_eq!(seen.last(), Some(&(Some(first), Some(V::V1))), "{order:?}");
    }
    // Calls go to the newest version.
    let node = starting.await.unwrap();
    node.fake.clear_calls();
    proxy.disk().unwrap().list_disk_ids().await.unwrap();
    assert!(node.fake.calls().iter().all(|c| c.version == V::V1));
    first
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_looks_while_the_proxy_starts_oldest_first_moves_to_the_newest() {
    let first = settles_on_the_newest(StartOrder::OldestFirst).await;
    // The window was hit: v1 is created 320 ms after v1alpha1.
    assert!(first < V::V1, "adopted {first} first");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_looks_while_the_proxy_starts_newest_first_stays_on_the_newest() {
    let first = settles_on_the_newest(StartOrder::NewestFirst).await;
    assert_eq!(first, V::V1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_looks_while_the_proxy_starts_in_a_random_order_ends_on_the_newest() {
    for seed in [1, 2, 3] {
        settles_on_the_newest(StartOrder::Shuffled { seed }).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volume_stats_asked_while_the_proxy_starts_oldest_first_are_the_total() {
    // Volume v1beta2 appears before v1beta3 and v1: a client that adopts
    // it in that moment must not read its sizes as v0.2.x's free space.
    let host = csi_proxy_client::testing::FakeHost::builder()
        .disk(1, "pd-1", 10 << 30)
        .build();
    use csi_proxy_client::api::{DiskApi, VolumeApi};
    host.partition_disk(1).await.unwrap();
    let id = host.list_volumes_on_disk(1, None).await.unwrap().remove(0);
    host.format_volume(&id).await.unwrap();
    let truth = host.volume(&id).unwrap();
    for order in [StartOrder::OldestFirst, StartOrder::Shuffled { seed: 7 }] {
        let mut node = FakeNode::of(&host);
        node.fake
            .set_startup(Startup::staged(order, Duration::from_millis(80)));
        let versions: Vec<_> = (ApiGroup::Volume.versions().iter())
            .map(|&v| (ApiGroup::Volume, v))
            .collect();
        let client = node.client_builder();
        let starting = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(30)).await;
            node.fake.serve_all(versions).await.unwrap();
            node
        });
        let proxy = client
            .require(ApiGroup::Volume)
            .wait_for_proxy(Duration::from_secs(10))
            .connect()
            .await
            .unwrap();
        let stats = proxy.volume().unwrap().get_volume_stats(&id).await.unwrap();
        assert_eq!(
            (stats.total_bytes, stats.used_bytes),
            (truth.size_bytes, truth.used_bytes),
            "{order:?}: on {:?}",
            proxy.version(ApiGroup::Volume)
        );
        let node = starting.await.unwrap();
        node.fake.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_its_first_version_lacks_goes_to_the_newer_one_that_appears() {
    let mut node = FakeNode::serving([(ApiGroup::Disk, V::V1ALPHA1)]).await;
    let proxy = connect_requiring_disk(node.client_builder(), Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(proxy.version(ApiGroup::Disk), Some(V::V1ALPHA1));
    let starting = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        node.fake.serve(ApiGroup::Disk, V::V1).await.unwrap();
        node
    });
    // v1alpha1 lacks ListDiskIDs: within the grace, the call waits for v1.
    let ids = proxy.disk().unwrap().list_disk_ids().await.unwrap();
    assert!(ids.contains_key(&1));
    assert_eq!(proxy.version(ApiGroup::Disk), Some(V::V1));
    let node = starting.await.unwrap();
    let calls = node.fake.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(
        (calls[0].version, calls[0].rpc.as_str()),
        (V::V1, "ListDiskIDs")
    );
}

#[tokio::test]
async fn a_call_its_version_lacks_is_unsupported_once_no_newer_version_came_within_the_grace() {
    let (node, proxy) = serving(ApiGroup::Disk, V::V1ALPHA1).await;
    let asked = Instant::now();
    let result = proxy.disk().unwrap().list_disk_ids().await;
    assert!(
        matches!(
            result,
            Err(Error::Unsupported {
                served: V::V1ALPHA1,
                ..
            })
        ),
        "{result:?}"
    );
    assert!(asked.elapsed() < SETTLE, "{:?}", asked.elapsed());
    assert!(node.fake.calls().is_empty());
    // Past the grace it is answered at once. The bound is the behaviour;
    // the quickest of three calls, so that a stall of the machine is not
    // taken for a wait.
    let (again, quickest) =
        quickest_of(3, || async { proxy.disk().unwrap().list_disk_ids().await }).await;
    assert!(matches!(again, Err(Error::Unsupported { .. })), "{again:?}");
    assert!(quickest < PIPE_GRACE, "{quickest:?}");
    assert!(node.fake.calls().is_empty());
}

#[tokio::test]
async fn a_call_with_a_short_deadline_that_its_version_lacks_is_still_told_unsupported() {
    let (_node, proxy) = serving(ApiGroup::Disk, V::V1ALPHA1).await;
    let hasty = proxy.with_call_options(CallOptions::default().deadline(Duration::from_millis(50)));
    let result = hasty.disk().unwrap().list_disk_ids().await;
    assert!(
        matches!(result, Err(Error::Unsupported { .. })),
        "{result:?}"
    );
}
