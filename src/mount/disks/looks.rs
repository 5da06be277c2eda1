//! Looks at the node's disks that concurrent finders share (issue 44: in
//! a node's reboot storm, 64 stages waiting for their disks sent 128
//! rescans and 192 listings in 0.4 s, each on its own).
//!
//! - A listing (`ListDiskLocations`, `ListDiskIDs`, each on its own) is in
//!   flight at most once at a time. It serves every finder that asked
//!   before it was sent; one that asks while a listing is in flight waits
//!   for the next, sent as soon as that one ends for all who asked
//!   meanwhile: a listing newer than the request serves every waiter, and
//!   none is answered with a listing older than its question.
//! - Waiting finders look again together, at the ticks of one poll clock
//!   (every poll interval from the mounter's start), rather than each a
//!   poll interval after its own last look, which would spread their looks
//!   over the interval, one listing each.
//! - A rescan asked for while one runs joins it; one asked for in a poll
//!   interval in which one was already sent is skipped (the finder just
//!   looks again): at most one rescan a poll interval, however many wait.
//!   The finders that waited for a rescan look with the listings sent as
//!   it ended, one of each kind they need for them all.
//! - Each shared call runs on a task of its own: a finder that gives up
//!   (kubelet's deadline) does not cut it short for the others, and its
//!   answer, an error too, reaches every finder it serves.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::api::{DiskApi, DiskIds, DiskLocation};
use crate::error::{Error, Result};

type Locations = BTreeMap<u32, DiskLocation>;
type Ids = BTreeMap<u32, DiskIds>;

/// The disk looks a mounter's finders share.
pub(crate) struct Looks {
    locations: Arc<Listing<Locations>>,
    ids: Arc<Listing<Ids>>,
    rescans: Arc<Mutex<Rescans>>,
    /// Where the poll clock starts.
    epoch: Instant,
}

impl Default for Looks {
    fn default() -> Self {
        Self {
            locations: Arc::new(Listing::new("ListDiskLocations", |disk| {
                Box::pin(async move { disk.list_disk_locations().await })
            })),
            ids: Arc::new(Listing::new("ListDiskIDs", |disk| {
                Box::pin(async move { disk.list_disk_ids().await })
            })),
            rescans: Arc::default(),
            epoch: Instant::now(),
        }
    }
}

/// Which listings a look needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Wants {
    pub locations: bool,
    pub ids: bool,
}

/// The listings sent for the finders that waited for a rescan as it
/// ended, by number: what their next look reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct AfterRescan {
    locations: Option<u64>,
    ids: Option<u64>,
}

impl Looks {
    /// `ListDiskLocations` through `disk`: the one sent for the finders of
    /// a rescan (`after`), or the first one sent from now on.
    pub(super) async fn locations(
        &self,
        disk: &Arc<dyn DiskApi>,
        after: AfterRescan,
    ) -> Result<Locations> {
        self.locations.get(disk, after.locations).await
    }

    /// `ListDiskIDs` through `disk`, as [`locations`](Self::locations).
    pub(super) async fn ids(&self, disk: &Arc<dyn DiskApi>, after: AfterRescan) -> Result<Ids> {
        self.ids.get(disk, after.ids).await
    }

    /// The first tick of the poll clock of `interval` after now: when the
    /// finders waiting now look again, together.
    pub(super) fn next_poll(&self, interval: Duration) -> Instant {
        let ticks = self.ticks(interval) + 1;
        let since = u64::try_from(ticks * nanos(interval)).unwrap_or(u64::MAX);
        self.epoch + Duration::from_nanos(since)
    }

    /// A rescan of the storage buses through `disk` before a look that
    /// `wants` listings: joins the one running, or is skipped when one was
    /// sent in this poll interval of `interval`, or starts one. Its failure
    /// is logged, not returned: the look may still find the disk.
    pub(super) async fn rescan(
        &self,
        disk: &Arc<dyn DiskApi>,
        interval: Duration,
        wants: Wants,
    ) -> AfterRescan {
        let mut joined = {
            let mut rescans = lock(&self.rescans);
            let ended = match &rescans.running {
                Some(running) => running.subscribe(),
                None if rescans.sent_in == Some(self.ticks(interval)) => {
                    return AfterRescan::default();
                }
                None => self.start_rescan(&mut rescans, disk, interval),
            };
            rescans.looking.add(wants);
            Joined {
                rescans: &self.rescans,
                wants,
                ended,
            }
        };
        let after = match joined.ended.wait_for(Option::is_some).await {
            Ok(after) => after.unwrap_or_default(),
            // Its task stopped without a word: a plain look.
            Err(_) => AfterRescan::default(),
        };
        after
    }

    /// Starts a rescan on a task of its own; where its end is told.
    fn start_rescan(
        &self,
        rescans: &mut Rescans,
        disk: &Arc<dyn DiskApi>,
        interval: Duration,
    ) -> watch::Receiver<Option<AfterRescan>> {
        let (running, ended) = watch::channel(None);
        rescans.running = Some(running);
        rescans.sent_in = Some(self.ticks(interval));
        let rescan = Rescan {
            rescans: self.rescans.clone(),
            locations: self.locations.clone(),
            ids: self.ids.clone(),
            disk: disk.clone(),
        };
        tokio::spawn(rescan.run());
        ended
    }

    /// The ticks of the poll clock of `interval` so far: which poll
    /// interval it is now.
    fn ticks(&self, interval: Duration) -> u128 {
        self.epoch.elapsed().as_nanos() / nanos(interval)
    }
}

/// A call in flight, boxed so that a task can send it again.
type Pending<T> = Pin<Box<dyn Future<Output = Result<T>> + Send>>;

/// One kind of listing, shared as the [module docs](self) say. Listings
/// are numbered from 1 in the order they are sent; a finder waits for
/// the answer of a number, which a newer listing's answer also gives.
struct Listing<T> {
    /// Its name, for errors.
    what: &'static str,
    call: fn(Arc<dyn DiskApi>) -> Pending<T>,
    sends: Mutex<Sends>,
    /// The last answer, and the number of its listing.
    answers: watch::Sender<(u64, Option<Result<T>>)>,
}

/// Where the listings of one kind stand.
#[derive(Default)]
struct Sends {
    /// The number of the last listing sent (0: none yet).
    sent: u64,
    /// Whether it is in flight.
    in_flight: bool,
    /// How many finders wait for the next one (they asked while one was
    /// in flight).
    waiting: usize,
}

impl<T: Clone + Send + Sync + 'static> Listing<T> {
    fn new(what: &'static str, call: fn(Arc<dyn DiskApi>) -> Pending<T>) -> Self {
        Self {
            what,
            call,
            sends: Mutex::default(),
            answers: watch::channel((0, None)).0,
        }
    }

    /// The answer of listing `number`, or with none, of the first listing
    /// sent from now on.
    async fn get(self: &Arc<Self>, disk: &Arc<dyn DiskApi>, number: Option<u64>) -> Result<T> {
        let number = number.unwrap_or_else(|| self.reserve(disk, 1));
        let mut answers = self.answers.subscribe();
        let _gives_up = GivesUp {
            listing: self,
            number,
        };
        // Cloned out at once: an answer is sent under the lock that the
        // guard's drop takes. (The sender lives as long as the listing: the
        // channel never closes.)
        let answer = answers
            .wait_for(|(answered, _)| *answered >= number)
            .await
            .map_err(|_| lost(self.what))?
            .1
            .clone();
        answer.unwrap_or_else(|| Err(lost(self.what)))
    }

    /// The number of the first listing sent from now on, for `finders`:
    /// sent now when none is in flight, else when the one in flight ends.
    fn reserve(self: &Arc<Self>, disk: &Arc<dyn DiskApi>, finders: usize) -> u64 {
        let mut sends = lock(&self.sends);
        if sends.in_flight {
            sends.waiting += finders;
            return sends.sent + 1;
        }
        sends.sent += 1;
        sends.in_flight = true;
        let sending = Sending {
            listing: self.clone(),
            disk: disk.clone(),
            settled: false,
        };
        tokio::spawn(sending.run());
        sends.sent
    }

    /// Gives the listing in flight its answer; whether the next one is to
    /// be sent now, for the finders that asked meanwhile. `None`: it has
    /// none (its task stopped), and the next will not be sent: the finders
    /// of both fail.
    fn settle(&self, answer: Option<Result<T>>) -> bool {
        let mut sends = lock(&self.sends);
        let answer = answer.unwrap_or_else(|| {
            sends.sent += 1;
            sends.waiting = 0;
            Err(lost(self.what))
        });
        self.answers.send_replace((sends.sent, Some(answer)));
        tracing::trace!(
            listing = self.what,
            number = sends.sent,
            "shared disk listing answered"
        );
        if sends.waiting == 0 {
            sends.in_flight = false;
            return false;
        }
        sends.sent += 1;
        sends.waiting = 0;
        true
    }
}

/// A finder waiting for listing `number`: when it gives up while that
/// one is still the next to send, it is no longer waited for.
struct GivesUp<'a, T> {
    listing: &'a Listing<T>,
    number: u64,
}

impl<T> Drop for GivesUp<'_, T> {
    fn drop(&mut self) {
        let mut sends = lock(&self.listing.sends);
        if sends.in_flight && self.number == sends.sent + 1 {
            sends.waiting = sends.waiting.saturating_sub(1);
        }
    }
}

/// The task that sends listings of one kind while finders wait.
struct Sending<T: Clone + Send + Sync + 'static> {
    listing: Arc<Listing<T>>,
    disk: Arc<dyn DiskApi>,
    settled: bool,
}

impl<T: Clone + Send + Sync + 'static> Sending<T> {
    /// Sends the listing marked in flight, then the next one for as long
    /// as finders asked during the last.
    async fn run(mut self) {
        loop {
            let answer = (self.listing.call)(self.disk.clone()).await;
            if !self.listing.settle(Some(answer)) {
                self.settled = true;
                return;
            }
        }
    }
}

impl<T: Clone + Send + Sync + 'static> Drop for Sending<T> {
    /// A task that stopped without an answer (a panic, a runtime shutting
    /// down, even before it first ran) fails the finders waiting for it,
    /// so that none waits for nothing and the next look sends afresh.
    fn drop(&mut self) {
        if !self.settled {
            self.listing.settle(None);
        }
    }
}

/// The rescans: one at a time, at most one a poll interval.
#[derive(Default)]
struct Rescans {
    /// The rescan running: it tells its finders when it ends, and which
    /// listings were sent for them.
    running: Option<watch::Sender<Option<AfterRescan>>>,
    /// The poll interval (ticks of the poll clock) the last one was sent in.
    sent_in: Option<u128>,
    /// What its finders look at next.
    looking: Looking,
}

/// How many finders of a rescan look next at each kind of listing.
#[derive(Clone, Copy, Default)]
struct Looking {
    locations: usize,
    ids: usize,
}

impl Looking {
    fn add(&mut self, wants: Wants) {
        self.locations += usize::from(wants.locations);
        self.ids += usize::from(wants.ids);
    }

    fn remove(&mut self, wants: Wants) {
        self.locations = self.locations.saturating_sub(usize::from(wants.locations));
        self.ids = self.ids.saturating_sub(usize::from(wants.ids));
    }
}

/// A finder waiting for a rescan: when it gives up before the rescan
/// ends, no listing is sent for it.
struct Joined<'a> {
    rescans: &'a Mutex<Rescans>,
    wants: Wants,
    ended: watch::Receiver<Option<AfterRescan>>,
}

impl Drop for Joined<'_> {
    fn drop(&mut self) {
        let mut rescans = lock(self.rescans);
        // Still running: its end, which counts the finders, takes this lock.
        if self.ended.borrow().is_none() {
            rescans.looking.remove(self.wants);
        }
    }
}

/// A rescan on a task of its own, and what it needs to send the listings
/// its finders look at next.
struct Rescan {
    rescans: Arc<Mutex<Rescans>>,
    locations: Arc<Listing<Locations>>,
    ids: Arc<Listing<Ids>>,
    disk: Arc<dyn DiskApi>,
}

impl Rescan {
    async fn run(self) {
        if let Err(error) = self.disk.rescan().await {
            // The next look may still find the disk; a host that cannot
            // rescan is no reason to stop looking.
            tracing::debug!(%error, "rescan before looking for a disk again failed");
        }
        let mut rescans = lock(&self.rescans);
        let looking = std::mem::take(&mut rescans.looking);
        let after = AfterRescan {
            locations: (looking.locations > 0)
                .then(|| self.locations.reserve(&self.disk, looking.locations)),
            ids: (looking.ids > 0).then(|| self.ids.reserve(&self.disk, looking.ids)),
        };
        if let Some(running) = rescans.running.take() {
            running.send_replace(Some(after));
        }
    }
}

impl Drop for Rescan {
    /// A rescan whose task stopped early (a panic) ends too: its finders
    /// look on their own.
    fn drop(&mut self) {
        let mut rescans = lock(&self.rescans);
        if let Some(running) = rescans.running.take() {
            rescans.looking = Looking::default();
            running.send_replace(Some(AfterRescan::default()));
        }
    }
}

/// The state behind `mutex`, even if a panic poisoned it: nothing that
/// can panic runs while one is held.
fn lock<S>(mutex: &Mutex<S>) -> MutexGuard<'_, S> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `interval` in nanoseconds, at least 1.
fn nanos(interval: Duration) -> u128 {
    interval.as_nanos().max(1)
}

/// The task of a shared listing ended without an answer: it panicked (a
/// bug), or the runtime is shutting down.
fn lost(what: &str) -> Error {
    Error::InProgress {
        what: format!(
            "a shared {what} ended without an answer (its task stopped): it may have been cut \
             short; retry"
        ),
    }
}

#[cfg(all(test, feature = "testing"))]
mod tests {
    use super::*;
    use crate::capability::Operation;
    use crate::testing::FakeHost;

    const IDS: Wants = Wants {
        locations: false,
        ids: true,
    };
    const LOCATIONS: Wants = Wants {
        locations: true,
        ids: false,
    };
    /// Longer than any test: one poll interval throughout.
    const HOUR: Duration = Duration::from_secs(3_600);

    fn node() -> (FakeHost, Arc<dyn DiskApi>, Arc<Looks>) {
        let host = FakeHost::builder().disk(1, "pd-1", 1 << 30).build();
        let disk: Arc<dyn DiskApi> = Arc::new(host.clone());
        (host, disk, Arc::new(Looks::default()))
    }

    /// `ListDiskIDs` for a finder asking now, on a task of its own.
    fn ids(looks: &Arc<Looks>, disk: &Arc<dyn DiskApi>) -> tokio::task::JoinHandle<Result<Ids>> {
        let (looks, disk) = (looks.clone(), disk.clone());
        tokio::spawn(async move { looks.ids(&disk, AfterRescan::default()).await })
    }

    /// Lets spawned finders ask.
    async fn settle_down() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    #[tokio::test]
    async fn who_asks_during_a_listing_shares_the_next_and_who_gives_up_is_not_waited_for() {
        let (host, disk, looks) = node();
        let held = host.hold_call(1);
        let first = ids(&looks, &disk);
        let (_, go) = held.await.unwrap();
        let (second, third) = (ids(&looks, &disk), ids(&looks, &disk));
        settle_down().await;
        go.send(()).unwrap();
        for finder in [first, second, third] {
            assert!(finder.await.unwrap().unwrap().contains_key(&1));
        }
        assert_eq!(host.calls_of(Operation::ListDiskIds), 2);

        // All who waited for the next listing gave up: none is sent.
        let held = host.hold_call(1);
        let first = ids(&looks, &disk);
        let (_, go) = held.await.unwrap();
        let gave_up = [ids(&looks, &disk), ids(&looks, &disk)];
        settle_down().await;
        for finder in gave_up {
            finder.abort();
        }
        settle_down().await;
        go.send(()).unwrap();
        first.await.unwrap().unwrap();
        settle_down().await;
        assert_eq!(host.calls_of(Operation::ListDiskIds), 3);
        assert!(!lock(&looks.ids.sends).in_flight);
    }

    #[tokio::test]
    async fn a_rescan_is_joined_and_sent_once_a_poll_interval() {
        let (host, disk, looks) = node();
        let held = host.hold_call(1);
        let rescan = |wants| {
            let (looks, disk) = (looks.clone(), disk.clone());
            tokio::spawn(async move { looks.rescan(&disk, HOUR, wants).await })
        };
        let first = rescan(IDS);
        let (operation, go) = held.await.unwrap();
        assert_eq!(operation, Operation::Rescan);
        let joined = [rescan(IDS), rescan(IDS)];
        // One that gives up before the rescan ends is sent no listing.
        let gave_up = rescan(LOCATIONS);
        settle_down().await;
        gave_up.abort();
        settle_down().await;
        go.send(()).unwrap();

        let after = first.await.unwrap();
        assert_eq!(after.ids, Some(1), "sent as the rescan ended");
        assert_eq!(after.locations, None, "nobody looks at locations");
        for joiner in joined {
            assert_eq!(joiner.await.unwrap(), after, "one listing for all");
        }
        // Those finders read that listing: one call.
        for _ in 0..3 {
            looks.ids(&disk, after).await.unwrap();
        }
        assert_eq!(host.calls_of(Operation::ListDiskIds), 1);
        assert_eq!(host.calls_of(Operation::ListDiskLocations), 0);
        // In the same poll interval, a rescan is skipped: a plain look.
        assert_eq!(rescan(IDS).await.unwrap(), AfterRescan::default());
        assert_eq!(host.rescans(), 1);
    }

    #[test]
    fn a_listing_whose_task_stops_fails_its_finders_and_the_next_is_sent_afresh() {
        let (host, disk, looks) = node();
        let runtime = || {
            let builder = &mut tokio::runtime::Builder::new_current_thread();
            builder.enable_all().build().unwrap()
        };
        // A finder's listing is on the host when its runtime shuts down.
        let first = runtime();
        let held = host.hold_call(1);
        let go = first.block_on(async {
            let _finder = ids(&looks, &disk);
            held.await.unwrap().1
        });
        drop(first);
        drop(go);
        let answers = looks.ids.answers.borrow().1.clone();
        let error = answers.unwrap().unwrap_err();
        assert!(matches!(error, Error::InProgress { .. }), "{error}");
        // The next look is not left waiting for it.
        let listed = runtime().block_on(looks.ids(&disk, AfterRescan::default()));
        assert!(listed.unwrap().contains_key(&1));
    }

    #[tokio::test]
    async fn waiting_finders_look_again_at_the_same_ticks() {
        let looks = Looks::default();
        let interval = Duration::from_millis(40);
        let next = looks.next_poll(interval);
        let now = Instant::now();
        assert!(next > now && next <= now + interval);
        tokio::time::sleep(Duration::from_millis(5)).await;
        // A finder that looked a little later looks again at the same tick,
        // unless that tick has just passed.
        let later = looks.next_poll(interval);
        assert!(later == next || (later == next + interval && Instant::now() >= next));
    }
}
