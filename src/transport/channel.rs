//! The SDK's own gRPC channel: one hyper HTTP/2 client connection over the
//! stream that negotiation opened, with tonic's codec on top.
//!
//! tonic's `Channel` would add a buffer task, its own reconnect logic and
//! per-stream layers; the SDK already negotiates again, reconnects by
//! negotiating and applies deadlines itself, so none of that is needed here.
//! What this layer adds instead is exact knowledge of the connection's
//! state: the end of the connection task says that the connection broke, and
//! a request that hyper hands back was certainly not sent.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use backon::Retryable;
use hyper::client::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{oneshot, Notify};
use tonic::body::Body;
use tonic::codegen::http::uri::{Authority, Scheme};
use tonic::codegen::http::{Request, Response, Uri};

use super::{IoStream, Transport};
use crate::error::Error;
use crate::retry::RetryPolicy;

/// How to establish a connection.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConnectOptions {
    /// Bounds one attempt: opening the endpoint (including waiting for a
    /// busy pipe) and the HTTP/2 handshake.
    pub connect_timeout: Duration,
    /// Retries of attempts that failed for a reason that may pass.
    pub retry: RetryPolicy,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            retry: RetryPolicy::default(),
        }
    }
}

/// Why an endpoint could not be connected.
#[derive(Debug)]
pub(crate) enum ConnectFailure {
    /// Nothing listens there: the version is not served (or the pipe is not
    /// mounted into this container, which looks the same).
    Absent(io::Error),
    /// Something is there, but it failed; falling back to an older version
    /// would hide a broken or inaccessible proxy.
    Failed {
        error: Error,
        /// Whether another attempt may succeed.
        transient: bool,
    },
}

impl ConnectFailure {
    fn from_io(address: &str, timeout: Duration, e: io::Error) -> Self {
        let (error, transient) = match e.kind() {
            // No pipe or socket file, or a socket file nobody listens on.
            io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused => return Self::Absent(e),
            io::ErrorKind::PermissionDenied => (
                Error::PermissionDenied {
                    address: address.to_owned(),
                    source: Arc::new(e),
                },
                false,
            ),
            io::ErrorKind::TimedOut => (Error::connect_timeout(address, timeout), true),
            // Named pipes off Windows, or a name the OS refuses: final.
            io::ErrorKind::Unsupported | io::ErrorKind::InvalidInput => {
                (Error::connect_failed(address, e), false)
            }
            _ => (Error::connect_failed(address, e), true),
        };
        Self::Failed { error, transient }
    }

    /// Worth another attempt under the retry policy?
    fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::Failed {
                transient: true,
                ..
            }
        )
    }
}

/// Connects to `address`, retrying transient failures under the policy.
pub(crate) async fn connect(
    transport: &Transport,
    address: &str,
    options: &ConnectOptions,
) -> Result<ProxyChannel, ConnectFailure> {
    (|| connect_once(transport, address, options))
        .retry(options.retry.backoff())
        .when(ConnectFailure::is_transient)
        .notify(|failure, delay| {
            tracing::debug!(%address, ?failure, ?delay, "connection attempt failed, retrying");
        })
        .await
}

async fn connect_once(
    transport: &Transport,
    address: &str,
    options: &ConnectOptions,
) -> Result<ProxyChannel, ConnectFailure> {
    let timeout = options.connect_timeout;
    let stream = transport
        .open(address, options)
        .await
        .map_err(|e| ConnectFailure::from_io(address, timeout, e))?;
    // hyper's handshake only sends the client preface; the connection counts
    // once the server has spoken (its SETTINGS come first), so that a
    // listener that accepts but never answers is a connect timeout, not a
    // connection whose calls hang.
    let (stream, greeted) = Greeted::new(stream);
    let established = async {
        let channel = ProxyChannel::handshake(stream).await?;
        greeted
            .await
            .map_err(|_| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(channel)
    };
    match tokio::time::timeout(timeout, established).await {
        Ok(Ok(channel)) => Ok(channel),
        Ok(Err(e)) => Err(ConnectFailure::Failed {
            error: Error::connect_failed(address, HandshakeFailed(e)),
            transient: true,
        }),
        Err(_) => Err(ConnectFailure::Failed {
            error: Error::connect_timeout(address, timeout),
            transient: true,
        }),
    }
}

/// The HTTP/2 handshake failed, or the connection closed before the server
/// said anything.
#[derive(Debug)]
struct HandshakeFailed(Box<dyn std::error::Error + Send + Sync>);

impl std::fmt::Display for HandshakeFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HTTP/2 handshake failed: {}", self.0)
    }
}

impl std::error::Error for HandshakeFailed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

/// A stream that says when the server's first bytes arrive.
struct Greeted {
    inner: IoStream,
    greeted: Option<oneshot::Sender<()>>,
}

impl Greeted {
    fn new(inner: IoStream) -> (Self, oneshot::Receiver<()>) {
        let (tx, rx) = oneshot::channel();
        (
            Self {
                inner,
                greeted: Some(tx),
            },
            rx,
        )
    }
}

impl AsyncRead for Greeted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.inner).poll_read(cx, buf);
        if self.greeted.is_some() && buf.filled().len() > before {
            if let Some(greeted) = self.greeted.take() {
                let _ = greeted.send(());
            }
        }
        read
    }
}

impl AsyncWrite for Greeted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A gRPC channel to one CSI Proxy endpoint: a single HTTP/2 connection
/// over the pipe or socket that negotiation opened.
///
/// It implements tonic's `GrpcService` (through `tower::Service`), so the
/// generated clients in [`crate::wire`] run on it:
/// `wire::disk::v1::disk_client::DiskClient::new(connection.channel())`.
/// Clones share the connection and are cheap.
///
/// It never reconnects by itself: once the proxy closes the connection
/// (a restart, an upgrade), [`is_closed`](Self::is_closed) turns true and
/// every call fails at once without being sent. Negotiate again to reach
/// whatever the proxy serves now; [`CsiProxy`](crate::CsiProxy) does that
/// by itself.
#[derive(Clone)]
pub struct ProxyChannel {
    sender: http2::SendRequest<Body>,
    state: Arc<ConnectionState>,
}

/// What the connection task reports when it ends.
#[derive(Default)]
struct ConnectionState {
    closed: AtomicBool,
    ended: Notify,
}

/// The `:authority` every request carries: the stream already decides where
/// bytes go, but HTTP/2 requires one.
const AUTHORITY: &str = "csi-proxy";

impl ProxyChannel {
    /// The HTTP/2 settings for a local pipe or socket, chosen by measurement
    /// (see the README's benchmark section). CSI Proxy's messages are small
    /// (the largest is a disk list of a few KiB), so the windows only need to
    /// hold many concurrent responses without a WINDOW_UPDATE round trip;
    /// hyper's adaptive window (BDP pings) is for links with real latency
    /// and only adds pings here. No keep-alive pings: a local pipe has no
    /// idle timeout to defeat, and a broken pipe ends the connection task at
    /// once, which is the signal this type relies on.
    async fn handshake(stream: Greeted) -> hyper::Result<Self> {
        let (sender, connection) = http2::Builder::new(TokioExecutor::new())
            .initial_stream_window_size(1 << 20)
            .initial_connection_window_size(4 << 20)
            .adaptive_window(false)
            .handshake::<_, Body>(TokioIo::new(stream))
            .await?;
        let state = Arc::new(ConnectionState::default());
        let watcher = state.clone();
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "CSI Proxy connection ended");
            }
            watcher.closed.store(true, Ordering::Release);
            watcher.ended.notify_waiters();
        });
        Ok(Self { sender, state })
    }

    /// Whether the connection has ended (the proxy went away or closed it).
    /// A closed channel sends nothing again.
    pub fn is_closed(&self) -> bool {
        self.state.closed.load(Ordering::Acquire) || self.sender.is_closed()
    }

    /// Resolves when the connection task has ended. Unlike
    /// [`closed`](Self::closed) it does not keep the connection open while
    /// it waits: it holds no sender.
    pub(crate) fn ended(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let state = self.state.clone();
        async move {
            let ended = state.ended.notified();
            if !state.closed.load(Ordering::Acquire) {
                ended.await;
            }
        }
    }

    /// Waits until the connection has ended.
    pub async fn closed(&self) {
        if self.sender.is_closed() {
            return;
        }
        self.ended().await;
    }
}

impl std::fmt::Debug for ProxyChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyChannel")
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl tower::Service<Request<Body>> for ProxyChannel {
    type Response = Response<hyper::body::Incoming>;
    type Error = ConnectionError;
    type Future =
        Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send + 'static>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // An HTTP/2 connection takes any number of requests; a closed one is
        // reported per request, with the certainty that it was not sent.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: Request<Body>) -> Self::Future {
        if self.is_closed() {
            return Box::pin(std::future::ready(Err(ConnectionError::ended())));
        }
        // tonic gives a path-only URI; h2 needs the scheme and authority.
        let mut parts = std::mem::take(request.uri_mut()).into_parts();
        parts.scheme = Some(Scheme::HTTP);
        parts.authority = Some(Authority::from_static(AUTHORITY));
        if let Ok(uri) = Uri::from_parts(parts) {
            *request.uri_mut() = uri;
        }
        let response = self.sender.try_send_request(request);
        Box::pin(async move {
            response.await.map_err(|mut e| {
                let sent = e.take_message().is_none();
                ConnectionError {
                    sent,
                    source: Some(e.into_error()),
                }
            })
        })
    }
}

/// The connection to the proxy failed under a request.
///
/// [`maybe_sent`](Self::maybe_sent) tells whether the request may have
/// reached the proxy: `false` only when it certainly did not (the
/// connection had already ended, or hyper handed the request back unsent).
#[derive(Debug)]
pub struct ConnectionError {
    sent: bool,
    source: Option<hyper::Error>,
}

impl ConnectionError {
    /// The connection had ended before the request: nothing was sent.
    fn ended() -> Self {
        Self {
            sent: false,
            source: None,
        }
    }

    /// Whether the request may have reached the proxy.
    pub fn maybe_sent(&self) -> bool {
        self.sent
    }
}

impl std::fmt::Display for ConnectionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.sent, &self.source) {
            (false, None) => f.write_str("the connection to CSI Proxy had ended; nothing was sent"),
            (false, Some(_)) => f.write_str("the connection to CSI Proxy failed before sending"),
            (true, _) => f.write_str("the connection to CSI Proxy broke during the call"),
        }
    }
}

impl std::error::Error for ConnectionError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_ref().map(|e| e as _)
    }
}
