//! Concurrent finders share their looks at the disks (issue 44, a node's
//! reboot storm): one listing of each kind in flight at a time, serving
//! every finder that asked before it was sent; at most one rescan a poll
//! interval; a finder that gives up stops nothing for the others; a failed
//! listing fails the finders it was to answer, and the next look works.

use std::time::{Duration, Instant};

use super::{path, Node, GIB, PAGE83};
use csi_proxy_client::api::{IscsiApi, IscsiAuth};
use csi_proxy_client::mount::{DiskSelector, Mounter};
use csi_proxy_client::testing::sample::portal;
use csi_proxy_client::testing::{FakeHost, FakeHostBuilder, ProxyRelease, WindowsError};
use csi_proxy_client::{Error, Operation as Op};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The poll interval of the tests' mounters (`super::mounter`).
const POLL: Duration = Duration::from_millis(10);
/// The disks a reboot storm waits for, on two iSCSI targets of one portal.
const STORM: usize = 64;
const TARGETS: [&str; 2] = ["iqn.2026-01.example:a", "iqn.2026-01.example:b"];

fn page83_of(volume: usize) -> String {
    format!("Google  pvc-{volume}")
}

/// A host with `volumes` disks not attached yet: those of even volumes on
/// the first target, the rest on the second.
fn unattached(volumes: usize) -> FakeHostBuilder {
    let mut host = FakeHost::builder();
    for (index, iqn) in TARGETS.iter().enumerate() {
        let names: Vec<String> = (0..volumes)
            .filter(|volume| volume % 2 == index)
            .map(page83_of)
            .collect();
        let disks: Vec<(&str, u64)> = names.iter().map(|name| (name.as_str(), GIB)).collect();
        host = host.iscsi_target(portal(), iqn, &disks, None, None);
    }
    host
}

/// The disks of target `iqn` reach the node (the portal registered
/// before): a login, behind the driver's back.
async fn attach(host: &FakeHost, iqn: &str) {
    let portal = portal();
    let login = host.connect_target(&portal, iqn, &IscsiAuth::None);
    login.await.unwrap();
}

/// One finder's single look for the disk of page 0x83 ID `page83`, as
/// `stats` and `expand` look, on a task of its own.
fn look(mounter: &Mounter, page83: &str) -> JoinHandle<csi_proxy_client::Result<u32>> {
    look_asking(mounter, page83).0
}

/// [`look`], and word that the finder has asked: the first time its task
/// waits. A finder asks (takes its place for a listing) before it waits
/// for anything, and sends nothing before it asks; one that ends without
/// waiting drops the sender, which says the same.
fn look_asking(
    mounter: &Mounter,
    page83: &str,
) -> (
    JoinHandle<csi_proxy_client::Result<u32>>,
    oneshot::Receiver<()>,
) {
    let (mounter, selector) = (mounter.clone(), DiskSelector::page83(page83));
    let (asked, told) = oneshot::channel();
    let mut asked = Some(asked);
    let mut finding = Box::pin(async move { mounter.find_disk(&selector, Duration::ZERO).await });
    let task = tokio::spawn(std::future::poll_fn(move |cx| {
        let polled = std::future::Future::poll(finding.as_mut(), cx);
        if polled.is_pending() {
            if let Some(asked) = asked.take() {
                let _ = asked.send(());
            }
        }
        polled
    }));
    (task, told)
}

/// Waits until every finder of `asked` has asked.
async fn let_them_ask(asked: impl IntoIterator<Item = oneshot::Receiver<()>>) {
    for finder in asked {
        let _ = finder.await;
    }
}

/// The host's rescans and `ListDiskIDs` calls, as they went.
struct Counts {
    samples: Vec<(Duration, usize, usize)>,
}

impl Counts {
    /// Samples them every millisecond until `stop` is sent.
    fn sample(host: FakeHost, stop: oneshot::Receiver<()>) -> JoinHandle<Counts> {
        tokio::spawn(async move {
            let (started, mut samples) = (Instant::now(), Vec::new());
            tokio::pin!(stop);
            loop {
                let counts = (host.rescans(), host.calls_of(Op::ListDiskIds));
                samples.push((started.elapsed(), counts.0, counts.1));
                tokio::select! {
                    _ = &mut stop => return Counts { samples },
                    _ = tokio::time::sleep(Duration::from_millis(1)) => {}
                }
            }
        })
    }

    /// The rescans and listings since the first sample, and how long the
    /// finders waited: until the counts last changed (a stage that found
    /// its disk lists no more).
    fn over_the_wait(&self) -> (usize, usize, Duration) {
        let (&(_, rescans_before, listings_before), &(_, rescans, listings)) =
            (self.samples.first().unwrap(), self.samples.last().unwrap());
        let newest_first = self.samples.iter().rev();
        let (last_change, _) = newest_first
            .clone()
            .zip(newest_first.skip(1))
            .find(|(later, earlier)| (later.1, later.2) != (earlier.1, earlier.2))
            .unwrap();
        (
            rescans - rescans_before,
            listings - listings_before,
            last_change.0,
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reboot_storm_rescans_once_a_poll_and_lists_at_most_twice() {
    let node = Node::on(ProxyRelease::LATEST, unattached(STORM)).await;
    node.host.add_target_portal(&portal()).await.unwrap();
    // Waiting longer than the other tests' mounters: the disks come late.
    let state = tempfile::tempdir().unwrap();
    let mounter = Mounter::builder(node.mounter.proxy().clone(), state.path())
        .poll_interval(POLL)
        .disk_wait(Duration::from_secs(30))
        .build()
        .unwrap();
    let (stop, stopped) = oneshot::channel();
    let counts = Counts::sample(node.host.clone(), stopped);
    let stages: Vec<_> = (0..STORM)
        .map(|volume| {
            let mounter = mounter.clone();
            let selector = DiskSelector::page83(page83_of(volume));
            let staging = path(&format!(
                r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\pd\pv{volume}\globalmount"
            ));
            tokio::spawn(async move { mounter.stage_disk(&selector, &staging).await })
        })
        .collect();
    // Half the disks come after 20 polls, the rest 20 polls later.
    for iqn in TARGETS {
        tokio::time::sleep(20 * POLL).await;
        attach(&node.host, iqn).await;
    }
    for (volume, stage) in stages.into_iter().enumerate() {
        let disk = stage.await.unwrap().unwrap().disk;
        let page83 = node.host.disk(disk).unwrap().page83;
        assert_eq!(page83, page83_of(volume), "each stage found its own disk");
    }
    stop.send(()).unwrap();
    let (rescans, listings, waited) = counts.await.unwrap().over_the_wait();
    let polls = waited.as_secs_f64() / POLL.as_secs_f64();
    eprintln!("{STORM} stages waited {polls:.1} polls: {rescans} rescans, {listings} listings");
    assert!(
        rescans as f64 <= polls + 1.0,
        "at most one rescan a poll: {rescans} in {polls:.1} polls"
    );
    assert!(
        listings as f64 <= 2.0 * (polls + 1.0),
        "at most two listings a poll: {listings} in {polls:.1} polls"
    );
    assert_eq!(node.host_calls(Op::ListDiskLocations), 0, "not asked for");
}

#[tokio::test]
async fn a_listing_sent_before_a_disk_appeared_does_not_answer_who_asked_after() {
    let node = Node::on(ProxyRelease::LATEST, unattached(1)).await;
    node.host.add_target_portal(&portal()).await.unwrap();
    let late = page83_of(0);
    // The first finder's listing is done on the host, its answer on its
    // way: the disk is not in it.
    let held = node.host.hold_answer(1);
    let first = look(&node.mounter, &late);
    let (operation, answer) = held.await.unwrap();
    assert_eq!(operation, Op::ListDiskIds);
    // The disk arrives; two finders ask while that listing is in flight.
    attach(&node.host, TARGETS[0]).await;
    let (after, asked): (Vec<_>, Vec<_>) =
        (0..2).map(|_| look_asking(&node.mounter, &late)).unzip();
    let_them_ask(asked).await;
    answer.send(()).unwrap();

    let error = first.await.unwrap().unwrap_err();
    assert!(matches!(error, Error::NotFound { .. }), "{error}");
    let disk = node.host.disk_number_of(&late).unwrap();
    for finder in after {
        assert_eq!(
            finder.await.unwrap().unwrap(),
            disk,
            "a listing newer than the question"
        );
    }
    assert_eq!(
        node.host_calls(Op::ListDiskIds),
        2,
        "the two who asked during the first listing shared the next"
    );
}

#[tokio::test]
async fn a_finder_that_gives_up_mid_look_stops_nothing_for_the_others() {
    let node = Node::with_disk(ProxyRelease::LATEST).await;
    // The first finder's listing is held on the host before its work.
    let held = node.host.hold_call(1);
    let first = look(&node.mounter, PAGE83);
    let (operation, go) = held.await.unwrap();
    assert_eq!(operation, Op::ListDiskIds);
    // Two more ask meanwhile, for the next listing; then the first gives
    // up, its listing still on the host.
    let held_next = node.host.hold_call(1);
    let ((second, asked_2), (third, asked_3)) = (
        look_asking(&node.mounter, PAGE83),
        look_asking(&node.mounter, PAGE83),
    );
    let_them_ask([asked_2, asked_3]).await;
    first.abort();
    assert!(first.await.unwrap_err().is_cancelled());
    go.send(()).unwrap();
    // The next listing, for the two, is sent; one of them gives up while
    // it is on the host.
    let (operation, go_next) = held_next.await.unwrap();
    assert_eq!(operation, Op::ListDiskIds);
    second.abort();
    assert!(second.await.unwrap_err().is_cancelled());
    go_next.send(()).unwrap();

    assert_eq!(third.await.unwrap().unwrap(), 1);
    assert_eq!(node.host_calls(Op::ListDiskIds), 2);
}

#[tokio::test]
async fn a_failed_shared_listing_fails_its_sharers_and_the_next_look_works() {
    let node = Node::with_disk(ProxyRelease::LATEST).await;
    let failure = WindowsError::with_message(WindowsError::IO_DEVICE, "Get-Disk: device error");
    node.host.fail_call(Op::ListDiskIds, 2, failure);
    let held = node.host.hold_call(1);
    let first = look(&node.mounter, PAGE83);
    let (_, go) = held.await.unwrap();
    // Two ask during the first listing: they share the second, which fails.
    let (sharers, asked): (Vec<_>, Vec<_>) =
        (0..2).map(|_| look_asking(&node.mounter, PAGE83)).unzip();
    let_them_ask(asked).await;
    go.send(()).unwrap();

    assert_eq!(first.await.unwrap().unwrap(), 1);
    for sharer in sharers {
        let error = sharer.await.unwrap().unwrap_err();
        assert!(
            matches!(&error, Error::Host { operation: Op::ListDiskIds, message, .. }
                if message.contains("Get-Disk: device error")),
            "{error}"
        );
        assert!(error.to_string().contains("ListDiskIDs"), "{error}");
    }
    assert_eq!(
        node.host_calls(Op::ListDiskIds),
        2,
        "one failed listing for both"
    );
    // The next look sends a listing of its own, and finds the disk.
    assert_eq!(look(&node.mounter, PAGE83).await.unwrap().unwrap(), 1);
    assert_eq!(node.host_calls(Op::ListDiskIds), 3);
}

#[tokio::test]
async fn finders_that_ask_together_share_a_listing() {
    let node = Node::with_disk(ProxyRelease::LATEST).await;
    let finders: Vec<_> = (0..STORM).map(|_| look(&node.mounter, PAGE83)).collect();
    for finder in finders {
        assert_eq!(finder.await.unwrap().unwrap(), 1);
    }
    // The first asked alone; the others asked while its listing was in
    // flight, and shared the next.
    let listings = node.host_calls(Op::ListDiskIds);
    assert!((1..=2).contains(&listings), "{listings} listings");
}
