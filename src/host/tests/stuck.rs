//! Host calls that never return, as a WMI provider's do when it hangs on
//! a disk or target that does not answer: each group admits a bounded
//! number, a stuck call is not started again for its object, other groups
//! go on, and the health report says the group is stuck. And a WMI request
//! waited for within its limit, as `OsWmi` waits: given up once its caller
//! leaves, so its thread goes back and the call is no longer stuck.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::recorded::not_found;
use crate::api::WindowsPath;
use crate::health::ServedBy;
use crate::host::devices::OsDevices;
use crate::host::disk::HostDisk;
use crate::host::filesystem::HostFilesystem;
use crate::host::in_flight::apart::apart;
use crate::host::in_flight::LIMIT_PER_GROUP;
use crate::host::links::OsLinks;
use crate::host::wmi::wait::{self, Rows, Step};
use crate::host::wmi::{Limit, Wmi, WmiFailure, WmiObject, WmiValue};
use crate::working_dirs::KUBELET_DIR;
use crate::{ApiGroup, Backends, CallOptions, CsiProxy, Error};

/// A WMI whose every request waits until the gate opens, then fails as a
/// missing object, whatever its limit: as a request does where nothing
/// bounds its wait.
struct HangingWmi {
    gate: Arc<Gate>,
    entered: AtomicUsize,
}

#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
}

impl Gate {
    fn wait(&self) {
        let open = self.open.lock().unwrap();
        drop(self.opened.wait_while(open, |open| !*open).unwrap());
    }

    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }
}

/// Opens the gate when the test ends, however it ends, so that no thread
/// is left waiting.
struct OpenOnDrop(Arc<Gate>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}

impl HangingWmi {
    fn hang(&self) -> WmiFailure {
        self.entered.fetch_add(1, Ordering::SeqCst);
        self.gate.wait();
        not_found()
    }
}

impl Wmi for HangingWmi {
    fn query(&self, _: &str, _: &str, _: &Limit) -> Result<Vec<WmiObject>, WmiFailure> {
        Err(self.hang())
    }

    fn call(
        &self,
        _: &str,
        _: &str,
        _: &str,
        _: &str,
        _: Vec<(&'static str, WmiValue)>,
        _: &Limit,
    ) -> Result<WmiObject, WmiFailure> {
        Err(self.hang())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stuck_host_calls_are_bounded_never_restarted_and_reported() {
    let gate = Arc::new(Gate::default());
    let _open_at_end = OpenOnDrop(gate.clone());
    let wmi = Arc::new(HangingWmi {
        gate: gate.clone(),
        entered: AtomicUsize::new(0),
    });
    let entered = || wmi.entered.load(Ordering::SeqCst);
    // Calls apart from the other tests' (the limit is the process's).
    let backends = apart(|| Backends {
        disk: Some(Arc::new(HostDisk::new(wmi.clone(), Arc::new(OsDevices)))),
        filesystem: Some(Arc::new(HostFilesystem::new(
            vec![KUBELET_DIR.to_owned()],
            OsLinks,
        ))),
        ..Backends::default()
    });
    let deadline = CallOptions::default().deadline(Duration::from_millis(200));
    let proxy = CsiProxy::served_directly(backends, ServedBy::Host).with_call_options(deadline);
    let disks = proxy.disk().unwrap();

    // The first call outlives its deadline, and stays on the host.
    let error = disks.get_disk_stats(1).await.unwrap_err();
    assert!(matches!(error, Error::Timeout { .. }), "{error}");
    let health = proxy.health();
    let disk_health = health.group(ApiGroup::Disk).unwrap();
    assert!(
        disk_health.is_stuck() && disk_health.is_served(),
        "{health}"
    );
    // One stuck call leaves room for others: still ready.
    assert!(health.is_ready(&[ApiGroup::Disk]), "{health}");
    assert!(
        health.to_string().contains("1 host calls stuck"),
        "{health}"
    );

    // The same call on the same disk is refused at once, and not started.
    let error = disks.get_disk_stats(1).await.unwrap_err();
    assert!(
        matches!(&error, Error::InProgress { what } if what.contains("disk 1")),
        "{error}"
    );
    assert!(error.is_retryable());
    assert_eq!(entered(), 1);

    // Other disks' calls run until the group has its limit running ...
    let mut others = tokio::task::JoinSet::new();
    for n in 2..=LIMIT_PER_GROUP as u32 {
        let disks = disks.clone();
        others.spawn(async move { disks.get_disk_stats(n).await });
    }
    while let Some(result) = others.join_next().await {
        let result = result.unwrap();
        assert!(matches!(result, Err(Error::Timeout { .. })), "{result:?}");
    }
    assert_eq!(entered(), LIMIT_PER_GROUP);
    // ... and the next is refused at once, with nothing started. A call
    // that waited for room would wait its whole deadline, a minute here:
    // the bound is the behaviour, with half a minute to spare either way.
    let patient = proxy.with_call_options(CallOptions::default().deadline(Duration::from_secs(60)));
    let asked = Instant::now();
    let error = patient
        .disk()
        .unwrap()
        .get_disk_stats(100)
        .await
        .unwrap_err();
    assert!(asked.elapsed() < Duration::from_secs(30), "{error}");
    match &error {
        Error::HostBusy { group, running } => {
            assert_eq!((*group, *running), (ApiGroup::Disk, LIMIT_PER_GROUP));
        }
        other => panic!("{other}"),
    }
    assert!(error.is_retryable());
    assert_eq!(error.csi_code(), tonic::Code::Unavailable);
    assert_eq!(entered(), LIMIT_PER_GROUP);
    // Stuck calls fill the group: every call fails until the process
    // restarts, so it is not ready (a liveness probe restarts it).
    let stuck = proxy.health();
    assert!(stuck.to_string().contains("16 host calls stuck"), "{stuck}");
    assert!(!stuck.is_ready(&[ApiGroup::Disk]), "{stuck}");

    // Another group is not held up.
    let kubelet = WindowsPath::new(KUBELET_DIR).unwrap();
    std::fs::create_dir_all(KUBELET_DIR).unwrap();
    assert!(proxy
        .filesystem()
        .unwrap()
        .path_exists(&kubelet)
        .await
        .unwrap());

    // Once the provider answers, the calls end and the group is well.
    gate.open();
    let waited = Instant::now();
    while proxy.health().group(ApiGroup::Disk).unwrap().is_stuck() {
        assert!(waited.elapsed() < Duration::from_secs(10), "still stuck");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(proxy.health().is_ready(&[ApiGroup::Disk]));
    let error = disks.get_disk_stats(1).await.unwrap_err();
    assert!(matches!(error, Error::Host { .. }), "{error}");
}

/// A driver that builds a client per request, or again after errors: the
/// limit is the process's, so the stuck calls of every client count
/// against one limit per group, and each client's health compares them
/// with that limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clients_of_a_process_share_one_limit_per_group() {
    let gate = Arc::new(Gate::default());
    let _open_at_end = OpenOnDrop(gate.clone());
    let wmi = Arc::new(HangingWmi {
        gate: gate.clone(),
        entered: AtomicUsize::new(0),
    });
    let entered = || wmi.entered.load(Ordering::SeqCst);
    let deadline = CallOptions::default().deadline(Duration::from_millis(100));
    // Two clients of one process (apart from the other tests').
    let (first, second) = apart(|| {
        let client = || {
            let disk = HostDisk::new(wmi.clone(), Arc::new(OsDevices));
            let backends = Backends {
                disk: Some(Arc::new(disk)),
                ..Backends::default()
            };
            CsiProxy::served_directly(backends, ServedBy::Host).with_call_options(deadline)
        };
        (client(), client())
    });

    let half = LIMIT_PER_GROUP as u32 / 2;
    let mut calls = tokio::task::JoinSet::new();
    for n in 0..LIMIT_PER_GROUP as u32 {
        let client = if n < half { &first } else { &second };
        let disks = client.disk().unwrap();
        calls.spawn(async move { disks.get_disk_stats(n).await });
    }
    while let Some(result) = calls.join_next().await {
        let result = result.unwrap();
        assert!(matches!(result, Err(Error::Timeout { .. })), "{result:?}");
    }
    assert_eq!(entered(), LIMIT_PER_GROUP);
    // Half of them each: either client's next call finds the limit full.
    for client in [&first, &second] {
        match client.disk().unwrap().get_disk_stats(100).await {
            Err(Error::HostBusy { running, .. }) => assert_eq!(running, LIMIT_PER_GROUP),
            other => panic!("{other:?}"),
        }
        let health = client.health();
        assert!(
            health.to_string().contains("16 host calls stuck")
                && health.to_string().contains("at most 16 run"),
            "{health}"
        );
        assert!(!health.is_ready(&[ApiGroup::Disk]), "{health}");
    }
    assert_eq!(entered(), LIMIT_PER_GROUP);

    gate.open();
    let waited = Instant::now();
    while first.health().group(ApiGroup::Disk).unwrap().is_stuck() {
        assert!(waited.elapsed() < Duration::from_secs(10), "still stuck");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(second.health().is_ready(&[ApiGroup::Disk]));
}

/// A WMI whose provider never answers, waited for as `OsWmi` waits: in
/// slices, within the request's limit.
#[derive(Default)]
struct SilentWmi {
    /// Every wait a request asked for.
    waits: AtomicUsize,
}

/// A request to [`SilentWmi`]: nothing ever comes.
struct Silent<'a>(&'a AtomicUsize);

impl Rows for Silent<'_> {
    type Row = WmiObject;

    fn next(&mut self, wait: Duration) -> Step<WmiObject> {
        self.0.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(wait);
        Step::Pending
    }
}

impl Wmi for SilentWmi {
    fn query(&self, _: &str, _: &str, limit: &Limit) -> Result<Vec<WmiObject>, WmiFailure> {
        wait::collect(&mut Silent(&self.waits), limit)
    }

    fn call(
        &self,
        _: &str,
        _: &str,
        _: &str,
        _: &str,
        _: Vec<(&'static str, WmiValue)>,
        limit: &Limit,
    ) -> Result<WmiObject, WmiFailure> {
        let output = wait::collect(&mut Silent(&self.waits), limit)?;
        Ok(output.into_iter().next().unwrap_or_default())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wmi_request_whose_caller_left_gives_its_thread_back() {
    let wmi = Arc::new(SilentWmi::default());
    let waits = || wmi.waits.load(Ordering::SeqCst);
    let backends = apart(|| Backends {
        disk: Some(Arc::new(HostDisk::new(wmi.clone(), Arc::new(OsDevices)))),
        ..Backends::default()
    });
    let deadline = CallOptions::default().deadline(Duration::from_millis(200));
    let proxy = CsiProxy::served_directly(backends, ServedBy::Host).with_call_options(deadline);
    let disks = proxy.disk().unwrap();

    let error = disks.get_disk_stats(1).await.unwrap_err();
    assert!(matches!(error, Error::Timeout { .. }), "{error}");
    // Stuck for a moment: the request notices within a slice that its
    // caller left, gives up, and the thread goes back. One that did not
    // notice would stay stuck for good: the bound leaves a loaded machine
    // (and Wine) ample room.
    let left = Instant::now();
    while proxy.health().group(ApiGroup::Disk).unwrap().is_stuck() {
        let most = wait::SLICE + Duration::from_secs(10);
        assert!(left.elapsed() < most, "still stuck: {}", proxy.health());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // It asks WMI nothing more.
    let asked = waits();
    tokio::time::sleep(wait::SLICE + Duration::from_millis(200)).await;
    assert_eq!(waits(), asked);
    assert!(proxy.health().is_ready(&[ApiGroup::Disk]));
    // The same call on the same disk is no longer held off as in
    // progress: it runs, and times out in turn.
    let error = disks.get_disk_stats(1).await.unwrap_err();
    assert!(matches!(error, Error::Timeout { .. }), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_whose_caller_left_keeps_its_disk_in_progress_for_its_grace() {
    let wmi = Arc::new(SilentWmi::default());
    let grace = Duration::from_millis(1500);
    let backends = apart(|| Backends {
        disk: Some(Arc::new(
            HostDisk::new(wmi.clone(), Arc::new(OsDevices)).with_mutation_grace(grace),
        )),
        ..Backends::default()
    });
    let deadline = CallOptions::default().deadline(Duration::from_millis(200));
    let proxy = CsiProxy::served_directly(backends, ServedBy::Host).with_call_options(deadline);
    let disks = proxy.disk().unwrap();

    let error = disks.set_disk_state(1, true).await.unwrap_err();
    assert!(matches!(error, Error::Timeout { .. }), "{error}");
    let left = Instant::now();
    // Within its grace the change may still be under way in its provider:
    // the same change of the same disk is held off.
    let again = disks.set_disk_state(1, true).await.unwrap_err();
    assert!(matches!(again, Error::InProgress { .. }), "{again}");
    assert!(proxy.health().group(ApiGroup::Disk).unwrap().is_stuck());
    // Then its thread goes back (one that did not would stay stuck for
    // good: ample room for a loaded machine).
    while proxy.health().group(ApiGroup::Disk).unwrap().is_stuck() {
        let most = grace + wait::SLICE + Duration::from_secs(10);
        assert!(left.elapsed() < most, "still stuck: {}", proxy.health());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(left.elapsed() >= grace - Duration::from_millis(300));
}
