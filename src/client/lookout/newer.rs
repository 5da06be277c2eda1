//! Settling on the newest version: a group that adopted a version older
//! than its policy's best, while the proxy may still have been creating its
//! pipes, looks once more for a newer one when [`PIPE_GRACE`] has passed,
//! and a call its version lacks waits for that look within the grace.

use std::sync::{Arc, PoisonError};
use std::time::Instant;

use super::state::{presence_of, SlotState};
use super::Lookout;
use crate::adapter::FromConnection;
use crate::availability::{until_served, Found, Pace, WaitLimit, LOOK_COOL_DOWN, PIPE_GRACE};
use crate::version::ApiVersion;

impl<A: ?Sized + FromConnection + Send + Sync + 'static> Lookout<A> {
    /// When the version of `state` is due its last look for a newer one:
    /// when [`PIPE_GRACE`] has passed since it was adopted, if the policy
    /// prefers other versions to it. `None` when there is nothing newer to
    /// look for, the group is not served, or that look was made.
    pub(super) fn newer_due(&self, state: &SlotState<A>) -> Option<Instant> {
        let version = state.served()?.version?;
        let newer = self.quiet.as_ref()?.newer_than(self.group, version);
        let due = state.found_at + PIPE_GRACE;
        let last = *self
            .newer_looked
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let made = last.is_some_and(|(g, at)| g == state.generation && at >= due);
        (!newer.is_empty() && !made).then_some(due)
    }

    /// Looks for a version newer than that of the state of `generation`,
    /// and moves to the best one found: new calls go to it, calls in
    /// flight finish on the connection they have, and
    /// [`version_changes`](crate::CsiProxy::version_changes) tells the
    /// move. Nothing changes if the state changed since, or nothing newer
    /// is served. With `cool_down`, a look for a newer version of the same
    /// state younger than [`LOOK_COOL_DOWN`] is shared instead.
    pub(super) async fn look_for_newer(&self, generation: u64, cool_down: bool) {
        let _only_one = self.looking.lock().await;
        let state = self.state();
        if state.generation != generation {
            return;
        }
        {
            let mut last = self
                .newer_looked
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if cool_down
                && last.is_some_and(|(g, at)| g == generation && at.elapsed() < LOOK_COOL_DOWN)
            {
                return;
            }
            *last = Some((generation, Instant::now()));
        }
        let version = state.open().and_then(|s| s.version);
        let (Some(quiet), Some(version)) = (&self.quiet, version) else {
            return;
        };
        let Some(negotiated) = quiet.negotiate_newer(self.group, version).await else {
            return;
        };
        self.keep_report(&negotiated);
        let presence = presence_of(negotiated.connection(self.group));
        self.adopt(presence, |now| now.generation == generation);
    }

    /// For a call that the version in use lacks (it found `served`): while
    /// a newer version may still be appearing (within [`PIPE_GRACE`] of the
    /// adoption), looks for one on `pace`. The adapter of a version newer
    /// than `served` once one is in use; `None` once the grace has passed
    /// without one.
    pub async fn wait_for_newer(&self, pace: &mut Pace, served: ApiVersion) -> Option<Arc<A>> {
        let found = until_served(pace, WaitLimit::QUIET, || async {
            let state = self.state();
            if let Some(now) = state.open().filter(|s| s.version > Some(served)) {
                return Found::Served(now.api.clone());
            }
            let still_young = self
                .newer_due(&state)
                .is_some_and(|due| Instant::now() < due);
            if !still_young {
                return Found::Over(());
            }
            self.look_for_newer(state.generation, true).await;
            match self.state().open().filter(|s| s.version > Some(served)) {
                Some(now) => Found::Served(now.api.clone()),
                None => Found::Absent {
                    error: (),
                    waiting_for: vec![self.group],
                },
            }
        });
        found.await.ok()
    }
}
