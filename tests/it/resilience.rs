//! A proxy that starts late, restarts, goes away and comes back with other
//! versions; retries that never repeat a mutation; deadlines; many tasks on
//! one client. Every client here has the default settings. Over Unix
//! sockets here, and over named pipes when built for Windows.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::node::FakeNode;
use crate::common::scenario::seeded_host;
use crate::common::slow::slow_volume_node;
use crate::common::{every_version, wait_until, TestNode};
use csi_proxy_client::testing::sample::volume;
use csi_proxy_client::testing::{FakeProxy, StartOrder, Startup};
use csi_proxy_client::{
    health::{GroupStatus, VersionChange},
    ApiGroup, ApiVersion as V, CallOptions, CsiProxy, CsiProxyBuilder, Error, Operation, Result,
    RetryPolicy,
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
    let started = Instant::now();
    let proxy = node.client().await;
    // Nothing required: no wait at connect.
    assert!(started.elapsed() < Duration::from_secs(1));
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
    assert!(waited < Duration::from_secs(3), "{waited:?}");

    // Zero looks once.
    let started = Instant::now();
    let err = connect_requiring_disk(node.client_builder(), Duration::ZERO)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotServed { .. }), "{err}");
    assert!(started.elapsed() < Duration::from_millis(500));
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
    assert!(waited < deadline + Duration::from_millis(500), "{waited:?}");
}

#[tokio::test]
async fn a_call_that_was_certainly_not_sent_goes_on_the_new_connection_without_retries() {
    let mut node = FakeNode::serving([(ApiGroup::Disk, V::V1)]).await;
    let proxy = node
        .client_builder()
        .retry(RetryPolicy::none())
        .connect()
        .await
        .unwrap();
    proxy.disk().unwrap().list_disk_ids().await.unwrap();
    node.fake.stop_all().await;
    // The old connection has ended: what is sent now was certainly not
    // sent on it. Even a mutation goes, on the new connection.
    wait_until("the connection ended", || {
        proxy.version(ApiGroup::Disk).is_none()
    })
    .await;
    node.fake.serve(ApiGroup::Disk, V::V1).await.unwrap();
    node.fake.clear_calls();
    proxy.disk().unwrap().rescan().await.unwrap();
    let calls = node.fake.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].rpc, "Rescan");
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
    tokio::time::sleep(Duration::from_secs(1)).await;
    let started = Instant::now();
    let err = proxy.disk().unwrap().list_disk_ids().await.unwrap_err();
    assert!(matches!(err, Error::NotServed { .. }), "{err}");
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
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
async fn concurrent_callers_share_one_look_at_a_failing_endpoint() {
    use tokio_stream::StreamExt;

    let node = TestNode::new();
    // Accepts connections and never answers: every attempt runs into the
    // connect timeout.
    let mut incoming = csi_proxy_client::testing::listen(&node.transport(), ApiGroup::Disk, V::V1)
        .await
        .unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Some(stream) = incoming.next().await {
            counter.fetch_add(1, Ordering::SeqCst);
            held.push(stream);
        }
    });
    let connect_timeout = Duration::from_millis(200);
    let proxy = node
        .client_builder()
        .groups([ApiGroup::Disk])
        .connect_timeout(connect_timeout)
        .connect()
        .await
        .unwrap();
    // One negotiation: the first attempt and the default policy's retries.
    let per_look = accepted.load(Ordering::SeqCst);
    assert_eq!(per_look, 1 + RetryPolicy::default().max_retries());
    tokio::time::sleep(Duration::from_millis(100)).await;

    let started = Instant::now();
    let mut callers = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let disk = proxy.disk().unwrap();
        callers.spawn(async move { disk.list_disk_ids().await });
    }
    while let Some(result) = callers.join_next().await {
        let err = result.unwrap().unwrap_err();
        assert!(matches!(err, Error::ConnectTimeout { .. }), "{err}");
    }
    let elapsed = started.elapsed();
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        2 * per_look,
        "one look for all eight callers"
    );
    // About the time of one look (four attempts of 200 ms, with backoff).
    assert!(elapsed < Duration::from_millis(2_500), "{elapsed:?}");
    silent.abort();
}

/// Starts `call` and kills the proxy once the backend got it.
async fn kill_during<T: Send + 'static>(
    fake: &Mutex<Option<FakeProxy>>,
    backend_saw: impl Fn() -> usize,
    call: impl std::future::Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    let task = tokio::spawn(call);
    wait_until("the call arrived", || backend_saw() != 0).await;
    let mut proxy = fake.lock().unwrap().take().unwrap();
    proxy.restart([(ApiGroup::Volume, V::V1)]).await.unwrap();
    *fake.lock().unwrap() = Some(proxy);
    task.await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mutation_cut_off_by_a_crash_is_not_sent_again() {
    let (backend, node) = slow_volume_node(300).await;
    let proxy = node.client().await;
    let fake = Mutex::new(Some(node.fake));

    // A mutation in flight when the proxy dies fails, and is not repeated.
    let volumes = proxy.volume().unwrap();
    let result = kill_during(
        &fake,
        || backend.formats.load(Ordering::SeqCst),
        async move { volumes.format_volume(&volume()).await },
    )
    .await;
    assert!(
        matches!(
            result,
            Err(Error::Transport {
                maybe_sent: true,
                ..
            })
        ),
        "{result:?}"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        backend.formats.load(Ordering::SeqCst),
        1,
        "the format was sent twice"
    );
    let calls = fake.lock().unwrap().as_ref().unwrap().calls();
    assert_eq!(calls.iter().filter(|c| c.rpc == "FormatVolume").count(), 1);

    // A read cut off the same way is retried on the new connection.
    let volumes = proxy.volume().unwrap();
    let stats = kill_during(&fake, || backend.stats.load(Ordering::SeqCst), async move {
        volumes.get_volume_stats(&volume()).await
    })
    .await
    .unwrap();
    assert_eq!(stats.total_bytes, 10);
    assert_eq!(backend.stats.load(Ordering::SeqCst), 2);

    // And a mutation is retried when the caller opts in.
    backend.formats.store(0, Ordering::SeqCst);
    let volumes = proxy
        .with_call_options(CallOptions::default().retry_mutations(true))
        .volume()
        .unwrap();
    kill_during(
        &fake,
        || backend.formats.load(Ordering::SeqCst),
        async move { volumes.format_volume(&volume()).await },
    )
    .await
    .unwrap();
    assert_eq!(backend.formats.load(Ordering::SeqCst), 2);
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

#[tokio::test]
async fn host_failures_are_never_retried() {
    let (node, proxy) = serving(ApiGroup::System, V::V1ALPHA1).await;
    let err = proxy
        .system()
        .unwrap()
        .get_service("no-such-service")
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Host {
                code: csi_proxy_client::Code::Unknown,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(node.fake.calls().len(), 1, "an Unknown answer is final");
}

#[tokio::test]
async fn a_slow_backend_hits_the_deadline() {
    let (backend, node) = slow_volume_node(5_000).await;
    let proxy = node
        .client_builder()
        .read_deadline(Duration::from_millis(200))
        .connect()
        .await
        .unwrap();

    let started = Instant::now();
    match proxy.volume().unwrap().get_volume_stats(&volume()).await {
        Err(Error::Timeout { after, .. }) => assert_eq!(after, Duration::from_millis(200)),
        other => panic!("{other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(3));

    // Per call, shorter still; the mutation's default would be minutes.
    let hasty = proxy.with_call_options(CallOptions::default().deadline(Duration::from_millis(50)));
    match hasty.volume().unwrap().format_volume(&volume()).await {
        Err(Error::Timeout { after, operation }) => {
            assert_eq!(after, Duration::from_millis(50));
            assert_eq!(operation, csi_proxy_client::Operation::FormatVolume);
        }
        other => panic!("{other:?}"),
    }
    // The request was sent all the same, and the host works on regardless.
    wait_until("sent", || backend.formats.load(Ordering::SeqCst) != 0).await;
    assert_eq!(backend.formats.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_partition_listing_has_a_deadline_of_its_own() {
    let (_backend, node) = slow_volume_node(300).await;
    let proxy = node
        .client_builder()
        .deadline(Operation::ListVolumesOnPartition, Duration::from_millis(50))
        .connect()
        .await
        .unwrap();
    let volume = proxy.volume().unwrap();
    match volume.list_volumes_on_disk(1, Some(1)).await {
        Err(Error::Timeout { operation, after }) => {
            assert_eq!(operation, Operation::ListVolumesOnPartition);
            assert_eq!(after, Duration::from_millis(50));
        }
        other => panic!("{other:?}"),
    }
    // The whole disk's listing keeps the read deadline.
    assert_eq!(volume.list_volumes_on_disk(1, None).await.unwrap(), []);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_tasks_share_one_client() {
    let node = FakeNode::serving(every_version()).await;
    let proxy = node.client().await;
    let mut tasks = tokio::task::JoinSet::new();
    for task in 0..64u32 {
        let proxy = proxy.clone();
        tasks.spawn(async move {
            for _ in 0..10 {
                let disk = proxy.disk()?;
                assert_eq!(disk.get_disk_stats(1).await?, 10 << 30);
                let path = csi_proxy_client::api::WindowsPath::new(format!(
                    r"C:\var\lib\kubelet\t{task}"
                ))?;
                proxy.filesystem()?.mkdir(&path).await?;
            }
            Ok::<_, Error>(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap().unwrap();
    }
    assert_eq!(node.fake.calls().len(), 64 * 10 * 2);
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
/// newest one that its proxy, starting meanwhile, serves: the grace for a
/// proxy creating its pipes, one look, and room for a loaded machine.
const SETTLE: Duration = Duration::from_millis(1000 + 1000);

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
    // Past the grace it is answered at once.
    let asked = Instant::now();
    let again = proxy.disk().unwrap().list_disk_ids().await;
    assert!(matches!(again, Err(Error::Unsupported { .. })), "{again:?}");
    assert!(asked.elapsed() < Duration::from_millis(500));
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
