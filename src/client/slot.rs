//! One group's state (the adapter in use, or why there is none) and the
//! call loop: deadline, looking for the proxy again, riding through outages.

use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime};

use arc_swap::ArcSwap;
use backon::BackoffBuilder;
use tokio::sync::{broadcast, Mutex};

use super::options::{CallOptions, Deadlines, VersionChange};
use crate::adapter::FromConnection;
use crate::capability::Operation;
use crate::error::{Error, Result};
use crate::group::ApiGroup;
use crate::metrics::{self, CallSeries, CallTimer, CallVersion, GroupGauges};
use crate::negotiate::{Connection, Negotiator};
use crate::retry::RetryPolicy;
use crate::transport::ProxyChannel;
use crate::version::ApiVersion;

/// The longest wait between two looks for a proxy that is away, so that
/// its return is noticed fast.
pub(crate) const MAX_LOOK_INTERVAL: Duration = Duration::from_millis(250);

/// A look that failed is shared with every caller that comes within this
/// time, instead of each of them looking again.
const LOOK_COOL_DOWN: Duration = Duration::from_millis(50);

/// Bounds each attempt of a look in the background: a caller that comes
/// meanwhile waits for it rather than looking at the same time.
const BACKGROUND_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// The waits between looks while the proxy is away: short at first, since
/// most restarts take a moment, then every [`MAX_LOOK_INTERVAL`]. No
/// jitter: it would come on top of the cap, and a look at a missing
/// endpoint costs the proxy nothing.
pub(crate) fn look_schedule() -> impl Iterator<Item = Duration> {
    RetryPolicy::default()
        .with_initial_delay(Duration::from_millis(20))
        .with_max_delay(MAX_LOOK_INTERVAL)
        .with_max_retries(usize::MAX)
        .with_jitter(false)
        .backoff()
        .build()
}

/// How the client behaves, shared by every group.
pub(crate) struct Behaviour {
    pub deadlines: Deadlines,
    pub retry: RetryPolicy,
    pub events: broadcast::Sender<VersionChange>,
}

/// What a group has now. Replaced whole on every look, so readers see one
/// consistent picture without locking.
pub(crate) struct SlotState<A: ?Sized> {
    /// Counts looks; a caller that saw generation `g` fail only looks again
    /// if nobody else did since.
    generation: u64,
    presence: Presence<A>,
    /// Since when the group is served, or not served.
    since: SystemTime,
    /// When this state was found.
    found_at: Instant,
}

/// Served, or why not.
enum Presence<A: ?Sized> {
    Served(Served<A>),
    Absent(Error),
}

struct Served<A: ?Sized> {
    api: Arc<A>,
    /// `None` for a backend given directly (a mock).
    version: Option<ApiVersion>,
    channel: Option<ProxyChannel>,
}

impl<A: ?Sized> Served<A> {
    /// Whether calls can still go to it: a closed connection sends nothing.
    fn is_open(&self) -> bool {
        self.channel.as_ref().is_none_or(|c| !c.is_closed())
    }
}

impl<A: ?Sized> SlotState<A> {
    fn served(&self) -> Option<&Served<A>> {
        match &self.presence {
            Presence::Served(served) => Some(served),
            Presence::Absent(_) => None,
        }
    }

    /// What is served, if calls can go to it now.
    fn open(&self) -> Option<&Served<A>> {
        self.served().filter(|s| s.is_open())
    }

    /// The adapter, if calls can go to it now.
    fn usable(&self) -> Option<&Arc<A>> {
        self.open().map(|s| &s.api)
    }

    /// The version and connection serving the group, for the gauges.
    fn connection(&self) -> Option<(ApiVersion, &ProxyChannel)> {
        let served = self.served()?;
        Some((served.version?, served.channel.as_ref()?))
    }

    /// What this state says of the group, as a result.
    fn outcome(&self) -> Result<()> {
        match &self.presence {
            Presence::Served(_) => Ok(()),
            Presence::Absent(error) => Err(error.clone()),
        }
    }
}

/// One group: its current state, and how to look for the proxy again.
pub(crate) struct GroupSlot<A: ?Sized> {
    /// This slot, for the tasks that look for the proxy in the background
    /// after a connection ended; they stop once the client is dropped.
    me: Weak<Self>,
    group: ApiGroup,
    state: ArcSwap<SlotState<A>>,
    /// `None` for backends given directly (mocks): nothing to look for.
    negotiator: Option<Negotiator>,
    /// One look at a time; the others share its result.
    looking: Mutex<()>,
    pub behaviour: Arc<Behaviour>,
    gauges: GroupGauges,
    calls: CallSeries,
}

impl<A: ?Sized + FromConnection + Send + Sync + 'static> GroupSlot<A> {
    /// A slot for a backend given directly (a mock): always served.
    pub fn direct(group: ApiGroup, api: Arc<A>, behaviour: Arc<Behaviour>) -> Arc<Self> {
        let served = Served {
            api,
            version: None,
            channel: None,
        };
        Self::with_state(group, Presence::Served(served), None, behaviour)
    }

    /// A slot for a negotiated group, from what negotiation found.
    pub fn negotiated(
        group: ApiGroup,
        outcome: Result<Connection>,
        negotiator: Negotiator,
        behaviour: Arc<Behaviour>,
    ) -> Arc<Self> {
        let presence = match outcome {
            Ok(connection) => Presence::Served(Self::attach(&connection)),
            Err(e) => Presence::Absent(e),
        };
        Self::with_state(group, presence, Some(negotiator), behaviour)
    }

    fn with_state(
        group: ApiGroup,
        presence: Presence<A>,
        negotiator: Option<Negotiator>,
        behaviour: Arc<Behaviour>,
    ) -> Arc<Self> {
        let state = SlotState {
            generation: 0,
            presence,
            since: SystemTime::now(),
            found_at: Instant::now(),
        };
        let slot = Arc::new_cyclic(|me| Self {
            me: me.clone(),
            group,
            state: ArcSwap::from_pointee(state),
            negotiator,
            looking: Mutex::new(()),
            behaviour,
            gauges: GroupGauges::new(group),
            calls: CallSeries::new(group),
        });
        // A backend given directly is no proxy to show or to look for.
        if slot.negotiator.is_some() {
            slot.follow(&slot.state());
        }
        slot
    }

    /// Shows the state's connection in the gauges; once that connection
    /// ends, clears them and looks for the proxy in the background. One
    /// task per connection, which holds neither the connection nor the
    /// client.
    fn follow(&self, state: &SlotState<A>) {
        let connection = state.connection();
        let shown = self.gauges.show(connection.map(|(version, _)| version));
        if let Some((_, channel)) = connection {
            let ended = channel.ended();
            let me = self.me.clone();
            tokio::spawn(async move {
                ended.await;
                shown.ended();
                Self::recover(me).await;
            });
        }
    }

    /// After a connection ended: looks for the proxy on the caller's
    /// schedule until the group is served again (by this look or a
    /// caller's), so that [`health`](AnySlot::health), the gauges and the
    /// next call find it back without waiting. Stops when the client is
    /// dropped.
    async fn recover(me: Weak<Self>) {
        let quiet = match me.upgrade().and_then(|slot| slot.negotiator.clone()) {
            Some(negotiator) => negotiator.for_background(BACKGROUND_CONNECT_TIMEOUT),
            None => return,
        };
        let mut waits = look_schedule();
        loop {
            let Some(slot) = me.upgrade() else { return };
            if slot.state().usable().is_some() {
                return;
            }
            slot.look_in_background(&quiet).await;
            drop(slot);
            tokio::time::sleep(waits.next().unwrap_or(MAX_LOOK_INTERVAL)).await;
        }
    }

    /// One look with the `quiet` negotiator: only a group found changes the
    /// state (what is missing or failing is for callers' looks to report).
    /// Skipped while a caller looks.
    async fn look_in_background(&self, quiet: &Negotiator) {
        let Ok(_only_one) = self.looking.try_lock() else {
            return;
        };
        let Ok(negotiated) = quiet.negotiate(&[self.group]).await else {
            return;
        };
        if let Ok(connection) = negotiated.connection(self.group) {
            let before = self.state();
            if before.usable().is_none() {
                self.adopt(&before, Ok(connection));
            }
        }
    }

    fn attach(connection: &Connection) -> Served<A> {
        Served {
            api: A::from_connection(connection),
            version: Some(connection.version()),
            channel: Some(connection.channel()),
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
    async fn look(&self, seen: u64, cool_down: bool) -> Result<()> {
        let _only_one = self.looking.lock().await;
        let before = self.state();
        let Some(negotiator) = &self.negotiator else {
            return before.outcome();
        };
        let shared = before.generation != seen
            || (cool_down
                && before.served().is_none()
                && before.found_at.elapsed() < LOOK_COOL_DOWN);
        if shared {
            return before.outcome();
        }
        let outcome = negotiator
            .negotiate(&[self.group])
            .await?
            .connection(self.group);
        let found = outcome.as_ref().map(drop).map_err(Clone::clone);
        self.adopt(&before, outcome);
        found
    }

    /// Makes what a look found (`outcome`) the state after `before`, and
    /// reports a change of version.
    fn adopt(&self, before: &SlotState<A>, outcome: Result<Connection>) {
        let from = before.served().and_then(|s| s.version);
        // Another failed look keeps the start of the outage; anything else
        // (found, or newly missing) starts a new "since".
        let still_absent = outcome.is_err() && before.served().is_none();
        let presence = match outcome {
            Ok(connection) => Presence::Served(Self::attach(&connection)),
            Err(e) => Presence::Absent(e),
        };
        let to = match &presence {
            Presence::Served(served) => served.version,
            Presence::Absent(_) => None,
        };
        let since = if still_absent {
            before.since
        } else {
            SystemTime::now()
        };
        let state = Arc::new(SlotState {
            generation: before.generation + 1,
            presence,
            since,
            found_at: Instant::now(),
        });
        self.state.store(state.clone());
        self.follow(&state);
        if from != to {
            tracing::info!(group = %self.group, ?from, ?to, "CSI Proxy API version changed");
            metrics::version_changed(self.group, from, to);
            let _ = self.behaviour.events.send(VersionChange {
                group: self.group,
                from,
                to,
            });
        }
    }

    /// Runs `call` on the current adapter within the operation's deadline.
    ///
    /// While the group is not served, or its connection has ended, the call
    /// looks for the proxy again (sharing each look with concurrent callers)
    /// and waits for it within its deadline. A request that certainly was
    /// not sent goes again on the new connection without spending the retry
    /// budget; one that may have been sent is repeated only if the
    /// operation only reads (or the caller opted in), under the
    /// [`RetryPolicy`].
    pub async fn run<T, F, Fut>(
        &self,
        operation: Operation,
        options: CallOptions,
        call: F,
    ) -> Result<T>
    where
        F: Fn(Arc<A>) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let version = || self.call_version();
        let timer = CallTimer::start(&self.calls, operation, &version);
        let deadline = options
            .deadline
            .unwrap_or_else(|| self.behaviour.deadlines.of(operation));
        let attempts = async {
            let state = self.state();
            // The fast path: served, and the connection is open.
            let failure = match state.usable() {
                Some(api) => match call(api.clone()).await {
                    Err(error) if is_connection_failure(&error) => Some(error),
                    other => return other,
                },
                None => None,
            };
            self.run_slowly(operation, options, &call, state, failure)
                .await
        };
        let result = match tokio::time::timeout(deadline, attempts).await {
            Ok(result) => result,
            Err(_) => Err(Error::Timeout {
                operation,
                after: deadline,
            }),
        };
        timer.finish(&result);
        result
    }

    /// The version calls go to now (its connection may just have ended),
    /// for the metrics.
    fn call_version(&self) -> CallVersion {
        match &self.negotiator {
            Some(_) => CallVersion::Negotiated(self.state.load().served().and_then(|s| s.version)),
            None => CallVersion::Direct,
        }
    }

    /// The slow path: the group is not usable now, or `failure` is the
    /// connection failure that the last attempt met.
    async fn run_slowly<T, F, Fut>(
        &self,
        operation: Operation,
        options: CallOptions,
        call: &F,
        mut state: Arc<SlotState<A>>,
        mut failure: Option<Error>,
    ) -> Result<T>
    where
        F: Fn(Arc<A>) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let may_repeat = !operation.is_mutating() || options.retry_mutations;
        let mut retries = None;
        let mut waits = None;
        loop {
            if let Some(error) = failure.take() {
                // Sending again what certainly was not sent is no retry.
                if !error.certainly_not_sent() {
                    let retries =
                        retries.get_or_insert_with(|| self.behaviour.retry.backoff().build());
                    match (may_repeat, retries.next()) {
                        (true, Some(delay)) => tokio::time::sleep(delay).await,
                        // The outcome is unknown: report this connection's
                        // failure, never what a later look finds.
                        _ => return Err(error),
                    }
                }
                // The connection is gone: find the proxy's endpoint again.
                // A failed look is handled below.
                let _ = self.look(state.generation, false).await;
                state = self.state();
            }
            let Some(api) = state.usable().cloned() else {
                if let Err(error) = self.look(state.generation, true).await {
                    if !is_worth_waiting_for(&error) {
                        return Err(error);
                    }
                    let delay = waits.get_or_insert_with(look_schedule).next();
                    tokio::time::sleep(delay.unwrap_or(MAX_LOOK_INTERVAL)).await;
                }
                state = self.state();
                continue;
            };
            match call(api).await {
                Err(error) if is_connection_failure(&error) => failure = Some(error),
                other => return other,
            }
        }
    }
}

/// The connection to the proxy failed or broke. `Unknown` (a host failure)
/// and every other answer of the proxy are not connection failures.
fn is_connection_failure(error: &Error) -> bool {
    matches!(error, Error::Transport { .. })
}

/// Whether a look that failed so is worth waiting for: nothing is there
/// (yet, or any more). An endpoint that exists but fails (access denied, a
/// handshake that times out) already had its retries under the
/// [`RetryPolicy`] in that look; its error is every waiting caller's answer.
pub(crate) fn is_worth_waiting_for(error: &Error) -> bool {
    matches!(error, Error::NotServed { .. })
}

/// What the facade needs of a slot, whatever its group's trait.
#[async_trait::async_trait]
pub(crate) trait AnySlot: Send + Sync {
    /// The version in use, if calls can go to it now.
    fn version(&self) -> Option<ApiVersion>;
    /// Whether calls can go to the group now.
    fn is_served(&self) -> bool;
    /// The group's health now, without waiting.
    fn health(&self) -> super::health::GroupHealth;
    /// Looks for the group's endpoints again now.
    async fn look_again(&self) -> Result<()>;
}

#[async_trait::async_trait]
impl<A: ?Sized + FromConnection + Send + Sync + 'static> AnySlot for GroupSlot<A> {
    fn version(&self) -> Option<ApiVersion> {
        self.state.load().open().and_then(|s| s.version)
    }

    fn is_served(&self) -> bool {
        self.state.load().usable().is_some()
    }

    fn health(&self) -> super::health::GroupHealth {
        use super::health::{GroupHealth, GroupStatus};
        let state = self.state.load();
        let status = match &state.presence {
            Presence::Served(served) if served.is_open() => GroupStatus::Served {
                version: served.version,
                since: state.since,
            },
            // Ended, but nobody looked since.
            Presence::Served(_) => GroupStatus::NotServed {
                since: None,
                last_error: None,
            },
            Presence::Absent(error) => GroupStatus::NotServed {
                since: Some(state.since),
                last_error: Some(error.clone()),
            },
        };
        GroupHealth {
            group: self.group,
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
}
