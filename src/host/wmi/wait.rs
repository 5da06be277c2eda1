//! Waiting for WMI in slices, until a request ends or its time is up.
//!
//! A WMI provider hung on a disk or an iSCSI target never answers. A
//! request waits for its answer in slices of at most [`SLICE`], and
//! between them checks its [`Limit`]: once its caller has stopped waiting
//! (its deadline passed, or it was cancelled), a call that reads is given
//! up and its thread goes back, instead of waiting for the provider for
//! good. A call that changes the host goes on a while more (its
//! operation's default deadline: 2 minutes, 10 for a format or a resize):
//! its provider may still be working (a format, a partition), and while
//! its thread waits, the call keeps its object in progress, so that the
//! same change is not started on it again beside it.
//! The waiting itself is behind [`Rows`], so that it is tested without COM.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use super::failure::WmiFailure;

/// The longest one wait for WMI lasts before the request checks its
/// [`Limit`] again: how late, at most, it notices that its caller left.
pub(crate) const SLICE: Duration = Duration::from_secs(1);

/// How long a WMI request may wait for WMI: while its caller waits for it
/// and `grace` after, and, if set, until a time of its own.
#[derive(Debug)]
pub(crate) struct Limit {
    started: Instant,
    until: Option<Instant>,
    /// When the caller stopped waiting, once it has.
    caller_left: Arc<OnceLock<Instant>>,
    grace: Duration,
}

/// Its caller waits for a request as long as this lives: the caller's
/// future holds it, and drops it when the caller stops waiting (its
/// deadline passed, or it was cancelled).
pub(crate) struct CallerWaits(Arc<OnceLock<Instant>>);

impl Drop for CallerWaits {
    fn drop(&mut self) {
        let _ = self.0.set(Instant::now());
    }
}

impl Limit {
    /// A limit that lasts as long as the [`CallerWaits`] given with it,
    /// and `grace` after.
    pub fn while_caller_waits(grace: Duration) -> (Self, CallerWaits) {
        let caller_left = Arc::new(OnceLock::new());
        let limit = Self {
            started: Instant::now(),
            until: None,
            caller_left: caller_left.clone(),
            grace,
        };
        (limit, CallerWaits(caller_left))
    }

    /// A limit that lasts `bound` from now.
    #[cfg(test)]
    pub fn within(bound: Duration) -> Self {
        let started = Instant::now();
        Self {
            started,
            until: Some(started + bound),
            caller_left: Arc::default(),
            grace: Duration::ZERO,
        }
    }

    /// Whether a request may still start: not once the limit has passed
    /// (the caller gone and its grace over), so that a call given up starts
    /// nothing more on the host. Within a change's grace its next steps
    /// still start: it goes on to its end, as it did before it had a bound.
    pub fn check(&self) -> Result<(), WmiFailure> {
        match self.next_wait() {
            Some(_) => Ok(()),
            None => Err(WmiFailure::gave_up(self.started.elapsed())),
        }
    }

    /// How long the next wait may last, at most [`SLICE`]; `None` once
    /// the limit has passed.
    fn next_wait(&self) -> Option<Duration> {
        let now = Instant::now();
        let mut left = match self.until {
            Some(until) => until.checked_duration_since(now)?,
            None => SLICE,
        };
        if let Some(&caller_left) = self.caller_left.get() {
            left = left.min((caller_left + self.grace).checked_duration_since(now)?);
        }
        Some(left.min(SLICE)).filter(|wait| !wait.is_zero())
    }
}

/// What one wait for a WMI request under way gave.
#[derive(Debug)]
pub(crate) enum Step<T> {
    /// Its next result.
    Row(T),
    /// Nothing within the wait: it is still under way.
    Pending,
    /// It has ended, every result given.
    Done,
    /// It failed.
    Failed(WmiFailure),
}

/// A WMI request under way, whose results come one at a time: a
/// semisynchronous query's objects, or a method call's output.
pub(crate) trait Rows {
    /// One result.
    type Row;

    /// Waits at most `wait` for what comes next.
    fn next(&mut self, wait: Duration) -> Step<Self::Row>;
}

/// Every result of `rows`, waited for in slices of at most [`SLICE`],
/// until the request ends, fails, or `limit` passes: then it is given up,
/// with [`WmiFailure::gave_up`], and asked nothing more (its caller drops
/// it, which releases it).
pub(crate) fn collect<R: Rows>(rows: &mut R, limit: &Limit) -> Result<Vec<R::Row>, WmiFailure> {
    let mut collected = Vec::new();
    loop {
        let Some(wait) = limit.next_wait() else {
            return Err(WmiFailure::gave_up(limit.started.elapsed()));
        };
        match rows.next(wait) {
            Step::Row(row) => collected.push(row),
            Step::Pending => {}
            Step::Done => return Ok(collected),
            Step::Failed(failure) => return Err(failure),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::thread::sleep;

    use super::*;

    /// A request whose results come at set times after it started, then
    /// ends, or fails; it waits as WMI does: until a result comes, or for
    /// the whole wait.
    struct Request {
        started: Instant,
        due: VecDeque<Duration>,
        then: Option<WmiFailure>,
        given: usize,
        /// How many waits ended with nothing.
        pending: usize,
        /// Every wait it was asked for.
        asked: Vec<Duration>,
        /// When each was asked for.
        asked_at: Vec<Instant>,
    }

    impl Request {
        fn new(due: impl IntoIterator<Item = Duration>, then: Option<WmiFailure>) -> Self {
            Self {
                started: Instant::now(),
                due: due.into_iter().collect(),
                then,
                given: 0,
                pending: 0,
                asked: Vec::new(),
                asked_at: Vec::new(),
            }
        }

        /// A request whose provider hangs: nothing ever comes.
        fn hung() -> Self {
            Self::new([Duration::from_secs(3600)], None)
        }

        /// How many waits were asked for from `at` on.
        fn asked_since(&self, at: Instant) -> usize {
            self.asked_at.iter().filter(|&&asked| asked >= at).count()
        }
    }

    impl Rows for Request {
        type Row = usize;

        fn next(&mut self, wait: Duration) -> Step<usize> {
            self.asked.push(wait);
            self.asked_at.push(Instant::now());
            let Some(&due) = self.due.front() else {
                return self.then.take().map_or(Step::Done, Step::Failed);
            };
            let left = (self.started + due).saturating_duration_since(Instant::now());
            if left > wait {
                sleep(wait);
                self.pending += 1;
                return Step::Pending;
            }
            sleep(left);
            self.due.pop_front();
            self.given += 1;
            Step::Row(self.given - 1)
        }
    }

    /// Room for a loaded test host's threads and timers (Wine's among
    /// them) in a bound whose other side is the hung request's hour: such
    /// a bound says the request stopped, not how promptly; how far it
    /// waited is in the waits it asked for.
    const ROOM: Duration = Duration::from_secs(10);

    #[test]
    fn a_request_that_never_answers_is_given_up_at_its_limit() {
        let bound = Duration::from_millis(300);
        let mut request = Request::hung();
        let asked = Instant::now();
        let failure = collect(&mut request, &Limit::within(bound)).unwrap_err();
        let took = asked.elapsed();
        assert!(took >= bound && took < bound + ROOM, "{took:?}");
        let waited = failure.gave_up_after.expect("given up");
        assert!(waited >= bound, "{failure:?}");
        assert_eq!(failure.hresult, None);
        // It stopped asking at the limit: no wait beyond it, or a slice.
        assert!(
            request.asked.iter().all(|w| *w <= SLICE),
            "{:?}",
            request.asked
        );
        let total: Duration = request.asked.iter().sum();
        assert!(total <= bound, "{:?}", request.asked);
        assert!(request.asked.len() <= 3, "{:?}", request.asked);
    }

    #[test]
    fn a_request_is_given_up_soon_after_its_caller_leaves() {
        let (limit, caller) = Limit::while_caller_waits(Duration::ZERO);
        let leaves = std::thread::spawn(move || {
            sleep(Duration::from_millis(200));
            let left = Instant::now();
            drop(caller);
            left
        });
        let mut request = Request::hung();
        assert!(limit.check().is_ok());
        let asked = Instant::now();
        let failure = collect(&mut request, &limit).unwrap_err();
        let took = asked.elapsed();
        let left = leaves.join().unwrap();
        // Nothing more starts.
        assert!(limit.check().unwrap_err().gave_up_after.is_some());
        assert!(failure.gave_up_after.is_some(), "{failure:?}");
        // Within the slice it was waiting in when the caller left: no wait
        // it asked for was longer than a slice, and none began after the
        // caller left (but one asked for just as it left).
        assert!(took >= Duration::from_millis(200), "{took:?}");
        assert!(took < SLICE + ROOM, "{took:?}");
        assert!(
            request.asked.iter().all(|w| *w <= SLICE),
            "{:?}",
            request.asked
        );
        assert!(request.asked_since(left) <= 1, "{:?}", request.asked);
        let asks = request.asked.len();
        sleep(Duration::from_millis(50));
        assert_eq!(request.asked.len(), asks);
    }

    #[test]
    fn results_that_come_slowly_within_the_limit_are_all_collected() {
        // The second result takes more than a slice: the request waits on.
        let due = [
            Duration::from_millis(100),
            SLICE + Duration::from_millis(300),
        ];
        let mut request = Request::new(due, None);
        let (limit, _caller_waits) = Limit::while_caller_waits(Duration::ZERO);
        let rows = collect(&mut request, &limit).unwrap();
        assert_eq!(rows, [0, 1]);
        assert!(request.pending >= 1, "{:?}", request.asked);

        let mut request = Request::new(due, None);
        let rows = collect(&mut request, &Limit::within(3 * SLICE)).unwrap();
        assert_eq!(rows, [0, 1]);
    }

    #[test]
    fn a_failure_of_the_request_is_its_own_not_a_timeout() {
        const WBEM_E_FAILED: i32 = 0x8004_1001_u32 as i32;
        let failed = WmiFailure::from(wmi::WMIError::HResultError {
            hres: WBEM_E_FAILED,
        });
        let mut request = Request::new([Duration::ZERO], Some(failed));
        let asked = Instant::now();
        let failure = collect(&mut request, &Limit::within(10 * SLICE)).unwrap_err();
        // At once, not at the limit (10 s): the request asked for no wait
        // after the failure came.
        assert!(asked.elapsed() < 5 * SLICE, "{:?}", asked.elapsed());
        assert_eq!(request.asked.len(), 2, "{:?}", request.asked);
        assert_eq!(failure.hresult, Some(WBEM_E_FAILED));
        assert_eq!(failure.gave_up_after, None);
        assert_eq!(request.given, 1);
    }

    #[test]
    fn a_change_goes_on_for_its_grace_after_its_caller_leaves() {
        let grace = Duration::from_millis(300);
        let (limit, caller) = Limit::while_caller_waits(grace);
        drop(caller);
        let mut request = Request::hung();
        // Still within the grace: it may start.
        assert!(limit.check().is_ok());
        let asked = Instant::now();
        let failure = collect(&mut request, &limit).unwrap_err();
        let took = asked.elapsed();
        assert!(failure.gave_up_after.is_some(), "{failure:?}");
        assert!(took >= grace - Duration::from_millis(50), "{took:?}");
        // Then given up, within the slice it was in: no wait began after
        // the grace (but one asked for just as it ended).
        assert!(took < grace + SLICE + ROOM, "{took:?}");
        assert!(
            request.asked_since(asked + grace) <= 1,
            "{:?}",
            request.asked
        );
        assert!(limit.check().is_err());
    }
}
