//! Settling on the newest version: a group that adopted a version older
//! than its policy's best, while the proxy may still have been creating its
//! pipes, looks for a newer one when [`PIPE_GRACE`] has passed (its
//! settling look). When a newer version's endpoint exists but fails (busy,
//! slow to answer), that look is made again on the slow [`Pace::slow`]
//! until the version is served or gone. A call its version lacks waits
//! for the settling look, the one in flight included, and for the first
//! look again after it failed, instead of failing; past those, it is
//! answered at once with the newer endpoint's failure (the version is
//! there, so not [`Error::Unsupported`]), while the looks go on.

use std::sync::{Arc, PoisonError};
use std::time::Instant;

use super::state::{presence_of, SlotState};
use super::{LastFailure, Lookout};
use crate::adapter::FromConnection;
use crate::availability::{until_served, Found, Pace, WaitLimit, LOOK_COOL_DOWN, PIPE_GRACE};
use crate::error::Error;
use crate::version::ApiVersion;

/// Where the look for a version newer than a state's stands.
#[derive(Debug, Default)]
pub(super) struct NewerLook {
    /// The generation of the state it is about; a newer state's starts
    /// afresh ([`Stage::Due`]).
    generation: u64,
    stage: Stage,
    /// When a call last looked within the grace, for the cool-down.
    early: Option<Instant>,
}

/// The settling look of a state, and what it found.
#[derive(Debug, Default)]
enum Stage {
    /// Not made yet: due once [`PIPE_GRACE`] has passed since the state
    /// was found.
    #[default]
    Due,
    /// Failed at an endpoint that exists: a newer version is there but did
    /// not answer in time, or refused. Made again at `next`.
    Failed {
        error: Error,
        next: Instant,
        pace: Pace,
        /// How many looks failed so.
        failures: u32,
    },
    /// Every newer version's endpoint was absent: the group is settled on
    /// its version, and the node's proxy predates the newer ones.
    Absent,
}

impl<A: ?Sized + FromConnection + Send + Sync + 'static> Lookout<A> {
    /// Runs `f` on the look for a version newer than the state of
    /// `generation`'s: the one kept, which a newer state's replaces; for a
    /// state already replaced, a blank one that is not kept.
    fn with_newer_look<T>(&self, generation: u64, f: impl FnOnce(&mut NewerLook) -> T) -> T {
        let mut look = self.newer.lock().unwrap_or_else(PoisonError::into_inner);
        if generation < look.generation {
            return f(&mut NewerLook::default());
        }
        if generation > look.generation {
            *look = NewerLook {
                generation,
                ..NewerLook::default()
            };
        }
        f(&mut look)
    }

    /// When the version of `state` is due its next look for a newer one:
    /// its settling look when [`PIPE_GRACE`] has passed since it was
    /// adopted, or the next one after that look failed at an endpoint that
    /// exists. `None` when there is nothing newer to look for (the policy,
    /// or a group not served), or the settling look found every newer
    /// version absent.
    pub(super) fn newer_due(&self, state: &SlotState<A>) -> Option<Instant> {
        let version = state.open()?.version?;
        if self
            .quiet
            .as_ref()?
            .newer_than(self.group, version)
            .is_empty()
        {
            return None;
        }
        self.with_newer_look(state.generation, |look| match &look.stage {
            Stage::Due => Some(state.found_at + PIPE_GRACE),
            Stage::Failed { next, .. } => Some(*next),
            Stage::Absent => None,
        })
    }

    /// Why the last look for a version newer than `state`'s failed, if it
    /// failed at an endpoint that exists: a newer version is there.
    pub(super) fn newer_failure(&self, state: &SlotState<A>) -> Option<Error> {
        self.with_newer_look(state.generation, |look| match &look.stage {
            Stage::Failed { error, .. } => Some(error.clone()),
            _ => None,
        })
    }

    /// Whether the settling look of `state` found every newer version
    /// absent: what the node's release may be read from.
    pub(super) fn newer_settled_absent(&self, state: &SlotState<A>) -> bool {
        self.with_newer_look(state.generation, |look| matches!(look.stage, Stage::Absent))
    }

    /// Looks for a version newer than that of the state of `generation`,
    /// and moves to the best one found: new calls go to it, calls in
    /// flight finish on the connection they have, and
    /// [`version_changes`](crate::CsiProxy::version_changes) tells the
    /// move. One look at a time: a caller that comes during one waits for
    /// it and shares what it found.
    ///
    /// Within the grace (a call that cannot wait for it), a look that
    /// finds nothing newer changes nothing, and one made less than
    /// [`LOOK_COOL_DOWN`] before is shared instead. Once the grace has
    /// passed, the look settles the state: every newer endpoint absent, or
    /// one that exists but failed, to be looked at again on the slow pace
    /// (and not before). Nothing is looked for if the state changed since,
    /// or is settled.
    pub(super) async fn look_for_newer(&self, generation: u64) {
        let _only_one = self.looking.lock().await;
        let state = self.state();
        if state.generation != generation {
            return;
        }
        let Some(due) = self.newer_due(&state) else {
            return;
        };
        let settling = Instant::now() >= due;
        let shared = self.with_newer_look(generation, |look| match look.stage {
            Stage::Failed { .. } if !settling => true,
            Stage::Due if !settling => {
                if look.early.is_some_and(|at| at.elapsed() < LOOK_COOL_DOWN) {
                    return true;
                }
                look.early = Some(Instant::now());
                false
            }
            _ => false,
        });
        if shared {
            return;
        }
        let version = state.open().and_then(|s| s.version);
        let (Some(quiet), Some(version)) = (&self.quiet, version) else {
            return;
        };
        let Some(negotiated) = quiet.negotiate_newer(self.group, version).await else {
            return;
        };
        let error = match negotiated.connection(self.group) {
            Ok(connection) => {
                self.keep_report(&negotiated);
                let presence = presence_of(Ok(connection));
                self.adopt(presence, |now| now.generation == generation);
                return;
            }
            // Too early to tell: the settling look will.
            Err(_) if !settling => return,
            Err(error) => error,
        };
        self.with_newer_look(generation, |look| self.settle(look, version, error));
    }

    /// What a settling look that found no newer version makes of `look`:
    /// settled on `version` when every newer endpoint was absent, else
    /// looked at again on the slow pace.
    fn settle(&self, look: &mut NewerLook, version: ApiVersion, error: Error) {
        if matches!(error, Error::NotServed { .. }) {
            look.stage = Stage::Absent;
            return;
        }
        let (mut pace, failures) = match std::mem::take(&mut look.stage) {
            Stage::Failed { pace, failures, .. } => {
                tracing::debug!(group = %self.group, %version, %error, "a newer version failed again");
                (pace, failures + 1)
            }
            _ => {
                tracing::info!(
                    group = %self.group,
                    %version,
                    %error,
                    "a newer version of the group exists but did not answer: staying on {version} and looking again"
                );
                (Pace::slow(), 1)
            }
        };
        look.stage = Stage::Failed {
            error,
            next: Instant::now() + pace.next_delay(),
            pace,
            failures,
        };
    }

    /// Whether a call its version lacks still waits for a newer version
    /// of `state`: before the settling look has failed, and until the
    /// first look after that failure has been made. Past those, the newer
    /// endpoint's failure is the answer at once (the looks go on at their
    /// slow pace, and the call's retry finds the version once served).
    fn worth_waiting_for_newer(&self, state: &SlotState<A>) -> bool {
        self.with_newer_look(state.generation, |look| match &look.stage {
            Stage::Due => true,
            Stage::Failed { failures, .. } => *failures < 2,
            Stage::Absent => false,
        })
    }

    /// For a call that the version in use lacks (it found `served`): while
    /// a newer version may still be appearing (within [`PIPE_GRACE`] of the
    /// adoption, or right after its endpoint failed to answer), waits for
    /// the looks for it, the one in flight included, looking itself within
    /// the grace. The adapter of a version newer than `served` once one is
    /// in use. `Err(None)` once the group is settled without one (the call
    /// is unsupported); `Err(Some(failure))` when a newer version's
    /// endpoint exists but keeps failing (the call's answer). A failing
    /// newer endpoint's error also goes to `met`: the call's answer if its
    /// deadline passes first.
    pub async fn wait_for_newer(
        &self,
        pace: &mut Pace,
        served: ApiVersion,
        met: &LastFailure,
    ) -> Result<Arc<A>, Option<Error>> {
        let newer = |state: &SlotState<A>| {
            let open = state.open().filter(|s| s.version > Some(served));
            open.map(|s| s.api.clone())
        };
        let found = until_served(pace, WaitLimit::QUIET, || async {
            let state = self.state();
            if let Some(api) = newer(&state) {
                return Found::Served(api);
            }
            if self.newer_due(&state).is_none() {
                return Found::Over(None);
            }
            if !self.worth_waiting_for_newer(&state) {
                return Found::Over(self.newer_failure(&state));
            }
            self.look_for_newer(state.generation).await;
            let now = self.state();
            if let Some(api) = newer(&now) {
                return Found::Served(api);
            }
            if let Some(error) = self.newer_failure(&now) {
                met.set(error);
            }
            Found::Absent {
                error: None,
                waiting_for: vec![self.group],
            }
        });
        found.await
    }
}
