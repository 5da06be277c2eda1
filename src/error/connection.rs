//! The transport's failure of a call's channel, and what became of the
//! request ([`Delivery`]), recorded when the transport builds it. Here,
//! beside [`Error`](crate::Error), so that [`Error::delivery`](crate::Error::delivery)
//! can read it among a transport failure's causes without the error
//! knowing the transport; public as `transport::ConnectionError`.

use super::Delivery;

/// The connection to the proxy failed under a request, or the request
/// could not be sent.
///
/// [`delivery`](Self::delivery) tells what became of the request:
/// [`Delivery::NotSent`] when it certainly did not leave (the connection
/// had already ended, or h2 did not take the request),
/// [`Delivery::RefusedUnprocessed`] when the proxy refused it unprocessed,
/// else [`Delivery::MayHaveRun`]. [`maybe_sent`](Self::maybe_sent) tells
/// whether it may have been processed.
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
    /// The connection had ended before the request: nothing was sent.
    pub(crate) fn ended() -> Self {
        Self { kind: Kind::Ended }
    }

    /// h2 did not take the request: nothing was sent.
    pub(crate) fn not_sent(source: h2::Error) -> Self {
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
    pub(crate) fn during_call(source: h2::Error) -> Self {
        let refused = source.is_remote()
            && (source.is_go_away() || source.reason() == Some(h2::Reason::REFUSED_STREAM));
        if refused {
            Self::refused(source)
        } else {
            Self {
                kind: Kind::Failed { sent: true, source },
            }
        }
    }

    /// The proxy refused the request unprocessed, as `source` says.
    pub(crate) fn refused(source: h2::Error) -> Self {
        Self {
            kind: Kind::Refused(source),
        }
    }

    pub(crate) fn request_body(status: tonic::Status) -> Self {
        Self {
            kind: Kind::RequestBody(status),
        }
    }

    pub(crate) fn not_grpc(status: u16, content_type: Option<String>) -> Self {
        Self {
            kind: Kind::NotGrpc {
                status,
                content_type,
            },
        }
    }

    /// What became of the request: not sent, refused unprocessed by the
    /// proxy, or sent (and so it may have run).
    pub fn delivery(&self) -> Delivery {
        match &self.kind {
            Kind::Ended | Kind::Failed { sent: false, .. } => Delivery::NotSent,
            Kind::Refused(_) => Delivery::RefusedUnprocessed,
            Kind::Failed { sent: true, .. } => Delivery::MayHaveRun,
            // Its head went before the body failed; an answer came.
            Kind::RequestBody(_) | Kind::NotGrpc { .. } => Delivery::MayHaveRun,
        }
    }

    /// Whether the request may have been processed by the proxy: `false`
    /// when it certainly was not (never sent, or refused unprocessed).
    /// The same as `self.delivery().may_have_run()`.
    pub fn maybe_sent(&self) -> bool {
        self.delivery().may_have_run()
    }

    /// Whether the proxy refused the request unprocessed (`REFUSED_STREAM`,
    /// or a stream above a GOAWAY's last stream id):
    /// [`Delivery::RefusedUnprocessed`].
    pub fn is_refused(&self) -> bool {
        self.delivery() == Delivery::RefusedUnprocessed
    }

    /// Whether the answer was no gRPC answer at all (an HTTP error status or
    /// another content type): something else than CSI Proxy answered, or
    /// the proxy is broken. Whether the request had an effect is unknown.
    pub fn is_not_grpc(&self) -> bool {
        matches!(self.kind, Kind::NotGrpc { .. })
    }

    /// Whether the connection (rather than the request itself, or the
    /// answer) failed.
    pub(crate) fn is_connection_failure(&self) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failure_records_its_delivery() {
        let reset = || h2::Error::from(h2::Reason::CANCEL);
        let cases = [
            (ConnectionError::ended(), Delivery::NotSent),
            (ConnectionError::not_sent(reset()), Delivery::NotSent),
            // A reset the client made is no refusal by the proxy.
            (
                ConnectionError::during_call(h2::Error::from(h2::Reason::REFUSED_STREAM)),
                Delivery::MayHaveRun,
            ),
            (ConnectionError::during_call(reset()), Delivery::MayHaveRun),
            (
                ConnectionError::refused(h2::Error::from(h2::Reason::REFUSED_STREAM)),
                Delivery::RefusedUnprocessed,
            ),
            (
                ConnectionError::request_body(tonic::Status::internal("encode")),
                Delivery::MayHaveRun,
            ),
            (
                ConnectionError::not_grpc(502, Some("text/html".into())),
                Delivery::MayHaveRun,
            ),
        ];
        for (error, delivery) in cases {
            assert_eq!(error.delivery(), delivery, "{error:?}");
            assert_eq!(error.maybe_sent(), delivery.may_have_run(), "{error:?}");
            assert_eq!(
                error.is_refused(),
                delivery == Delivery::RefusedUnprocessed,
                "{error:?}"
            );
        }
    }
}
