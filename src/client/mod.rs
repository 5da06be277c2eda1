//! The facade: connect once, get a handle per group.

mod backend;
mod behaviour;
mod builder;
mod groups;
mod handle_traits;
mod handles;
mod health;
mod lookout;
mod options;

use std::sync::Arc;

use tokio::sync::broadcast;

pub use backend::Backend;
pub use builder::CsiProxyBuilder;
pub use groups::Backends;
pub use health::{GroupHealth, GroupStatus, Health, ServedBy};
pub use options::{CallOptions, VersionChange};

use crate::adapter::FromConnection;
use crate::api::{DiskApi, FilesystemApi, IscsiApi, SmbApi, SystemApi, VolumeApi};
use crate::error::{Error, Result};
use crate::group::ApiGroup;
use crate::negotiate::NegotiationReport;
use crate::retry::RetryPolicy;
use crate::version::ApiVersion;
use behaviour::Behaviour;
use groups::{Direct, Groups};
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
///   attempts fails with the last failure rather than [`Error::Timeout`],
///   and one that waited for a proxy that stayed away with
///   [`Error::NotServed`] (the proxy was not there; `Timeout` is for a
///   request that was out). A request the proxy refused unprocessed is
///   sent once more.
/// - A version adopted while the proxy may still be creating its pipes
///   is settled a second later: the group looks for a newer version and
///   moves to it, and looks again on a slow pace while a newer version's
///   pipe exists but does not answer. A call its version lacks waits for
///   that look; answers that depend on the proxy's release are read only
///   from a settled look.
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
/// use csi_proxy_client::{api::WindowsPath, ApiGroup, CsiProxy};
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
/// # assert_eq!(disks.len(), 3, "the OS disk, the data disk, the temporary disk");
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
    /// default [`VersionPolicy`](crate::negotiate::VersionPolicy), all six groups, none required.
    pub fn builder() -> CsiProxyBuilder {
        CsiProxyBuilder::default()
    }

    /// A `CsiProxy` whose groups are the given implementations instead of
    /// connections, so that code written against `CsiProxy` can be unit
    /// tested with mocks. Groups left out report [`Error::NotServed`].
    /// Deadlines apply as for a real connection.
    pub fn from_backends(backends: Backends) -> Self {
        Self::served_directly(backends, ServedBy::Given)
    }

    /// A `CsiProxy` whose groups are `backends`, said to be served by
    /// `served_by`, with the default deadlines and retries.
    pub(crate) fn served_directly(backends: Backends, served_by: ServedBy) -> Self {
        let behaviour = Arc::new(Behaviour::new(
            Deadlines::default(),
            RetryPolicy::default(),
            behaviour::EVENT_ROOM,
        ));
        let direct = Direct(&behaviour, served_by);
        let groups = Groups::new(&direct, backends, behaviour.clone());
        Self::new(groups, NegotiationReport::default())
    }

    /// A client of `groups`, whose first look found `report`.
    fn new(groups: Groups, report: NegotiationReport) -> Self {
        Self {
            groups: Arc::new(groups),
            report: Arc::new(report),
            options: CallOptions::default(),
        }
    }

    /// The disk group. Every configured group has a handle, served or
    /// not (its calls wait for it); a group left out of
    /// [`CsiProxyBuilder::groups`] or [`Backends`] is
    /// [`Error::NotServed`].
    pub fn disk(&self) -> Result<Arc<dyn DiskApi>> {
        Ok(self.handle(ApiGroup::Disk, &self.groups.disk)?)
    }

    /// The filesystem group; see [`CsiProxy::disk`].
    pub fn filesystem(&self) -> Result<Arc<dyn FilesystemApi>> {
        Ok(self.handle(ApiGroup::Filesystem, &self.groups.filesystem)?)
    }

    /// The SMB group; see [`CsiProxy::disk`].
    pub fn smb(&self) -> Result<Arc<dyn SmbApi>> {
        Ok(self.handle(ApiGroup::Smb, &self.groups.smb)?)
    }

    /// The volume group; see [`CsiProxy::disk`].
    pub fn volume(&self) -> Result<Arc<dyn VolumeApi>> {
        Ok(self.handle(ApiGroup::Volume, &self.groups.volume)?)
    }

    /// The iSCSI group; see [`CsiProxy::disk`].
    pub fn iscsi(&self) -> Result<Arc<dyn IscsiApi>> {
        Ok(self.handle(ApiGroup::Iscsi, &self.groups.iscsi)?)
    }

    /// The system group; see [`CsiProxy::disk`].
    pub fn system(&self) -> Result<Arc<dyn SystemApi>> {
        Ok(self.handle(ApiGroup::System, &self.groups.system)?)
    }

    /// A handle on `lookout`, the lookout of `group`, with this client's
    /// call options; [`Error::NotServed`] for a group not configured.
    fn handle<A: ?Sized + FromConnection + Send + Sync + 'static>(
        &self,
        group: ApiGroup,
        lookout: &Option<Arc<Lookout<A>>>,
    ) -> Result<Arc<Handle<A>>> {
        let lookout = lookout.as_ref().ok_or_else(|| self.missing(group))?;
        Ok(Arc::new(Handle {
            lookout: lookout.clone(),
            options: self.options,
        }))
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
