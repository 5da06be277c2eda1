//! The schedules of every wait for the proxy: the quick one of callers
//! and of looks for a proxy that is away, and the slow one of looks for a
//! newer version whose endpoint exists but failed.

use std::time::Duration;

use super::{FIRST_LOOK_INTERVAL, MAX_LOOK_INTERVAL, MAX_NEWER_RETRY, NEWER_RETRY};

/// The waits of one caller (or of the background task) between its looks
/// and attempts: none before the first, then 20 ms, doubling up to
/// [`MAX_LOOK_INTERVAL`]. No jitter: it would come on top of the cap, and
/// a look at a missing endpoint costs the proxy nothing.
#[derive(Debug)]
pub(crate) struct Pace {
    next: Option<Duration>,
    /// The wait after the first.
    first: Duration,
    /// The longest wait.
    max: Duration,
}

impl Default for Pace {
    fn default() -> Self {
        Self {
            next: None,
            first: FIRST_LOOK_INTERVAL,
            max: MAX_LOOK_INTERVAL,
        }
    }
}

impl Pace {
    /// The slow schedule of the looks for a newer version whose endpoint
    /// exists but failed (busy, slow to answer, refusing): [`NEWER_RETRY`]
    /// before the first, doubling up to [`MAX_NEWER_RETRY`]. Each such look
    /// may wait for a connection attempt that times out, so it is not
    /// repeated at a caller's pace.
    pub fn slow() -> Self {
        Self {
            next: Some(NEWER_RETRY),
            first: NEWER_RETRY,
            max: MAX_NEWER_RETRY,
        }
    }

    /// The wait before the next look or attempt, counting it.
    pub fn next_delay(&mut self) -> Duration {
        let delay = self.next.unwrap_or(Duration::ZERO);
        self.next = Some(match self.next {
            None => self.first,
            Some(delay) => (delay * 2).min(self.max),
        });
        delay
    }

    /// Starts again from no wait: the last look found something lasting.
    pub fn reset(&mut self) {
        self.next = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pace_starts_at_once_then_doubles_up_to_the_cap() {
        let mut pace = Pace::default();
        let waits: Vec<u64> = (0..7)
            .map(|_| pace.next_delay().as_millis() as u64)
            .collect();
        assert_eq!(waits, [0, 20, 40, 80, 160, 250, 250]);
        pace.reset();
        assert_eq!(pace.next_delay(), Duration::ZERO);
    }

    #[test]
    fn the_slow_pace_waits_a_second_first_then_doubles_up_to_half_a_minute() {
        let mut pace = Pace::slow();
        let waits: Vec<u64> = (0..8).map(|_| pace.next_delay().as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30, 30]);
    }
}
