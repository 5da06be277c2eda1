//! How a call's channel failed, as the transport alone can tell: whether
//! the connection failed or broke (and whether the request may have been
//! processed), whether the answer was no gRPC answer, and whether a status
//! is the proxy's own. Layers above ask [`ChannelFailure::of`] instead of
//! looking into h2 or I/O errors themselves.
//!
//! The failure itself, [`ConnectionError`], records what became of the
//! request (its [`Delivery`](crate::Delivery)) when the channel builds
//! it; it is defined beside the error, which reads it
//! ([`Error::delivery`](crate::Error::delivery)).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::error::ConnectionError;

/// The `grpc-status` the proxy itself sent for one call, in a trailers-only
/// head or in the trailers, if any: the one way to tell the proxy's own
/// status from one that tonic made up from an answer it could not use.
/// The SDK's calls put one in the request's extensions; the channel fills
/// it in.
#[derive(Clone, Debug, Default)]
pub(crate) struct PeerStatus(Arc<std::sync::atomic::AtomicI32>);

impl PeerStatus {
    /// Nothing seen.
    const NONE: i32 = -1;

    pub fn new() -> Self {
        Self(Arc::new(std::sync::atomic::AtomicI32::new(Self::NONE)))
    }

    /// Records the `grpc-status` of `headers`, if it has a valid one.
    pub fn saw(&self, headers: &tonic::codegen::http::HeaderMap) {
        let code = headers
            .get("grpc-status")
            .and_then(|v| std::str::from_utf8(v.as_bytes()).ok())
            .and_then(|v| v.parse::<u8>().ok())
            .filter(|&code| code <= 16);
        if let Some(code) = code {
            self.0.store(i32::from(code), Ordering::Release);
        }
    }

    /// The code the proxy sent, if it sent a valid one.
    pub fn code(&self) -> Option<tonic::Code> {
        match self.0.load(Ordering::Acquire) {
            Self::NONE => None,
            code => Some(tonic::Code::from_i32(code)),
        }
    }
}

/// How the channel under a status failed.
pub(crate) enum ChannelFailure {
    /// The connection failed or broke; whether the request may have been
    /// processed.
    Connection { maybe_sent: bool },
    /// The answer was no gRPC answer; why.
    NotGrpc(String),
}

impl ChannelFailure {
    /// If `status` was made from a failure of the channel (a
    /// [`ConnectionError`], or an h2 or I/O error, among its causes): which.
    /// `None` for a status that came in an answer, the proxy's or one tonic
    /// made up from it.
    pub(crate) fn of(status: &tonic::Status) -> Option<Self> {
        let mut cause = std::error::Error::source(status);
        while let Some(error) = cause {
            if let Some(connection) = error.downcast_ref::<ConnectionError>() {
                if connection.is_not_grpc() {
                    return Some(Self::NotGrpc(connection.to_string()));
                }
                return connection
                    .is_connection_failure()
                    .then(|| Self::Connection {
                        maybe_sent: connection.maybe_sent(),
                    });
            }
            if error.is::<h2::Error>() || error.is::<std::io::Error>() {
                return Some(Self::Connection { maybe_sent: true });
            }
            cause = error.source();
        }
        None
    }
}
