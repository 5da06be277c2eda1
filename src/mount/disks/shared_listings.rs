//! SharedListings at the node's disks that concurrent finders share (issue 44: in
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

mod listing;
mod rescan;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use crate::api::{DiskApi, DiskIds, DiskLocation};
use crate::error::Result;
use listing::Listing;
use rescan::Rescans;

type Locations = BTreeMap<u32, DiskLocation>;
type Ids = BTreeMap<u32, DiskIds>;

/// The disk looks a mounter's finders share.
pub(crate) struct SharedListings {
    locations: Arc<Listing<Locations>>,
    ids: Arc<Listing<Ids>>,
    rescans: Arc<Mutex<Rescans>>,
    /// Where the poll clock starts.
    epoch: Instant,
}

impl Default for SharedListings {
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

impl SharedListings {
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

    /// The ticks of the poll clock of `interval` so far: which poll
    /// interval it is now.
    fn ticks(&self, interval: Duration) -> u128 {
        self.epoch.elapsed().as_nanos() / nanos(interval)
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

#[cfg(all(test, feature = "testing"))]
mod tests;
