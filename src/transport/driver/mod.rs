//! Who polls a connection's HTTP/2 state machine (h2's `Connection`): the
//! task of a caller that is alone on the connection, or else the
//! connection's own task.
//!
//! # Why
//!
//! h2 does a connection's socket I/O only when its `Connection` future is
//! polled. If only a task of its own polls it, every call crosses to that
//! task and back: the request wakes it to write, and it wakes the caller
//! with the answer. On a runtime worker both tasks share the thread and the
//! crossing is cheap; a caller on a multi-thread runtime's `block_on`
//! thread pays two thread wake-ups per call. So a caller that is alone on
//! the connection polls the connection itself: it writes its request at
//! once, and the readiness of the socket wakes the caller, which reads its
//! own answer. When several calls are under way, the connection's task
//! polls, as before, and writes the requests of all of them together.
//!
//! # How
//!
//! The connection is always polled with one waker of this module's own,
//! whoever polls it, so whatever h2 or the socket wakes comes here first.
//! [`Driver::notify`] marks the connection as notified and wakes whoever
//! drives now: the caller that drives (the *claim*), or else the
//! connection's task.
//!
//! One poller at a time: the `POLLING` bit. Whoever sets it polls until no
//! wake-up came during its poll (`NOTIFIED` cleared before each poll,
//! checked after with a compare-exchange of the whole state). A wake-up
//! that finds `POLLING` set only marks `NOTIFIED`; the poller sees it and
//! polls once more. So no wake-up is lost to a poll in progress.
//!
//! # Why no wake-up is lost
//!
//! Every wake-up sets `NOTIFIED` and then reads the route under its lock;
//! every change of the route is made under that lock and then reads
//! `NOTIFIED`. So a wake-up either reaches whoever drives after the change,
//! or the change sees it:
//! - A caller that claims the route drives at once if `NOTIFIED` is set.
//! - A caller that gives up the route (its call is done, dropped or has
//!   returned what it waited for, or another call started beside it)
//!   wakes the connection's task if `NOTIFIED` is set, so what was meant
//!   for the caller is not left unread.
//! - A caller is woken through the route only while its call waits (its
//!   last poll returned `Pending`): a call that returns anything gives the
//!   route back, and one started but not yet polled leaves wake-ups to the
//!   task. A call that waits is polled again when woken, or dropped; one
//!   that its owner keeps without polling it holds up the connection's
//!   reading until it is polled or dropped, or another call starts (which
//!   takes the route back to the connection's task).
//!
//! A caller that reads the connection itself wakes its own call's stream
//! (h2 wakes whoever waits on a stream when its frames arrive). Its task is
//! running then, and tokio would poll it again, and on a multi-thread
//! runtime wake another worker to share the "new" work. So while a caller
//! drives, h2 gets a waker of the call's own ([`CallWake`](caller::CallWake)) that drops the
//! wake-ups of its stream that come while the caller polls the connection:
//! the caller polls its stream right after that poll, in the same poll of
//! its task, and sees whatever they were for (h2's lock orders the two).
//! Nearly all such wake-ups come from the caller's own poll of the
//! connection; one from another thread in that window (h2 also wakes a
//! stream's waiter when a failing request body resets the stream) is seen
//! by that same poll of the stream.
//!
//! A caller cancelled mid-call: a poll of the connection runs within one
//! poll of the caller's task, so a call is never dropped while it polls
//! the connection, and `POLLING` is never left set (a guard clears it if
//! anything in the poll unwinds). Dropped between polls, a call drops its
//! own h2 handles (h2 then resets its stream) and its claim, whose drop
//! hands any unread wake-up to the connection's task.
//!
//! The connection's end: whoever's poll finds the connection finished sets
//! the closed flag, drops it (h2 then fails every open stream, waking their
//! callers), and wakes the `ended` waiters and the connection's task, which
//! ends. A panic in h2's poll ends the connection the same way rather than
//! unwinding through the caller (h2's own lock may be poisoned by it, and
//! h2 may then panic at the next use of a call's handles). If the runtime
//! drops the connection's task (it shuts down), the connection ends too.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll, Wake, Waker};

use tokio::sync::Notify;

mod caller;

pub(crate) use caller::Caller;

/// h2's connection future, of whatever stream it runs on.
pub(crate) type ConnectionFuture =
    Pin<Box<dyn Future<Output = Result<(), h2::Error>> + Send + 'static>>;

/// Someone polls the connection now.
const POLLING: u8 = 1;
/// A wake-up came since the last poll began.
const NOTIFIED: u8 = 2;

/// Polls in a row before the connection is left to its task: each poll
/// after the first is for a wake-up during the one before. Within a tokio
/// task, a spent cooperative budget defers its wake-up to after the poll;
/// on the `block_on` thread, or for an h2 that keeps waking itself, the
/// bound is what stops the polling.
const POLLS_IN_A_ROW: usize = 8;

/// Who polls: the connection's task, or a caller by its id (from 1).
type Poller = u64;
const TASK: Poller = 0;

/// The shared state of one connection.
pub(crate) struct Driver {
    /// `POLLING` and `NOTIFIED`.
    state: AtomicU8,
    /// `None` once the connection has ended. Locked only by the holder of
    /// `POLLING` (or by the end of the connection's task), so hardly ever
    /// waited for.
    connection: Mutex<Option<ConnectionFuture>>,
    route: Mutex<Route>,
    /// The waker the connection is always polled with.
    waker: Waker,
    /// The caller whose poll of the connection runs now; [`TASK`] when the
    /// connection's task polls, or nobody does.
    polling_for: Arc<AtomicU64>,
    next_caller: AtomicU64,
    closed: AtomicBool,
    ended: Notify,
}

/// Who is woken when the connection needs a poll.
#[derive(Default)]
struct Route {
    /// The caller that drives, by id, and its waker while its call waits
    /// (`None` before its first poll and after it returned: wake-ups go to
    /// the task then).
    caller: Option<(Poller, Option<Waker>)>,
    /// The connection's own task.
    task: Option<Waker>,
    /// Calls under way on the connection.
    in_flight: usize,
}

impl Driver {
    /// Shared state for `connection`, which has not been polled yet.
    pub fn new(connection: ConnectionFuture) -> Arc<Self> {
        Arc::new_cyclic(|this: &Weak<Self>| Self {
            // The first poll is due.
            state: AtomicU8::new(NOTIFIED),
            connection: Mutex::new(Some(connection)),
            route: Mutex::new(Route::default()),
            // Weak: the connection holds its waker, and must not keep
            // itself alive.
            waker: Waker::from(Arc::new(Wakeup(this.clone()))),
            polling_for: Arc::new(AtomicU64::new(TASK)),
            next_caller: AtomicU64::new(TASK + 1),
            closed: AtomicBool::new(false),
            ended: Notify::new(),
        })
    }

    /// The connection's own task: polls whenever no caller drives, and ends
    /// with the connection.
    pub async fn run(self: Arc<Self>) {
        /// Ends the connection if the task is dropped before it ended: the
        /// runtime shuts down, and with it the connection's I/O.
        struct EndsWithTask(Arc<Driver>);

        impl Drop for EndsWithTask {
            fn drop(&mut self) {
                if !self.0.is_closed() {
                    let mut slot = self.0.connection();
                    let connection = slot.take();
                    drop(slot);
                    self.0.end(connection);
                }
            }
        }

        let this = EndsWithTask(self);
        let this = &this.0;
        std::future::poll_fn(|cx| {
            {
                keep_waker(&mut this.route().task, cx.waker());
            }
            this.drive(TASK);
            if this.is_closed() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.closed.load(SeqCst)
    }

    /// Resolves once the connection has ended.
    pub async fn ended(&self) {
        let ended = self.ended.notified();
        if !self.is_closed() {
            ended.await;
        }
    }

    /// A call starts. Alone on the connection, its caller drives; beside
    /// other calls, the connection's task does, for all of them.
    pub fn caller(self: &Arc<Self>) -> Caller {
        let id = self.next_caller.fetch_add(1, SeqCst);
        let given_up = {
            let mut route = self.route();
            route.in_flight += 1;
            let given_up = route.caller.is_some();
            route.caller = (route.in_flight == 1).then_some((id, None));
            given_up
        };
        if given_up {
            self.hand_to_task();
        }
        Caller::new(self.clone(), id)
    }

    /// Polls the connection if a wake-up came since its last poll and
    /// nobody polls it now.
    fn drive(&self, by: Poller) {
        if self.state.load(SeqCst) & NOTIFIED == 0 {
            return;
        }
        if let Some(polling) = Polling::begin(self, by) {
            polling.poll_while_notified();
        }
    }

    /// Runs `f` (which gives h2 something to send), then polls the
    /// connection, so that it goes out now. The wake-ups that `f` causes
    /// wake nobody: the poll after it is theirs (or, if another poller
    /// polls now, that poller's).
    fn drive_after<R>(&self, by: Poller, f: impl FnOnce() -> R) -> R {
        let polling = Polling::begin(self, by);
        let result = f();
        if let Some(polling) = polling {
            polling.poll_while_notified();
        }
        result
    }

    /// One poll of the connection, by the holder of `POLLING`.
    fn poll_connection(&self) {
        let mut slot = self.connection();
        let Some(connection) = slot.as_mut() else {
            return;
        };
        let mut cx = Context::from_waker(&self.waker);
        // A panic in h2 ends the connection rather than unwinding through
        // the caller that polled it.
        let outcome =
            std::panic::catch_unwind(AssertUnwindSafe(|| connection.as_mut().poll(&mut cx)));
        match outcome {
            Ok(Poll::Pending) => return,
            Ok(Poll::Ready(Ok(()))) => {}
            // The reason only: a GOAWAY's debug data is the proxy's text,
            // which may echo a request (and its secrets).
            Ok(Poll::Ready(Err(e))) => {
                tracing::debug!(reason = ?e.reason(), io = e.is_io(), "CSI Proxy connection ended")
            }
            Err(_) => tracing::warn!("the HTTP/2 connection to CSI Proxy panicked; it is closed"),
        }
        let finished = slot.take();
        drop(slot);
        self.end(finished);
    }

    /// The connection has ended: closed before `finished` is dropped
    /// (outside the lock: h2 then fails the open streams, waking their
    /// callers, who find it closed), then the waiters are told.
    fn end(&self, finished: Option<ConnectionFuture>) {
        self.closed.store(true, SeqCst);
        drop(finished);
        self.ended.notify_waiters();
        self.wake_task();
    }

    /// A wake-up from h2 or the socket: to whoever drives now.
    fn notify(&self) {
        if self.state.fetch_or(NOTIFIED, SeqCst) & POLLING != 0 {
            // The poller polls again.
            return;
        }
        let target = {
            let route = self.route();
            match &route.caller {
                Some((_, Some(waker))) => Some(waker.clone()),
                _ => route.task.clone(),
            }
        };
        if let Some(waker) = target {
            waker.wake();
        }
    }

    /// After the route left a caller: a wake-up it had not read yet is the
    /// connection task's.
    fn hand_to_task(&self) {
        if self.state.load(SeqCst) & (NOTIFIED | POLLING) == NOTIFIED {
            self.wake_task();
        }
    }

    fn wake_task(&self) {
        let task = self.route().task.clone();
        if let Some(task) = task {
            task.wake();
        }
    }

    /// Locked only by the holder of `POLLING`, or by the task's end.
    fn connection(&self) -> MutexGuard<'_, Option<ConnectionFuture>> {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn route(&self) -> MutexGuard<'_, Route> {
        // The route is consistent between statements; a panic elsewhere
        // cannot leave it half-changed.
        self.route.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The holder of `POLLING`. Dropped without finishing (something in the
/// poll unwound), it clears `POLLING` and leaves what is left to the
/// connection's task.
struct Polling<'a> {
    driver: &'a Driver,
    by: Poller,
}

impl<'a> Polling<'a> {
    /// Takes `POLLING`, unless someone holds it (who then sees what comes
    /// meanwhile, as `NOTIFIED`).
    fn begin(driver: &'a Driver, by: Poller) -> Option<Self> {
        let taken = driver.state.fetch_or(POLLING, SeqCst) & POLLING == 0;
        taken.then_some(Self { driver, by })
    }

    /// Polls while wake-ups come during the polls; clears `POLLING`.
    fn poll_while_notified(self) {
        let driver = self.driver;
        for _ in 0..POLLS_IN_A_ROW {
            driver.state.fetch_and(!NOTIFIED, SeqCst);
            driver.polling_for.store(self.by, Relaxed);
            driver.poll_connection();
            driver.polling_for.store(TASK, Relaxed);
            if driver
                .state
                .compare_exchange(POLLING, 0, SeqCst, SeqCst)
                .is_ok()
            {
                std::mem::forget(self);
                return;
            }
        }
        // Still notified: the rest is the connection task's, on a poll of
        // its own (`NOTIFIED` stays set for it); the drop hands it over.
    }
}

impl Drop for Polling<'_> {
    fn drop(&mut self) {
        self.driver.polling_for.store(TASK, Relaxed);
        self.driver.state.fetch_and(!POLLING, SeqCst);
        self.driver.wake_task();
    }
}

/// Stores `waker` in `slot`, unless what is there wakes the same task
/// (which saves a clone on every poll).
fn keep_waker(slot: &mut Option<Waker>, waker: &Waker) {
    if !slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
        *slot = Some(waker.clone());
    }
}

/// The waker the connection is polled with.
struct Wakeup(Weak<Driver>);

impl Wake for Wakeup {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(driver) = self.0.upgrade() {
            driver.notify();
        }
    }
}

#[cfg(test)]
mod tests;
