//! One kind of shared listing (`ListDiskLocations` or `ListDiskIDs`): at
//! most one in flight, the next sent for all who asked meanwhile.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::lock;
use crate::api::DiskApi;
use crate::error::{Error, Result};

/// A call in flight, boxed so that a task can send it again.
type Pending<T> = Pin<Box<dyn Future<Output = Result<T>> + Send>>;

/// One kind of listing, shared as the [module docs](super) say. Listings
/// are numbered from 1 in the order they are sent; a finder waits for
/// the answer of a number, which a newer listing's answer also gives.
pub(super) struct Listing<T> {
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
    pub(super) fn new(what: &'static str, call: fn(Arc<dyn DiskApi>) -> Pending<T>) -> Self {
        Self {
            what,
            call,
            sends: Mutex::default(),
            answers: watch::channel((0, None)).0,
        }
    }

    /// The answer of listing `number`, or with none, of the first listing
    /// sent from now on.
    pub(super) async fn get(
        self: &Arc<Self>,
        disk: &Arc<dyn DiskApi>,
        number: Option<u64>,
    ) -> Result<T> {
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
    pub(super) fn reserve(self: &Arc<Self>, disk: &Arc<dyn DiskApi>, finders: usize) -> u64 {
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
mod tests;
