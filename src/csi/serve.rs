//! Serving CSI as kubelet expects: on `unix://PATH` (Linux, and Windows,
//! which has AF_UNIX sockets since Windows 10 1803 and Server 2019), or
//! `tcp://ADDRESS` for tests; a stale socket file replaced; stopped by
//! SIGTERM, Ctrl-C or Ctrl-Break with the calls under way answered.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::body::Body;
use tonic::codegen::http;
use tonic::server::NamedService;
use tonic::transport::Server;
use tower::util::BoxCloneSyncService;
use tower::{Service, ServiceExt};

use super::driver::NodeDriver;
use super::service::NodeService;
use crate::Status;

/// Why a plugin could not start, or stopped serving.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The command line is wrong: the message, then the usage.
    #[error("{0}")]
    Usage(String),
    /// `--help` was asked for: the usage.
    #[error("{0}")]
    Help(String),
    /// The endpoint cannot be served: not `unix://` or `tcp://`, or the
    /// bind failed (the text says why, and what to do).
    #[error("cannot serve CSI on {endpoint}: {reason}")]
    Endpoint {
        /// The endpoint as given.
        endpoint: String,
        /// Why.
        reason: String,
    },
    /// The client, the mounter or the node service could not start (or
    /// `reconcile` failed).
    #[error(transparent)]
    Client(#[from] crate::Error),
    /// The gRPC server failed.
    #[error("serving CSI failed: {0}")]
    Serve(#[source] tonic::transport::Error),
}

/// A bound CSI endpoint, ready to [`serve`]: bind it first, so that an
/// endpoint that cannot be served stops a plugin at once, before it
/// connects to the proxy (kubelet's connections wait in the backlog
/// until serving starts).
pub struct Listener {
    bound: Bound,
    /// What it serves, with the port the system chose for `tcp://...:0`.
    endpoint: String,
}

enum Bound {
    Tcp(tokio::net::TcpListener),
    #[cfg(unix)]
    Unix(tokio::net::UnixListener, SocketFile),
    /// tokio has no AF_UNIX on Windows: a blocking listener, bridged.
    #[cfg(windows)]
    WindowsUnix(uds_windows::UnixListener, SocketFile),
}

impl Listener {
    /// Listens on `endpoint`: `unix://PATH` (`unix:///csi/csi.sock`,
    /// `unix://C:\csi\csi.sock`), or `tcp://ADDRESS:PORT` on a loopback
    /// address (port 0: one the system chooses, see
    /// [`endpoint`](Self::endpoint)); [`bind_on_network`](Self::bind_on_network)
    /// takes any address.
    ///
    /// A Unix socket file is made owner-only (mode 0600): whoever reaches
    /// the endpoint can have the node format and remove as its
    /// administrator. It is bound in a folder of its own (0700) beside
    /// `PATH` and named with a hard link once owner-only, so that it is
    /// not reachable with the umask's mode, and a file at `PATH` is never
    /// replaced (where no folder can be made beside it, it is bound in
    /// place and made owner-only at once, with a warning). A socket an earlier run left at `PATH` is removed
    /// first (it would refuse the bind), but only once a connection to it
    /// failed: a socket another instance serves is an error, and stays.
    ///
    /// # Errors
    ///
    /// [`ServeError::Endpoint`]: another scheme, a `tcp://` address off
    /// loopback, a socket another instance serves, or the bind failed (on
    /// a Windows without AF_UNIX, such as Wine, the text says to use
    /// `tcp://` instead).
    pub async fn bind(endpoint: &str) -> Result<Self, ServeError> {
        Self::bind_with(endpoint, false).await
    }

    /// [`bind`](Self::bind), where a `tcp://` endpoint may be on any
    /// address, such as `tcp://0.0.0.0:10000`: CSI has no authentication,
    /// so whoever reaches the address can have the node format and remove
    /// as its administrator. Only for a network no one else reaches.
    ///
    /// # Errors
    ///
    /// As [`bind`](Self::bind), but for the address.
    pub async fn bind_on_network(endpoint: &str) -> Result<Self, ServeError> {
        Self::bind_with(endpoint, true).await
    }

    async fn bind_with(endpoint: &str, on_network: bool) -> Result<Self, ServeError> {
        let failed = |reason: String| ServeError::Endpoint {
            endpoint: endpoint.to_owned(),
            reason,
        };
        if let Some(address) = endpoint.strip_prefix("tcp://") {
            let listener = tokio::net::TcpListener::bind(address).await;
            let listener = listener.map_err(|error| failed(error.to_string()))?;
            let local = listener
                .local_addr()
                .map_err(|error| failed(error.to_string()))?;
            if !local.ip().is_loopback() {
                if !on_network {
                    return Err(failed(format!(
                        "{} is not a loopback address: CSI has no authentication, so \
                         anyone who reaches it could have the node format and remove as \
                         its administrator; serve on 127.0.0.1, or opt in with \
                         Listener::bind_on_network",
                        local.ip()
                    )));
                }
                tracing::warn!(endpoint = %local, "serving CSI on a network address");
            }
            return Ok(Self {
                bound: Bound::Tcp(listener),
                endpoint: format!("tcp://{local}"),
            });
        }
        let Some(path) = endpoint.strip_prefix("unix://").filter(|p| !p.is_empty()) else {
            return Err(failed(
                "an endpoint is unix://PATH or tcp://ADDRESS:PORT".into(),
            ));
        };
        let bound = bind_unix(path).await.map_err(failed)?;
        Ok(Self {
            bound,
            endpoint: endpoint.to_owned(),
        })
    }

    /// What it serves: the endpoint as given, or for `tcp://...:0` with the
    /// port the system chose.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }
}

impl fmt::Debug for Listener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listener")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

#[cfg(unix)]
async fn bind_unix(path: &str) -> Result<Bound, String> {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    // A socket a crashed run left: only a socket no one serves is
    // removed, never a file, nor a live instance's socket.
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if meta.file_type().is_socket() {
            match std::os::unix::net::UnixStream::connect(path) {
                Ok(_) => return Err(served_already(path)),
                // No one listens: an earlier run's.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {}
                Err(e) => {
                    return Err(format!(
                        "a socket is at {path}, and whether an instance serves it could \
                         not be told ({e}): it was left as it is"
                    ))
                }
            }
            std::fs::remove_file(path).map_err(|e| format!("the old socket stays: {e}"))?;
        }
    }
    let listener = match bind_privately(path) {
        Some(listener) => listener,
        // A path too long for a folder beside it (or a folder that takes
        // none): bound in place, and made owner-only at once.
        None => {
            tracing::warn!(
                path,
                "the socket could not be made in a folder of its own: bound in place, \
                 reachable with the umask's mode until it is made owner-only"
            );
            let listener = tokio::net::UnixListener::bind(path).map_err(|e| e.to_string())?;
            let owner_only = std::fs::Permissions::from_mode(0o600);
            std::fs::set_permissions(path, owner_only)
                .map_err(|e| format!("the socket could not be made owner-only: {e}"))?;
            listener
        }
    };
    Ok(Bound::Unix(listener, SocketFile::made(path)))
}

/// Binds the socket in a folder of its own beside `path` (mode 0700, so
/// that no one else can reach it while its mode is the umask's), makes it
/// owner-only, then gives it its name with a hard link, which never
/// replaces a file someone else put there. `None` when the folder or the
/// socket in it cannot be made (a path near the 107-byte limit, a folder
/// that does not allow it): the caller binds in place.
#[cfg(unix)]
fn bind_privately(path: &str) -> Option<tokio::net::UnixListener> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    use std::sync::atomic::{AtomicU32, Ordering};
    static BINDS: AtomicU32 = AtomicU32::new(0);
    let parent = std::path::Path::new(path).parent()?;
    // A name no other bind uses: the process (a container's is often 1 at
    // every start), this bind, and the time; one a crash left is passed by.
    let made = (0..4).find_map(|_| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.subsec_nanos());
        let bind = BINDS.fetch_add(1, Ordering::Relaxed);
        let name = format!(".csi-bind-{}-{bind}-{nanos:x}", std::process::id());
        let folder = parent.join(name);
        let created = std::fs::DirBuilder::new().mode(0o700).create(&folder);
        created.ok().map(|()| folder)
    });
    let folder = made?;
    let private = folder.join("s");
    let bound = (|| {
        let listener = tokio::net::UnixListener::bind(&private).ok()?;
        let owner_only = std::fs::Permissions::from_mode(0o600);
        std::fs::set_permissions(&private, owner_only).ok()?;
        Some(listener)
    })();
    let named =
        bound.and_then(|listener| std::fs::hard_link(&private, path).ok().map(|_| listener));
    let _ = std::fs::remove_file(&private);
    let _ = std::fs::remove_dir(&folder);
    named
}

#[cfg(all(test, unix))]
mod private_bind_tests {
    use std::os::unix::fs::PermissionsExt;

    #[tokio::test]
    async fn the_socket_is_made_aside_and_linked_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("csi.sock");
        let listener = super::bind_privately(path.to_str().unwrap());
        assert!(listener.is_some(), "bound aside");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let entries: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(entries.len(), 1, "no folder left: {entries:?}");
        // A file at the path is never replaced: no socket there.
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "a file").unwrap();
        assert!(super::bind_privately(path.to_str().unwrap()).is_none());
        assert_eq!(std::fs::read(&path).unwrap(), b"a file");
    }
}

/// Another instance serves the socket at `path`.
#[cfg(any(unix, windows))]
fn served_already(path: &str) -> String {
    format!(
        "another instance of the plugin serves {path} (a connection to it succeeded): \
         one instance per endpoint; it was left as it is"
    )
}

/// The socket file this listener made: removed at the end only if it is
/// still the one made (a newer instance may have replaced it).
#[derive(Debug)]
struct SocketFile {
    path: PathBuf,
    #[cfg(unix)]
    made: Option<(u64, u64)>,
}

impl SocketFile {
    fn made(path: &str) -> Self {
        let path = PathBuf::from(path);
        Self {
            #[cfg(unix)]
            made: identity(&path),
            path,
        }
    }

    /// Removes the socket file if it is still the one this listener made
    /// (the same device and inode) and no one answers on it (an inode
    /// number may be used again for a newer instance's socket).
    #[cfg(unix)]
    fn remove(self) {
        let same = self.made.is_some() && self.made == identity(&self.path);
        if same && std::os::unix::net::UnixStream::connect(&self.path).is_err() {
            let _ = std::fs::remove_file(&self.path);
            return;
        }
        tracing::info!(
            path = %self.path.display(),
            "the socket file is not this instance's any more: left as it is"
        );
    }

    /// Leaves the socket file: on Windows nothing tells this instance's
    /// socket from a newer one's made at the same path (NTFS gives a name
    /// made again soon its old creation time), and the bridge's accept
    /// thread still answers on it. The next start removes it once a
    /// connection to it fails.
    #[cfg(windows)]
    fn remove(self) {
        tracing::debug!(path = %self.path.display(), "the socket file is left for the next start");
    }
}

#[cfg(unix)]
fn identity(path: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).ok()?;
    Some((meta.dev(), meta.ino()))
}

#[cfg(windows)]
async fn bind_unix(path: &str) -> Result<Bound, String> {
    // A socket left by an earlier run would refuse the bind: removed once
    // a connection to it failed, and only if it is a socket (a reparse
    // point; a file is someone else's).
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        use std::os::windows::fs::MetadataExt;
        const FILE_ATTRIBUTE_REPARSE_POINT: u32 = 0x400;
        match uds_windows::UnixStream::connect(path) {
            Ok(_) => return Err(served_already(path)),
            // No one listens: an earlier run's (or a file).
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {}
            Err(e) => {
                return Err(format!(
                    "something is at {path}, and whether an instance serves it could \
                     not be told ({e}): it was left as it is"
                ))
            }
        }
        if meta.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT == 0 {
            return Err(format!(
                "{path} is a file, not a socket an earlier run left: it was left as it is"
            ));
        }
        std::fs::remove_file(path).map_err(|e| format!("the old socket stays: {e}"))?;
    }
    let listener = super::blocking_unix::bind(path)?;
    Ok(Bound::WindowsUnix(listener, SocketFile::made(path)))
}

#[cfg(not(any(unix, windows)))]
async fn bind_unix(_: &str) -> Result<Bound, String> {
    Err("no Unix sockets on this platform".into())
}

/// The CSI calls an endpoint runs at once; more wait for a place.
/// kubelet makes a few per volume, so a node at its volume limit stays
/// far below it; a client that floods the endpoint queues behind it.
pub const MAX_CONCURRENT_CALLS: usize = 64;
/// The HTTP/2 streams one connection may have open at once.
pub const MAX_STREAMS_PER_CONNECTION: u32 = 64;
/// How long [`serve`] waits, once asked to stop, for the calls under way
/// before it returns anyway: under a pod's default grace period of 30 s,
/// so that the plugin exits by itself. A call cut short is finished by
/// kubelet's retry, or by `reconcile` at the next start (the journal
/// records each step before it is taken).
pub const SHUTDOWN_DEADLINE: std::time::Duration = std::time::Duration::from_secs(25);

/// One gRPC service of the endpoint.
type Route = BoxCloneSyncService<http::Request<Body>, http::Response<Body>, Infallible>;

/// The gRPC services served on one endpoint: the node's Identity and
/// Node (`Services::from(node_service)`), and any other, such as a
/// Controller ([`with_service`](Self::with_service)). A call to a service that is not there is
/// `UNIMPLEMENTED`.
#[derive(Clone, Default)]
pub struct Services {
    routes: Vec<(&'static str, Route)>,
}

impl Services {
    /// No service yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// With `service` (a generated `*Server`, such as
    /// [`ControllerServer`](super::v1::controller_server::ControllerServer)),
    /// served under its name.
    pub fn with_service<S>(mut self, service: S) -> Self
    where
        S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
            + NamedService
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
    {
        self.routes
            .push((S::NAME, BoxCloneSyncService::new(service)));
        self
    }
}

impl<D: NodeDriver> From<NodeService<D>> for Services {
    fn from(node: NodeService<D>) -> Self {
        Services::new()
            .with_service(node.identity_server())
            .with_service(node.node_server())
    }
}

impl fmt::Debug for Services {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.routes.iter().map(|(name, _)| *name).collect();
        f.debug_struct("Services").field("served", &names).finish()
    }
}

/// The services as one tower service: by the path's service name, at
/// most [`MAX_CONCURRENT_CALLS`] at once.
#[derive(Clone)]
struct Router {
    routes: Arc<[(&'static str, Route)]>,
    places: Arc<tokio::sync::Semaphore>,
}

impl Service<http::Request<Body>> for Router {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = std::pin::Pin<
        Box<dyn Future<Output = Result<http::Response<Body>, Infallible>> + Send + 'static>,
    >;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let path = request.uri().path();
        let service = path
            .strip_prefix('/')
            .and_then(|rest| rest.split_once('/'))
            .map(|(service, _)| service);
        let route = self
            .routes
            .iter()
            .find(|(name, _)| Some(*name) == service)
            .map(|(_, route)| route.clone());
        match route {
            Some(route) => {
                let places = self.places.clone();
                Box::pin(async move {
                    // Never closed, so a place always comes.
                    let _place = places.acquire_owned().await;
                    route.oneshot(request).await
                })
            }
            None => {
                let status = Status::unimplemented(format!("{path} is not served here"));
                Box::pin(async move { Ok(status.into_http()) })
            }
        }
    }
}

/// Serves `services` on `listener` until `stop` completes (such as
/// [`stop_signal`]); then it takes no new call, answers the calls under
/// way, and returns once their connections are closed, or after
/// [`SHUTDOWN_DEADLINE`] at the most. A `unix://` socket file this
/// listener made is removed at the end. At most [`MAX_CONCURRENT_CALLS`]
/// calls run at once, and a connection has at most
/// [`MAX_STREAMS_PER_CONNECTION`] streams.
///
/// ```no_run
/// use csi_proxy_client::csi::{serve, stop_signal, Listener, NodeDriver, NodeService};
///
/// # async fn run<D: NodeDriver>(service: NodeService<D>) -> Result<(), Box<dyn std::error::Error>> {
/// // Bound before anything else: a wrong endpoint stops the start at once.
/// let listener = Listener::bind("unix:///csi/csi.sock").await?;
/// // ... connect the proxy, build the mounter and `service` ...
/// serve(listener, service.into(), stop_signal()).await?;
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// [`ServeError::Serve`] when tonic's server fails; a bridge for
/// `unix://` on Windows that cannot start its thread,
/// [`ServeError::Endpoint`].
pub async fn serve(
    listener: Listener,
    services: Services,
    stop: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let router = Router {
        routes: services.routes.into(),
        places: Arc::new(tokio::sync::Semaphore::new(MAX_CONCURRENT_CALLS)),
    };
    let server = Server::builder().max_concurrent_streams(MAX_STREAMS_PER_CONNECTION);
    // Once `stop` completes, the server's drain gets the deadline.
    let (stopping, stopped) = tokio::sync::oneshot::channel::<()>();
    let stop = async move {
        stop.await;
        let _ = stopping.send(());
    };
    let deadline = async move {
        if stopped.await.is_err() {
            return std::future::pending().await;
        }
        tokio::time::sleep(SHUTDOWN_DEADLINE).await;
    };
    tracing::info!(endpoint = %listener.endpoint, "serving CSI");
    let served = match listener.bound {
        Bound::Tcp(listener) => {
            let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
            within(
                deadline,
                server.serve_with_incoming_shutdown(router, incoming, stop),
            )
            .await
        }
        #[cfg(unix)]
        Bound::Unix(listener, socket) => {
            let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener);
            let served = within(
                deadline,
                server.serve_with_incoming_shutdown(router, incoming, stop),
            )
            .await;
            socket.remove();
            served
        }
        #[cfg(windows)]
        Bound::WindowsUnix(listener, socket) => {
            let incoming =
                super::blocking_unix::incoming(listener).map_err(|error| ServeError::Endpoint {
                    endpoint: listener_endpoint(&socket.path),
                    reason: error.to_string(),
                })?;
            let served = within(
                deadline,
                server.serve_with_incoming_shutdown(router, incoming, stop),
            )
            .await;
            socket.remove();
            served
        }
    };
    tracing::info!("stopped serving CSI");
    served.map_err(ServeError::Serve)
}

/// `served`, or success once `deadline` passed first (the calls still
/// under way are dropped, with a warning).
async fn within<E>(
    deadline: impl Future<Output = ()>,
    served: impl Future<Output = Result<(), E>>,
) -> Result<(), E> {
    tokio::select! {
        served = served => served,
        () = deadline => {
            tracing::warn!(
                deadline = ?SHUTDOWN_DEADLINE,
                "calls still under way after the shutdown deadline: stopping without them"
            );
            Ok(())
        }
    }
}

#[cfg(windows)]
fn listener_endpoint(path: &std::path::Path) -> String {
    format!("unix://{}", path.display())
}

/// Completes when the process is asked to stop: SIGTERM or SIGINT
/// (Ctrl-C) on Unix; Ctrl-C, Ctrl-Break, or the console's close or the
/// system's shutdown on Windows (what a container's stop sends).
pub async fn stop_signal() {
    let which = wait_for_signal().await;
    tracing::info!(
        signal = which,
        "asked to stop: answering the calls under way"
    );
}

#[cfg(unix)]
async fn wait_for_signal() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::warn!("no signal handler could be installed: only a kill stops the plugin");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    }
}

#[cfg(windows)]
async fn wait_for_signal() -> &'static str {
    use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close, ctrl_shutdown};
    let (Ok(mut c), Ok(mut brk), Ok(mut close), Ok(mut shutdown)) =
        (ctrl_c(), ctrl_break(), ctrl_close(), ctrl_shutdown())
    else {
        tracing::warn!("no console handler could be installed: only a kill stops the plugin");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = c.recv() => "Ctrl-C",
        _ = brk.recv() => "Ctrl-Break",
        _ = close.recv() => "console close",
        _ = shutdown.recv() => "shutdown",
    }
}

#[cfg(not(any(unix, windows)))]
async fn wait_for_signal() -> &'static str {
    let _ = tokio::signal::ctrl_c().await;
    "Ctrl-C"
}
