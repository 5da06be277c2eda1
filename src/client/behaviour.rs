//! What every group of a client shares: its deadlines, retry policy and
//! version-change events, and which groups are served now
//! ([`ProxyPresence`]).

use tokio::sync::broadcast;

use super::options::{Deadlines, VersionChange};
use crate::availability::ProxyPresence;
use crate::retry::RetryPolicy;

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
