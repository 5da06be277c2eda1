//! One place where every adapter call goes on the wire: RPC path, tracing
//! span, and the mapping of gRPC statuses to [`Error`].

use std::sync::Arc;

use tonic::client::Grpc;
use tonic::codegen::http::uri::PathAndQuery;
use tonic_prost::ProstCodec;
use tracing::Instrument;

use crate::capability::{Operation, Support};
use crate::error::{outcome, Code, Error, Result};
use crate::group::ApiGroup;
use crate::negotiate::Connection;
use crate::transport::{service_name, ConnectionError, ProxyChannel};
use crate::version::ApiVersion;

/// A negotiated connection, ready for unary calls of its version.
#[derive(Clone)]
pub(crate) struct WireClient {
    grpc: Grpc<ProxyChannel>,
    group: ApiGroup,
    version: ApiVersion,
    address: Arc<str>,
    /// `/<version>.<Service>/<Rpc>` per operation this version serves
    /// natively, indexed by `Operation as usize`; built once, cloned per
    /// call without allocating.
    paths: Arc<[Option<PathAndQuery>]>,
}

impl WireClient {
    pub fn new(connection: &Connection) -> Self {
        let (group, version) = (connection.group(), connection.version());
        let service = service_name(group);
        let mut paths = vec![None; Operation::ALL.len()];
        for &op in Operation::ALL {
            if let (true, Support::Native(rpc)) = (op.group() == group, op.support(version)) {
                let path = format!("/{version}.{service}/{rpc}");
                paths[op as usize] =
                    Some(PathAndQuery::from_maybe_shared(path).expect("valid path"));
            }
        }
        Self {
            grpc: Grpc::new(connection.channel()),
            group,
            version,
            address: Arc::from(connection.address()),
            paths: paths.into(),
        }
    }

    /// Whether this version serves `operation` with an RPC of its own.
    pub fn is_native(&self, operation: Operation) -> bool {
        self.paths[operation as usize].is_some()
    }

    /// The error for an operation this version cannot serve.
    pub fn unsupported(&self, operation: Operation) -> Error {
        Error::Unsupported {
            operation,
            served: self.version,
            // Every operation is served by some version of its group.
            needed: operation.available_since().unwrap_or(self.version),
        }
    }

    /// Sends `request` as `operation`'s RPC and waits for the response.
    /// Fails with [`Error::Unsupported`], sending nothing, when this version
    /// has no such RPC. Deadlines and retries are the caller's (the
    /// handles of [`CsiProxy`](crate::CsiProxy)).
    pub async fn call<Req, Resp>(&self, operation: Operation, request: Req) -> Result<Resp>
    where
        Req: prost::Message + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        let Some(path) = self.paths[operation as usize].clone() else {
            return Err(self.unsupported(operation));
        };
        let span = tracing::debug_span!(
            "csi_proxy_call",
            group = %self.group,
            version = %self.version,
            method = operation.name(),
            outcome = tracing::field::Empty,
        );
        let mut grpc = self.grpc.clone();
        // No `ready()` first: a `ProxyChannel` is always ready, and reports a
        // closed connection per request, with whether it was sent.
        let exchange = async move {
            grpc.unary(
                tonic::Request::new(request),
                path,
                ProstCodec::<Req, Resp>::default(),
            )
            .await
            .map(tonic::Response::into_inner)
            .map_err(|status| self.status_error(operation, status))
        };
        let result = exchange.instrument(span.clone()).await;
        span.record("outcome", outcome(&result));
        result
    }

    /// The error for a status. Whether the connection failed is decided by
    /// what caused the status (an I/O or h2 error, or the channel's
    /// own [`ConnectionError`]), never by its code: which code tonic gives a
    /// reset stream depends on tonic's cargo features, and the proxy's own
    /// answers arrive without a cause.
    fn status_error(&self, operation: Operation, status: tonic::Status) -> Error {
        if let Some(maybe_sent) = connection_failure(&status) {
            return self.transport_error(operation, maybe_sent, status);
        }
        match status.code() {
            // A proxy that is shutting down may answer so itself.
            Code::Unavailable | Code::Cancelled => self.transport_error(operation, true, status),
            // tonic's own report of a response it could not decode.
            Code::Internal if status.message().starts_with("failed to decode") => {
                Error::invalid_response(operation, status.message())
            }
            code => Error::Host {
                operation,
                code,
                message: status.message().to_owned(),
            },
        }
    }

    fn transport_error(
        &self,
        operation: Operation,
        maybe_sent: bool,
        status: tonic::Status,
    ) -> Error {
        Error::Transport {
            address: self.address.to_string(),
            operation: Some(operation),
            maybe_sent,
            source: Arc::new(status),
        }
    }
}

/// If `status` was made from a failed connection: whether the request may
/// have been sent.
fn connection_failure(status: &tonic::Status) -> Option<bool> {
    let mut cause = std::error::Error::source(status);
    while let Some(error) = cause {
        if let Some(connection) = error.downcast_ref::<ConnectionError>() {
            return connection
                .is_connection_failure()
                .then(|| connection.maybe_sent());
        }
        if error.is::<h2::Error>() || error.is::<std::io::Error>() {
            return Some(true);
        }
        cause = error.source();
    }
    None
}
