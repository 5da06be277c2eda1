//! Serving CSI as kubelet expects: on `unix://PATH` (Linux, and Windows,
//! which has AF_UNIX sockets since Windows 10 1803 and Server 2019), or
//! `tcp://ADDRESS` for tests; a stale socket file replaced; stopped by
//! SIGTERM, Ctrl-C or Ctrl-Break with the calls under way answered.
//!
//! Here the listener and the serve loop; beside it, `router.rs` (the
//! services, and the caps on the calls at work), `connections.rs` (the
//! cap on the connections), `shutdown.rs` (the stop and its deadline),
//! `socket.rs` (a `unix://` endpoint's socket file).

mod connections;
mod router;
mod shutdown;
mod socket;

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;

use tokio_stream::Stream;
use tonic::transport::Server;

use connections::{Connection, Limited};
use router::Router;
use socket::{bind_unix, SocketFile};

pub use connections::MAX_CONNECTIONS;
pub use router::{Services, MAX_CONCURRENT_CALLS, MAX_IDENTITY_CALLS};
pub use shutdown::{stop_signal, SHUTDOWN_DEADLINE};

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

/// The HTTP/2 streams one connection may have open at once; a client
/// that opens more has the next refused (`REFUSED_STREAM`: it may send it
/// again once one ends), as HTTP/2 has it.
pub const MAX_STREAMS_PER_CONNECTION: u32 = 64;

/// The connections a listener accepts, each holding its place.
type Incoming = Pin<Box<dyn Stream<Item = io::Result<Connection>> + Send>>;

/// Serves `services` on `listener` until `stop` completes (such as
/// [`stop_signal`]); then it takes no new call, answers the calls under
/// way, and returns once their connections are closed and the work of
/// the calls whose callers left has ended, or after [`SHUTDOWN_DEADLINE`]
/// at the most. A `unix://` socket file this listener made is removed at
/// the end. At most [`MAX_CONCURRENT_CALLS`] Node calls and
/// [`MAX_IDENTITY_CALLS`] Identity calls run at once (more wait), on at
/// most [`MAX_CONNECTIONS`] connections (more wait in the backlog) of at
/// most [`MAX_STREAMS_PER_CONNECTION`] streams each.
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
    let router = Router::new(services);
    let calls_ended = router.calls_ended();
    let endpoint = listener.endpoint;
    let (incoming, socket) = incoming(listener.bound, &endpoint)?;
    let server = Server::builder().max_concurrent_streams(MAX_STREAMS_PER_CONNECTION);
    // Once `stop` completes, the server's drain gets the deadline.
    let (stop, deadline) = shutdown::with_deadline(stop);
    tracing::info!(%endpoint, "serving CSI");
    let served = server.serve_with_incoming_shutdown(router, incoming, stop);
    let served = shutdown::within(deadline, shutdown::then_calls_left(served, calls_ended)).await;
    if let Some(socket) = socket {
        socket.remove();
    }
    tracing::info!("stopped serving CSI");
    served.map_err(ServeError::Serve)
}

/// The connections `bound` accepts, at most [`MAX_CONNECTIONS`] at once,
/// and the socket file to remove at the end.
fn incoming(bound: Bound, endpoint: &str) -> Result<(Incoming, Option<SocketFile>), ServeError> {
    let places = connections::places();
    #[cfg(not(windows))]
    let _ = endpoint;
    Ok(match bound {
        Bound::Tcp(listener) => {
            let accepted = tokio_stream::wrappers::TcpListenerStream::new(listener);
            (Box::pin(Limited::new(accepted, places)), None)
        }
        #[cfg(unix)]
        Bound::Unix(listener, socket) => {
            let accepted = tokio_stream::wrappers::UnixListenerStream::new(listener);
            (Box::pin(Limited::new(accepted, places)), Some(socket))
        }
        // The bridge's threads hold the places: it accepts only with one.
        #[cfg(windows)]
        Bound::WindowsUnix(listener, socket) => {
            use tokio_stream::StreamExt;
            let bridged = super::blocking_unix::incoming(listener, places).map_err(|error| {
                ServeError::Endpoint {
                    endpoint: endpoint.to_owned(),
                    reason: error.to_string(),
                }
            })?;
            let bridged = bridged.map(|bridged| bridged.map(Connection::placed));
            (Box::pin(bridged), Some(socket))
        }
    })
}
