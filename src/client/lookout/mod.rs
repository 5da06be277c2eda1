//! One group's lookout: what the group has now (the adapter in use, or why
//! there is none), the one look for its endpoints in flight, adopting what
//! a look found (and telling of the change), and following the connection
//! in use: when it ends, the group is not served until a look finds it
//! again, which one task per group does in the background; and waiting
//! until the group is served ([`Lookout::wait_until_served`]), for
//! `connect` and for calls.
//!
//! A version adopted while the proxy may still be creating its pipes is
//! not final: a proxy creates them one after the other, so a look in that
//! moment can find an older version before the newest exists. The group
//! looks for a newer version when [`PIPE_GRACE`](crate::availability::PIPE_GRACE) has passed
//! since the adoption ([`Lookout::look_for_newer`], from the background
//! task), and a call that its version lacks waits for that look instead of
//! failing ([`Lookout::wait_for_newer`]). When a newer version's endpoint
//! exists but fails (busy, slow to answer), the look is made again on a
//! slow pace until that version is served or gone. Once every newer
//! endpoint was found absent, nothing looks again: CSI Proxy creates every
//! pipe before it serves any and never adds one while it runs; a release
//! that serves more versions is a restart, which ends the connection, and
//! the group then negotiates afresh.
//!
//! Every wait, whoever waits, is the one loop of
//! [`until_served`], paced by [`Pace`]:
//! nothing here looks or sends twice without waiting, whatever an endpoint
//! does.

mod any;
mod call;
mod follow;
mod newer;
mod state;

use std::sync::{Arc, Mutex as SyncMutex, PoisonError};
use std::time::{Instant, SystemTime};

use arc_swap::ArcSwap;
use tokio::sync::{watch, Mutex};

use super::behaviour::Behaviour;
use super::health::ServedBy;
use super::options::VersionChange;
use crate::adapter::FromConnection;
use crate::availability::{
    is_worth_waiting_for, until_served, Found, Pace, WaitLimit, BACKGROUND_CONNECT_TIMEOUT,
    LOOK_COOL_DOWN,
};
use crate::error::{Error, Result};
use crate::group::ApiGroup;
use crate::metrics::{self, CallSeries, CallVersion, GroupGauges};
use crate::negotiate::{GroupReport, Negotiated, Negotiator};
use crate::version::ApiVersion;
pub(crate) use any::AnyLookout;
use newer::NewerLook;
pub(crate) use state::SlotState;
use state::{presence_of, Presence, Served};

/// The last failure a call met, kept where its deadline finds it: a wait
/// that the deadline cuts short leaves what it was waiting through (the
/// proxy not there, a newer version's endpoint failing) here, so that the
/// call answers with it rather than a bare timeout.
#[derive(Debug, Default)]
pub(super) struct LastFailure(SyncMutex<Option<Error>>);

impl LastFailure {
    pub fn set(&self, error: Error) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(error);
    }

    pub fn take(self) -> Option<Error> {
        self.0.into_inner().unwrap_or_else(PoisonError::into_inner)
    }
}

/// How long a wait for a group that is not there goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Patience {
    /// A call's: while the proxy as a whole is away (or changed within
    /// [`PIPE_GRACE`](crate::availability::PIPE_GRACE)); a group missing from a proxy that serves others is
    /// answered at once.
    WhileProxyAway,
    /// `connect`'s, for a required group: until its deadline, whatever the
    /// other groups do.
    ForRequired,
}

/// One group: its current state, and how to look for the proxy again.
pub(crate) struct Lookout<A: ?Sized> {
    group: ApiGroup,
    state: ArcSwap<SlotState<A>>,
    /// `None` for backends given directly (mocks, the host): nothing to
    /// look for.
    negotiator: Option<Negotiator>,
    /// The negotiator of looks in the background and for newer versions:
    /// quiet, one attempt per endpoint, each bounded.
    quiet: Option<Negotiator>,
    served_by: ServedBy,
    /// One look at a time; the others share its result.
    looking: Mutex<()>,
    /// What the last look (or `connect`'s negotiation) tried and found.
    report: SyncMutex<Option<GroupReport>>,
    /// Where the look for a version newer than the state's stands.
    newer: SyncMutex<NewerLook>,
    /// Changes of the state are made one at a time, each from the one
    /// before, so that generations and events follow each other.
    adopting: SyncMutex<()>,
    /// The generation of the state, for the background task to follow.
    changes: watch::Sender<u64>,
    pub behaviour: Arc<Behaviour>,
    gauges: GroupGauges,
    pub(super) calls: CallSeries,
}

impl<A: ?Sized + FromConnection + Send + Sync + 'static> Lookout<A> {
    /// A lookout for a backend given directly (a mock, or the host):
    /// always served.
    pub fn direct(
        group: ApiGroup,
        api: Arc<A>,
        served_by: ServedBy,
        behaviour: Arc<Behaviour>,
    ) -> Arc<Self> {
        let served = Served {
            api,
            version: None,
            channel: None,
        };
        let presence = Presence::Served(served);
        Arc::new(Self::new(group, presence, None, served_by, behaviour))
    }

    /// A lookout for a negotiated group, from what negotiation found. It
    /// follows the connection in a task of its own, which stops with it.
    pub fn negotiated(
        group: ApiGroup,
        negotiated: &Negotiated,
        negotiator: Negotiator,
        behaviour: Arc<Behaviour>,
    ) -> Arc<Self> {
        let presence = presence_of(negotiated.connection(group));
        let lookout = Arc::new(Self::new(
            group,
            presence,
            Some(negotiator),
            ServedBy::CsiProxy,
            behaviour,
        ));
        lookout.keep_report(negotiated);
        let state = lookout.state();
        lookout.show(&state);
        let changes = lookout.changes.subscribe();
        tokio::spawn(follow::follow(Arc::downgrade(&lookout), changes));
        lookout
    }

    fn new(
        group: ApiGroup,
        presence: Presence<A>,
        negotiator: Option<Negotiator>,
        served_by: ServedBy,
        behaviour: Arc<Behaviour>,
    ) -> Self {
        let state = SlotState {
            generation: 0,
            presence,
            since: SystemTime::now(),
            found_at: Instant::now(),
        };
        let quiet = negotiator
            .as_ref()
            .map(|n| n.for_background(BACKGROUND_CONNECT_TIMEOUT));
        Self {
            group,
            state: ArcSwap::from_pointee(state),
            negotiator,
            quiet,
            served_by,
            looking: Mutex::new(()),
            report: SyncMutex::new(None),
            newer: SyncMutex::default(),
            adopting: SyncMutex::new(()),
            changes: watch::Sender::new(0),
            behaviour,
            gauges: GroupGauges::new(group),
            calls: CallSeries::new(group),
        }
    }

    /// The state now.
    pub fn state(&self) -> Arc<SlotState<A>> {
        self.state.load_full()
    }

    /// Looks for the group's endpoints again, unless somebody else did
    /// since the state of generation `seen` was found (then their result is
    /// shared), or, with `cool_down`, that state is a failed look younger
    /// than [`LOOK_COOL_DOWN`].
    pub async fn look(&self, seen: u64, cool_down: bool) -> Result<()> {
        let _only_one = self.looking.lock().await;
        let before = self.state();
        let Some(negotiator) = &self.negotiator else {
            return before.outcome(self.group);
        };
        let looked_since = before.generation != seen && before.was_looked_for();
        let cooling = cool_down
            && before.served().is_none()
            && before.was_looked_for()
            && before.found_at.elapsed() < LOOK_COOL_DOWN;
        if looked_since || cooling {
            return before.outcome(self.group);
        }
        let negotiated = negotiator.negotiate(&[self.group]).await?;
        self.keep_report(&negotiated);
        let outcome = negotiated.connection(self.group);
        let found = outcome.as_ref().map(drop).map_err(Clone::clone);
        self.adopt(presence_of(outcome), |_| true);
        found
    }

    /// Waits until calls can go to the group, looking for it again (each
    /// look shared with concurrent waiters) on `pace`, within `limit`, for
    /// as long as `patience` says. Returns the adapter a look found, even
    /// if its connection ended since: an attempt on it then fails at once,
    /// unsent, with the reason. What each look that found the group
    /// missing said goes to `met` (every endpoint tried): the answer of a
    /// call whose deadline ends the wait.
    pub async fn wait_until_served(
        &self,
        pace: &mut Pace,
        limit: WaitLimit,
        patience: Patience,
        met: &LastFailure,
    ) -> Result<Arc<A>> {
        until_served(pace, limit, || async {
            let state = self.state();
            if let Some(api) = state.usable() {
                return Found::Served(api.clone());
            }
            // Callers waiting for a proxy that is away share a failed look
            // for a moment; one that would be told "not served" is told
            // what a look of its own found.
            let cool_down =
                patience == Patience::WhileProxyAway && self.behaviour.proxy.worth_waiting();
            let error = match self.look(state.generation, cool_down).await {
                Ok(()) => match self.state().api() {
                    Some(api) => return Found::Served(api.clone()),
                    None => Error::NotServed {
                        group: self.group,
                        tried: Vec::new(),
                    },
                },
                Err(error) => error,
            };
            // Asked after the look, which may have just found the group
            // gone (a proxy that stops): that starts the grace.
            let patient = patience == Patience::ForRequired || self.behaviour.proxy.worth_waiting();
            if is_worth_waiting_for(&error) && patient {
                met.set(error.clone());
                Found::Absent {
                    error,
                    waiting_for: vec![self.group],
                }
            } else {
                Found::Over(error)
            }
        })
        .await
    }

    /// Keeps what `negotiated` tried for this group, for the report.
    fn keep_report(&self, negotiated: &Negotiated) {
        if let Some(report) = negotiated.report().group(self.group) {
            *self.report.lock().unwrap_or_else(PoisonError::into_inner) = Some(report.clone());
        }
    }

    /// One quiet look: only a group found changes the state (what is
    /// missing or failing is for callers' looks to report). Skipped while
    /// a caller looks.
    async fn look_in_background(&self) {
        let Some(quiet) = &self.quiet else {
            return;
        };
        let Ok(_only_one) = self.looking.try_lock() else {
            return;
        };
        let Ok(negotiated) = quiet.negotiate(&[self.group]).await else {
            return;
        };
        if let Ok(connection) = negotiated.connection(self.group) {
            self.adopt(presence_of(Ok(connection)), |now| now.usable().is_none());
        }
    }

    /// The connection of the state of `generation` ended: unless the state
    /// changed since, the group is not served from now on.
    fn connection_ended(&self, generation: u64) {
        self.adopt(Presence::Absent(None), |now| now.generation == generation);
    }

    /// Makes `presence` the state after the current one, if `still`
    /// holds of the current one; shows it and reports a change of version.
    fn adopt(&self, presence: Presence<A>, still: impl FnOnce(&SlotState<A>) -> bool) {
        let _one_at_a_time = self.adopting.lock().unwrap_or_else(PoisonError::into_inner);
        let before = self.state();
        if !still(&before) {
            return;
        }
        let from = before.served().and_then(|s| s.version);
        let to = match &presence {
            Presence::Served(served) => served.version,
            Presence::Absent(_) => None,
        };
        // Another failed look keeps the start of the outage; anything else
        // (found, or newly missing) starts a new "since".
        let still_absent = matches!(presence, Presence::Absent(_)) && before.served().is_none();
        let state = Arc::new(SlotState {
            generation: before.generation + 1,
            presence,
            since: if still_absent {
                before.since
            } else {
                SystemTime::now()
            },
            found_at: Instant::now(),
        });
        self.state.store(state.clone());
        self.show(&state);
        self.changes.send_replace(state.generation);
        if from != to {
            log_version_change(self.group, from, to);
            metrics::version_changed(self.group, from, to);
            let _ = self.behaviour.events.send(VersionChange {
                group: self.group,
                from,
                to,
            });
        }
    }

    /// Shows `state` in the gauges and in the client's presence.
    fn show(&self, state: &SlotState<A>) {
        let version = state.open().and_then(|s| s.version);
        self.gauges.show(version);
        self.behaviour.proxy.set(self.group, state.open().is_some());
    }

    /// The version calls go to now (its connection may just have ended),
    /// for the metrics.
    pub(super) fn call_version(&self) -> CallVersion {
        match self.served_by {
            ServedBy::CsiProxy => {
                CallVersion::Negotiated(self.state.load().served().and_then(|s| s.version))
            }
            other => CallVersion::Direct(other),
        }
    }
}

/// Says in the log what a change of a group's version means to an
/// operator: the proxy going away is a warning (calls wait for it), its
/// return or another version news.
fn log_version_change(group: ApiGroup, from: Option<ApiVersion>, to: Option<ApiVersion>) {
    match (from, to) {
        (Some(from), None) => tracing::warn!(
            %group,
            %from,
            "CSI Proxy stopped serving this API (stopped, restarting or being upgraded); \
             calls wait for it to come back"
        ),
        (None, Some(to)) => tracing::info!(%group, %to, "CSI Proxy serves this API again"),
        (Some(from), Some(to)) => {
            tracing::info!(%group, %from, %to, "CSI Proxy now serves another version of this API")
        }
        (None, None) => {}
    }
}
