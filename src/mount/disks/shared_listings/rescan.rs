//! Rescans of the storage buses that concurrent finders share: one at a
//! time, at most one a poll interval, and the listings sent for their
//! finders as one ends.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::listing::Listing;
use super::{lock, AfterRescan, Ids, Locations, SharedListings, Wants};
use crate::api::DiskApi;

impl SharedListings {
    /// A rescan of the storage buses through `disk` before a look that
    /// `wants` listings: joins the one running, or is skipped when one was
    /// sent in this poll interval of `interval`, or starts one. Its failure
    /// is logged, not returned: the look may still find the disk.
    pub(in crate::mount::disks) async fn rescan(
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
}

/// The rescans: one at a time, at most one a poll interval.
#[derive(Default)]
pub(super) struct Rescans {
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

#[cfg(all(test, feature = "testing"))]
mod tests;
