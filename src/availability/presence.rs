//! Which of a client's groups are served now: what tells a proxy that is
//! away (wait for it) from a node that lacks a group (say so).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use super::PIPE_GRACE;
use crate::group::ApiGroup;

/// Which of the client's groups are served now, and when that last
/// changed: what tells a proxy that is away, starting or stopping (wait for
/// it) from a node that lacks a group (say so).
#[derive(Default)]
pub(crate) struct ProxyPresence {
    /// One bit per group, by [`ApiGroup::index`].
    served: AtomicU8,
    /// When a group was last found, or stopped being served.
    changed: Mutex<Option<Instant>>,
}

impl ProxyPresence {
    pub fn set(&self, group: ApiGroup, served: bool) {
        let bit = 1u8 << group.index();
        let before = if served {
            self.served.fetch_or(bit, Ordering::AcqRel)
        } else {
            self.served.fetch_and(!bit, Ordering::AcqRel)
        };
        if (before & bit != 0) != served {
            *self.changed.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
        }
    }

    /// Whether a group that is not served is worth waiting for: the proxy
    /// as a whole is away (none of the client's groups is served), or it
    /// changed so recently that it may still be creating its pipes, or
    /// going away with the ends of its other connections not yet noticed.
    pub fn worth_waiting(&self) -> bool {
        if self.served.load(Ordering::Acquire) == 0 {
            return true;
        }
        let changed = *self.changed.lock().unwrap_or_else(PoisonError::into_inner);
        changed.is_some_and(|at| at.elapsed() < PIPE_GRACE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proxy_is_waited_for_while_away_and_within_its_grace() {
        let presence = ProxyPresence::default();
        let settle = || *presence.changed.lock().unwrap() = Some(Instant::now() - PIPE_GRACE);
        assert!(presence.worth_waiting(), "away: nothing served");
        presence.set(ApiGroup::Disk, true);
        assert!(presence.worth_waiting(), "just appeared");
        settle();
        assert!(!presence.worth_waiting(), "served for a while");
        presence.set(ApiGroup::Disk, true);
        assert!(!presence.worth_waiting(), "found again: no change");
        presence.set(ApiGroup::Volume, true);
        assert!(presence.worth_waiting(), "another group found: starting");
        settle();
        presence.set(ApiGroup::Disk, false);
        assert!(presence.worth_waiting(), "one gone: maybe all are going");
        settle();
        assert!(!presence.worth_waiting(), "only the one is gone");
        presence.set(ApiGroup::Volume, false);
        assert!(presence.worth_waiting(), "away");
    }
}
