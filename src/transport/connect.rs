//! Establishing a connection: opening the endpoint, with retries of what
//! may pass, and the HTTP/2 handshake, which counts once the proxy has
//! spoken.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use backon::Retryable;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::oneshot;

use super::{IoStream, ProxyChannel, Transport};
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
    // The handshake only sends the client preface; the connection counts
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
