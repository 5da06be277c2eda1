//! One place where every adapter call goes on the wire: RPC path, tracing
//! span, and the mapping of gRPC statuses to [`Error`].

use std::sync::Arc;

use tonic::client::Grpc;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Channel;
use tonic_prost::ProstCodec;
use tracing::Instrument;

use crate::capability::{Operation, Support};
use crate::error::{Code, Error, Result};
use crate::group::ApiGroup;
use crate::negotiate::Connection;
use crate::transport::{is_connection_lost, service_name, ConnectionLost};
use crate::version::ApiVersion;

/// A negotiated connection, ready for unary calls of its version.
#[derive(Clone)]
pub(crate) struct WireClient {
    grpc: Grpc<Channel>,
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
        let exchange = async move {
            grpc.ready().await.map_err(|e| self.transport_error(&e))?;
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

    /// A transport failure; [`ConnectionLost`] when the request was never
    /// sent because the connection broke earlier.
    fn transport_error(&self, error: &(dyn std::error::Error + Send + Sync + 'static)) -> Error {
        let source: crate::error::BoxedSource = if is_connection_lost(error) {
            Arc::new(ConnectionLost)
        } else {
            Arc::new(std::io::Error::other(error.to_string()))
        };
        Error::Transport {
            address: self.address.to_string(),
            source,
        }
    }

    fn status_error(&self, operation: Operation, status: tonic::Status) -> Error {
        if is_connection_lost(&status) {
            return self.transport_error(&status);
        }
        // A status with a cause was made here, by tonic, from a broken
        // connection (often with code Unknown); the proxy's own answers
        // arrive without one.
        if std::error::Error::source(&status).is_some() && status.code() != Code::Internal {
            return Error::Transport {
                address: self.address.to_string(),
                source: Arc::new(status),
            };
        }
        match status.code() {
            Code::Unavailable | Code::Cancelled => Error::Transport {
                address: self.address.to_string(),
                source: Arc::new(status),
            },
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
}

/// A short word for the tracing span; never the message, which may echo
/// request data.
fn outcome<T>(result: &Result<T>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(Error::Host { .. }) => "host_error",
        Err(Error::Timeout { .. }) => "timeout",
        Err(Error::Transport { .. }) => "transport_error",
        Err(Error::InvalidResponse { .. }) => "invalid_response",
        Err(_) => "error",
    }
}
