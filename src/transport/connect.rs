//! Establishing a connection: opening the endpoint, with retries of what
//! may pass, and the HTTP/2 handshake, which counts once the proxy has sent
//! its HTTP/2 SETTINGS.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use backon::Retryable;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::oneshot;

use super::channel::DEFAULT_MAX_RESPONSE_SIZE;
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
    /// The largest response message calls on the connection accept.
    pub max_response_size: usize,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            retry: RetryPolicy::default(),
            max_response_size: DEFAULT_MAX_RESPONSE_SIZE,
        }
    }
}

/// Why an endpoint could not be connected.
#[derive(Debug)]
pub(crate) enum ConnectFailure {
    /// Nothing listens there: the version is not served (or the pipe is not
    /// mounted into this container, which looks the same).
    Absent(io::Error),
    /// Something is there, but its server is not trusted to be the proxy:
    /// nothing was sent to it.
    Untrusted(super::ServerOwner),
    /// Something is there, but it failed before its owner was known: it
    /// could not be opened (busy for the whole connect timeout, access
    /// denied, not a socket), or its owner could not be read. A squatter
    /// can fail so as well as the proxy, so negotiation goes on to older
    /// versions.
    Unverified {
        error: Error,
        /// Whether another attempt may succeed.
        transient: bool,
    },
    /// A trusted server is there, but it failed (its handshake); falling
    /// back to an older version would hide a broken proxy.
    Failed {
        error: Error,
        /// Whether another attempt may succeed.
        transient: bool,
    },
}

impl ConnectFailure {
    fn from_io(address: &str, timeout: Duration, e: io::Error) -> Self {
        if let Some(reason) = super::misconfigured(&e) {
            let error = Error::Configuration {
                setting: address.to_owned(),
                reason: reason.to_owned(),
            };
            return Self::Unverified {
                error,
                transient: false,
            };
        }
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
        Self::Unverified { error, transient }
    }

    /// Worth another attempt under the retry policy? An endpoint that could
    /// not be opened within the whole connect timeout (a pipe that stayed
    /// busy) only when `timeouts` says so.
    fn is_transient(&self, timeouts: Timeouts) -> bool {
        match self {
            Self::Unverified {
                error: Error::ConnectTimeout { .. },
                transient,
            } => *transient && timeouts == Timeouts::TryAgain,
            Self::Unverified { transient, .. } | Self::Failed { transient, .. } => *transient,
            Self::Absent(_) | Self::Untrusted(_) => false,
        }
    }
}

/// Whether an endpoint that could not be opened within the whole connect
/// timeout (a pipe that stayed busy) is tried again under the retry
/// policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Timeouts {
    /// Yes: no older version is left to try.
    TryAgain,
    /// No: older versions remain to be tried, and one of them may be
    /// served. A squatter that keeps a newer version's pipe busy would
    /// otherwise cost a connect timeout per retry.
    PassOn,
}

/// Connects to `address`, retrying transient failures under the policy
/// (timeouts as `timeouts` says).
pub(crate) async fn connect(
    transport: &Transport,
    address: &str,
    options: &ConnectOptions,
    timeouts: Timeouts,
) -> Result<ProxyChannel, ConnectFailure> {
    (|| connect_once(transport, address, options))
        .retry(options.retry.backoff())
        .when(|failure| failure.is_transient(timeouts))
        .notify(|failure, delay| {
            tracing::debug!(%address, ?failure, ?delay, "connection attempt failed, retrying");
        })
        .await
}

/// One attempt, bounded as a whole by the connect timeout: opening the
/// endpoint (waiting for a busy pipe included) and the handshake.
async fn connect_once(
    transport: &Transport,
    address: &str,
    options: &ConnectOptions,
) -> Result<ProxyChannel, ConnectFailure> {
    let timeout = options.connect_timeout;
    let trusted = AtomicBool::new(false);
    let attempt = open_and_handshake(transport, address, options, &trusted);
    match tokio::time::timeout(timeout, attempt).await {
        Ok(outcome) => outcome,
        Err(_) => {
            let error = Error::connect_timeout(address, timeout);
            if trusted.load(Ordering::Relaxed) {
                Err(ConnectFailure::Failed {
                    error,
                    transient: true,
                })
            } else {
                Err(ConnectFailure::Unverified {
                    error,
                    transient: true,
                })
            }
        }
    }
}

/// Opens `address`, checks its server's owner (and sets `trusted` once
/// it is), then makes the HTTP/2 handshake.
async fn open_and_handshake(
    transport: &Transport,
    address: &str,
    options: &ConnectOptions,
    trusted: &AtomicBool,
) -> Result<ProxyChannel, ConnectFailure> {
    let stream = transport
        .open(address, options)
        .await
        .map_err(|e| ConnectFailure::from_io(address, options.connect_timeout, e))?;
    // Before the first byte: a squatter on a version the node does not
    // serve gets nothing, not even the preface. An owner that could not be
    // read (a server that disconnected meanwhile) is no verdict on who
    // serves there: the attempt failed, and is made again.
    let owner = owner_of(&stream, address).map_err(|e| ConnectFailure::Unverified {
        error: Error::connect_failed(address, OwnerUnread(e)),
        transient: true,
    })?;
    if !transport.trust().admits(&owner) {
        return Err(ConnectFailure::Untrusted(owner));
    }
    trusted.store(true, Ordering::Relaxed);
    // The handshake only sends the client preface; the connection counts
    // once the server has sent its SETTINGS (an HTTP/2 server's first
    // frame), so that a listener that accepts but never answers is a
    // connect timeout, and one that speaks another protocol a failure,
    // rather than a connection whose calls hang or fail.
    let (stream, greeted) = Greeted::new(stream);
    let established = async {
        let channel = ProxyChannel::handshake(stream, options.max_response_size).await?;
        match greeted.await {
            Ok(Greeting::Settings) => Ok(channel),
            Ok(Greeting::Other(header)) => Err(NotHttp2(header).into()),
            Err(_) => Err(io::Error::from(io::ErrorKind::UnexpectedEof).into()),
        }
    };
    established
        .await
        .map_err(
            |e: Box<dyn std::error::Error + Send + Sync>| ConnectFailure::Failed {
                error: Error::connect_failed(address, HandshakeFailed(e)),
                transient: true,
            },
        )
}

/// Who serves the stream at `address`, as the operating system tells.
fn owner_of(stream: &IoStream, address: &str) -> io::Result<super::ServerOwner> {
    #[cfg(test)]
    if faults::owner_read_fails(address) {
        return Err(io::Error::new(
            io::ErrorKind::NotConnected,
            "the server disconnected before its owner was read (a test's stand-in for \
             ERROR_PIPE_NOT_CONNECTED)",
        ));
    }
    let _ = address;
    stream.server_owner()
}

/// The owner of the server could not be read.
#[derive(Debug)]
struct OwnerUnread(io::Error);

impl std::fmt::Display for OwnerUnread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the owner of the server could not be read: {}", self.0)
    }
}

impl std::error::Error for OwnerUnread {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// Faults on demand for the crate's own tests.
#[cfg(test)]
pub(crate) mod faults {
    use std::collections::HashMap;
    use std::sync::{LazyLock, Mutex, PoisonError};

    static OWNER_READS: LazyLock<Mutex<HashMap<String, usize>>> = LazyLock::new(Mutex::default);

    /// The next `times` reads of the owner of the server at `address`
    /// fail, as they do on Windows when the server disconnects between
    /// the open and the read.
    pub(crate) fn fail_owner_reads(address: &str, times: usize) {
        OWNER_READS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(address.to_owned(), times);
    }

    /// Whether this read of the owner at `address` fails.
    pub(super) fn owner_read_fails(address: &str) -> bool {
        let mut reads = OWNER_READS.lock().unwrap_or_else(PoisonError::into_inner);
        match reads.get_mut(address) {
            Some(left @ 1..) => {
                *left -= 1;
                true
            }
            _ => false,
        }
    }
}

/// The server's first bytes are no HTTP/2 SETTINGS frame.
#[derive(Debug)]
struct NotHttp2([u8; FRAME_HEADER]);

impl std::fmt::Display for NotHttp2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the server's first bytes are no HTTP/2 SETTINGS frame: {:?}",
            self.0.escape_ascii().to_string()
        )
    }
}

impl std::error::Error for NotHttp2 {}

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

/// The length of an HTTP/2 frame header.
const FRAME_HEADER: usize = 9;

/// What the server's first frame header was.
enum Greeting {
    /// A SETTINGS frame (type 4, not an acknowledgement, on stream 0).
    Settings,
    /// Anything else: the first nine bytes the server sent.
    Other([u8; FRAME_HEADER]),
}

impl Greeting {
    fn of(header: [u8; FRAME_HEADER]) -> Self {
        let settings = header[3] == 0x4 && header[4] & 0x1 == 0 && header[5..9] == [0, 0, 0, 0];
        if settings {
            Self::Settings
        } else {
            Self::Other(header)
        }
    }
}

/// A stream that tells what the server's first frame header is.
struct Greeted {
    inner: IoStream,
    header: [u8; FRAME_HEADER],
    seen: usize,
    greeted: Option<oneshot::Sender<Greeting>>,
}

impl Greeted {
    fn new(inner: IoStream) -> (Self, oneshot::Receiver<Greeting>) {
        let (tx, rx) = oneshot::channel();
        let stream = Self {
            inner,
            header: [0; FRAME_HEADER],
            seen: 0,
            greeted: Some(tx),
        };
        (stream, rx)
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
        if self.greeted.is_some() {
            let this = &mut *self;
            let new = &buf.filled()[before..];
            let take = new.len().min(FRAME_HEADER - this.seen);
            this.header[this.seen..this.seen + take].copy_from_slice(&new[..take]);
            this.seen += take;
            if this.seen == FRAME_HEADER {
                if let Some(greeted) = this.greeted.take() {
                    let _ = greeted.send(Greeting::of(this.header));
                }
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
