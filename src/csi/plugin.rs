//! [`NodePlugin`]: a whole node plugin from a [`NodeDriver`], in the order
//! a node needs: take the socket's folder, hold the state folder, bind the
//! endpoint, connect the SDK, build the mounter, reconcile, serve until
//! asked to stop.

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use crate::mount::{Mounter, MounterBuilder};
use crate::transport::{ServerTrust, Transport};
use crate::{Backend, CsiProxy, CsiProxyBuilder};

use super::driver::NodeDriver;
use super::serve::{serve, stop_signal, Listener, ServeError, Services};
use super::service::NodeService;

/// The flags [`NodePlugin::args`] reads.
pub const USAGE: &str = "\
usage: PLUGIN [--endpoint unix://PATH | tcp://ADDRESS:PORT] [options]

  --endpoint E           where to serve CSI (default: $CSI_ENDPOINT): unix:// (kubelet's,
                         Linux or Windows) or tcp:// (tests)
  --node-id ID           this node's ID (default: $NODE_NAME, else the host's name)
  --state-dir DIR        the mounter's journal (default:
                         C:\\var\\lib\\kubelet\\plugins\\<driver>\\mounter)
  --host                 no CSI Proxy: the host's work in-process (HostProcess containers,
                         feature host-process)
  --socket-dir DIR       CSI Proxy's endpoints as Unix sockets in DIR (a fake proxy)
  --pipe-prefix PREFIX   CSI Proxy's pipes under another prefix (a fake proxy on Windows)
  --trust-current-user   trust a proxy run by this user (a fake proxy)
  --controller           also serve the test controller, for csi-sanity (feature testing)";

/// A driver's whole node plugin: what its `main` runs.
///
/// [`run`](Self::run) takes the socket's folder and the state folder
/// (owner-only, one instance at a time), binds the CSI endpoint (before the proxy, so that one it
/// cannot serve stops it at once), connects to CSI Proxy
/// without waiting for it (calls wait within their deadlines, and `Probe`
/// says whether it is there), builds the [`Mounter`] on its journal's
/// folder, finishes what a crash or a reboot left half done
/// ([`Mounter::reconcile`], asking [`NodeDriver::is_live`]), and serves
/// the Identity and Node services ([`NodeService`]) until SIGTERM, Ctrl-C
/// or Ctrl-Break ([`stop_signal`]), answering the calls under way before
/// it returns.
///
/// ```no_run
/// use csi_proxy_client::csi::{NodeDriver, NodePlugin, Volume, VolumeKind, VolumeRequest};
/// use csi_proxy_client::mount::DiskSelector;
/// use csi_proxy_client::Status;
///
/// struct LunDriver;
///
/// impl NodeDriver for LunDriver {
///     fn name(&self) -> &str {
///         "lun.csi.example.com"
///     }
///     fn version(&self) -> &str {
///         env!("CARGO_PKG_VERSION")
///     }
///     fn kinds(&self) -> &[VolumeKind] {
///         &[VolumeKind::Disk]
///     }
///     fn volume(&self, request: &VolumeRequest<'_>) -> Result<Volume, Status> {
///         let lun = request.publish_context.get("lun");
///         let lun = lun.ok_or_else(|| Status::invalid_argument("no LUN in the publish context"))?;
///         Ok(Volume::Disk(DiskSelector::lun(lun)))
///     }
/// }
///
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     // serve --endpoint unix://C:\csi\csi.sock --node-id $(NODE_NAME) ...
///     NodePlugin::new(LunDriver).args(std::env::args().skip(1))?.run().await?;
///     Ok(())
/// }
/// ```
#[must_use]
pub struct NodePlugin<D> {
    driver: D,
    endpoint: Option<String>,
    node_id: Option<String>,
    state_dir: Option<PathBuf>,
    proxy: CsiProxyBuilder,
    mounter: Option<Box<dyn FnOnce(MounterBuilder) -> MounterBuilder + Send>>,
    test_controller: bool,
    #[cfg(feature = "testing")]
    test_volume_ids: Option<super::controller::VolumeIds>,
    stop: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl<D: NodeDriver> NodePlugin<D> {
    /// The plugin of `driver`, with every default: the endpoint of
    /// `$CSI_ENDPOINT`, the node ID of `$NODE_NAME` (else the host's
    /// name), the journal in `C:\var\lib\kubelet\plugins\<driver>\mounter`,
    /// CSI Proxy on its named pipes.
    pub fn new(driver: D) -> Self {
        Self {
            driver,
            endpoint: None,
            node_id: None,
            state_dir: None,
            proxy: CsiProxy::builder().wait_for_proxy(Duration::ZERO),
            mounter: None,
            test_controller: false,
            #[cfg(feature = "testing")]
            test_volume_ids: None,
            stop: None,
        }
    }

    /// Serves CSI on `endpoint`: `unix://PATH` or `tcp://ADDRESS:PORT`
    /// ([`Listener::bind`]).
    pub fn endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = Some(endpoint.into());
        self
    }

    /// The node's ID, given to [`NodeDriver::node_info`].
    pub fn node_id(mut self, node_id: impl Into<String>) -> Self {
        self.node_id = Some(node_id.into());
        self
    }

    /// The folder of the mounter's journal (and of the node service's
    /// records): a host folder that outlives the plugin's restarts and
    /// the node's reboots.
    pub fn state_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.state_dir = Some(dir.into());
        self
    }

    /// Configures the SDK's client: `configure` gets the builder as it
    /// is (by default `CsiProxy::builder().wait_for_proxy(Duration::ZERO)`,
    /// with what [`args`](Self::args) set) and returns it changed.
    pub fn proxy(mut self, configure: impl FnOnce(CsiProxyBuilder) -> CsiProxyBuilder) -> Self {
        self.proxy = configure(self.proxy);
        self
    }

    /// Configures the mounter (its waits, its SMB mapping rule, ...):
    /// `configure` gets its builder when the plugin starts.
    pub fn mounter(
        mut self,
        configure: impl FnOnce(MounterBuilder) -> MounterBuilder + Send + 'static,
    ) -> Self {
        self.mounter = Some(Box::new(configure));
        self
    }

    /// Also serves the [`TestController`](super::TestController) on the
    /// endpoint, so that csi-sanity can run a volume's whole life: for
    /// tests only.
    #[cfg(feature = "testing")]
    #[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
    pub fn test_controller(mut self) -> Self {
        self.test_controller = true;
        self
    }

    /// Has the test controller (with `--controller`, or
    /// [`test_controller`](Self::test_controller)) name its volumes as the
    /// driver's own controller would: `ids` gives the ID, volume context
    /// and publish context of each disk it claims and each share folder
    /// it makes ([`TestController::with_volume_ids`](super::TestController::with_volume_ids)).
    /// csi-sanity's volumes then reach the node through the driver's
    /// [`NodeDriver::volume`], as a cluster's do.
    ///
    /// ```
    /// use csi_proxy_client::csi::{ControllerVolume, NodeDriver, NodePlugin, TestVolume};
    ///
    /// fn with_my_ids<D: NodeDriver>(plugin: NodePlugin<D>) -> NodePlugin<D> {
    ///     plugin.test_volume_ids(|made| match made {
    ///         // As the cloud's attach reports a disk: where it is, its LUN
    ///         // in the publish context.
    ///         TestVolume::Disk { adapter, target, lun, .. } => {
    ///             ControllerVolume::new(format!("disk-{adapter}-{target}-{lun}"))
    ///                 .with_publish_context("lun", lun.clone())
    ///         }
    ///         TestVolume::Share(folder) => ControllerVolume::new(format!("smb:{folder}")),
    ///         _ => ControllerVolume::new("unknown"),
    ///     })
    /// }
    /// ```
    #[cfg(feature = "testing")]
    #[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
    pub fn test_volume_ids(
        mut self,
        ids: impl Fn(&super::TestVolume) -> super::ControllerVolume + Send + Sync + 'static,
    ) -> Self {
        self.test_volume_ids = Some(std::sync::Arc::new(ids));
        self
    }

    /// Stops serving when `stop` completes, in place of [`stop_signal`].
    pub fn stop_on(mut self, stop: impl Future<Output = ()> + Send + 'static) -> Self {
        self.stop = Some(Box::pin(stop));
        self
    }

    /// Reads the command line's flags ([`USAGE`]; without the program's
    /// name): `--endpoint`, `--node-id`, `--state-dir`, `--host`, and for
    /// tests `--socket-dir`, `--pipe-prefix`, `--trust-current-user` and
    /// `--controller`. `--flag=value` works too.
    ///
    /// # Errors
    ///
    /// [`ServeError::Help`] for `--help`; [`ServeError::Usage`] for a flag
    /// it does not know, or one that cannot work here.
    pub fn args(mut self, args: impl IntoIterator<Item = String>) -> Result<Self, ServeError> {
        let usage = |why: String| ServeError::Usage(format!("{why}\n{USAGE}"));
        let mut flags = Flags::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((flag, value)) if flag.starts_with("--") => (flag.to_owned(), Some(value)),
                _ => (arg.clone(), None),
            };
            let mut value = || match inline {
                Some(value) => Ok(value.to_owned()),
                None => args
                    .next()
                    .ok_or_else(|| usage(format!("{flag} needs a value"))),
            };
            match flag.as_str() {
                "--help" | "-h" => return Err(ServeError::Help(USAGE.to_owned())),
                "--endpoint" => self.endpoint = Some(value()?),
                "--node-id" => self.node_id = Some(value()?),
                "--state-dir" => self.state_dir = Some(value()?.into()),
                "--host" => self.proxy = self.proxy.backend(Backend::Host),
                "--socket-dir" => flags.socket_dir = Some(value()?.into()),
                "--pipe-prefix" => flags.pipe_prefix = Some(value()?),
                "--trust-current-user" => flags.trust_current_user = true,
                "--controller" if cfg!(feature = "testing") => self.test_controller = true,
                "--controller" => {
                    return Err(usage(
                        "--controller: the test controller needs the feature \
                         csi-proxy-client/testing"
                            .into(),
                    ))
                }
                other => return Err(usage(format!("unknown option {other}"))),
            }
        }
        if let Some(transport) = flags.transport().map_err(usage)? {
            self.proxy = self.proxy.transport(transport);
        }
        Ok(self)
    }

    /// Runs the plugin until it is asked to stop (see the type's docs).
    ///
    /// # Errors
    ///
    /// [`ServeError::Usage`] without an endpoint; [`ServeError::Endpoint`]
    /// when it cannot be served; [`ServeError::Client`] when the client or
    /// the mounter cannot start; [`ServeError::Serve`] when serving
    /// fails. A `reconcile` that fails is logged, and the plugin serves.
    pub async fn run(self) -> Result<(), ServeError> {
        let Some(endpoint) = self.endpoint.or_else(|| std::env::var("CSI_ENDPOINT").ok()) else {
            return Err(ServeError::Usage(format!(
                "no endpoint: --endpoint, or $CSI_ENDPOINT\n{USAGE}"
            )));
        };
        let driver = self.driver;
        let state_dir = self.state_dir.unwrap_or_else(|| {
            PathBuf::from(format!(
                r"C:\var\lib\kubelet\plugins\{}\mounter",
                driver.name()
            ))
        });
        // The socket's folder is taken first (it may hold the state folder,
        // and kubelet may have just made it, empty, with an ACL others may
        // write through); then the state folder's instance lock: a second
        // instance stops there, before it touches the socket (its own or
        // the live one's).
        Listener::take_folder(&endpoint)?;
        crate::mount::hold_state_folder(&state_dir)?;
        // Then bound: an endpoint that cannot be served stops the start
        // at once, before the proxy.
        let listener = Listener::bind(&endpoint).await?;
        super::observe::describe();
        let node_id = self.node_id.unwrap_or_else(host_name);
        let proxy = self.proxy.connect().await.map_err(in_flags)?;
        // What the node's proxy serves, per group: the first thing an
        // operator reads when a volume will not stage.
        tracing::info!("CSI Proxy at start:\n{}", proxy.report());
        let mut mounter = Mounter::builder(proxy, &state_dir);
        if let Some(configure) = self.mounter {
            mounter = configure(mounter);
        }
        let mounter = mounter.build()?;
        // The test controller's work on a share is never live.
        #[cfg(feature = "testing")]
        let is_work = super::controller::is_work_volume;
        #[cfg(not(feature = "testing"))]
        let is_work = |_: &str| false;
        match mounter
            .reconcile(|volume| driver.is_live(volume) && !is_work(volume))
            .await
        {
            Ok(report) => tracing::info!(?report, "reconciled"),
            Err(error) => tracing::warn!(%error, "reconcile failed: serving all the same"),
        }
        let node = NodeService::new(driver, mounter, &node_id, &state_dir)?;
        let services = Services::new();
        #[cfg(feature = "testing")]
        let (node, services) = match self.test_controller {
            true => with_test_controller(node, &node_id, self.test_volume_ids),
            false => (node, services),
        };
        let services = services
            .with_service(node.identity_server())
            .with_service(node.node_server());
        match self.stop {
            Some(stop) => serve(listener, services, stop).await,
            None => serve(listener, services, stop_signal()).await,
        }
    }
}

/// `node` saying that it serves a controller, and resolving the test
/// controller's volumes; the test controller, on its mounter.
#[cfg(feature = "testing")]
fn with_test_controller<D: NodeDriver>(
    node: NodeService<D>,
    node_id: &str,
    volume_ids: Option<super::controller::VolumeIds>,
) -> (NodeService<D>, Services) {
    let node = node.with_controller_service().resolving_test_volumes();
    let driver = node.driver();
    let mut controller = super::TestController::new(
        node.mounter().clone(),
        node_id,
        driver.name(),
        driver.kinds(),
    );
    if let Some(ids) = volume_ids {
        controller = controller.with_volume_ids(move |made| ids(made));
    }
    let controller = super::v1::controller_server::ControllerServer::new(controller);
    (node, Services::new().with_service(controller))
}

impl<D> fmt::Debug for NodePlugin<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodePlugin")
            .field("endpoint", &self.endpoint)
            .field("node_id", &self.node_id)
            .field("state_dir", &self.state_dir)
            .field("test_controller", &self.test_controller)
            .finish_non_exhaustive()
    }
}

/// The proxy flags, applied together.
#[derive(Default)]
struct Flags {
    socket_dir: Option<PathBuf>,
    pipe_prefix: Option<String>,
    trust_current_user: bool,
}

impl Flags {
    /// The transport the flags name, if they name one.
    fn transport(self) -> Result<Option<Transport>, String> {
        let transport = match (&self.socket_dir, &self.pipe_prefix) {
            #[cfg(unix)]
            (Some(dir), _) => Transport::unix_sockets(dir).map_err(|e| e.to_string())?,
            #[cfg(not(unix))]
            (Some(_), _) => return Err("--socket-dir needs Unix sockets; use --pipe-prefix".into()),
            (None, Some(prefix)) => {
                Transport::named_pipes_with_prefix(prefix).map_err(|e| e.to_string())?
            }
            (None, None) if self.trust_current_user => Transport::named_pipes(),
            (None, None) => return Ok(None),
        };
        let mut trust = ServerTrust::default();
        if self.trust_current_user {
            trust = trust.trust_current_user().map_err(|e| e.to_string())?;
        }
        Ok(Some(transport.trusting(trust)))
    }
}

/// `error` of the client's start in the plugin's own terms: its flags, not
/// the builder's methods, where a flag would mend it.
fn in_flags(error: crate::Error) -> ServeError {
    let flag = match &error {
        crate::Error::Configuration { setting, .. } if setting == "transport" => {
            "CSI Proxy's named pipes exist only on Windows: give --socket-dir DIR \
             (a fake proxy's Unix sockets)"
        }
        crate::Error::Configuration { setting, .. } if setting == "backend" => {
            "--host: the host backend needs a Windows build of the plugin with the feature \
             csi-proxy-client/host-process"
        }
        _ => return ServeError::Client(error),
    };
    ServeError::Usage(format!("{flag}\n{USAGE}"))
}

/// The node's name: `$NODE_NAME` (the downward API's `spec.nodeName`,
/// as the DaemonSet sets it), else the host's (inside a Windows container
/// `COMPUTERNAME` is the pod's: set `NODE_NAME`).
fn host_name() -> String {
    ["NODE_NAME", "COMPUTERNAME", "HOSTNAME"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| "node".to_owned())
}
