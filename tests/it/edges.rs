//! Availability at the edges: a newer version whose pipe exists but does
//! not answer at first, a call that comes while the settling look is in
//! flight, a volume's release-dependent answer on a proxy caught while it
//! starts, `Backend::Automatic` while the proxy creates its pipes, and a
//! call whose deadline passes while the proxy is away. Over Unix sockets
//! here, and over named pipes when built for Windows.

use std::time::{Duration, Instant};

use crate::common::node::FakeNode;
use crate::common::scenario::seeded_host;
use crate::common::{quickest_of, wait_until, TestNode, PIPE_GRACE};
use csi_proxy_client::api::{DiskApi, VolumeApi, VolumeId, WindowsPath};
use csi_proxy_client::health::ServedBy;
use csi_proxy_client::mount::{DiskSelector, Mounter};
use csi_proxy_client::testing::{listen, FakeHost, FakeProxy, ProxyRelease, StartOrder, Startup};
use csi_proxy_client::transport::Transport;
use csi_proxy_client::{ApiGroup, ApiVersion as V, Backend, CallOptions, CsiProxy, Error, Status};
use tokio_stream::StreamExt;

/// Generous bound for what settles within seconds.
const SETTLED: Duration = Duration::from_secs(15);

/// A door in front of an endpoint: it takes the connections made to
/// `group` `version` on one transport and, each after its wait, joins
/// them to the same endpoint on another, where a fake proxy serves it.
/// The endpoint exists all along; it answers late (a busy or slow pipe).
struct Door {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Door {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Door {
    /// Holds each connection until `opens`, and then `delay` more.
    async fn open(
        front: &Transport,
        back: &Transport,
        (group, version): (ApiGroup, V),
        opens: Instant,
        delay: Duration,
    ) -> Door {
        let mut incoming = listen(front, group, version).await.unwrap();
        let to = back.address(group, version);
        let task = tokio::spawn(async move {
            while let Some(Ok(mut stream)) = incoming.next().await {
                let to = to.clone();
                tokio::spawn(async move {
                    tokio::time::sleep_until(opens.into()).await;
                    tokio::time::sleep(delay).await;
                    if let Ok(mut back) = dial(&to).await {
                        let _ = tokio::io::copy_bidirectional(&mut stream, &mut back).await;
                    }
                });
            }
        });
        Door { task }
    }
}

#[cfg(unix)]
async fn dial(address: &str) -> std::io::Result<tokio::net::UnixStream> {
    tokio::net::UnixStream::connect(address).await
}

#[cfg(windows)]
async fn dial(address: &str) -> std::io::Result<tokio::net::windows::named_pipe::NamedPipeClient> {
    use tokio::net::windows::named_pipe::ClientOptions;
    const ERROR_PIPE_BUSY: i32 = 231;
    loop {
        match ClientOptions::new().open(address) {
            Err(e) if e.raw_os_error() == Some(ERROR_PIPE_BUSY) => {
                tokio::time::sleep(Duration::from_millis(5)).await
            }
            other => return other,
        }
    }
}

/// A node whose proxy serves `group` at `older` only, and a client that
/// requires the group and adopted it; then, at once, the group's `newest`
/// version appears behind a door that holds each connection until
/// `opens` (from the connect) and then `delay` more, served from the same
/// host. Returns the client, when it connected, and the fake proxy behind
/// the door.
async fn newest_behind_a_door(
    host: &FakeHost,
    (group, older, newest): (ApiGroup, V, V),
    opens: Duration,
    delay: Duration,
) -> (CsiProxy, Instant, Nodes) {
    let mut old = FakeNode::of(host);
    old.fake.serve(group, older).await.unwrap();
    let proxy = old
        .client_builder()
        .require(group)
        .wait_for_proxy(Duration::from_secs(5))
        .connect()
        .await
        .unwrap();
    let connected = Instant::now();
    assert_eq!(proxy.version(group), Some(older));
    let mut new = FakeNode::of(host);
    new.fake.serve(group, newest).await.unwrap();
    let door = Door::open(
        old.fake.transport(),
        new.fake.transport(),
        (group, newest),
        connected + opens,
        delay,
    )
    .await;
    let nodes = Nodes {
        _old: old,
        new,
        _door: door,
    };
    (proxy, connected, nodes)
}

/// What a test keeps alive: both nodes (each with its fake proxy), the door.
struct Nodes {
    _old: FakeNode,
    new: FakeNode,
    _door: Door,
}

/// Item 5: the settling look finds disk v1's pipe there but silent for
/// longer than its one second; looked at again on the slow pace, v1 is
/// adopted once it answers, and a call that needs it (ListDiskIDs, which
/// v1alpha1 lacks) waits for it instead of being told `Unsupported`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_version_whose_pipe_answers_late_is_adopted_and_waited_for() {
    let (proxy, connected, nodes) = newest_behind_a_door(
        &seeded_host(),
        (ApiGroup::Disk, V::V1ALPHA1, V::V1),
        Duration::from_secs(3),
        Duration::ZERO,
    )
    .await;
    let mut changes = proxy.version_changes();
    // After the grace, while the settling look waits on the silent pipe.
    tokio::time::sleep_until((connected + Duration::from_millis(1500)).into()).await;
    assert_eq!(proxy.version(ApiGroup::Disk), Some(V::V1ALPHA1));
    let ids = proxy.disk().unwrap().list_disk_ids().await;
    assert!(matches!(&ids, Ok(ids) if ids.contains_key(&1)), "{ids:?}");
    assert_eq!(proxy.version(ApiGroup::Disk), Some(V::V1));
    assert!(connected.elapsed() < SETTLED, "{:?}", connected.elapsed());
    let calls = nodes.new.fake.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(
        (calls[0].version, calls[0].rpc.as_str()),
        (V::V1, "ListDiskIDs")
    );
    let change = changes.try_recv().unwrap();
    assert_eq!((change.from, change.to), (Some(V::V1ALPHA1), Some(V::V1)));
}

/// Item 5, with no call: the client moves by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_version_whose_pipe_answers_late_is_adopted_without_any_call() {
    let (proxy, connected, _nodes) = newest_behind_a_door(
        &seeded_host(),
        (ApiGroup::Disk, V::V1ALPHA1, V::V1),
        Duration::from_secs(3),
        Duration::ZERO,
    )
    .await;
    while proxy.version(ApiGroup::Disk) != Some(V::V1) {
        assert!(connected.elapsed() < SETTLED, "still on v1alpha1");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Item 5, when the newer pipe never answers: the client stays on
/// v1alpha1 and keeps looking on the slow pace; a call that needs v1 is
/// told what keeps v1 from it (a retryable failure), not that the node's
/// proxy is too old, and without waiting its whole deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_newer_version_keeps_failing_is_told_so_not_unsupported() {
    let (proxy, connected, _nodes) = newest_behind_a_door(
        &seeded_host(),
        (ApiGroup::Disk, V::V1ALPHA1, V::V1),
        Duration::from_secs(120),
        Duration::ZERO,
    )
    .await;
    // The settling look and the next one have failed by then.
    tokio::time::sleep_until((connected + Duration::from_secs(5)).into()).await;
    let asked = Instant::now();
    let result = proxy.disk().unwrap().list_disk_ids().await;
    match &result {
        Err(error @ Error::ConnectTimeout { .. }) => assert!(error.is_retryable()),
        other => panic!("{other:?}"),
    }
    // The bound is the behaviour: half the read deadline (30 s) that a
    // call waiting for v1 would see out; the failure it meets comes within
    // one connection attempt (1 s), so a loaded machine has ample room.
    assert!(
        asked.elapsed() < Duration::from_secs(15),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(proxy.version(ApiGroup::Disk), Some(V::V1ALPHA1));
}

/// Item 6: a call that comes while the settling look is in flight (v1's
/// pipe takes half a second to answer) waits for that look, and goes to
/// v1, rather than being told `Unsupported` because the look had begun.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_during_the_settling_look_waits_for_it() {
    let (proxy, connected, nodes) = newest_behind_a_door(
        &seeded_host(),
        (ApiGroup::Disk, V::V1ALPHA1, V::V1),
        Duration::ZERO,
        Duration::from_millis(500),
    )
    .await;
    // The look is due a second after the adoption, and takes half a second.
    tokio::time::sleep_until((connected + Duration::from_millis(1150)).into()).await;
    let ids = proxy.disk().unwrap().list_disk_ids().await;
    assert!(matches!(&ids, Ok(ids) if ids.contains_key(&1)), "{ids:?}");
    assert_eq!(proxy.version(ApiGroup::Disk), Some(V::V1));
    assert_eq!(nodes.new.fake.calls()[0].rpc, "ListDiskIDs");
}

/// A host with one formatted volume; the volume and its true size and use.
async fn host_with_a_volume() -> (FakeHost, VolumeId, u64, u64) {
    let host = FakeHost::builder().disk(1, "pd-1", 10 << 30).build();
    host.partition_disk(1).await.unwrap();
    let id = host.list_volumes_on_disk(1, None).await.unwrap().remove(0);
    host.format_volume(&id).await.unwrap();
    let truth = host.volume(&id).unwrap();
    (host, id, truth.size_bytes, truth.used_bytes)
}

/// Item 7: a v1.x proxy whose volume v1 pipe is there but silent when the
/// client settles (v1beta3 and v1 looked absent at connect): that is no
/// CSI Proxy v0.2.x, so v1beta2's `volume_size` is the total, not the
/// free space.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volume_stats_on_a_starting_v1_node_whose_newest_pipe_answers_late_are_the_total() {
    let (host, id, size, used) = host_with_a_volume().await;
    let (proxy, _connected, _nodes) = newest_behind_a_door(
        &host,
        (ApiGroup::Volume, V::V1BETA2, V::V1),
        Duration::from_secs(4),
        Duration::ZERO,
    )
    .await;
    let stats = proxy.volume().unwrap().get_volume_stats(&id).await.unwrap();
    assert_eq!(
        (stats.total_bytes, stats.used_bytes),
        (size, used),
        "on {:?}",
        proxy.version(ApiGroup::Volume)
    );
}

/// Items 6 and 7: stats asked while the settling look is in flight wait
/// for it, and are read on the version it moves to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volume_stats_asked_during_the_settling_look_are_the_total() {
    let (host, id, size, used) = host_with_a_volume().await;
    let (proxy, connected, _nodes) = newest_behind_a_door(
        &host,
        (ApiGroup::Volume, V::V1BETA2, V::V1),
        Duration::ZERO,
        Duration::from_millis(500),
    )
    .await;
    tokio::time::sleep_until((connected + Duration::from_millis(1150)).into()).await;
    let stats = proxy.volume().unwrap().get_volume_stats(&id).await.unwrap();
    assert_eq!((stats.total_bytes, stats.used_bytes), (size, used));
    assert_eq!(proxy.version(ApiGroup::Volume), Some(V::V1));
}

/// Item 7, the other way: on CSI Proxy v0.2.2, whose newer volume versions
/// are absent for good, the settled answer is still read as v0.2.x's
/// free space.
#[tokio::test]
async fn volume_stats_on_v0_2_are_still_read_as_free_space_once_settled() {
    let (host, id, size, used) = host_with_a_volume().await;
    let node = FakeNode::at(ProxyRelease::V0_2_2, &host).await;
    let proxy = node.client().await;
    assert_eq!(proxy.version(ApiGroup::Volume), Some(V::V1BETA2));
    let stats = proxy.volume().unwrap().get_volume_stats(&id).await.unwrap();
    assert_eq!((stats.total_bytes, stats.used_bytes), (size, used));
}

/// Item 11: a stage while CSI Proxy is down tells kubelet that the proxy
/// was not there (`NotServed`, `Unavailable`, the pipes tried), not that
/// a filesystem call timed out.
#[tokio::test]
async fn a_stage_while_the_proxy_is_down_says_the_proxy_was_not_there() {
    let host = FakeHost::builder()
        .disk(1, "pd-1", 10 << 30)
        .dir(r"C:\var\lib\kubelet\plugins\pd\pv1")
        .build();
    let mut node = FakeNode::at(ProxyRelease::V1_0_0, &host).await;
    let proxy = node
        .client_builder()
        .read_deadline(Duration::from_millis(600))
        .mutation_deadline(Duration::from_millis(600))
        .connect()
        .await
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    let mounter = Mounter::builder(proxy.clone(), state.path())
        .build()
        .unwrap();
    node.fake.stop_all().await;
    wait_until("the proxy is gone", || {
        ApiGroup::ALL.iter().all(|&g| !proxy.is_served(g))
    })
    .await;

    let staging = WindowsPath::new(r"C:\var\lib\kubelet\plugins\pd\pv1\globalmount").unwrap();
    let error = mounter
        .stage_disk(&DiskSelector::page83("pd-1"), &staging)
        .await
        .unwrap_err();
    assert!(matches!(error, Error::NotServed { .. }), "{error}");
    assert!(error.is_retryable());
    let status = Status::from(error);
    assert_eq!(status.code(), tonic::Code::Unavailable);
    let message = status.message();
    assert!(
        message.contains("CSI Proxy does not serve the filesystem API"),
        "{message}"
    );
    assert!(message.contains("nothing answered at"), "{message}");
    assert!(!message.contains("timed out"), "{message}");
}

/// Item 11, for a plain call: one that waits for a proxy that stays away
/// until its deadline answers `NotServed` with every endpoint tried.
#[tokio::test]
async fn a_call_whose_deadline_passes_while_the_proxy_is_away_is_not_served() {
    let mut node = FakeNode::serving([(ApiGroup::Disk, V::V1)]).await;
    let proxy = node.client().await;
    node.fake.stop_all().await;
    wait_until("the connection ended", || !proxy.is_served(ApiGroup::Disk)).await;
    let hasty =
        proxy.with_call_options(CallOptions::default().deadline(Duration::from_millis(400)));
    match hasty.disk().unwrap().list_disk_ids().await {
        Err(Error::NotServed { group, tried }) => {
            assert_eq!(group, ApiGroup::Disk);
            let v1 = node.fake.transport().address(ApiGroup::Disk, V::V1);
            assert!(tried.contains(&v1), "{tried:?}");
        }
        other => panic!("{other:?}"),
    }
}

/// Who serves each of `groups` for `proxy`, as its report says.
fn served_by(proxy: &CsiProxy, groups: &[ApiGroup]) -> Vec<(ApiGroup, Option<ServedBy>)> {
    let by = |g| proxy.report().group(g).and_then(|r| r.served_by);
    groups.iter().map(|&g| (g, by(g))).collect()
}

/// Item 8: `Automatic` connects while the proxy creates its pipes, one
/// group every 150 ms: every group the proxy serves stays with the proxy,
/// and the host takes only the group it lacks (SMB), not the ones it had
/// not created yet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn automatic_gives_the_host_only_what_a_starting_proxy_lacks() {
    let node = TestNode::new();
    let mut fake = FakeProxy::for_host(node.transport(), &seeded_host());
    fake.set_startup(Startup::staged(
        StartOrder::AsGiven,
        Duration::from_millis(150),
    ));
    let starting = tokio::spawn(async move {
        let versions = [
            (ApiGroup::Disk, V::V1),
            (ApiGroup::Filesystem, V::V1),
            (ApiGroup::Volume, V::V1),
            (ApiGroup::System, V::V1ALPHA1),
        ];
        fake.serve_all(versions).await.unwrap();
        fake
    });
    // The client connects once the first pipe is there, before the rest.
    let first = node.transport().address(ApiGroup::Disk, V::V1);
    while dial(&first).await.is_err() {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let on_the_host = FakeHost::builder().build();
    let groups = [
        ApiGroup::Disk,
        ApiGroup::Filesystem,
        ApiGroup::Volume,
        ApiGroup::System,
        ApiGroup::Smb,
    ];
    let proxy = node
        .client_builder()
        .groups(groups)
        .backend(Backend::Automatic)
        .stand_in_host(on_the_host.backends())
        .connect()
        .await
        .unwrap();
    let fake = starting.await.unwrap();
    let proxy_served = Some(ServedBy::CsiProxy);
    assert_eq!(
        served_by(&proxy, &groups),
        [
            (ApiGroup::Disk, proxy_served),
            (ApiGroup::Filesystem, proxy_served),
            (ApiGroup::Volume, proxy_served),
            (ApiGroup::System, proxy_served),
            (ApiGroup::Smb, Some(ServedBy::Host)),
        ]
    );
    let kubelet = WindowsPath::new(r"C:\var\lib\kubelet").unwrap();
    proxy
        .filesystem()
        .unwrap()
        .path_exists(&kubelet)
        .await
        .unwrap();
    assert_eq!(fake.calls().len(), 1, "the proxy's filesystem served it");
}

/// Item 8: told to wait for the proxy at node boot, `Automatic` waits for
/// one that starts after the driver, and gives it every group it serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn automatic_told_to_wait_waits_for_a_proxy_that_starts_after_the_driver() {
    let node = TestNode::new();
    let mut fake = FakeProxy::for_host(node.transport(), &seeded_host());
    let starting = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        fake.serve_release(ProxyRelease::V1_0_0).await.unwrap();
        fake
    });
    let groups = [ApiGroup::Disk, ApiGroup::Filesystem, ApiGroup::Volume];
    let proxy = node
        .client_builder()
        .groups(groups)
        .backend(Backend::Automatic)
        .stand_in_host(FakeHost::builder().build().backends())
        .wait_for_proxy(Duration::from_secs(10))
        .connect()
        .await
        .unwrap();
    let _fake = starting.await.unwrap();
    for (group, by) in served_by(&proxy, &groups) {
        assert_eq!(by, Some(ServedBy::CsiProxy), "{group}");
    }
}

/// `Automatic` not told to wait, with no proxy at all: the host takes
/// every group at once, and keeps them when a proxy appears later.
#[tokio::test]
async fn automatic_gives_an_absent_proxys_groups_to_the_host_for_the_clients_life() {
    let node = TestNode::new();
    let on_the_host = FakeHost::builder().build();
    // The bound is the behaviour: at once, not after the grace; the
    // quickest of three connects, so that a stall of the machine is not
    // taken for a wait.
    let (proxy, quickest) = quickest_of(3, || async {
        node.client_builder()
            .backend(Backend::Automatic)
            .stand_in_host(on_the_host.backends())
            .connect()
            .await
            .unwrap()
    })
    .await;
    assert!(quickest < PIPE_GRACE, "{quickest:?}");
    for (group, by) in served_by(&proxy, &ApiGroup::ALL) {
        assert_eq!(by, Some(ServedBy::Host), "{group}");
    }
    let mut fake = FakeProxy::for_host(node.transport(), &seeded_host());
    fake.serve_release(ProxyRelease::V1_0_0).await.unwrap();
    proxy.disk().unwrap().list_disk_ids().await.unwrap();
    assert!(fake.calls().is_empty(), "{:?}", fake.calls());
    assert_eq!(
        proxy.health().group(ApiGroup::Disk).unwrap().served_by,
        ServedBy::Host
    );
}
