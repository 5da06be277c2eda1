//! How a call's channel failed, as the transport alone can tell: whether
//! the connection failed or broke (and whether the request may have been
//! processed), whether the answer was no gRPC answer, and whether a status
//! is the proxy's own. Layers above ask [`ChannelFailure::of`] instead of
//! looking into h2 or I/O errors themselves.

use std::sync::atomic::Ordering;
use std::sync::Arc;

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

/// The connection to the proxy failed under a request, or the request
/// could not be sent.
///
/// [`maybe_sent`](Self::maybe_sent) tells whether the request may have
/// reached the proxy: `false` only when it certainly did not (the
/// connection had already ended, or h2 did not take the request).
#[derive(Debug)]
pub struct ConnectionError {
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    /// The connection had ended before the request.
    Ended,
    /// The connection or the call's stream failed.
    Failed { sent: bool, source: h2::Error },
    /// The proxy refused the stream without processing it: reset with
    /// `REFUSED_STREAM`, or above a GOAWAY's last stream id.
    Refused(h2::Error),
    /// The answer is no gRPC answer (HTTP status, content type).
    NotGrpc {
        status: u16,
        content_type: Option<String>,
    },
    /// The request's own body failed (tonic could not encode it).
    RequestBody(tonic::Status),
}

impl ConnectionError {
    pub(super) fn ended() -> Self {
        Self { kind: Kind::Ended }
    }

    pub(super) fn not_sent(source: h2::Error) -> Self {
        Self {
            kind: Kind::Failed {
                sent: false,
                source,
            },
        }
    }

    /// A failure after the request was handed to h2: it may have been
    /// sent, unless the proxy said it did not process it (RFC 9113 §8.7).
    ///
    /// h2 does not hand out a GOAWAY's last stream id, but it tells it all
    /// the same: when a GOAWAY arrives, h2 ends exactly the streams above
    /// that id with the GOAWAY itself (a remote GOAWAY error), while
    /// streams at or below it go on, and end with the connection's I/O
    /// error if it closes under them.
    pub(super) fn during_call(source: h2::Error) -> Self {
        let refused = source.is_remote()
            && (source.is_go_away() || source.reason() == Some(h2::Reason::REFUSED_STREAM));
        let kind = if refused {
            Kind::Refused(source)
        } else {
            Kind::Failed { sent: true, source }
        };
        Self { kind }
    }

    pub(super) fn request_body(status: tonic::Status) -> Self {
        Self {
            kind: Kind::RequestBody(status),
        }
    }

    pub(super) fn not_grpc(status: u16, content_type: Option<String>) -> Self {
        Self {
            kind: Kind::NotGrpc {
                status,
                content_type,
            },
        }
    }

    /// Whether the request may have been processed by the proxy: `false`
    /// when it certainly was not (never sent, or refused unprocessed).
    pub fn maybe_sent(&self) -> bool {
        match &self.kind {
            Kind::Ended | Kind::Refused(_) => false,
            Kind::Failed { sent, .. } => *sent,
            // Its head went before the body failed; an answer came.
            Kind::RequestBody(_) | Kind::NotGrpc { .. } => true,
        }
    }

    /// Whether the proxy refused the request unprocessed (`REFUSED_STREAM`,
    /// or a stream above a GOAWAY's last stream id).
    pub fn is_refused(&self) -> bool {
        matches!(self.kind, Kind::Refused(_))
    }

    /// Whether the answer was no gRPC answer at all (an HTTP error status or
    /// another content type): something else than CSI Proxy answered, or
    /// the proxy is broken. Whether the request had an effect is unknown.
    pub fn is_not_grpc(&self) -> bool {
        matches!(self.kind, Kind::NotGrpc { .. })
    }

    /// Whether the connection (rather than the request itself, or the
    /// answer) failed.
    fn is_connection_failure(&self) -> bool {
        matches!(
            self.kind,
            Kind::Ended | Kind::Failed { .. } | Kind::Refused(_)
        )
    }
}

impl std::fmt::Display for ConnectionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            Kind::Ended => f.write_str("the connection to CSI Proxy had ended; nothing was sent"),
            Kind::Failed { sent: false, .. } => {
                f.write_str("the connection to CSI Proxy failed before sending")
            }
            Kind::Failed { source, .. } if source.is_reset() => {
                f.write_str("the call's stream to CSI Proxy was reset")
            }
            Kind::Failed { .. } => f.write_str("the connection to CSI Proxy broke during the call"),
            Kind::Refused(_) => f.write_str("CSI Proxy refused the call without processing it"),
            Kind::NotGrpc {
                status,
                content_type,
            } => write!(
                f,
                "the answer is not gRPC (HTTP status {status}, content type {})",
                content_type.as_deref().unwrap_or("none")
            ),
            Kind::RequestBody(_) => f.write_str("the request could not be encoded"),
        }
    }
}

impl std::error::Error for ConnectionError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            Kind::Ended | Kind::NotGrpc { .. } => None,
            Kind::Failed { source, .. } | Kind::Refused(source) => Some(source),
            Kind::RequestBody(status) => Some(status),
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

/// Whether `error` is a call's transport failure that the proxy refused
/// unprocessed (`REFUSED_STREAM`, or a stream above a GOAWAY's last stream
/// id), as this layer classified it: it alone looks inside the failure.
pub(crate) fn refused_unprocessed(error: &crate::error::Error) -> bool {
    let crate::error::Error::Transport { source, .. } = error else {
        return false;
    };
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&**source);
    while let Some(error) = cause {
        if let Some(connection) = error.downcast_ref::<ConnectionError>() {
            return connection.is_refused();
        }
        cause = error.source();
    }
    false
}
