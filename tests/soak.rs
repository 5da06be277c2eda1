//! A bounded soak: 16 readers and 2 writers on one default client while the
//! proxy is killed and restarted every couple of seconds, every other time
//! with another set of versions. No read may fail, and no mutation may be
//! applied twice (one cut off by a kill may be unknown, and is then applied
//! at most once). 30 s by default (`CSI_PROXY_SOAK_SECS` sets it); it
//! prints its report and writes it to `target/tmp/soak-report-<os>.txt`.
//!
//! Over Unix sockets here, and over named pipes when built for Windows.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::scenario::seeded_host;
use common::TestNode;
use csi_proxy_client::testing::FakeProxy;
use csi_proxy_client::{
    async_trait, ApiGroup, ApiVersion as V, Backends, CsiProxy, Error, FilesystemApi, Result,
    WindowsPath,
};

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

fn soak_duration() -> Duration {
    let default = if cfg!(windows) { 10 } else { 30 };
    let secs = std::env::var("CSI_PROXY_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default);
    Duration::from_secs(secs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_never_fail_and_mutations_never_repeat_while_the_proxy_is_killed_and_restarted() {
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
                        tally.failed_reads.fetch_add(1, Ordering::Relaxed)
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

    let started = Instant::now();
    let mut kills = 0;
    while started.elapsed() < soak_duration() {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        fake.stop_all().await;
        kills += 1;
        // Away for a moment, as a service restart is.
        tokio::time::sleep(Duration::from_millis(100 + 100 * (kills % 4))).await;
        let versions = if kills % 2 == 0 { new } else { old };
        fake.serve_all(versions).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        task.await.unwrap();
    }

    let made = filesystem.made.lock().unwrap();
    let twice = made.values().filter(|&&n| n > 1).count();
    let (reads, failed_reads) = (
        tally.reads.load(Ordering::Relaxed),
        tally.failed_reads.load(Ordering::Relaxed),
    );
    let (mkdirs, unknown, failed_mkdirs) = (
        tally.mkdirs.load(Ordering::Relaxed),
        tally.unknown_mkdirs.load(Ordering::Relaxed),
        tally.failed_mkdirs.load(Ordering::Relaxed),
    );
    let report = format!(
        "soak ({}): {:?}, {kills} kills: {reads} reads ({failed_reads} failed); {mkdirs} mkdirs \
         ({unknown} cut off, outcome unknown; {failed_mkdirs} failed); {twice} applied twice",
        std::env::consts::OS,
        started.elapsed()
    );
    println!("{report}");
    // Also in a file, for CI to show from a passing run (libtest keeps a
    // passing test's output to itself).
    let file = format!(
        "{}/soak-report-{}.txt",
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
    assert_eq!(twice, 0, "no mutation applied twice");
    // Every mkdir that succeeded was applied exactly once.
    assert!(made.values().filter(|&&n| n == 1).count() >= mkdirs);
}
