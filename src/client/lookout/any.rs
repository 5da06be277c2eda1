//! The lookout as the facade sees it, whatever its group's trait.

use std::sync::PoisonError;
use std::time::Instant;

use super::state::Presence;
use super::{LastFailure, Lookout, Patience};
use crate::adapter::FromConnection;
use crate::availability::{is_worth_waiting_for, Pace, WaitLimit};
use crate::client::backend::host_calls_stuck;
use crate::client::health::{GroupHealth, GroupStatus, ServedBy};
use crate::error::Result;
use crate::negotiate::GroupReport;
use crate::version::ApiVersion;

/// What the facade needs of a lookout, whatever its group's trait.
#[async_trait::async_trait]
pub(crate) trait AnyLookout: Send + Sync {
    /// The version in use, if calls can go to it now.
    fn version(&self) -> Option<ApiVersion>;
    /// Whether calls can go to the group now.
    fn is_served(&self) -> bool;
    /// The group's health now, without waiting.
    fn health(&self) -> GroupHealth;
    /// Looks for the group's endpoints again now.
    async fn look_again(&self) -> Result<()>;
    /// `connect`'s wait for a required group: until it is served, or its
    /// endpoint fails, or `limit` passes. The state `connect` negotiated
    /// counts as the first look: the next one waits on the pace, and a
    /// limit already passed looks no more.
    async fn wait_for_required(&self, limit: WaitLimit) -> Result<()>;
    /// What the last look tried and found; `None` for a backend given
    /// directly.
    fn report(&self) -> Option<GroupReport>;
}

#[async_trait::async_trait]
impl<A: ?Sized + FromConnection + Send + Sync + 'static> AnyLookout for Lookout<A> {
    fn version(&self) -> Option<ApiVersion> {
        self.state.load().open().and_then(|s| s.version)
    }

    fn is_served(&self) -> bool {
        self.state.load().usable().is_some()
    }

    fn health(&self) -> GroupHealth {
        let state = self.state.load();
        let status = match &state.presence {
            Presence::Served(served) if served.is_open() => GroupStatus::Served {
                version: served.version,
                since: state.since,
            },
            // Ended a moment ago; its end is being recorded.
            Presence::Served(_) => GroupStatus::NotServed {
                since: None,
                last_error: None,
            },
            Presence::Absent(error) => GroupStatus::NotServed {
                since: Some(state.since),
                last_error: error.clone(),
            },
        };
        let status = match status {
            GroupStatus::Served { .. } if self.served_by == ServedBy::Host => {
                host_calls_stuck(self.group).unwrap_or(status)
            }
            status => status,
        };
        GroupHealth {
            group: self.group,
            served_by: self.served_by,
            status,
        }
    }

    async fn look_again(&self) -> Result<()> {
        let state = self.state();
        if state.usable().is_some() {
            return Ok(());
        }
        self.look(state.generation, false).await
    }

    async fn wait_for_required(&self, limit: WaitLimit) -> Result<()> {
        let state = self.state();
        if state.usable().is_some() {
            return Ok(());
        }
        let found = state.outcome(self.group);
        let over = limit.deadline.is_some_and(|d| Instant::now() >= d);
        if over || found.as_ref().is_err_and(|e| !is_worth_waiting_for(e)) {
            return found;
        }
        let mut pace = Pace::default();
        pace.next_delay(); // the look `connect` made
        let met = LastFailure::default();
        self.wait_until_served(&mut pace, limit, Patience::ForRequired, &met)
            .await
            .map(drop)
    }

    fn report(&self) -> Option<GroupReport> {
        self.report
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}
