//! The facade: connect once, get a handle per group.

mod backend;
mod behaviour;
mod call;
mod handles;
mod health;
mod lookout;
mod options;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio::sync::broadcast;

pub use backend::Backend;
pub use health::{GroupHealth, GroupStatus, Health, ServedBy};
pub use options::{CallOptions, VersionChange};

use crate::adapter::FromConnection;
use crate::api::{DiskApi, FilesystemApi, IscsiApi, SmbApi, SystemApi, VolumeApi, WindowsPath};
use crate::capability::Operation;
use crate::error::{Error, Result};
use crate::group::ApiGroup;
use crate::negotiate::{
    is_worth_waiting_for, Negotiated, NegotiationReport, Negotiator, VersionPolicy, WaitLimit,
};
use crate::retry::RetryPolicy;
use crate::transport::Transport;
use crate::version::ApiVersion;
use crate::working_dirs::KUBELET_DIR;
use backend::{host_backends, this_process_has_host_access};
use behaviour::Behaviour;
use handles::Handle;
use lookout::{AnyLookout, Lookout};
use options::Deadlines;

/// A connection to CSI Proxy: one negotiated handle per API group.
///
/// Cheap to clone and to share between tasks: clones share the
/// connections. Each handle is an `Arc<dyn ...Api>` whose methods never
/// mention a wire version; the adapter behind it translates to whatever
/// version is negotiated.
///
/// # When the proxy comes and goes
///
/// CSI Proxy may start after the driver, restart, or come back from an
/// upgrade with other versions. The SDK hides that wherever it is safe:
/// - [`CsiProxyBuilder::connect`] waits for the groups the driver
///   [`require`](CsiProxyBuilder::require)s (30 s by default, see
///   [`CsiProxyBuilder::wait_for_proxy`]); other groups are not waited for.
/// - Handles are handed out for every configured group, served or not. A
///   call on a group that is not served (yet, or any more) looks for its
///   endpoints again, every 250 ms at most, and waits for them within the
///   call's deadline while the proxy as a whole is away; no driver has to
///   call [`CsiProxy::renegotiate`]. While the proxy serves other groups, a
///   group it lacks is [`Error::NotServed`] after one look (and a grace of
///   one second after the proxy changed, for pipes still being created).
///   Concurrent callers share one look and its result.
/// - Every look and attempt after a call's first waits on that schedule,
///   whatever the endpoint does; a call whose deadline passes after failed
///   attempts fails with the last failure rather than [`Error::Timeout`].
///   A request the proxy refused unprocessed is sent once more.
/// - When a connection ends under a call, reads, and calls that certainly
///   were not sent, go again on whatever version is served once the proxy is
///   back. A call that changes the host and may have reached the proxy fails
///   with [`Error::Transport`] (`maybe_sent: true`: the outcome is unknown)
///   and is never repeated by the SDK.
/// - [`CsiProxy::version`], [`CsiProxy::is_served`] and
///   [`CsiProxy::health`] tell the present state;
///   [`CsiProxy::version_changes`] reports each change, including a group
///   that disappears (`to: None`, as soon as its connection ends) and comes
///   back.
///
/// # Deadlines and retries
///
/// Every call has a deadline: 30 s for reads, 2 min for calls that change
/// the host, 10 min for formatting and resizing a volume (see the
/// builder, and [`CallOptions`] per call). When it passes, the call fails
/// with [`Error::Timeout`]; the host operation may still go on and finish,
/// because CSI Proxy does not cancel host work.
///
/// A read whose request may have reached the proxy before the connection
/// broke is sent again under the [`RetryPolicy`] (3 times by default).
/// Calls that change the host (partition, format, mount, resize, mkdir,
/// rmdir, symlink, SMB map, iSCSI login, service start, disk state, ...)
/// are sent again only when they certainly were not sent, unless the caller
/// opts in with [`CallOptions::retry_mutations`]. Sending again what was
/// certainly not sent spends no retry. A failure the proxy reports
/// ([`Error::Host`], usually code `Unknown`) is never retried.
///
/// ```
/// use csi_proxy_client::{ApiGroup, CsiProxy, WindowsPath};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), csi_proxy_client::Error> {
/// # // A fake node, so that the example runs as a test.
/// # use csi_proxy_client::testing::{FakeHost, FakeProxy, LocalEndpoints, ProxyRelease};
/// # let endpoints = LocalEndpoints::new()?;
/// # let host = FakeHost::builder().disk(1, "Google  pvc-1", 10 << 30).build();
/// # let mut fake = FakeProxy::for_host(endpoints.transport(), &host);
/// # fake.serve_release(ProxyRelease::LATEST).await?;
/// let proxy = CsiProxy::builder()
/// #   .transport(endpoints.transport())
///     .require(ApiGroup::Disk)            // fail to connect without it
///     .connect()
///     .await?;
/// print!("{}", proxy.report());
///
/// let disks = proxy.disk()?.list_disk_locations().await?;
/// let staging = WindowsPath::new(r"\var\lib\kubelet\plugins\example\globalmount")?;
/// proxy.filesystem()?.mkdir(&staging).await?;
/// # assert_eq!(disks.len(), 1);
/// # assert!(host.entry(staging.as_str()).is_some());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct CsiProxy {
    groups: Arc<Groups>,
    report: Arc<NegotiationReport>,
    options: CallOptions,
}

impl std::fmt::Debug for CsiProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let versions: Vec<_> = ApiGroup::ALL
            .iter()
            .map(|&g| (g, self.version(g)))
            .collect();
        f.debug_struct("CsiProxy")
            .field("versions", &versions)
            .finish()
    }
}

impl CsiProxy {
    /// Starts configuring a connection. By default: Windows named pipes, the
    /// default [`VersionPolicy`], all six groups, none required.
    pub fn builder() -> CsiProxyBuilder {
        CsiProxyBuilder::default()
    }

    /// A `CsiProxy` whose groups are the given implementations instead of
    /// connections, so that code written against `CsiProxy` can be unit
    /// tested with mocks. Groups left out report [`Error::NotServed`].
    /// Deadlines apply as for a real connection.
    pub fn from_backends(backends: Backends) -> Self {
        let behaviour = Arc::new(Behaviour::new(
            Deadlines::default(),
            RetryPolicy::default(),
            16,
        ));
        let direct = Direct(&behaviour, ServedBy::Given);
        let groups = Groups::new(&direct, backends, behaviour.clone());
        Self {
            groups: Arc::new(groups),
            report: Arc::default(),
            options: CallOptions::default(),
        }
    }

    /// The same connections, with `options` for every call made through
    /// the handles of the returned `CsiProxy` (cheap: nothing is copied).
    pub fn with_call_options(&self, options: CallOptions) -> Self {
        Self {
            options,
            ..self.clone()
        }
    }

    /// What the first negotiation tried and chose, per group.
    pub fn report(&self) -> &NegotiationReport {
        &self.report
    }

    /// The wire version serving `group` now: `None` while it is not served
    /// (not found at the last look, or its connection has ended), and for a
    /// backend given directly.
    pub fn version(&self, group: ApiGroup) -> Option<ApiVersion> {
        self.groups.any(group).and_then(|lookout| lookout.version())
    }

    /// Whether calls on `group` go to the proxy now, without waiting.
    pub fn is_served(&self, group: ApiGroup) -> bool {
        self.groups
            .any(group)
            .is_some_and(|lookout| lookout.is_served())
    }

    /// Per configured group: the version served and since when, or not
    /// served since when and what the last look found. It answers at once:
    /// it neither waits nor sends anything.
    ///
    /// This is what a node plugin answers CSI `Probe` with (`ready` when the
    /// groups it needs are served: [`Health::is_ready`]) and logs at
    /// startup; its `Display` is one line per group. A group whose
    /// connection ended (a proxy restart) shows as not served until the
    /// client, which looks for it in the background, finds it again.
    pub fn health(&self) -> Health {
        let groups = ApiGroup::ALL
            .iter()
            .filter_map(|&g| self.groups.any(g).map(AnyLookout::health))
            .collect();
        Health { groups }
    }

    /// Changes of the negotiated versions from now on: a group whose proxy
    /// came back with another version, or that stopped being served
    /// (`to: None`), or that is served again (`from: None`).
    pub fn version_changes(&self) -> broadcast::Receiver<VersionChange> {
        self.groups.behaviour.events.subscribe()
    }

    /// Looks for every group that is not served now, at once. Not needed
    /// for calls (a call on such a group looks by itself), nor after a
    /// connection ended (the client looks in the background then); useful
    /// to refresh [`CsiProxy::health`] at once. Groups still not served
    /// stay so; any other failure is returned (the first), after trying
    /// all groups.
    pub async fn renegotiate(&self) -> Result<()> {
        let mut first_error = None;
        for group in ApiGroup::ALL {
            let Some(lookout) = self.groups.any(group) else {
                continue;
            };
            match lookout.look_again().await {
                Ok(()) | Err(Error::NotServed { .. }) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Why `group` has no handle: it was not configured, so nothing was
    /// tried.
    fn missing(&self, group: ApiGroup) -> Error {
        Error::NotServed {
            group,
            tried: Vec::new(),
        }
    }
}

/// The six groups, declared once: each one's handle method (with its
/// docs), `ApiGroup` and trait. From this come the lookouts' struct, finding
/// a group's lookout, building them, the handles and [`Backends`].
macro_rules! groups {
    ($($(#[$doc:meta])* $field:ident: $group:ident, $trait:ident, $name:literal;)+) => {
        /// The lookouts of the groups; a group not configured has none.
        struct Groups {
            $($field: Option<Arc<Lookout<dyn $trait>>>,)+
            behaviour: Arc<Behaviour>,
        }

        impl Groups {
            fn new(make: &impl MakeLookout, backends: Backends, behaviour: Arc<Behaviour>) -> Self {
                Self {
                    $($field: make.lookout(ApiGroup::$group, backends.$field),)+
                    behaviour,
                }
            }

            /// The lookout of `group`, whatever its trait.
            fn any(&self, group: ApiGroup) -> Option<&dyn AnyLookout> {
                match group {
                    $(ApiGroup::$group => self.$field.as_deref().map(|l| l as &dyn AnyLookout),)+
                }
            }
        }

        impl CsiProxy {
            $(
                $(#[$doc])*
                pub fn $field(&self) -> Result<Arc<dyn $trait>> {
                    let lookout = self
                        .groups
                        .$field
                        .as_ref()
                        .ok_or_else(|| self.missing(ApiGroup::$group))?;
                    Ok(Arc::new(Handle {
                        lookout: lookout.clone(),
                        options: self.options,
                    }))
                }
            )+
        }

        /// Implementations to stand in for the groups, for
        /// [`CsiProxy::from_backends`].
        #[derive(Clone, Default)]
        pub struct Backends {
            $(
                #[doc = concat!("The ", $name, " group.")]
                pub $field: Option<Arc<dyn $trait>>,
            )+
        }

        impl Backends {
            /// Whether `group` has a backend.
            fn has(&self, group: ApiGroup) -> bool {
                match group {
                    $(ApiGroup::$group => self.$field.is_some(),)+
                }
            }

            /// The groups that have a backend, in [`ApiGroup::ALL`] order.
            fn groups(&self) -> Vec<ApiGroup> {
                ApiGroup::ALL.into_iter().filter(|&g| self.has(g)).collect()
            }

            /// Only the backends of the groups `wanted` keeps.
            fn keep(self, wanted: impl Fn(ApiGroup) -> bool) -> Self {
                Self {
                    $($field: self.$field.filter(|_| wanted(ApiGroup::$group)),)+
                }
            }
        }
    };
}

groups! {
    /// The disk group. Every configured group has a handle, served or
    /// not (its calls wait for it); a group left out of
    /// [`CsiProxyBuilder::groups`] or [`Backends`] is
    /// [`Error::NotServed`].
    disk: Disk, DiskApi, "disk";
    /// The filesystem group; see [`CsiProxy::disk`].
    filesystem: Filesystem, FilesystemApi, "filesystem";
    /// The SMB group; see [`CsiProxy::disk`].
    smb: Smb, SmbApi, "SMB";
    /// The volume group; see [`CsiProxy::disk`].
    volume: Volume, VolumeApi, "volume";
    /// The iSCSI group; see [`CsiProxy::disk`].
    iscsi: Iscsi, IscsiApi, "iSCSI";
    /// The system group; see [`CsiProxy::disk`].
    system: System, SystemApi, "system";
}

/// Makes a group's lookout, whatever its trait: from a negotiation, or
/// from a backend given directly.
trait MakeLookout {
    fn lookout<A: ?Sized + FromConnection + Send + Sync + 'static>(
        &self,
        group: ApiGroup,
        backend: Option<Arc<A>>,
    ) -> Option<Arc<Lookout<A>>>;
}

/// Lookouts of the backends given directly (mocks, or the host): always
/// served.
struct Direct<'a>(&'a Arc<Behaviour>, ServedBy);

impl MakeLookout for Direct<'_> {
    fn lookout<A: ?Sized + FromConnection + Send + Sync + 'static>(
        &self,
        group: ApiGroup,
        backend: Option<Arc<A>>,
    ) -> Option<Arc<Lookout<A>>> {
        backend.map(|api| Lookout::direct(group, api, self.1, self.0.clone()))
    }
}

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
    trust: Option<crate::ServerTrust>,
}

/// How long [`CsiProxyBuilder::connect`] waits for required groups unless
/// told otherwise.
const DEFAULT_WAIT_FOR_PROXY: Duration = Duration::from_secs(30);

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
    /// after this call; see [`ServerTrust`](crate::ServerTrust).
    pub fn trust(mut self, trust: crate::ServerTrust) -> Self {
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
        let host = match self.backend {
            Backend::CsiProxy => None,
            Backend::Host => return self.connect_to_host(),
            Backend::Automatic => {
                host_backends(&self.working_dirs).filter(|_| this_process_has_host_access())
            }
        };
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
        let negotiated = negotiator.negotiate(&self.groups).await?;
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
        Ok(CsiProxy {
            groups: Arc::new(groups),
            report: Arc::new(report),
            options: CallOptions::default(),
        })
    }

    /// What the client's groups share: deadlines, the retry policy, and
    /// room for 64 version changes not yet received.
    fn behaviour(&self) -> Arc<Behaviour> {
        let retry = self.negotiator.retry_policy();
        Arc::new(Behaviour::new(self.deadlines.clone(), retry, 64))
    }

    /// [`Backend::Host`]: the configured groups the host serves, and no
    /// proxy; a required group it does not serve is [`Error::NotServed`].
    fn connect_to_host(self) -> Result<CsiProxy> {
        let host = host_backends(&self.working_dirs).ok_or_else(|| Error::Configuration {
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
        Ok(CsiProxy {
            groups: Arc::new(groups),
            report: Arc::new(report),
            options: CallOptions::default(),
        })
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
