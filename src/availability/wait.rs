//! Waiting until served: the one loop every wait for the proxy runs
//! ([`until_served`]: a call's, `connect`'s, the background task's per
//! group), and the waits of [`Negotiator::negotiate_waiting`] and of
//! `Backend::Automatic` ([`negotiate_settled`]) on it.

use std::future::Future;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::{
    is_worth_waiting_for, Pace, BACKGROUND_CONNECT_TIMEOUT, PIPE_GRACE, WAIT_LOG_INTERVAL,
};
use crate::error::{Error, Result};
use crate::group::ApiGroup;
use crate::negotiate::{Negotiated, Negotiator};

/// What one look found, for [`until_served`].
pub(crate) enum Found<T, E = Error> {
    /// Served: the wait is over.
    Served(T),
    /// Not there (yet): worth another look. `error` is the answer if the
    /// wait ends first; `waiting_for` names the groups, for the log.
    Absent {
        error: E,
        waiting_for: Vec<ApiGroup>,
    },
    /// The wait is over, unserved: `Err` is the answer.
    Over(E),
}

/// How long [`until_served`] waits, and whether it says so.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WaitLimit {
    /// `None`: until served (the caller bounds it, or it runs in the
    /// background).
    pub deadline: Option<Instant>,
    /// Logs at info level, at the start and then every 10 s, what it
    /// waits for: `connect` and csiproxyctl do; a call does not.
    pub announce: bool,
}

impl WaitLimit {
    /// Up to `wait` from now, saying what it waits for.
    pub fn announced(wait: Duration) -> Self {
        Self {
            deadline: Instant::now().checked_add(wait),
            announce: true,
        }
    }

    /// Without a deadline of its own, and quietly.
    pub const QUIET: Self = Self {
        deadline: None,
        announce: false,
    };
}

/// Waits until served: the one loop every wait for the proxy runs (a
/// call's, `connect`'s, csiproxyctl's and the background task's). Before
/// each `look` it waits on `pace` (nothing before the first look of a
/// fresh pace), so nobody looks twice without waiting; it stops at the
/// first [`Found::Served`] or [`Found::Over`], or at the deadline with the
/// last [`Found::Absent`]'s error.
pub(crate) async fn until_served<T, E, F, Fut>(
    pace: &mut Pace,
    limit: WaitLimit,
    mut look: F,
) -> std::result::Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Found<T, E>>,
{
    let started = Instant::now();
    let mut logged: Option<Instant> = None;
    loop {
        let delay = pace.next_delay();
        match limit.deadline {
            Some(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                tokio::time::sleep(delay.min(left)).await
            }
            None if !delay.is_zero() => tokio::time::sleep(delay).await,
            None => {}
        }
        let (error, waiting_for) = match look().await {
            Found::Served(found) => return Ok(found),
            Found::Over(error) => return Err(error),
            Found::Absent { error, waiting_for } => (error, waiting_for),
        };
        if limit.deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(error);
        }
        if limit.announce && logged.is_none_or(|at| at.elapsed() >= WAIT_LOG_INTERVAL) {
            let names: Vec<&str> = waiting_for.iter().map(|g| g.as_str()).collect();
            tracing::info!(
                waited_s = started.elapsed().as_secs(),
                limit_s = limit.deadline.map(|d| (d - started).as_secs()),
                "waiting for CSI Proxy to serve {}",
                names.join(", ")
            );
            logged = Some(Instant::now());
        }
    }
}

/// [`Negotiator::negotiate_waiting`]: negotiates `groups`, then again the
/// groups still missing, on the pace, until none is missing (see
/// [`still_missing`]) or `wait` has passed.
pub(crate) async fn negotiate_waiting(
    negotiator: &Negotiator,
    groups: &[ApiGroup],
    required: &[ApiGroup],
    wait: Duration,
) -> Result<Negotiated> {
    // What the looks found so far, and the groups still missing.
    let so_far = Mutex::new((Negotiated::default(), groups.to_vec()));
    let waited = until_served(&mut Pace::default(), WaitLimit::announced(wait), || async {
        let missing = lock(&so_far).1.clone();
        let found = match negotiator.negotiate(&missing).await {
            Ok(found) => found,
            Err(error) => return Found::Over(error),
        };
        let (negotiated, missing) = &mut *lock(&so_far);
        negotiated.merge(found);
        *missing = still_missing(negotiated, groups, required);
        match missing.first() {
            None => Found::Served(()),
            // At the deadline the caller reads each group's outcome
            // from what was found, not this error.
            Some(&group) => Found::Absent {
                error: Error::NotServed {
                    group,
                    tried: Vec::new(),
                },
                waiting_for: missing.clone(),
            },
        }
    })
    .await;
    match waited {
        Err(error) if !is_worth_waiting_for(&error) => Err(error),
        _ => Ok(so_far
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
            .0),
    }
}

/// `Backend::Automatic`'s negotiation, before the host takes what the
/// proxy does not serve: `groups`, and while the proxy is away (none of
/// them served) again on the pace, for up to `start_wait`; then, once it
/// serves any of them, the groups still missing again on the pace, quietly,
/// until [`PIPE_GRACE`] has passed since the last one was found. A proxy
/// creates its pipes one after the other, so a group missing in that
/// moment may only not be there yet; one still missing after it, the
/// proxy lacks. A group whose endpoint exists but fails is not looked for
/// again (the proxy has it).
pub(crate) async fn negotiate_settled(
    negotiator: &Negotiator,
    groups: &[ApiGroup],
    start_wait: Duration,
) -> Result<Negotiated> {
    let negotiated = negotiate_waiting(negotiator, groups, &[], start_wait).await?;
    let missing = |negotiated: &Negotiated| -> Vec<ApiGroup> {
        let absent = |g: &&ApiGroup| matches!(negotiated.connection(**g), Err(e) if is_worth_waiting_for(&e));
        groups.iter().filter(absent).copied().collect()
    };
    let served_any = groups.iter().any(|&g| negotiated.connection(g).is_ok());
    if !served_any || missing(&negotiated).is_empty() {
        return Ok(negotiated);
    }
    let quiet = negotiator.for_background(BACKGROUND_CONNECT_TIMEOUT);
    // What was found so far, and when a group was last found.
    let so_far = Mutex::new((negotiated, Instant::now()));
    let mut pace = Pace::default();
    pace.next_delay(); // the look just made
    until_served(&mut pace, WaitLimit::QUIET, || async {
        let still = missing(&lock(&so_far).0);
        if still.is_empty() {
            return Found::Served(());
        }
        let found = match quiet.negotiate(&still).await {
            Ok(found) => found,
            Err(error) => return Found::Over(error),
        };
        let more = still.iter().any(|&g| found.connection(g).is_ok());
        let (negotiated, last_found) = &mut *lock(&so_far);
        negotiated.merge(found);
        if more {
            *last_found = Instant::now();
        } else if last_found.elapsed() >= PIPE_GRACE {
            return Found::Served(());
        }
        Found::Absent {
            error: Error::NotServed {
                group: still[0],
                tried: Vec::new(),
            },
            waiting_for: still,
        }
    })
    .await?;
    Ok(so_far
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
        .0)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The groups to look for again: those of `required` that are absent
/// (none once one of them failed otherwise), or with `required` empty,
/// every absent group of `groups` while none is served.
fn still_missing(
    negotiated: &Negotiated,
    groups: &[ApiGroup],
    required: &[ApiGroup],
) -> Vec<ApiGroup> {
    let absent =
        |g: &&ApiGroup| matches!(negotiated.connection(**g), Err(e) if is_worth_waiting_for(&e));
    if required.is_empty() {
        if groups.iter().any(|&g| negotiated.connection(g).is_ok()) {
            return Vec::new();
        }
        return groups.iter().filter(absent).copied().collect();
    }
    let failed = required
        .iter()
        .any(|&g| matches!(negotiated.connection(g), Err(e) if !is_worth_waiting_for(&e)));
    if failed {
        return Vec::new();
    }
    required.iter().filter(absent).copied().collect()
}
