//! Serving CSI as kubelet expects: on `unix://PATH` (Linux, and Windows,
//! which has AF_UNIX sockets since Windows 10 1803 and Server 2019), or
//! `tcp://ADDRESS` for tests; a stale socket file replaced; stopped by
//! SIGTERM, Ctrl-C or Ctrl-Break with the calls under way answered.

mod socket;

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::body::Body;
use tonic::codegen::http;
use tonic::server::NamedService;
use tonic::transport::Server;
use tower::util::BoxCloneSyncService;
use tower::{Service, ServiceExt};
use tracing::instrument::{Instrument, WithSubscriber};

use super::driver::NodeDriver;
use super::service::NodeService;
use super::v1::identity_server;
use crate::Status;
use socket::{bind_unix, SocketFile};

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

    /// Takes the folder of a `unix://` endpoint's socket before anything
    /// else is put in it: made owner-only if missing, made so if kubelet
    /// made it empty with the ACL its parent passes on (Windows), refused
    /// if someone else may write to it. A plugin whose state folder lies
    /// inside the socket's folder takes the socket's first, so that the
    /// state folder is not what keeps an empty folder from being made
    /// owner-only. `tcp://` endpoints have no folder.
    pub(crate) fn take_folder(endpoint: &str) -> Result<(), ServeError> {
        let Some(path) = endpoint.strip_prefix("unix://").filter(|p| !p.is_empty()) else {
            return Ok(());
        };
        #[cfg(any(unix, windows))]
        socket::own_folder(path).map_err(|reason| ServeError::Endpoint {
            endpoint: endpoint.to_owned(),
            reason,
        })?;
        #[cfg(not(any(unix, windows)))]
        let _ = path;
        Ok(())
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

/// The CSI Node calls an endpoint runs at once; more wait for a place
/// (Identity calls, which do no work on the host, never wait). A call
/// goes on when its caller stops waiting (kubelet's deadline), and keeps
/// its place until its work ends; [`serve`] waits for it when it stops,
/// within [`SHUTDOWN_DEADLINE`]. kubelet makes a few
/// per volume, so a node at its volume limit stays far below it; a client
/// that floods the endpoint queues behind it.
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
/// most [`MAX_CONCURRENT_CALLS`] node calls at once, each counted until
/// its work ends, whether or not its caller still waits.
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
            // Identity does no work on the host and answers within
            // moments (a probe looks for the proxy briefly at most):
            // kubelet's registration and the liveness probe get through
            // however busy the node calls keep the places.
            Some(route) if service == Some(identity_server::SERVICE_NAME) => {
                Box::pin(route.oneshot(request))
            }
            Some(route) => {
                let places = self.places.clone();
                Box::pin(async move {
                    // Never closed, so a place always comes.
                    let place = places.acquire_owned().await;
                    // The call runs to its end in a task of its own, which
                    // holds the place: a call whose caller left (kubelet's
                    // deadline) still works on the host, so it still counts.
                    let work = async move {
                        let answer = route.oneshot(request).await;
                        drop(place);
                        answer
                    };
                    let call = tokio::spawn(work.in_current_span().with_current_subscriber());
                    call.await.unwrap_or_else(|failed| {
                        tracing::error!(error = %failed, "a CSI call stopped before it answered");
                        let status = Status::internal("the call stopped before it answered");
                        Ok(status.into_http())
                    })
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
/// way, and returns once their connections are closed and the work of
/// the calls whose callers left has ended, or after [`SHUTDOWN_DEADLINE`]
/// at the most. A `unix://` socket file this listener made is removed at
/// the end. At most [`MAX_CONCURRENT_CALLS`] node calls run at once, and
/// a connection has at most [`MAX_STREAMS_PER_CONNECTION`] streams.
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
    let places = Arc::new(tokio::sync::Semaphore::new(MAX_CONCURRENT_CALLS));
    let router = Router {
        routes: services.routes.into(),
        places: places.clone(),
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
                then_calls_left(
                    server.serve_with_incoming_shutdown(router, incoming, stop),
                    &places,
                ),
            )
            .await
        }
        #[cfg(unix)]
        Bound::Unix(listener, socket) => {
            let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener);
            let served = within(
                deadline,
                then_calls_left(
                    server.serve_with_incoming_shutdown(router, incoming, stop),
                    &places,
                ),
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
                then_calls_left(
                    server.serve_with_incoming_shutdown(router, incoming, stop),
                    &places,
                ),
            )
            .await;
            socket.remove();
            served
        }
    };
    tracing::info!("stopped serving CSI");
    served.map_err(ServeError::Serve)
}

/// `served`, then the calls whose callers left, until their work ends:
/// until every place is back.
async fn then_calls_left<E>(
    served: impl Future<Output = Result<(), E>>,
    places: &tokio::sync::Semaphore,
) -> Result<(), E> {
    let served = served.await;
    let all = u32::try_from(MAX_CONCURRENT_CALLS).unwrap_or(u32::MAX);
    // Never closed: the places come back once the work ends.
    let _all_back = places.acquire_many(all).await;
    served
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::sync::{Notify, Semaphore};
    use tower::service_fn;

    use super::*;

    /// A router of one service whose calls wait for `release`, with
    /// `places` places; `started` counts the calls that began.
    fn router(places: usize, release: Arc<Notify>, started: Arc<Semaphore>) -> Router {
        let service = service_fn(move |_: http::Request<Body>| {
            let (release, started) = (release.clone(), started.clone());
            async move {
                started.add_permits(1);
                release.notified().await;
                Ok::<_, Infallible>(http::Response::new(Body::empty()))
            }
        });
        Router {
            routes: Arc::from(vec![("csi.v1.Node", BoxCloneSyncService::new(service))]),
            places: Arc::new(Semaphore::new(places)),
        }
    }

    fn call() -> http::Request<Body> {
        let request = http::Request::builder().uri("/csi.v1.Node/NodeStageVolume");
        request.body(Body::empty()).unwrap()
    }

    #[tokio::test]
    async fn a_call_whose_caller_left_keeps_its_place_until_its_work_ends() {
        let (release, started) = (Arc::new(Notify::new()), Arc::new(Semaphore::new(0)));
        let mut router = router(1, release.clone(), started.clone());
        // The first call starts, then its caller gives up on it.
        let first = tokio::spawn(router.call(call()));
        started.acquire().await.unwrap().forget();
        first.abort();
        let _ = first.await;
        // Its work goes on: the second call waits for the place.
        let second = tokio::spawn(router.call(call()));
        let waited = tokio::time::timeout(Duration::from_millis(100), started.acquire()).await;
        assert!(
            waited.is_err(),
            "the second call started while the first still ran"
        );
        // The first one's work ends: the second runs, and answers.
        release.notify_one();
        started.acquire().await.unwrap().forget();
        release.notify_one();
        let answer = second.await.unwrap().unwrap();
        assert_eq!(answer.status(), http::StatusCode::OK);
    }

    #[tokio::test]
    async fn identity_calls_never_wait_for_a_place() {
        let (release, started) = (Arc::new(Notify::new()), Arc::new(Semaphore::new(0)));
        let mut router = router(1, release.clone(), started.clone());
        let service = service_fn(|_: http::Request<Body>| async {
            Ok::<_, Infallible>(http::Response::new(Body::empty()))
        });
        let identity = (
            identity_server::SERVICE_NAME,
            BoxCloneSyncService::new(service),
        );
        router.routes = Arc::from(vec![router.routes[0].clone(), identity]);
        // A node call holds the only place...
        let held = tokio::spawn(router.call(call()));
        started.acquire().await.unwrap().forget();
        // ... and a probe still answers.
        let probe = http::Request::builder().uri("/csi.v1.Identity/Probe");
        let answer = router
            .call(probe.body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(answer.status(), http::StatusCode::OK);
        release.notify_one();
        held.await.unwrap().unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn serving_ends_once_the_work_of_calls_whose_callers_left_has_ended() {
        let places = Arc::new(Semaphore::new(MAX_CONCURRENT_CALLS));
        let left = places.clone().acquire_owned().await.unwrap();
        let ends = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(3)).await;
            drop(left);
        });
        let started = tokio::time::Instant::now();
        then_calls_left(async { Ok::<(), ()>(()) }, &places)
            .await
            .unwrap();
        assert!(started.elapsed() >= Duration::from_secs(3));
        ends.await.unwrap();
    }
}
