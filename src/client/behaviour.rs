//! What every group of a client shares: its deadlines, retry policy and
//! version-change events, and which groups are served now
//! ([`ProxyPresence`]).

use tokio::sync::broadcast;

use super::options::{Deadlines, VersionChange};
use crate::availability::ProxyPresence;
use crate::retry::RetryPolicy;

/// Version changes kept for a receiver of
/// [`CsiProxy::version_changes`](crate::CsiProxy::version_changes) that
/// has not read them yet; older ones are dropped (it is told how many).
pub(crate) const EVENT_ROOM: usize = 64;

/// How the client behaves, shared by every group.
pub(crate) struct Behaviour {
    pub deadlines: Deadlines,
    pub retry: RetryPolicy,
    pub events: broadcast::Sender<VersionChange>,
    pub proxy: ProxyPresence,
}

impl Behaviour {
    pub fn new(deadlines: Deadlines, retry: RetryPolicy, events: usize) -> Self {
        Self {
            deadlines,
            retry,
            events: broadcast::channel(events).0,
            proxy: ProxyPresence::default(),
        }
    }
}
