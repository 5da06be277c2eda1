//! Version negotiation: per group, the newest acceptable version the node
//! serves.

mod group;
mod policy;
mod report;
mod waiting;

use std::time::Duration;

use tokio::task::JoinSet;
use tracing::Instrument;

/// How settled a version is ([`ApiVersion::stability`]), for
/// [`VersionPolicy`]'s preview rule.
pub use crate::version::Stability;
pub use policy::VersionPolicy;
pub use report::{Attempt, AttemptOutcome, GroupReport, NegotiationReport};
pub(crate) use waiting::negotiate_settled;

use group::{negotiate_group, record};

use crate::error::{Error, Result};
use crate::group::ApiGroup;
use crate::retry::RetryPolicy;
use crate::transport::{ConnectOptions, ProxyChannel, Transport};
use crate::version::ApiVersion;

/// A connected group-version: the channel that negotiation opened, ready
/// for the generated clients in [`crate::wire`]. Cheap to clone; clones share
/// the connection, which does not reconnect by itself (see
/// [`ProxyChannel`]).
#[derive(Clone, Debug)]
pub struct Connection {
    group: ApiGroup,
    version: ApiVersion,
    address: String,
    channel: ProxyChannel,
    /// Whether a version the policy prefers to this one was tried and its
    /// endpoint was absent: evidence of an older proxy release, which some
    /// answers depend on (see `adapter::volume`).
    newer_absent: bool,
}

impl Connection {
    /// Whether a version of the group newer than this one (one the policy
    /// prefers) was tried and not served: the node's proxy release is older
    /// than the one that brought it (unless the proxy was still starting).
    pub(crate) fn newer_versions_absent(&self) -> bool {
        self.newer_absent
    }

    /// The group.
    pub fn group(&self) -> ApiGroup {
        self.group
    }

    /// The negotiated wire version.
    pub fn version(&self) -> ApiVersion {
        self.version
    }

    /// The pipe or socket it is connected to.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The gRPC channel, for the generated clients in [`crate::wire`]. It
    /// does not reconnect: once [`ProxyChannel::is_closed`] is true, negotiate
    /// again.
    pub fn channel(&self) -> ProxyChannel {
        self.channel.clone()
    }
}

/// Finds and connects the best version of each group.
///
/// For each group it tries the candidate versions of its
/// [`VersionPolicy`] in order and keeps the first endpoint that opens and
/// whose server the transport's
/// [`ServerTrust`](crate::transport::ServerTrust) admits; the probing
/// connection is the one used afterwards. A missing endpoint means "not
/// served, try the next version". A busy pipe is waited for, within the
/// connect timeout. An endpoint whose owner is not trusted, or that exists
/// but fails (after its retries) before its owner is known, is passed over
/// for the older versions: if one of them is served by a trusted owner, it
/// is chosen and the failed endpoint is reported as
/// [`AttemptOutcome::Suspect`] (a squatter can keep a newer version's pipe
/// busy or closed to the client); if none is, the first failure is the
/// group's error. A trusted server that fails (its handshake) ends the
/// group's negotiation with that error instead of silently falling back.
/// All groups negotiate concurrently.
///
/// ```
/// use csi_proxy_client::{negotiate::Negotiator, transport::Transport, ApiGroup};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), csi_proxy_client::Error> {
/// let transport = Transport::named_pipes();
/// # // A fake node instead, so that the example runs as a test.
/// # use csi_proxy_client::testing::{FakeHost, FakeProxy, LocalEndpoints, ProxyRelease};
/// # let endpoints = LocalEndpoints::new()?;
/// # let transport = endpoints.transport();
/// # let mut fake = FakeProxy::for_host(transport.clone(), &FakeHost::builder().build());
/// # fake.serve_release(ProxyRelease::V0_2_2).await?;
/// let negotiated = Negotiator::new(transport)
///     .negotiate(&ApiGroup::ALL)
///     .await?;
/// println!("{}", negotiated.report());
/// let disk = negotiated.connection(ApiGroup::Disk)?;
/// println!("disk speaks {}", disk.version());
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Negotiator {
    transport: Transport,
    policy: VersionPolicy,
    options: ConnectOptions,
    /// Whether a group found missing or failing is only logged at debug
    /// level and not counted: for looks in the background, which repeat
    /// while the proxy is away.
    quiet: bool,
}

impl Negotiator {
    /// Negotiates over `transport` with the default policy, a 5 s connect
    /// timeout and [`RetryPolicy::default`].
    pub fn new(transport: Transport) -> Self {
        Self {
            transport,
            policy: VersionPolicy::default(),
            options: ConnectOptions::default(),
            quiet: false,
        }
    }

    /// A negotiator for looks in the background: one attempt per endpoint,
    /// bounded by `connect_timeout`, and failures logged at debug level
    /// only and not counted in the metrics.
    pub(crate) fn for_background(&self, connect_timeout: Duration) -> Self {
        let mut quiet = self.clone();
        quiet.options.retry = RetryPolicy::none();
        quiet.options.connect_timeout = quiet.options.connect_timeout.min(connect_timeout);
        quiet.quiet = true;
        quiet
    }

    /// Which versions may be chosen, and in what order.
    pub fn policy(mut self, policy: VersionPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Retries of connection attempts that fail for a reason that may pass.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.options.retry = retry;
        self
    }

    /// Bounds one connection attempt: opening the endpoint (including
    /// waiting for a busy pipe) and the HTTP/2 handshake. An attempt that
    /// times out is made again under the retry policy only at a group's
    /// last candidate version: while older versions remain to be tried,
    /// negotiation goes on to them.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.options.connect_timeout = timeout;
        self
    }

    /// The largest answer a call on the negotiated connections accepts, in
    /// bytes (default 4 MiB, gRPC's convention).
    pub fn max_response_size(mut self, bytes: usize) -> Self {
        self.options.max_response_size = bytes;
        self
    }

    /// The transport negotiated over.
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// The same settings over another transport.
    pub(crate) fn with_transport(mut self, transport: Transport) -> Self {
        self.transport = transport;
        self
    }

    /// The retries of connection attempts, which also govern calls after a
    /// connection failed.
    pub(crate) fn retry_policy(&self) -> RetryPolicy {
        self.options.retry
    }

    /// Negotiates every group in `groups` concurrently.
    ///
    /// Fails only if the policy is invalid for one of them, or the
    /// transport cannot work on this platform ([`Error::Configuration`]),
    /// before anything is connected; a group that cannot be connected is
    /// recorded in the result, see [`Negotiated::connection`].
    pub async fn negotiate(&self, groups: &[ApiGroup]) -> Result<Negotiated> {
        self.transport.check_usable()?;
        let mut plans = Vec::with_capacity(groups.len());
        for &group in groups {
            plans.push((group, self.policy.candidates(group)?));
        }
        Ok(self.negotiate_plans(plans).await)
    }

    /// Negotiates `groups`, then waits for the proxy: while a group of
    /// `required` is not served (with `required` empty, while none of
    /// `groups` is), negotiates the groups still missing again, on the
    /// schedule every look for the proxy follows (20 ms doubling to 250
    /// ms), until `wait` has passed. A group whose endpoint exists but
    /// failed is not waited for: a required one ends the wait at once.
    ///
    /// Returns what the looks found, as [`negotiate`](Self::negotiate)
    /// does: the caller reads each group's outcome from it. Logs at info
    /// level every 10 s what it still waits for.
    pub async fn negotiate_waiting(
        &self,
        groups: &[ApiGroup],
        required: &[ApiGroup],
        wait: Duration,
    ) -> Result<Negotiated> {
        waiting::negotiate_waiting(self, groups, required, wait).await
    }

    /// The versions of `group` that the policy prefers to `version`, best
    /// first: what a group that settled on `version` could still move to.
    pub(crate) fn newer_than(&self, group: ApiGroup, version: ApiVersion) -> Vec<ApiVersion> {
        let candidates = self.policy.candidates(group).unwrap_or_default();
        let rank = candidates.iter().position(|&v| v == version);
        candidates[..rank.unwrap_or(0)].to_vec()
    }

    /// Looks for a version of `group` newer than `version` (one the policy
    /// prefers): what that found, whether it connected to one or not (the
    /// caller tells every newer endpoint absent from one that failed);
    /// `None` when the policy prefers nothing to `version`.
    pub(crate) async fn negotiate_newer(
        &self,
        group: ApiGroup,
        version: ApiVersion,
    ) -> Option<Negotiated> {
        let newer = self.newer_than(group, version);
        if newer.is_empty() {
            return None;
        }
        Some(self.negotiate_plans(vec![(group, newer)]).await)
    }

    /// Negotiates each group of `plans` over its candidates, concurrently.
    async fn negotiate_plans(&self, plans: Vec<(ApiGroup, Vec<ApiVersion>)>) -> Negotiated {
        let mut tasks = JoinSet::new();
        for (group, candidates) in plans {
            let transport = self.transport.clone();
            let (options, quiet) = (self.options, self.quiet);
            let span = tracing::info_span!(
                "negotiate",
                group = %group,
                tried = tracing::field::Empty,
                chosen = tracing::field::Empty,
                elapsed_ms = tracing::field::Empty,
            );
            tasks.spawn(
                async move {
                    let (report, outcome) =
                        negotiate_group(&transport, &options, group, &candidates).await;
                    record(&report, &outcome, quiet);
                    (report, outcome)
                }
                .instrument(span),
            );
        }

        let mut negotiated = Negotiated::default();
        while let Some(joined) = tasks.join_next().await {
            let (report, outcome) = match joined {
                Ok(done) => done,
                // A panic inside the task would be a bug of ours: surface it.
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                // Cancelled: the runtime is shutting down, and this
                // negotiation with it.
                Err(_) => continue,
            };
            negotiated.outcomes[report.group.index()] = Some(outcome);
            negotiated.report.groups.push(report);
        }
        negotiated.report.groups.sort_by_key(|r| r.group);
        negotiated
    }
}

/// The result of [`Negotiator::negotiate`]: a connection or an error per
/// group, and a report of what was tried.
#[derive(Debug, Default)]
pub struct Negotiated {
    report: NegotiationReport,
    outcomes: [Option<Result<Connection>>; 6],
}

impl Negotiated {
    /// What was tried and chosen, per group.
    pub fn report(&self) -> &NegotiationReport {
        &self.report
    }

    /// The connection of `group`, or why there is none:
    /// [`Error::NotServed`] when no candidate endpoint exists, another error
    /// when one exists but failed. A group that was not negotiated at all is
    /// an [`Error::InvalidArgument`].
    pub fn connection(&self, group: ApiGroup) -> Result<Connection> {
        match &self.outcomes[group.index()] {
            Some(outcome) => outcome.clone(),
            None => Err(Error::invalid_argument(
                "group",
                format!("{group} was not among the negotiated groups"),
            )),
        }
    }

    /// Takes the groups of a later negotiation in place of what this one
    /// found for them.
    pub(crate) fn merge(&mut self, later: Negotiated) {
        for (i, outcome) in later.outcomes.into_iter().enumerate() {
            if outcome.is_some() {
                self.outcomes[i] = outcome;
            }
        }
        for report in later.report.groups {
            self.report.put(report);
        }
    }
}

#[cfg(test)]
mod tests;
