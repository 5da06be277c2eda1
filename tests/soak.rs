//! Bounded soaks: 16 readers and 2 writers on one default client while the
//! proxy is killed and restarted every couple of seconds, every other time
//! with another set of versions. No read may fail. Two proxies:
//!
//! - a [`FakeProxy`] in this process, whose host counts what was applied:
//!   no mutation may be applied twice (one cut off by a kill may be
//!   unknown, and is then applied at most once); 30 s by default;
//! - `csiproxyctl fake` in processes of its own, as a node runs CSI Proxy,
//!   creating its endpoints one after the other in a different order at
//!   each start (a client that looks meanwhile must still end on the
//!   newest versions); 20 s by default (16 s on Windows, where a process
//!   takes longer to start).
//!
//! `CSI_PROXY_SOAK_SECS` sets both durations (the in-process one is 10 s on
//! Windows). Each prints its report and
//! writes it to `target/tmp/soak-report-<os>[-process].txt`. Over Unix
//! sockets here, and over named pipes when built for Windows. The two run
//! one after the other.

#[allow(dead_code, unused_imports)] // the helpers of the main test binary
#[path = "it/common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::scenario::seeded_host;
use common::TestNode;
use csi_proxy_client::testing::FakeProxy;
use csi_proxy_client::{
    api::{FilesystemApi, WindowsPath},
    async_trait,
    transport::Transport,
    ApiGroup, ApiVersion as V, Backends, CsiProxy, Error, Result,
};

/// The soaks load the machine: one at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The filesystem of the fake host, counting how often each directory
/// was made.
struct CountingFilesystem {
    inner: Arc<dyn FilesystemApi>,
    made: Mutex<HashMap<String, usize>>,
}

#[async_trait]
impl FilesystemApi for CountingFilesystem {
    async fn mkdir(&self, path: &WindowsPath) -> Result<()> {
        *self
            .made
            .lock()
            .unwrap()
            .entry(path.as_str().to_owned())
            .or_default() += 1;
        self.inner.mkdir(path).await
    }
}

#[derive(Default)]
struct Tally {
    reads: AtomicUsize,
    failed_reads: AtomicUsize,
    mkdirs: AtomicUsize,
    unknown_mkdirs: AtomicUsize,
    failed_mkdirs: AtomicUsize,
}

fn soak_duration(default_secs: u64) -> Duration {
    let secs = std::env::var("CSI_PROXY_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_secs);
    Duration::from_secs(secs)
}

/// The readers and writers of one soak.
struct Load {
    tally: Arc<Tally>,
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    /// 16 readers of `ListDiskIDs` and 2 writers of directories on `proxy`.
    fn start(proxy: &CsiProxy) -> Self {
        let tally = Arc::new(Tally::default());
        let stop = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for _ in 0..16 {
            let (disk, tally, stop) = (proxy.disk().unwrap(), tally.clone(), stop.clone());
            tasks.push(tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    match disk.list_disk_ids().await {
                        Ok(_) => tally.reads.fetch_add(1, Ordering::Relaxed),
                        Err(e) => {
                            eprintln!("read failed: {e}");
                            tally.failed_reads.fetch_add(1, Ordering::Relaxed);
                            // A failure may come back at once: leave the
                            // other tasks their turn.
                            tokio::time::sleep(Duration::from_millis(1)).await;
                            0
                        }
                    };
                }
            }));
        }
        for writer in 0..2 {
            let (fs, tally, stop) = (proxy.filesystem().unwrap(), tally.clone(), stop.clone());
            tasks.push(tokio::spawn(async move {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let path = format!(r"C:\var\lib\kubelet\plugins\soak\w{writer}-{n}");
                    match fs.mkdir(&WindowsPath::new(&path).unwrap()).await {
                        Ok(()) => tally.mkdirs.fetch_add(1, Ordering::Relaxed),
                        // Cut off by a kill: the outcome is unknown; never
                        // sent again (by the SDK, nor here).
                        Err(Error::Transport {
                            maybe_sent: true, ..
                        }) => tally.unknown_mkdirs.fetch_add(1, Ordering::Relaxed),
                        Err(e) => {
                            eprintln!("mkdir failed: {e}");
                            tally.failed_mkdirs.fetch_add(1, Ordering::Relaxed)
                        }
                    };
                }
            }));
        }
        Self { tally, stop, tasks }
    }

    /// Stops the load once the proxy has been up a moment, and returns the
    /// tally.
    async fn finish(self) -> Arc<Tally> {
        tokio::time::sleep(Duration::from_millis(500)).await;
        self.stop.store(true, Ordering::Relaxed);
        for task in self.tasks {
            task.await.unwrap();
        }
        self.tally
    }
}

/// Prints the soak's report, writes it to `soak-report-<os><suffix>.txt`
/// for CI to show (libtest keeps a passing test's output to itself), and
/// checks what every soak must hold.
fn report(name: &str, suffix: &str, ran: Duration, kills: usize, tally: &Tally, extra: &str) {
    let load = |n: &AtomicUsize| n.load(Ordering::Relaxed);
    let (reads, failed_reads) = (load(&tally.reads), load(&tally.failed_reads));
    let (mkdirs, unknown, failed_mkdirs) = (
        load(&tally.mkdirs),
        load(&tally.unknown_mkdirs),
        load(&tally.failed_mkdirs),
    );
    let report = format!(
        "{name} ({}): {ran:?}, {kills} kills: {reads} reads ({failed_reads} failed); {mkdirs} \
         mkdirs ({unknown} cut off, outcome unknown; {failed_mkdirs} failed){extra}",
        std::env::consts::OS,
    );
    println!("{report}");
    let file = format!(
        "{}/soak-report-{}{suffix}.txt",
        env!("CARGO_TARGET_TMPDIR"),
        std::env::consts::OS
    );
    if let Err(e) = std::fs::write(&file, format!("{report}\n")) {
        eprintln!("soak: could not write {file}: {e}");
    }
    assert!(kills >= 5, "{kills}");
    assert!(reads > 0 && mkdirs > 0);
    assert_eq!(failed_reads, 0);
    assert_eq!(failed_mkdirs, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_never_fail_and_mutations_never_repeat_while_the_proxy_is_killed_and_restarted() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let host = seeded_host();
    let filesystem = Arc::new(CountingFilesystem {
        inner: host.backends().filesystem.unwrap(),
        made: Mutex::default(),
    });
    let backends = Backends {
        filesystem: Some(filesystem.clone()),
        ..host.backends()
    };
    let node = TestNode::new();
    let mut fake = FakeProxy::new(node.transport(), backends);
    let old = [
        (ApiGroup::Disk, V::V1BETA2),
        (ApiGroup::Filesystem, V::V1BETA1),
    ];
    let new = [(ApiGroup::Disk, V::V1), (ApiGroup::Filesystem, V::V1)];
    fake.serve_all(new).await.unwrap();
    let proxy = CsiProxy::builder()
        .transport(node.transport())
        .groups([ApiGroup::Disk, ApiGroup::Filesystem])
        .connect()
        .await
        .unwrap();

    let load = Load::start(&proxy);
    let started = Instant::now();
    let mut kills: usize = 0;
    while started.elapsed() < soak_duration(if cfg!(windows) { 10 } else { 30 }) {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        fake.stop_all().await;
        kills += 1;
        // Away for a moment, as a service restart is.
        tokio::time::sleep(Duration::from_millis(100 + 100 * (kills % 4) as u64)).await;
        let versions = if kills.is_multiple_of(2) { new } else { old };
        fake.serve_all(versions).await.unwrap();
    }
    let tally = load.finish().await;

    let made = filesystem.made.lock().unwrap();
    let twice = made.values().filter(|&&n| n > 1).count();
    let extra = format!("; {twice} applied twice");
    report("soak", "", started.elapsed(), kills, &tally, &extra);
    assert_eq!(twice, 0, "no mutation applied twice");
    // Every mkdir that succeeded was applied exactly once.
    let mkdirs = tally.mkdirs.load(Ordering::Relaxed);
    assert!(made.values().filter(|&&n| n == 1).count() >= mkdirs);
}

/// Where `csiproxyctl fake` serves, and how the client reaches it.
struct ProxyPlace {
    /// `--socket-dir D` or `--pipe-prefix P`.
    flag: [String; 2],
    transport: Transport,
    #[cfg(unix)]
    _dir: tempfile::TempDir,
}

impl ProxyPlace {
    #[cfg(unix)]
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_str().unwrap().to_owned();
        Self {
            transport: Transport::unix_sockets(&path).unwrap(),
            flag: ["--socket-dir".into(), path],
            _dir: dir,
        }
    }

    #[cfg(windows)]
    fn new() -> Self {
        let prefix = format!(r"\\.\pipe\csi-soak-{}-", std::process::id());
        Self {
            transport: Transport::named_pipes_with_prefix(&prefix)
                .unwrap()
                .trusting(
                    csi_proxy_client::transport::ServerTrust::default()
                        .trust_current_user()
                        .unwrap(),
                ),
            flag: ["--pipe-prefix".into(), prefix],
        }
    }

    /// Starts `csiproxyctl fake` serving `versions`, its endpoints made in
    /// `order` (a `--start-order`), 25 ms apart. The client does not wait
    /// for it: its looks fall in the middle of the start.
    fn start(&self, versions: &str, order: &str) -> Child {
        Command::new(env!("CARGO_BIN_EXE_csiproxyctl"))
            .args(&self.flag)
            .args(["fake", "--versions", versions, "--start-order", order])
            .args(["--start-gap", "25"])
            .stdout(Stdio::null())
            .spawn()
            .expect("csiproxyctl fake")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_never_fail_while_a_proxy_process_is_killed_and_restarts_in_any_order() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let place = ProxyPlace::new();
    // Every disk and filesystem version (v1alpha1 lacks ListDiskIDs), or
    // an older release's set.
    let all = "disk=v1alpha1,disk=v1beta1,disk=v1beta2,disk=v1beta3,disk=v1,\
               filesystem=v1alpha1,filesystem=v1beta1,filesystem=v1beta2,filesystem=v1";
    let old = "disk=v1alpha1,disk=v1beta1,disk=v1beta2,filesystem=v1alpha1,filesystem=v1beta1";
    let orders = ["as-given", "oldest-first", "random", "newest-first"];
    let mut fake = place.start(all, "as-given");
    let proxy = CsiProxy::builder()
        .transport(place.transport.clone())
        .require(ApiGroup::Disk)
        .require(ApiGroup::Filesystem)
        .connect()
        .await
        .unwrap();

    let load = Load::start(&proxy);
    let started = Instant::now();
    let mut kills: usize = 0;
    while started.elapsed() < soak_duration(if cfg!(windows) { 16 } else { 20 }) {
        tokio::time::sleep(Duration::from_millis(2000)).await;
        fake.kill().unwrap();
        fake.wait().unwrap();
        kills += 1;
        tokio::time::sleep(Duration::from_millis(100 + 100 * (kills % 4) as u64)).await;
        let versions = if kills.is_multiple_of(2) { all } else { old };
        fake = place.start(versions, orders[kills % orders.len()]);
    }
    let tally = load.finish().await;
    let _ = fake.kill();
    let _ = fake.wait();
    report(
        "soak, proxy in another process",
        "-process",
        started.elapsed(),
        kills,
        &tally,
        "",
    );
}
