//! The one schedule of every wait for the proxy.

use std::time::Duration;

use super::{FIRST_LOOK_INTERVAL, MAX_LOOK_INTERVAL};

/// The waits of one caller (or of the background task) between its looks
/// and attempts: none before the first, then 20 ms, doubling up to
/// [`MAX_LOOK_INTERVAL`]. No jitter: it would come on top of the cap, and
/// a look at a missing endpoint costs the proxy nothing.
#[derive(Debug, Default)]
pub(crate) struct Pace {
    next: Option<Duration>,
}

impl Pace {
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
}
