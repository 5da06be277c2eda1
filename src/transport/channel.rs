//! Opening a tonic channel over a [`Transport`], with retries.
//!
//! The stream that proves the endpoint exists becomes the channel's first
//! connection: the SDK never opens a connection just to probe and throws it
//! away. Later reconnects (after the proxy restarts) go through the same
//! connector.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use backon::Retryable;
use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint, Uri};

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
    /// Whether the channel may reconnect by itself after the connection
    /// breaks. Off for [`CsiProxy`](crate::CsiProxy), which negotiates
    /// again instead, since the proxy that comes back may serve other
    /// versions.
    pub reconnect: bool,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            retry: RetryPolicy::default(),
            reconnect: true,
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
            io::ErrorKind::TimedOut => (
                Error::Timeout {
                    operation: format!("connecting to {address}"),
                    after: timeout,
                },
                true,
            ),
            // Named pipes off Windows, or a name the OS refuses: final.
            io::ErrorKind::Unsupported | io::ErrorKind::InvalidInput => {
                (Error::transport(address, e), false)
            }
            _ => (Error::transport(address, e), true),
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
) -> Result<Channel, ConnectFailure> {
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
) -> Result<Channel, ConnectFailure> {
    let timeout = options.connect_timeout;
    let first = transport
        .open(address, options)
        .await
        .map_err(|e| ConnectFailure::from_io(address, timeout, e))?;

    let connector = Connector {
        transport: transport.clone(),
        address: Arc::from(address),
        options: *options,
        first: Arc::new(Mutex::new(Some(first))),
    };
    // The URI is required by tonic but never resolved: the connector decides
    // where bytes go. Its authority becomes the HTTP/2 `:authority`. No
    // `Endpoint::connect_timeout`: `Transport::open` bounds every attempt
    // already, and tonic would wrap the stream in a timeout layer that
    // costs every call.
    let endpoint = Endpoint::from_static("http://csi-proxy");
    let handshake = endpoint.connect_with_connector(tower::service_fn(move |_: Uri| {
        let connector = connector.clone();
        async move { connector.next_stream().await.map(TokioIo::new) }
    }));
    match tokio::time::timeout(timeout, handshake).await {
        Ok(Ok(channel)) => Ok(channel),
        Ok(Err(e)) => Err(ConnectFailure::Failed {
            error: Error::transport(address, e),
            transient: true,
        }),
        Err(_) => Err(ConnectFailure::Failed {
            error: Error::Timeout {
                operation: format!("HTTP/2 handshake with {address}"),
                after: timeout,
            },
            transient: true,
        }),
    }
}

/// Hands tonic the probing stream first, then fresh ones on reconnect.
#[derive(Clone)]
struct Connector {
    transport: Transport,
    address: Arc<str>,
    options: ConnectOptions,
    first: Arc<Mutex<Option<IoStream>>>,
}

impl Connector {
    async fn next_stream(&self) -> io::Result<IoStream> {
        // The lock is held only to take the stream, never across an await.
        let first = self
            .first
            .lock()
            .map(|mut slot| slot.take())
            .unwrap_or(None);
        match first {
            Some(stream) => Ok(stream),
            None if self.options.reconnect => {
                self.transport.open(&self.address, &self.options).await
            }
            None => Err(io::Error::new(io::ErrorKind::NotConnected, ConnectionLost)),
        }
    }
}

/// Why a channel that may not reconnect refuses to: its connection broke
/// earlier. A request that meets this error was never sent.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionLost;

impl std::fmt::Display for ConnectionLost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the connection to the proxy was lost; negotiate again")
    }
}

impl std::error::Error for ConnectionLost {}

/// Whether `error` (or anything it was caused by) is [`ConnectionLost`].
pub(crate) fn is_connection_lost(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(e) = current {
        if e.is::<ConnectionLost>() {
            return true;
        }
        if let Some(io) = e.downcast_ref::<io::Error>() {
            if io
                .get_ref()
                .is_some_and(|inner| inner.is::<ConnectionLost>())
            {
                return true;
            }
        }
        current = e.source();
    }
    false
}
