//! Riding through proxy restarts, upgrades and downgrades; retries that
//! never repeat a mutation; deadlines; many tasks on one client. Over Unix
//! sockets here, and over named pipes when built for Windows.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::ops::volume;
use common::scenario::seeded_host;
use common::TestNode;
use csi_proxy_client::testing::FakeProxy;
use csi_proxy_client::{
    async_trait, ApiGroup, ApiVersion as V, Backends, CallOptions, CsiProxy, Error, Result,
    RetryPolicy, VersionChange, VolumeApi, VolumeId, VolumeStats,
};

/// Patient enough to outlast a restart of the fake proxy.
fn patient() -> RetryPolicy {
    RetryPolicy::default()
        .with_max_retries(50)
        .with_initial_delay(Duration::from_millis(2))
        .with_max_delay(Duration::from_millis(40))
}

async fn client(node: &TestNode) -> CsiProxy {
    CsiProxy::builder()
        .transport(node.transport())
        .retry(patient())
        .connect()
        .await
        .unwrap()
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

async fn collect(mut tasks: tokio::task::JoinSet<(usize, Vec<Error>)>) -> (usize, Vec<Error>) {
    let (mut ok, mut failed) = (0, Vec::new());
    while let Some(done) = tasks.join_next().await {
        let (o, f) = done.unwrap();
        ok += o;
        failed.extend(f);
    }
    (ok, failed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_ride_through_fifty_restarts() {
    let node = TestNode::new();
    let mut fake = FakeProxy::for_host(node.transport(), &seeded_host());
    let served = [(ApiGroup::Disk, V::V1)];
    fake.serve_all(served).await.unwrap();
    let proxy = client(&node).await;

    let stop = Arc::new(AtomicBool::new(false));
    let readers = spawn_readers(&proxy, 8, stop.clone());
    // Each restart comes after a read reached this incarnation of the proxy
    // (however slow the machine), so every restart cuts into live traffic.
    for _ in 0..50 {
        let before = fake.calls().len();
        let waited = Instant::now();
        while fake.calls().len() == before {
            assert!(
                waited.elapsed() < Duration::from_secs(10),
                "no read arrived"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        fake.restart(served).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    stop.store(true, Ordering::Relaxed);
    let (ok, failed) = collect(readers).await;
    assert!(
        failed.is_empty(),
        "{} reads failed, e.g. {:?}",
        failed.len(),
        failed.first()
    );
    assert!(ok > 0 && fake.calls().len() >= 50, "only {ok} reads");
    assert_eq!(proxy.version(ApiGroup::Disk), Some(V::V1));
    assert!(fake.calls().iter().all(|c| c.version == V::V1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_follow_an_upgrade_and_a_downgrade() {
    let node = TestNode::new();
    let mut fake = FakeProxy::for_host(node.transport(), &seeded_host());
    fake.serve(ApiGroup::Disk, V::V1BETA2).await.unwrap();
    let proxy = client(&node).await;
    assert_eq!(proxy.version(ApiGroup::Disk), Some(V::V1BETA2));
    let mut changes = proxy.version_changes();

    let stop = Arc::new(AtomicBool::new(false));
    let readers = spawn_readers(&proxy, 4, stop.clone());
    for (set, expected) in [(V::V1, V::V1), (V::V1BETA2, V::V1BETA2), (V::V1, V::V1)] {
        tokio::time::sleep(Duration::from_millis(30)).await;
        fake.restart([(ApiGroup::Disk, set)]).await.unwrap();
        let change = tokio::time::timeout(Duration::from_secs(10), changes.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(change.to, Some(expected));
        assert_eq!(change.group, ApiGroup::Disk);
        // Every call since the swap went to the one version served now.
        tokio::time::sleep(Duration::from_millis(30)).await;
        fake.clear_calls();
        tokio::time::sleep(Duration::from_millis(30)).await;
        let calls = fake.calls();
        assert!(!calls.is_empty());
        assert!(calls.iter().all(|c| c.version == expected), "{calls:?}");
        assert_eq!(proxy.version(ApiGroup::Disk), Some(expected));
    }
    stop.store(true, Ordering::Relaxed);
    let (ok, failed) = collect(readers).await;
    assert!(failed.is_empty(), "{failed:?}");
    assert!(ok > 0);
}

#[tokio::test]
async fn version_changes_are_reported() {
    let node = TestNode::new();
    let mut fake = FakeProxy::for_host(node.transport(), &seeded_host());
    fake.serve(ApiGroup::Volume, V::V1BETA1).await.unwrap();
    let proxy = client(&node).await;
    let mut changes = proxy.version_changes();
    fake.restart([(ApiGroup::Volume, V::V1), (ApiGroup::Volume, V::V1BETA1)])
        .await
        .unwrap();
    proxy
        .volume()
        .unwrap()
        .list_volumes_on_disk(1, None)
        .await
        .unwrap();
    assert_eq!(
        changes.try_recv().unwrap(),
        VersionChange {
            group: ApiGroup::Volume,
            from: Some(V::V1BETA1),
            to: Some(V::V1)
        }
    );
    // The new version's features are there at once.
    proxy
        .volume()
        .unwrap()
        .list_volumes_on_disk(1, Some(2))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_group_missing_at_connect_time_can_join_later() {
    let node = TestNode::new();
    let mut fake = FakeProxy::for_host(node.transport(), &seeded_host());
    fake.serve(ApiGroup::Disk, V::V1).await.unwrap();
    let proxy = client(&node).await;
    assert!(matches!(proxy.system(), Err(Error::NotServed { .. })));
    fake.serve(ApiGroup::System, V::V1ALPHA1).await.unwrap();
    proxy.renegotiate().await.unwrap();
    assert_eq!(
        proxy
            .system()
            .unwrap()
            .get_bios_serial_number()
            .await
            .unwrap(),
        "BIOS-42"
    );
}

/// A volume backend that takes its time and counts what it was asked.
#[derive(Default)]
struct SlowVolumes {
    formats: AtomicUsize,
    stats: AtomicUsize,
    delay_ms: u64,
}

#[async_trait]
impl VolumeApi for SlowVolumes {
    async fn format_volume(&self, _volume: &VolumeId) -> Result<()> {
        self.formats.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(self.delay_ms)).await;
        Ok(())
    }

    async fn get_volume_stats(&self, _volume: &VolumeId) -> Result<VolumeStats> {
        self.stats.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(self.delay_ms)).await;
        Ok(VolumeStats {
            total_bytes: 10,
            used_bytes: 1,
        })
    }
}

/// A fake proxy serving volume v1 from a [`SlowVolumes`] backend that
/// takes `delay_ms` per call.
async fn serve_slow_volumes(node: &TestNode, delay_ms: u64) -> (Arc<SlowVolumes>, FakeProxy) {
    let backend = Arc::new(SlowVolumes {
        delay_ms,
        ..Default::default()
    });
    let backends = Backends {
        volume: Some(backend.clone()),
        ..Default::default()
    };
    let mut fake = FakeProxy::new(node.transport(), backends);
    fake.serve(ApiGroup::Volume, V::V1).await.unwrap();
    (backend, fake)
}

/// Starts `call` and kills the proxy once the backend got it.
async fn kill_during<T: Send + 'static>(
    fake: &Mutex<Option<FakeProxy>>,
    backend_saw: impl Fn() -> usize,
    call: impl std::future::Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    let task = tokio::spawn(call);
    let deadline = Instant::now() + Duration::from_secs(10);
    while backend_saw() == 0 {
        assert!(Instant::now() < deadline, "the call never arrived");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let mut proxy = fake.lock().unwrap().take().unwrap();
    proxy.restart([(ApiGroup::Volume, V::V1)]).await.unwrap();
    *fake.lock().unwrap() = Some(proxy);
    task.await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mutation_cut_off_by_a_crash_is_not_sent_again() {
    let node = TestNode::new();
    let (backend, fake) = serve_slow_volumes(&node, 300).await;
    let proxy = client(&node).await;
    let fake = Mutex::new(Some(fake));

    // A mutation in flight when the proxy dies fails, and is not repeated.
    let volumes = proxy.volume().unwrap();
    let result = kill_during(
        &fake,
        || backend.formats.load(Ordering::SeqCst),
        async move { volumes.format_volume(&volume()).await },
    )
    .await;
    assert!(matches!(result, Err(Error::Transport { .. })), "{result:?}");
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
    let node = TestNode::new();
    let (backend, mut fake) = serve_slow_volumes(&node, 300).await;
    let proxy = client(&node).await;

    // The format may have reached the host: the caller hears of the broken
    // connection, not of the group being gone since.
    let volumes = proxy.volume().unwrap();
    let format = tokio::spawn(async move { volumes.format_volume(&volume()).await });
    while backend.formats.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    fake.stop(ApiGroup::Volume, V::V1).await;
    let result = format.await.unwrap();
    assert!(matches!(result, Err(Error::Transport { .. })), "{result:?}");

    // Calls that certainly were not sent say why. (A read retries until
    // its channel has noticed that the connection is gone; from then on a
    // mutation is certainly unsent too.)
    let result = proxy.volume().unwrap().get_volume_stats(&volume()).await;
    assert!(matches!(result, Err(Error::NotServed { .. })), "{result:?}");
    let result = proxy.volume().unwrap().format_volume(&volume()).await;
    assert!(matches!(result, Err(Error::NotServed { .. })), "{result:?}");
    assert_eq!(backend.formats.load(Ordering::SeqCst), 1);
    assert_eq!(backend.stats.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn host_failures_are_never_retried() {
    let node = TestNode::new();
    let host = seeded_host();
    let mut fake = FakeProxy::for_host(node.transport(), &host);
    fake.serve(ApiGroup::System, V::V1ALPHA1).await.unwrap();
    let proxy = client(&node).await;
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
    assert_eq!(fake.calls().len(), 1, "an Unknown answer is final");
}

#[tokio::test]
async fn a_slow_backend_hits_the_deadline() {
    let node = TestNode::new();
    let (backend, _fake) = serve_slow_volumes(&node, 5_000).await;
    let proxy = CsiProxy::builder()
        .transport(node.transport())
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
            assert_eq!(operation, "volume FormatVolume");
        }
        other => panic!("{other:?}"),
    }
    // The request was sent all the same, and the host works on regardless.
    let waited = Instant::now();
    while backend.formats.load(Ordering::SeqCst) == 0 {
        assert!(waited.elapsed() < Duration::from_secs(10), "never sent");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(backend.formats.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_tasks_share_one_client() {
    let node = TestNode::new();
    let mut fake = FakeProxy::for_host(node.transport(), &seeded_host());
    fake.serve_everything().await.unwrap();
    let proxy = client(&node).await;
    let mut tasks = tokio::task::JoinSet::new();
    for task in 0..64u32 {
        let proxy = proxy.clone();
        tasks.spawn(async move {
            for _ in 0..10 {
                let disk = proxy.disk()?;
                assert_eq!(disk.get_disk_stats(1).await?, 10 << 30);
                let path =
                    csi_proxy_client::WindowsPath::new(format!(r"C:\var\lib\kubelet\t{task}"))?;
                proxy.filesystem()?.mkdir(&path).await?;
            }
            Ok::<_, Error>(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap().unwrap();
    }
    assert_eq!(fake.calls().len(), 64 * 10 * 2);
}
