//! The facade: connect once, get a handle per group.

mod handles;
mod options;
mod slot;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;

pub use options::{CallOptions, VersionChange};

use crate::adapter::FromConnection;
use crate::api::{DiskApi, FilesystemApi, IscsiApi, SmbApi, SystemApi, VolumeApi};
use crate::capability::Operation;
use crate::error::{Error, Result};
use crate::group::ApiGroup;
use crate::negotiate::{Negotiated, NegotiationReport, Negotiator, VersionPolicy};
use crate::retry::RetryPolicy;
use crate::transport::Transport;
use crate::version::ApiVersion;
use handles::Handle;
use options::Deadlines;
use slot::{AnySlot, Behaviour, GroupSlot};

/// A connection to CSI Proxy: one negotiated handle per API group.
///
/// Cheap to clone and to share between tasks: clones share the
/// connections. Each handle is an `Arc<dyn ...Api>` whose methods never
/// mention a wire version; the adapter behind it translates to whatever
/// version is negotiated.
///
/// # Restarts, upgrades and downgrades
///
/// When the connection to a group breaks (the proxy restarted), the next
/// call negotiates that group again and carries on with whatever version is
/// served now, so a driver rides through a proxy upgrade (v1beta2 to v1) or
/// a downgrade without noticing; [`CsiProxy::version`] tells the current
/// version and [`CsiProxy::version_changes`] reports each change (also
/// logged). A call never goes to a version that is no longer served.
///
/// # Deadlines and retries
///
/// Every call has a deadline: 30 s for reads, 2 min for calls that change
/// the host, 10 min for formatting and resizing a volume (see the
/// builder, and [`CallOptions`] per call). When it passes, the call fails
/// with [`Error::Timeout`]; the host operation may still go on and finish,
/// because CSI Proxy does not cancel host work.
///
/// Reads are retried under the [`RetryPolicy`] when the connection fails or
/// breaks. Calls that change the host (partition, format, mount, resize,
/// mkdir, rmdir, symlink, SMB map, iSCSI login, service start, disk state,
/// ...) are retried only when they certainly were not sent, unless the
/// caller opts in with [`CallOptions::retry_mutations`]. A failure the proxy
/// reports ([`Error::Host`], usually code `Unknown`) is never retried.
///
/// ```no_run
/// use csi_proxy_client::{ApiGroup, CsiProxy, WindowsPath};
///
/// # async fn run() -> Result<(), csi_proxy_client::Error> {
/// let proxy = CsiProxy::builder()
///     .require(ApiGroup::Disk)            // fail to connect without it
///     .connect()
///     .await?;
/// print!("{}", proxy.report());
///
/// let disks = proxy.disk()?.list_disk_locations().await?;
/// let staging = WindowsPath::new(r"\var\lib\kubelet\plugins\example\globalmount")?;
/// proxy.filesystem()?.mkdir(&staging).await?;
/// # let _ = disks; Ok(()) }
/// ```
#[derive(Clone)]
pub struct CsiProxy {
    groups: Arc<Groups>,
    report: Arc<NegotiationReport>,
    options: CallOptions,
}

/// The six slots; a group not negotiated at all has none.
struct Groups {
    disk: Option<Arc<GroupSlot<dyn DiskApi>>>,
    filesystem: Option<Arc<GroupSlot<dyn FilesystemApi>>>,
    smb: Option<Arc<GroupSlot<dyn SmbApi>>>,
    volume: Option<Arc<GroupSlot<dyn VolumeApi>>>,
    iscsi: Option<Arc<GroupSlot<dyn IscsiApi>>>,
    system: Option<Arc<GroupSlot<dyn SystemApi>>>,
    behaviour: Arc<Behaviour>,
}

impl Groups {
    /// The slot of `group`, whatever its trait.
    fn any(&self, group: ApiGroup) -> Option<&dyn AnySlot> {
        match group {
            ApiGroup::Disk => self.disk.as_deref().map(|s| s as &dyn AnySlot),
            ApiGroup::Filesystem => self.filesystem.as_deref().map(|s| s as &dyn AnySlot),
            ApiGroup::Smb => self.smb.as_deref().map(|s| s as &dyn AnySlot),
            ApiGroup::Volume => self.volume.as_deref().map(|s| s as &dyn AnySlot),
            ApiGroup::Iscsi => self.iscsi.as_deref().map(|s| s as &dyn AnySlot),
            ApiGroup::System => self.system.as_deref().map(|s| s as &dyn AnySlot),
        }
    }
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

/// Hands out one group's handle, or why there is none.
macro_rules! handle {
    ($(#[$doc:meta])* $name:ident, $group:ident, $trait:ident) => {
        $(#[$doc])*
        pub fn $name(&self) -> Result<Arc<dyn $trait>> {
            let slot = self.groups.$name.as_ref().ok_or_else(|| self.missing(ApiGroup::$group))?;
            if slot.current().is_none() {
                return Err(self.missing(ApiGroup::$group));
            }
            Ok(Arc::new(Handle { slot: slot.clone(), options: self.options }))
        }
    };
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
        let behaviour = Arc::new(Behaviour {
            deadlines: Deadlines::default(),
            retry: RetryPolicy::default(),
            events: broadcast::channel(16).0,
        });
        fn slot<A: ?Sized + FromConnection + Send + Sync + 'static>(
            group: ApiGroup,
            api: Option<Arc<A>>,
            behaviour: &Arc<Behaviour>,
        ) -> Option<Arc<GroupSlot<A>>> {
            api.map(|api| {
                Arc::new(GroupSlot::new(
                    group,
                    Some((api, None)),
                    None,
                    behaviour.clone(),
                ))
            })
        }
        let groups = Groups {
            disk: slot(ApiGroup::Disk, backends.disk, &behaviour),
            filesystem: slot(ApiGroup::Filesystem, backends.filesystem, &behaviour),
            smb: slot(ApiGroup::Smb, backends.smb, &behaviour),
            volume: slot(ApiGroup::Volume, backends.volume, &behaviour),
            iscsi: slot(ApiGroup::Iscsi, backends.iscsi, &behaviour),
            system: slot(ApiGroup::System, backends.system, &behaviour),
            behaviour,
        };
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

    /// The wire version serving `group` now, if it is served over the wire.
    pub fn version(&self, group: ApiGroup) -> Option<ApiVersion> {
        self.groups.any(group).and_then(|slot| slot.version())
    }

    /// Whether `group` has a handle now.
    pub fn is_served(&self, group: ApiGroup) -> bool {
        self.groups
            .any(group)
            .is_some_and(|slot| slot.generation().is_some())
    }

    /// Changes of the negotiated versions from now on: each time a group is
    /// negotiated again after its connection broke and the proxy serves
    /// another version.
    pub fn version_changes(&self) -> broadcast::Receiver<VersionChange> {
        self.groups.behaviour.events.subscribe()
    }

    /// Negotiates every group again now (normally this happens by itself
    /// when a connection breaks), for instance to pick up a group the proxy
    /// did not serve before. Groups still not served stay without a handle;
    /// any other failure is returned (the first), after trying all groups.
    pub async fn renegotiate(&self) -> Result<()> {
        let mut first_error = None;
        for group in ApiGroup::ALL {
            let Some(slot) = self.groups.any(group) else {
                continue;
            };
            match slot.renegotiate(slot.generation()).await {
                Ok(()) | Err(Error::NotServed { .. }) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Why `group` has no handle: what the first negotiation found.
    fn missing(&self, group: ApiGroup) -> Error {
        let tried = self
            .report
            .group(group)
            .map(|r| r.attempts.iter().map(|a| a.address.clone()).collect())
            .unwrap_or_default();
        Error::NotServed { group, tried }
    }

    handle!(
        /// The disk group, or why it is not available.
        disk, Disk, DiskApi
    );
    handle!(
        /// The filesystem group, or why it is not available.
        filesystem, Filesystem, FilesystemApi
    );
    handle!(
        /// The SMB group, or why it is not available.
        smb, Smb, SmbApi
    );
    handle!(
        /// The volume group, or why it is not available.
        volume, Volume, VolumeApi
    );
    handle!(
        /// The iSCSI group, or why it is not available.
        iscsi, Iscsi, IscsiApi
    );
    handle!(
        /// The system group, or why it is not available.
        system, System, SystemApi
    );
}

/// Implementations to stand in for the groups, for
/// [`CsiProxy::from_backends`].
#[derive(Clone, Default)]
pub struct Backends {
    /// The disk group.
    pub disk: Option<Arc<dyn DiskApi>>,
    /// The filesystem group.
    pub filesystem: Option<Arc<dyn FilesystemApi>>,
    /// The SMB group.
    pub smb: Option<Arc<dyn SmbApi>>,
    /// The volume group.
    pub volume: Option<Arc<dyn VolumeApi>>,
    /// The iSCSI group.
    pub iscsi: Option<Arc<dyn IscsiApi>>,
    /// The system group.
    pub system: Option<Arc<dyn SystemApi>>,
}

/// Configures and opens a [`CsiProxy`].
#[derive(Clone, Debug)]
pub struct CsiProxyBuilder {
    transport: Result<Transport>,
    policy: VersionPolicy,
    retry: RetryPolicy,
    connect_timeout: Duration,
    deadlines: Deadlines,
    groups: Vec<ApiGroup>,
    required: Vec<ApiGroup>,
}

impl Default for CsiProxyBuilder {
    fn default() -> Self {
        Self {
            transport: Ok(Transport::named_pipes()),
            policy: VersionPolicy::default(),
            retry: RetryPolicy::default(),
            connect_timeout: Duration::from_secs(5),
            deadlines: Deadlines::default(),
            groups: ApiGroup::ALL.to_vec(),
            required: Vec::new(),
        }
    }
}

impl CsiProxyBuilder {
    /// Where the proxy listens (default: [`Transport::named_pipes`]).
    pub fn transport(mut self, transport: Transport) -> Self {
        self.transport = Ok(transport);
        self
    }

    /// Unix domain sockets in `dir`, named like the pipes
    /// ([`Transport::unix_sockets`]); an invalid directory fails
    /// [`connect`](Self::connect).
    #[cfg(unix)]
    pub fn socket_dir(mut self, dir: impl AsRef<std::path::Path>) -> Self {
        self.transport = Transport::unix_sockets(dir);
        self
    }

    /// Which versions may be negotiated.
    pub fn policy(mut self, policy: VersionPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Retries of connection attempts, and of calls after the connection
    /// failed (see [`CsiProxy`] for which calls).
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Bounds each connection attempt (default 5 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
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

    /// Fail [`connect`](Self::connect) unless `group` is served. Groups not
    /// required may be missing: their handles return the reason.
    pub fn require(mut self, group: ApiGroup) -> Self {
        if !self.groups.contains(&group) {
            self.groups.push(group);
        }
        self.required.push(group);
        self
    }

    /// Negotiates every group concurrently and builds the handles.
    pub async fn connect(self) -> Result<CsiProxy> {
        let negotiator = Negotiator::new(self.transport?)
            .policy(self.policy)
            .retry(self.retry)
            .connect_timeout(self.connect_timeout)
            .reconnect(false);
        let negotiated = negotiator.negotiate(&self.groups).await?;
        for &group in &self.required {
            negotiated.connection(group)?;
        }
        let behaviour = Arc::new(Behaviour {
            deadlines: self.deadlines,
            retry: self.retry,
            events: broadcast::channel(64).0,
        });
        let negotiated_groups = &self.groups;
        let slot = |group: ApiGroup| {
            negotiated_groups.contains(&group).then_some(SlotFactory {
                group,
                negotiated: &negotiated,
                negotiator: &negotiator,
                behaviour: &behaviour,
            })
        };
        let groups = Groups {
            disk: slot(ApiGroup::Disk).map(SlotFactory::build),
            filesystem: slot(ApiGroup::Filesystem).map(SlotFactory::build),
            smb: slot(ApiGroup::Smb).map(SlotFactory::build),
            volume: slot(ApiGroup::Volume).map(SlotFactory::build),
            iscsi: slot(ApiGroup::Iscsi).map(SlotFactory::build),
            system: slot(ApiGroup::System).map(SlotFactory::build),
            behaviour: behaviour.clone(),
        };
        Ok(CsiProxy {
            groups: Arc::new(groups),
            report: Arc::new(negotiated.report().clone()),
            options: CallOptions::default(),
        })
    }
}

/// Builds the slot of one negotiated group.
struct SlotFactory<'a> {
    group: ApiGroup,
    negotiated: &'a Negotiated,
    negotiator: &'a Negotiator,
    behaviour: &'a Arc<Behaviour>,
}

impl SlotFactory<'_> {
    fn build<A: ?Sized + FromConnection + Send + Sync + 'static>(self) -> Arc<GroupSlot<A>> {
        let attached = self
            .negotiated
            .connection(self.group)
            .ok()
            .map(|c| (A::from_connection(&c), Some(c.version())));
        let negotiator = self.negotiator.clone();
        Arc::new(GroupSlot::new(
            self.group,
            attached,
            Some(negotiator),
            self.behaviour.clone(),
        ))
    }
}
