//! One place where every adapter call goes on the wire: RPC path, deadline,
//! tracing span, and the mapping of gRPC statuses to [`Error`].

use std::sync::Arc;
use std::time::Duration;

use tonic::client::Grpc;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Channel;
use tonic_prost::ProstCodec;
use tracing::Instrument;

use crate::capability::{Operation, Support};
use crate::error::{Code, Error, Result};
use crate::group::ApiGroup;
use crate::negotiate::Connection;
use crate::transport::service_name;
use crate::version::ApiVersion;

/// Default deadlines of calls, by kind of operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Deadlines {
    pub read: Duration,
    pub mutation: Duration,
}

impl Default for Deadlines {
    fn default() -> Self {
        Self {
            read: Duration::from_secs(30),
            mutation: Duration::from_secs(120),
        }
    }
}

impl Deadlines {
    fn of(&self, operation: Operation) -> Duration {
        if operation.is_mutating() {
            self.mutation
        } else {
            self.read
        }
    }
}

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
    deadlines: Deadlines,
}

impl WireClient {
    pub fn new(connection: &Connection, deadlines: Deadlines) -> Self {
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
            deadlines,
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

    /// Sends `request` as `operation`'s RPC and waits for the response, at
    /// most the operation's deadline. Fails with [`Error::Unsupported`],
    /// sending nothing, when this version has no such RPC.
    pub async fn call<Req, Resp>(&self, operation: Operation, request: Req) -> Result<Resp>
    where
        Req: prost::Message + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        let Some(path) = self.paths[operation as usize].clone() else {
            return Err(self.unsupported(operation));
        };
        let deadline = self.deadlines.of(operation);
        let span = tracing::debug_span!(
            "csi_proxy_call",
            group = %self.group,
            version = %self.version,
            method = operation.name(),
            outcome = tracing::field::Empty,
        );
        let mut grpc = self.grpc.clone();
        let exchange = async move {
            grpc.ready().await.map_err(|e| Error::Transport {
                address: self.address.to_string(),
                source: Arc::from(e),
            })?;
            let mut request = tonic::Request::new(request);
            request.set_timeout(deadline);
            grpc.unary(request, path, ProstCodec::<Req, Resp>::default())
                .await
                .map(tonic::Response::into_inner)
                .map_err(|status| self.status_error(operation, deadline, status))
        };
        let result = match tokio::time::timeout(deadline, exchange)
            .instrument(span.clone())
            .await
        {
            Ok(result) => result,
            Err(_) => Err(timeout(operation, deadline)),
        };
        span.record("outcome", outcome(&result));
        result
    }

    fn status_error(
        &self,
        operation: Operation,
        deadline: Duration,
        status: tonic::Status,
    ) -> Error {
        match status.code() {
            Code::Unavailable | Code::Cancelled => Error::Transport {
                address: self.address.to_string(),
                source: Arc::new(status),
            },
            Code::DeadlineExceeded => timeout(operation, deadline),
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

fn timeout(operation: Operation, after: Duration) -> Error {
    Error::Timeout {
        operation: format!("{} {}", operation.group(), operation.name()),
        after,
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
