//! Waiting until served: the one loop every wait for the proxy runs
//! ([`until_served`]: a call's, `connect`'s, the background task's per
//! group, and negotiation's own waits,
//! [`Negotiator::negotiate_waiting`](crate::negotiate::Negotiator::negotiate_waiting)
//! and `Backend::Automatic`'s, in `negotiate/waiting.rs`).

use std::future::Future;
use std::time::{Duration, Instant};

use super::{Pace, WAIT_LOG_INTERVAL};
use crate::error::Error;
use crate::group::ApiGroup;

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
