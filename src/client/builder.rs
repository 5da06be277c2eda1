//! Configuring a client, and connecting it: negotiate every group, give
//! the host the groups it takes, wait for the required ones, and build the
//! lookouts.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use super::backend::{host_backends, this_process_has_host_access, Backend, HostStandIn};
use super::behaviour::{Behaviour, EVENT_ROOM};
use super::groups::{Direct, Groups, MakeLookout};
use super::health::ServedBy;
use super::lookout::Lookout;
use super::options::Deadlines;
use super::CsiProxy;
use crate::adapter::FromConnection;
use crate::api::WindowsPath;
use crate::availability::{is_worth_waiting_for, WaitLimit, DEFAULT_WAIT_FOR_PROXY};
use crate::capability::Operation;
use crate::error::{Error, Result};
use crate::group::ApiGroup;
use crate::negotiate::{
    negotiate_settled, Negotiated, NegotiationReport, Negotiator, VersionPolicy,
};
use crate::retry::RetryPolicy;
use crate::transport::Transport;
use crate::working_dirs::KUBELET_DIR;

/// Configures and opens a [`CsiProxy`].
#[derive(Clone, Debug)]
pub struct CsiProxyBuilder {
    /// Transport, policy, retries, connect timeout and response size: what
    /// looking for the proxy needs, for connect and for every later look.
    negotiator: Negotiator,
    /// A transport setting that failed, reported by `connect`.
    bad_transport: Option<Error>,
    deadlines: Deadlines,
    groups: Vec<ApiGroup>,
    required: Vec<ApiGroup>,
    wait_for_proxy: Option<Duration>,
    backend: Backend,
    working_dirs: Vec<String>,
    /// Who may serve the endpoints, if set apart from the transport.
    trust: Option<crate::transport::ServerTrust>,
    /// The backends that stand for the host in tests.
    stand_in_host: Option<HostStandIn>,
}

impl Default for CsiProxyBuilder {
    fn default() -> Self {
        Self {
            negotiator: Negotiator::new(Transport::named_pipes()),
            bad_transport: None,
            deadlines: Deadlines::default(),
            groups: ApiGroup::ALL.to_vec(),
            required: Vec::new(),
            wait_for_proxy: None,
            backend: Backend::default(),
            working_dirs: vec![KUBELET_DIR.to_owned()],
            trust: None,
            stand_in_host: None,
        }
    }
}

impl CsiProxyBuilder {
    /// Where the proxy listens (default: [`Transport::named_pipes`]).
    pub fn transport(mut self, transport: Transport) -> Self {
        self.negotiator = self.negotiator.with_transport(transport);
        self.bad_transport = None;
        self
    }

    /// Who may serve the proxy's endpoints (default: SYSTEM or
    /// Administrators for pipes; root or this user for Unix sockets). An
    /// endpoint whose server is not admitted is passed over before
    /// anything is sent to it. Applies to the transport set before or
    /// after this call; see [`ServerTrust`](crate::transport::ServerTrust).
    pub fn trust(mut self, trust: crate::transport::ServerTrust) -> Self {
        self.trust = Some(trust);
        self
    }

    /// Unix domain sockets in `dir`, named like the pipes
    /// ([`Transport::unix_sockets`]); an invalid directory fails
    /// [`connect`](Self::connect). Unix only; for tests that run on
    /// Windows too, see `testing::LocalEndpoints` (feature `testing`).
    #[cfg(unix)]
    #[cfg_attr(docsrs, doc(cfg(unix)))]
    pub fn socket_dir(self, dir: impl AsRef<std::path::Path>) -> Self {
        match Transport::unix_sockets(dir) {
            Ok(transport) => self.transport(transport),
            Err(error) => Self {
                bad_transport: Some(error),
                ..self
            },
        }
    }

    /// Which versions may be negotiated.
    pub fn policy(mut self, policy: VersionPolicy) -> Self {
        self.negotiator = self.negotiator.policy(policy);
        self
    }

    /// Retries of connection attempts, and of calls after the connection
    /// failed (see [`CsiProxy`] for which calls).
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.negotiator = self.negotiator.retry(retry);
        self
    }

    /// Bounds each connection attempt (default 5 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.negotiator = self.negotiator.connect_timeout(timeout);
        self
    }

    /// The largest answer a call accepts, in bytes (default 4 MiB, gRPC's
    /// convention). A larger one fails the call with
    /// [`Error::InvalidResponse`]: raise it for nodes with very many disks
    /// or volumes.
    pub fn max_response_size(mut self, bytes: usize) -> Self {
        self.negotiator = self.negotiator.max_response_size(bytes);
        self
    }

    /// The deadline of calls that only read (default 30 s).
    pub fn read_deadline(mut self, deadline: Duration) -> Self {
        self.deadlines.read = deadline;
        self
    }

    /// The deadline of calls that change the host (default 2 min, what
    /// kubelet allows a CSI node call), except formatting and resizing a
    /// volume (default 10 min). When it passes the call fails with
    /// [`Error::Timeout`], but the host operation may go on and finish.
    pub fn mutation_deadline(mut self, deadline: Duration) -> Self {
        self.deadlines.mutation = deadline;
        self
    }

    /// The deadline of one operation, overriding the defaults.
    pub fn deadline(mut self, operation: Operation, deadline: Duration) -> Self {
        self.deadlines.overrides.retain(|(op, _)| *op != operation);
        self.deadlines.overrides.push((operation, deadline));
        self
    }

    /// Only negotiate these groups (default: all six).
    pub fn groups(mut self, groups: impl IntoIterator<Item = ApiGroup>) -> Self {
        self.groups = groups.into_iter().collect();
        self
    }

    /// Wait in [`connect`](Self::connect) until `group` is served, and fail
    /// if it is not within [`wait_for_proxy`](Self::wait_for_proxy). Groups
    /// not required are not waited for at connect; their calls wait for
    /// them instead.
    pub fn require(mut self, group: ApiGroup) -> Self {
        if !self.groups.contains(&group) {
            self.groups.push(group);
        }
        self.required.push(group);
        self
    }

    /// How long [`connect`](Self::connect) waits for the
    /// [`require`](Self::require)d groups to be served, looking again every
    /// 250 ms at most, so that a driver started before CSI Proxy (at node
    /// boot) connects as soon as the proxy is up. Default: 30 s when a group
    /// is required. While it waits, it logs at info level which endpoints it
    /// waits for, at the start and then every 10 s. `Duration::ZERO` looks
    /// once and fails at once.
    ///
    /// With [`Backend::Automatic`], it is how long `connect` waits for a
    /// proxy that is away (none of the groups served) before the host
    /// takes every group: a node-boot allowance for a proxy that starts
    /// after the driver. Unset, `Automatic` does not wait for a proxy that
    /// is away.
    pub fn wait_for_proxy(mut self, wait: Duration) -> Self {
        self.wait_for_proxy = Some(wait);
        self
    }

    /// What serves the groups (default: [`Backend::CsiProxy`]).
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    /// Where the host backend lets the filesystem group work, as CSI
    /// Proxy's `--working-dir` flags do (default: `C:\var\lib\kubelet`).
    /// Ignored by CSI Proxy, which has its own.
    pub fn working_dirs(mut self, dirs: impl IntoIterator<Item = WindowsPath>) -> Self {
        self.working_dirs = dirs.into_iter().map(|d| d.as_str().to_owned()).collect();
        self
    }

    /// Backends that stand for the host backend, as if this process had
    /// host access (in a HostProcess container, elevated), on any
    /// platform: [`Backend::Host`] serves the configured groups from them,
    /// and [`Backend::Automatic`] takes from them the groups the proxy
    /// does not serve, so that a driver's tests see what `Automatic`
    /// chooses (`report()` and `health()` say `host` for those groups).
    /// A group they lack is not served by the host.
    #[cfg(feature = "testing")]
    #[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
    pub fn stand_in_host(mut self, backends: super::Backends) -> Self {
        self.stand_in_host = Some(HostStandIn(backends));
        self
    }

    /// Negotiates every group concurrently, waits for the required ones
    /// (see [`wait_for_proxy`](Self::wait_for_proxy)) and builds the
    /// handles.
    ///
    /// Fails with [`Error::NotServed`] (every endpoint tried) when a
    /// required group is still not served when the wait is over, at once
    /// with the group's error when its endpoint exists but cannot be used
    /// (for example [`Error::PermissionDenied`]), and with
    /// [`Error::InvalidArgument`] for an invalid setting, before anything
    /// is connected.
    pub async fn connect(self) -> Result<CsiProxy> {
        #[cfg(feature = "metrics")]
        crate::metrics::describe();
        if let Some(error) = self.bad_transport {
            return Err(error);
        }
        let host = match (self.backend, &self.stand_in_host) {
            (Backend::CsiProxy, _) => None,
            (Backend::Host, _) => return self.connect_to_host(),
            (Backend::Automatic, Some(stand_in)) => Some(stand_in.0.clone()),
            (Backend::Automatic, None) => {
                host_backends(&self.working_dirs).filter(|_| this_process_has_host_access())
            }
        };
        let automatic = host.is_some();
        let host = host.unwrap_or_default();
        let behaviour = self.behaviour();
        let negotiator = match self.trust {
            Some(trust) => {
                let transport = self.negotiator.transport().clone().trusting(trust);
                self.negotiator.with_transport(transport)
            }
            None => self.negotiator,
        };
        // Required groups the host serves are not waited for.
        let wait_for: Vec<ApiGroup> = (self.required.iter())
            .filter(|&&g| !host.has(g))
            .copied()
            .collect();
        // Automatic gives the host only what a settled proxy lacks.
        let negotiated = if automatic {
            let start_wait = self.wait_for_proxy.unwrap_or(Duration::ZERO);
            negotiate_settled(&negotiator, &self.groups, start_wait).await?
        } else {
            negotiator.negotiate(&self.groups).await?
        };
        // The host takes the groups the proxy does not serve.
        let host = host.keep(|group| {
            self.groups.contains(&group)
                && matches!(negotiated.connection(group), Err(e) if is_worth_waiting_for(&e))
        });
        let host_groups = host.groups();
        let from_negotiation = FromNegotiation {
            groups: &self.groups,
            negotiated: &negotiated,
            negotiator: &negotiator,
            behaviour: &behaviour,
        };
        let groups = Groups::new(&from_negotiation, host, behaviour.clone());
        // The required groups' lookouts wait for them, together (a group
        // whose endpoint failed is the answer at once); dropped on failure,
        // the client's background tasks end with them.
        let limit = WaitLimit::announced(self.wait_for_proxy.unwrap_or(DEFAULT_WAIT_FOR_PROXY));
        let waits = wait_for.iter().filter_map(|&g| groups.any(g));
        all_served(waits.map(|lookout| lookout.wait_for_required(limit))).await?;
        let mut report = negotiated.report().clone();
        // What the waits' looks found, in place of the first look's.
        let waited = wait_for.iter().filter_map(|&g| groups.any(g)?.report());
        waited.for_each(|group| report.put(group));
        report.served_by_host(&host_groups);
        Ok(CsiProxy::new(groups, report))
    }

    /// What the client's groups share: deadlines, the retry policy, and
    /// room for [`EVENT_ROOM`] version changes not yet received.
    fn behaviour(&self) -> Arc<Behaviour> {
        let retry = self.negotiator.retry_policy();
        Arc::new(Behaviour::new(self.deadlines.clone(), retry, EVENT_ROOM))
    }

    /// [`Backend::Host`]: the configured groups the host serves, and no
    /// proxy; a required group it does not serve is [`Error::NotServed`].
    fn connect_to_host(self) -> Result<CsiProxy> {
        let stand_in = self.stand_in_host.clone().map(|s| s.0);
        let host = stand_in.or_else(|| host_backends(&self.working_dirs));
        let host = host.ok_or_else(|| Error::Configuration {
            setting: "backend".to_owned(),
            reason: "Backend::Host needs the crate feature host-process, on Windows".to_owned(),
        })?;
        let host = host.keep(|group| self.groups.contains(&group));
        if let Some(&group) = self.required.iter().find(|&&g| !host.has(g)) {
            return Err(Error::NotServed {
                group,
                tried: Vec::new(),
            });
        }
        let mut report = NegotiationReport::default();
        report.served_by_host(&host.groups());
        let behaviour = self.behaviour();
        let direct = Direct(&behaviour, ServedBy::Host);
        let groups = Groups::new(&direct, host, behaviour.clone());
        Ok(CsiProxy::new(groups, report))
    }
}

/// Runs `waits` together until all are done. A group whose endpoint
/// failed is the answer at once (the other waits are dropped); else the
/// first group still not served, in the order given, once every wait is
/// over.
async fn all_served<F>(waits: impl IntoIterator<Item = F>) -> Result<()>
where
    F: Future<Output = Result<()>> + Unpin,
{
    let mut waits: Vec<Option<F>> = waits.into_iter().map(Some).collect();
    let mut missing: Vec<Option<Error>> = waits.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (slot, missing) in waits.iter_mut().zip(&mut missing) {
            let Some(wait) = slot else { continue };
            match Pin::new(wait).poll(cx) {
                Poll::Ready(Err(error)) if !is_worth_waiting_for(&error) => {
                    return Poll::Ready(Err(error))
                }
                Poll::Ready(done) => {
                    *missing = done.err();
                    *slot = None;
                }
                Poll::Pending => pending = true,
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(Ok(()))
        }
    })
    .await?;
    missing.into_iter().flatten().next().map_or(Ok(()), Err)
}

/// Lookouts of the configured groups, from what `connect` negotiated.
struct FromNegotiation<'a> {
    groups: &'a [ApiGroup],
    negotiated: &'a Negotiated,
    negotiator: &'a Negotiator,
    behaviour: &'a Arc<Behaviour>,
}

impl MakeLookout for FromNegotiation<'_> {
    fn lookout<A: ?Sized + FromConnection + Send + Sync + 'static>(
        &self,
        group: ApiGroup,
        host: Option<Arc<A>>,
    ) -> Option<Arc<Lookout<A>>> {
        if let Some(api) = host {
            let behaviour = self.behaviour.clone();
            return Some(Lookout::direct(group, api, ServedBy::Host, behaviour));
        }
        self.groups.contains(&group).then(|| {
            Lookout::negotiated(
                group,
                self.negotiated,
                self.negotiator.clone(),
                self.behaviour.clone(),
            )
        })
    }
}
