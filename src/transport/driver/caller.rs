//! A caller's side of the driver: the claim of one call under way
//! ([`Caller`]), and the waker h2 gets for its stream ([`CallWake`]). The
//! rules they follow are in the parent module's docs.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Wake, Waker};

use super::*;

/// The waker h2 gets for a call's stream while its caller drives: it wakes
/// the caller, except from the caller's own poll of the connection.
struct CallWake {
    id: Poller,
    polling_for: Arc<AtomicU64>,
    caller: Mutex<Option<Waker>>,
}

impl CallWake {
    fn set(&self, waker: &Waker) {
        keep_waker(
            &mut self.caller.lock().unwrap_or_else(PoisonError::into_inner),
            waker,
        );
    }
}

impl Wake for CallWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Its caller polls the connection now, and its stream right after
        // (module docs). Relaxed is enough: the poller reads its own
        // writes, and a wake-up from another thread comes under h2's lock,
        // which orders it against the caller's next poll of its stream:
        // before that poll, the poll sees what it was for; after it, this
        // reads what the caller wrote before it.
        if self.polling_for.load(Relaxed) == self.id {
            return;
        }
        let caller = self
            .caller
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(caller) = caller {
            caller.wake();
        }
    }
}

/// One call under way: whether its caller drives the connection. Its drop
/// ends the call's part in driving.
pub(crate) struct Caller {
    driver: Arc<Driver>,
    id: Poller,
    /// Made when the caller first drives.
    own: Option<(Arc<CallWake>, Waker)>,
}

impl Caller {
    /// The claim of call `id` on `driver`'s connection.
    pub(super) fn new(driver: Arc<Driver>, id: Poller) -> Self {
        Self {
            driver,
            id,
            own: None,
        }
    }

    /// Whether the route is this caller's.
    fn claims(&self, route: &Route) -> bool {
        matches!(route.caller, Some((id, _)) if id == self.id)
    }

    /// Runs `f`, which hands h2 a request to send or drops the call's last
    /// h2 handles; a caller that drives polls the connection right after,
    /// so that the request goes out now (or what the end of the stream
    /// leaves to do is done now), rather than waking the connection's task.
    pub fn hand_over<R>(&self, f: impl FnOnce() -> R) -> R {
        if self.claims(&self.driver.route()) {
            self.driver.drive_after(self.id, f)
        } else {
            f()
        }
    }

    /// Before the call polls its h2 stream (after it was woken, or for the
    /// first time): a caller alone on the connection takes the route, with
    /// `waker`, and polls the connection if a wake-up came. Returns the
    /// waker to poll the call's h2 stream with, right after this.
    pub fn drive_if_alone(&mut self, waker: &Waker) -> Waker {
        {
            let mut route = self.driver.route();
            let alone = route.in_flight == 1;
            match &mut route.caller {
                Some((id, slot)) if *id == self.id => keep_waker(slot, waker),
                // The other calls are done: alone again.
                caller @ None if alone => *caller = Some((self.id, Some(waker.clone()))),
                _ => return waker.clone(),
            }
        }
        let (wake, own) = self.own.get_or_insert_with(|| {
            let wake = Arc::new(CallWake {
                id: self.id,
                polling_for: self.driver.polling_for.clone(),
                caller: Mutex::new(None),
            });
            (wake.clone(), Waker::from(wake))
        });
        wake.set(waker);
        self.driver.drive(self.id);
        own.clone()
    }

    /// The call returned what it waited for: until it waits again, its
    /// owner may not poll it, so wake-ups go to the connection's task.
    pub fn returned(&self) {
        let had_waker = {
            let mut route = self.driver.route();
            match &mut route.caller {
                Some((id, waker)) if *id == self.id => waker.take().is_some(),
                _ => false,
            }
        };
        if had_waker {
            self.driver.hand_to_task();
        }
    }
}

impl Drop for Caller {
    fn drop(&mut self) {
        let claimed = {
            let mut route = self.driver.route();
            route.in_flight -= 1;
            let claimed = self.claims(&route);
            if claimed {
                route.caller = None;
            }
            claimed
        };
        if claimed {
            self.driver.hand_to_task();
        }
    }
}
