//! When and how often to try again.

use std::time::Duration;

/// Exponential backoff for retries: the first retry waits `initial_delay`,
/// each later one `multiplier` times longer, capped at `max_delay`; random
/// jitter, unless turned off, adds up to as much again on top of each wait.
///
/// The SDK retries under this policy:
/// - connection attempts that failed for a reason that may pass (a missing
///   pipe is not retried: the version is not served; a busy pipe is waited
///   for within the connect timeout of each attempt);
/// - calls whose request may have reached the proxy before the connection
///   broke: reads, and mutations only with
///   [`CallOptions::retry_mutations`](crate::CallOptions::retry_mutations).
///
/// Waiting for a proxy that is away is not governed by it: calls wait
/// within their deadline, and a request that certainly was not sent goes
/// again without spending a retry (see [`CsiProxy`](crate::CsiProxy)).
///
/// ```
/// use std::time::Duration;
/// use csi_proxy_client::RetryPolicy;
///
/// let policy = RetryPolicy::default()
///     .with_max_retries(5)
///     .with_initial_delay(Duration::from_millis(20));
/// assert_eq!(policy.max_retries(), 5);
/// assert_eq!(RetryPolicy::none().max_retries(), 0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPolicy {
    max_retries: usize,
    initial_delay: Duration,
    max_delay: Duration,
    multiplier: f32,
    jitter: bool,
}

impl Default for RetryPolicy {
    /// 3 retries, starting at 50 ms, doubling, capped at 1 s, jittered.
    fn default() -> Self {
        Self {
            max_retries: 3,
            initial_delay: Duration::from_millis(50),
            max_delay: Duration::from_secs(1),
            multiplier: 2.0,
            jitter: true,
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    pub fn none() -> Self {
        Self::default().with_max_retries(0)
    }

    /// How many times to retry after the first attempt.
    pub fn with_max_retries(mut self, retries: usize) -> Self {
        self.max_retries = retries;
        self
    }

    /// The wait before the first retry.
    pub fn with_initial_delay(mut self, delay: Duration) -> Self {
        self.initial_delay = delay;
        self
    }

    /// The longest wait between two attempts.
    pub fn with_max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// How much longer each wait is than the one before; values below 1 are
    /// treated as 1.
    pub fn with_multiplier(mut self, multiplier: f32) -> Self {
        self.multiplier = multiplier.max(1.0);
        self
    }

    /// Whether to add random jitter to each wait (on by default, so that
    /// many clients restarting together do not retry in lockstep).
    pub fn with_jitter(mut self, jitter: bool) -> Self {
        self.jitter = jitter;
        self
    }

    /// How many times to retry after the first attempt.
    pub fn max_retries(&self) -> usize {
        self.max_retries
    }

    /// The backoff schedule as `backon` runs it; kept private so that no
    /// third-party type is part of the public API.
    pub(crate) fn backoff(&self) -> backon::ExponentialBuilder {
        let builder = backon::ExponentialBuilder::default()
            .with_min_delay(self.initial_delay)
            .with_max_delay(self.max_delay)
            .with_factor(self.multiplier)
            .with_max_times(self.max_retries);
        if self.jitter {
            builder.with_jitter()
        } else {
            builder
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use backon::BackoffBuilder;

    #[test]
    fn schedule_grows_and_stops() {
        let delays: Vec<_> = RetryPolicy::default()
            .with_jitter(false)
            .with_max_retries(4)
            .with_max_delay(Duration::from_millis(300))
            .backoff()
            .build()
            .collect();
        let ms: Vec<_> = delays.iter().map(|d| d.as_millis()).collect();
        assert_eq!(ms, [50, 100, 200, 300]);
        assert_eq!(RetryPolicy::none().backoff().build().count(), 0);
    }
}
