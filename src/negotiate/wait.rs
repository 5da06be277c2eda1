//! Waiting for the proxy: the one schedule every look for it follows (the
//! client's callers, its background task per group, `connect` and
//! csiproxyctl), and negotiation that waits for groups to be served.

use std::time::{Duration, Instant};

use super::{Negotiated, Negotiator};
use crate::error::{Error, Result};
use crate::group::ApiGroup;

/// The first wait between two looks (or attempts) of one caller.
const FIRST_LOOK_INTERVAL: Duration = Duration::from_millis(20);

/// The longest wait between two looks for a proxy that is away, so that
/// its return is noticed fast.
pub(crate) const MAX_LOOK_INTERVAL: Duration = Duration::from_millis(250);

/// How often a wait for the proxy says, at info level, what it waits for.
const WAIT_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// The waits of one caller (or of the background task) between its looks
/// and attempts: none before the first, then 20 ms, doubling up to
/// [`MAX_LOOK_INTERVAL`]. No jitter: it would come on top of the cap, and
/// a look at a missing endpoint costs the proxy nothing.
#[derive(Debug, Default)]
pub(crate) struct Pace {
    next: Option<Duration>,
}

impl Pace {
    /// Waits before the next look or attempt.
    pub async fn wait(&mut self) {
        let delay = self.next_delay();
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
    }

    /// The wait before the next look or attempt, counting it.
    pub fn next_delay(&mut self) -> Duration {
        let delay = self.next.unwrap_or(Duration::ZERO);
        self.next = Some(match self.next {
            None => FIRST_LOOK_INTERVAL,
            Some(delay) => (delay * 2).min(MAX_LOOK_INTERVAL),
        });
        delay
    }

    /// Starts again from no wait: the last look found something lasting.
    pub fn reset(&mut self) {
        self.next = None;
    }
}

/// Whether a look that failed so is worth waiting for: nothing is there
/// (yet, or any more). An endpoint that exists but fails (access denied, a
/// handshake that times out) already had its retries under the
/// [`RetryPolicy`](crate::RetryPolicy) in that look; its error is the
/// answer.
pub(crate) fn is_worth_waiting_for(error: &Error) -> bool {
    matches!(error, Error::NotServed { .. })
}

impl Negotiator {
    /// Negotiates `groups`, then waits for the proxy: while a group of
    /// `required` is not served (with `required` empty, while none of
    /// `groups` is), negotiates the groups still missing again, on the
    /// schedule every look for the proxy follows (20 ms doubling to 250
    /// ms), until `wait` has passed. A group whose endpoint exists but
    /// failed is not waited for: a required one ends the wait at once.
    ///
    /// Returns what the looks found, as [`negotiate`](Self::negotiate)
    /// does: the caller reads each group's outcome from it. Logs at info
    /// level every 10 s what it still waits for.
    pub async fn negotiate_waiting(
        &self,
        groups: &[ApiGroup],
        required: &[ApiGroup],
        wait: Duration,
    ) -> Result<Negotiated> {
        let started = Instant::now();
        let mut negotiated = self.negotiate(groups).await?;
        let mut pace = Pace::default();
        pace.next_delay(); // the first look was the one above
        let mut logged: Option<Instant> = None;
        loop {
            let missing = still_missing(&negotiated, groups, required);
            let left = wait.saturating_sub(started.elapsed());
            if missing.is_empty() || left.is_zero() {
                return Ok(negotiated);
            }
            if logged.is_none_or(|at| at.elapsed() >= WAIT_LOG_INTERVAL) {
                let waiting_for: Vec<&str> = missing.iter().map(|g| g.as_str()).collect();
                tracing::info!(
                    waited_s = started.elapsed().as_secs(),
                    limit_s = wait.as_secs(),
                    "waiting for CSI Proxy to serve {}",
                    waiting_for.join(", ")
                );
                logged = Some(Instant::now());
            }
            tokio::time::sleep(pace.next_delay().min(left)).await;
            negotiated.merge(self.negotiate(&missing).await?);
        }
    }
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
