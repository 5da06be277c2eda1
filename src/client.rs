//! The facade: connect once, get a handle per group.

use std::sync::Arc;
use std::time::Duration;

use crate::adapter::{self, Deadlines, GroupApi};
use crate::api::{DiskApi, FilesystemApi, IscsiApi, SmbApi, SystemApi, VolumeApi};
use crate::error::{Error, Result};
use crate::group::ApiGroup;
use crate::negotiate::{NegotiationReport, Negotiator, VersionPolicy};
use crate::retry::RetryPolicy;
use crate::transport::Transport;
use crate::version::ApiVersion;

/// A connection to CSI Proxy: one negotiated handle per API group.
///
/// Cheap to clone and to share between tasks: clones share the
/// connections. Each handle is an `Arc<dyn ...Api>` whose methods never
/// mention a wire version; the adapter behind it translates to whatever
/// version was negotiated.
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
    inner: Arc<Inner>,
}

struct Inner {
    report: NegotiationReport,
    /// Per group, indexed by [`ApiGroup::index`]: the handle and its version,
    /// or why there is none.
    groups: [Result<(GroupApi, Option<ApiVersion>)>; 6],
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

/// Selects one group's handle out of [`GroupApi`].
macro_rules! handle {
    ($(#[$doc:meta])* $name:ident, $group:ident, $trait:ident) => {
        $(#[$doc])*
        pub fn $name(&self) -> Result<Arc<dyn $trait>> {
            match self.group(ApiGroup::$group)? {
                GroupApi::$group(api) => Ok(api.clone()),
                _ => unreachable!("group table holds the {} handle at its index", ApiGroup::$group),
            }
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
    pub fn from_backends(backends: Backends) -> Self {
        let not_served = |group| {
            Err(Error::NotServed {
                group,
                tried: Vec::new(),
            })
        };
        let mut groups: [Result<(GroupApi, Option<ApiVersion>)>; 6] = ApiGroup::ALL.map(not_served);
        let given = [
            backends.disk.map(GroupApi::Disk),
            backends.filesystem.map(GroupApi::Filesystem),
            backends.smb.map(GroupApi::Smb),
            backends.volume.map(GroupApi::Volume),
            backends.iscsi.map(GroupApi::Iscsi),
            backends.system.map(GroupApi::System),
        ];
        for (slot, api) in groups.iter_mut().zip(given) {
            if let Some(api) = api {
                *slot = Ok((api, None));
            }
        }
        Self {
            inner: Arc::new(Inner {
                report: NegotiationReport::default(),
                groups,
            }),
        }
    }

    /// What negotiation tried and chose, per group.
    pub fn report(&self) -> &NegotiationReport {
        &self.inner.report
    }

    /// The wire version serving `group`, if it is served over the wire.
    pub fn version(&self, group: ApiGroup) -> Option<ApiVersion> {
        self.inner.groups[group.index()]
            .as_ref()
            .ok()
            .and_then(|(_, v)| *v)
    }

    /// Whether `group` has a handle.
    pub fn is_served(&self, group: ApiGroup) -> bool {
        self.inner.groups[group.index()].is_ok()
    }

    fn group(&self, group: ApiGroup) -> Result<&GroupApi> {
        match &self.inner.groups[group.index()] {
            Ok((api, _)) => Ok(api),
            Err(e) => Err(e.clone()),
        }
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

    /// Retries of connection attempts.
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
    /// kubelet allows a CSI node call). When it passes the call fails with
    /// [`Error::Timeout`], but the host operation may go on and finish.
    pub fn mutation_deadline(mut self, deadline: Duration) -> Self {
        self.deadlines.mutation = deadline;
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
            .connect_timeout(self.connect_timeout);
        let negotiated = negotiator.negotiate(&self.groups).await?;
        for &group in &self.required {
            negotiated.connection(group)?;
        }
        let groups = ApiGroup::ALL.map(|group| {
            let connection = negotiated.connection(group)?;
            Ok((
                adapter::for_connection(&connection, self.deadlines),
                Some(connection.version()),
            ))
        });
        Ok(CsiProxy {
            inner: Arc::new(Inner {
                report: negotiated.report().clone(),
                groups,
            }),
        })
    }
}
