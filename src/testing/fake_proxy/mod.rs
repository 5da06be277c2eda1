//! A fake CSI Proxy: serves any set of group-versions over a real
//! transport, translating each wire version back to the group traits.

mod codec;
mod disk;
mod fields;
mod filesystem;
mod iscsi;
mod routing;
mod server;
mod smb;
mod system;
mod timeline;
mod volume;

use std::sync::{Arc, Mutex};

use super::endpoints::{serve_each, Endpoints, ServeOne};
use super::startup::Startup;
use super::{FakeHost, ProxyRelease};
use crate::capability::Operation;
use crate::client::Backends;
use crate::error::{Error, Result};
use crate::group::ApiGroup;
use crate::registry::Layout;
use crate::transport::Transport;
use crate::version::ApiVersion;
use routing::{routes_for, Endpoint};
pub use timeline::Span;
use timeline::Timeline;

/// The release a fake proxy stands for, shared with its servers: what
/// they encode may depend on it.
#[derive(Clone, Debug, Default)]
pub(super) struct ReleaseCell(Arc<Mutex<Option<ProxyRelease>>>);

impl ReleaseCell {
    fn set(&self, release: ProxyRelease) {
        if let Ok(mut cell) = self.0.lock() {
            *cell = Some(release);
        }
    }

    /// The release, if one was given.
    pub(super) fn get(&self) -> Option<ProxyRelease> {
        self.0.lock().ok().and_then(|cell| *cell)
    }
}

/// One call a [`FakeProxy`] received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// The group of the endpoint.
    pub group: ApiGroup,
    /// The version of the endpoint.
    pub version: ApiVersion,
    /// The RPC name from the request path.
    pub rpc: String,
    /// The operation, if the version has that RPC.
    pub operation: Option<Operation>,
}

/// A fake CSI Proxy that serves any chosen set of group-versions, each on
/// its own endpoint of a [`Transport`] (Unix sockets, or named pipes on
/// Windows), backed by a [`FakeHost`] or by any implementation of the group
/// traits.
///
/// The server side mirrors the client: one server adapter per message
/// layout decodes each wire version's requests, calls the backend, and
/// encodes that version's answers, so a harness that injects its own mock
/// still exercises the real wire path and negotiation. Like CSI Proxy v1.x,
/// it answers failures with gRPC statuses (code `Unknown` for host
/// failures), ignores the old `PathContext`, never fills the legacy `error`
/// field, and refuses paths that are not normalized. Methods a version lacks
/// answer `Unimplemented`.
///
/// Every call is recorded ([`FakeProxy::calls`]). The served set can change
/// at any time: [`FakeProxy::upgrade_to`] is an upgrade (or a downgrade)
/// to a release, its versions and its rules; [`FakeProxy::restart`] a
/// restart with any set of versions, the rules kept. Dropping the proxy
/// stops its servers; [`FakeProxy::shutdown`] also waits until the
/// endpoints are gone.
///
/// A proxy that was told its release ([`FakeProxy::serve_release`],
/// [`FakeProxy::behave_as`]) answers as that release did where answers
/// changed within a version: before v1.0.0, `VolumeStats` (volume v1beta1
/// and v1beta2) puts the bytes *remaining* in `volume_size`, not the total.
/// Made with [`FakeProxy::for_host`], it also makes its host follow that
/// release's rules ([`FakeHost::behave_as`]).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> csi_proxy_client::Result<()> {
/// use csi_proxy_client::testing::{FakeHost, FakeProxy, LocalEndpoints};
/// use csi_proxy_client::{ApiGroup, ApiVersion, CsiProxy};
///
/// let endpoints = LocalEndpoints::new()?; // sockets on Unix, pipes on Windows
/// let transport = endpoints.transport();
/// let host = FakeHost::builder().disk(1, "pd-1", 10 << 30).build();
/// let mut fake = FakeProxy::new(transport.clone(), host.backends());
/// fake.serve(ApiGroup::Disk, ApiVersion::V1BETA2).await?;
///
/// let proxy = CsiProxy::builder().transport(transport).connect().await?;
/// assert_eq!(proxy.disk()?.get_disk_number_by_name("pd-1").await?, 1);
/// assert_eq!(fake.calls()[0].rpc, "ListDiskIDs"); // emulated on v1beta2
/// # Ok(()) }
/// ```
pub struct FakeProxy {
    endpoints: Endpoints,
    backends: Backends,
    /// The host behind every group, when made with `for_host`.
    host: Option<FakeHost>,
    release: ReleaseCell,
    calls: Arc<Mutex<Vec<Call>>>,
    timeline: Arc<Timeline>,
    startup: Startup,
}

impl std::fmt::Debug for FakeProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeProxy")
            .field("transport", self.endpoints.transport())
            .field("served", &self.served())
            .field("release", &self.release())
            .finish_non_exhaustive()
    }
}

impl FakeProxy {
    /// A fake proxy on `transport` backed by `backends`, serving nothing yet.
    pub fn new(transport: Transport, backends: Backends) -> Self {
        Self {
            endpoints: Endpoints::new(transport),
            backends,
            host: None,
            release: ReleaseCell::default(),
            calls: Arc::default(),
            timeline: Arc::default(),
            startup: Startup::default(),
        }
    }

    /// How it creates its endpoints from now on, whenever it serves several
    /// at once ([`serve_all`](Self::serve_all), [`restart`](Self::restart)
    /// and the like): in which order, and how far apart. A real proxy
    /// creates its pipes one after the other; a staged start lets a test
    /// look in between.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> csi_proxy_client::Result<()> {
    /// use std::time::Duration;
    /// use csi_proxy_client::testing::{
    ///     FakeHost, FakeProxy, LocalEndpoints, ProxyRelease, StartOrder, Startup,
    /// };
    ///
    /// let endpoints = LocalEndpoints::new()?;
    /// let mut fake = FakeProxy::for_host(endpoints.transport(), &FakeHost::default());
    /// fake.set_startup(Startup::staged(StartOrder::OldestFirst, Duration::from_millis(5)));
    /// fake.serve_release(ProxyRelease::V1_1_0).await?; // v1alpha1 first, v1 last
    /// # Ok(()) }
    /// ```
    pub fn set_startup(&mut self, startup: Startup) -> &mut Self {
        self.startup = startup;
        self
    }

    /// A fake proxy backed by `host` for every group. It keeps a clone of
    /// `host` (clones share the host), so that
    /// [`serve_release`](Self::serve_release) and
    /// [`behave_as`](Self::behave_as) make the host follow the release too.
    pub fn for_host(transport: Transport, host: &FakeHost) -> Self {
        let mut proxy = Self::new(transport, host.backends());
        proxy.host = Some(host.clone());
        proxy
    }

    /// From now on, answers as CSI Proxy `release` did where answers
    /// changed within a version (see the type's documentation), without
    /// changing what is served; with a host from
    /// [`for_host`](Self::for_host), also calls
    /// [`FakeHost::behave_as`]. For a proxy started with
    /// [`serve`](Self::serve) or [`serve_all`](Self::serve_all).
    pub fn behave_as(&mut self, release: ProxyRelease) -> &mut Self {
        self.release.set(release);
        if let Some(host) = &self.host {
            host.behave_as(release);
        }
        self
    }

    /// The release it stands for, if it was told one
    /// ([`serve_release`](Self::serve_release),
    /// [`behave_as`](Self::behave_as)). Without one, it answers as the
    /// newest release does.
    pub fn release(&self) -> Option<ProxyRelease> {
        self.release.get()
    }

    /// The transport it serves on.
    pub fn transport(&self) -> &Transport {
        self.endpoints.transport()
    }

    /// Starts serving `group` `version`. Fails if the group has no backend,
    /// the group never had that version, or its endpoint is taken.
    pub async fn serve(&mut self, group: ApiGroup, version: ApiVersion) -> Result<()> {
        let (backends, calls, release) = (&self.backends, &self.calls, &self.release);
        let timeline = &self.timeline;
        let make_routes = || {
            let endpoint = Endpoint {
                group,
                version,
                calls: calls.clone(),
                timeline: timeline.clone(),
            };
            routes_for(endpoint, Layout::of(group, version), backends, release).ok_or_else(|| {
                Error::invalid_argument("group", format!("no backend for the {group} group"))
            })
        };
        self.endpoints.serve(group, version, make_routes).await
    }

    /// Serves every group-version in `versions`, as its
    /// [startup](Self::set_startup) says.
    pub async fn serve_all(
        &mut self,
        versions: impl IntoIterator<Item = (ApiGroup, ApiVersion)>,
    ) -> Result<()> {
        let startup = self.startup;
        serve_each(self, versions, startup).await
    }

    /// Serves what CSI Proxy `release` serves, and answers as it did
    /// ([`behave_as`](Self::behave_as)): a node on that release. With a
    /// host from [`for_host`](Self::for_host), the host follows that
    /// release's rules too.
    pub async fn serve_release(&mut self, release: ProxyRelease) -> Result<()> {
        self.behave_as(release);
        self.serve_all(release.served()).await
    }

    /// Serves all 23 group-versions, as CSI Proxy v1.1 and later do.
    pub async fn serve_everything(&mut self) -> Result<()> {
        let all: Vec<_> = ApiGroup::ALL
            .iter()
            .flat_map(|&g| g.versions().iter().map(move |&v| (g, v)))
            .collect();
        self.serve_all(all).await
    }

    /// Stops serving `group` `version`; its connections break.
    pub async fn stop(&mut self, group: ApiGroup, version: ApiVersion) {
        self.endpoints.stop(group, version).await;
    }

    /// Stops every endpoint: the proxy is down (a crash, or a restart in
    /// progress) until something is served again.
    pub async fn stop_all(&mut self) {
        self.endpoints.stop_all().await;
    }

    /// Stops everything, then serves `versions`: a proxy restart. Only the
    /// served versions change: the proxy, and its host, keep answering as
    /// the release they were told ([`behave_as`](Self::behave_as)). For an
    /// upgrade or a downgrade to a release, its versions and its rules
    /// together, call [`upgrade_to`](Self::upgrade_to).
    pub async fn restart(
        &mut self,
        versions: impl IntoIterator<Item = (ApiGroup, ApiVersion)>,
    ) -> Result<()> {
        self.endpoints.stop_all().await;
        self.serve_all(versions).await
    }

    /// An upgrade (or a downgrade) of the node's CSI Proxy to `release`:
    /// stops everything, then serves what `release` serves
    /// ([`ProxyRelease::served`]) and answers as it did, with a host from
    /// [`for_host`](Self::for_host) following its rules too. What
    /// [`serve_release`](Self::serve_release) does on a proxy that already
    /// serves: [`restart`](Self::restart) with `release.served()` and
    /// [`behave_as`](Self::behave_as)`(release)` in one call, the new rules
    /// in force from the first call on the new endpoints. What the host
    /// holds stays (mappings already made keep their keys).
    ///
    /// Clients ride through it as through a restart: a call waits for the
    /// new endpoints within its deadline and uses the newest version the
    /// new release serves.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> csi_proxy_client::Result<()> {
    /// use csi_proxy_client::testing::{FakeHost, FakeProxy, LocalEndpoints, ProxyRelease};
    /// use csi_proxy_client::CsiProxy;
    ///
    /// let endpoints = LocalEndpoints::new()?;
    /// let host = FakeHost::builder().disk(1, "pd-1", 10 << 30).build();
    /// let mut fake = FakeProxy::for_host(endpoints.transport(), &host);
    /// fake.serve_release(ProxyRelease::V0_2_2).await?;
    /// let proxy = CsiProxy::builder().transport(endpoints.transport()).connect().await?;
    ///
    /// // The node's CSI Proxy is upgraded to v1.3.0: its versions, its rules.
    /// fake.upgrade_to(ProxyRelease::V1_3_0).await?;
    /// assert_eq!(fake.served().len(), ProxyRelease::V1_3_0.served().len());
    /// assert_eq!(fake.release(), Some(ProxyRelease::V1_3_0));
    /// assert_eq!(host.release(), ProxyRelease::V1_3_0);
    ///
    /// // The client rides through the upgrade.
    /// assert_eq!(proxy.disk()?.get_disk_number_by_name("pd-1").await?, 1);
    /// # Ok(()) }
    /// ```
    pub async fn upgrade_to(&mut self, release: ProxyRelease) -> Result<()> {
        self.endpoints.stop_all().await;
        self.behave_as(release);
        self.serve_all(release.served()).await
    }

    /// The group-versions being served.
    pub fn served(&self) -> Vec<(ApiGroup, ApiVersion)> {
        self.endpoints.served()
    }

    /// Every call received so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// Forgets the calls received so far, and their
    /// [spans](Self::spans).
    pub fn clear_calls(&self) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.clear();
        }
        self.timeline.clear();
    }

    /// Stops every endpoint and waits until they are gone (socket files
    /// removed).
    pub async fn shutdown(mut self) {
        self.endpoints.stop_all().await;
    }
}

impl ServeOne for FakeProxy {
    async fn serve_one(&mut self, group: ApiGroup, version: ApiVersion) -> Result<()> {
        self.serve(group, version).await
    }
}
