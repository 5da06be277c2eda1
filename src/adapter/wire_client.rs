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
use crate::transport::{ChannelFailure, PeerStatus, ProxyChannel};
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
    /// See [`Connection::newer_versions_absent`].
    newer_absent: bool,
}

impl WireClient {
    pub fn new(connection: &Connection) -> Self {
        let (group, version) = (connection.group(), connection.version());
        let service = group.service_name();
        let mut paths = vec![None; Operation::ALL.len()];
        for &op in Operation::ALL {
            if let (true, Support::Native(rpc)) = (op.group() == group, op.support(version)) {
                let path = format!("/{version}.{service}/{rpc}");
                paths[op as usize] =
                    Some(PathAndQuery::from_maybe_shared(path).expect("valid path"));
            }
        }
        let channel = connection.channel();
        let max_response_size = channel.max_response_size();
        Self {
            grpc: Grpc::new(channel).max_decoding_message_size(max_response_size),
            group,
            version,
            address: Arc::from(connection.address()),
            paths: paths.into(),
            newer_absent: connection.newer_versions_absent(),
        }
    }

    /// Whether negotiation found a newer version of the group absent: the
    /// node's proxy is older than the release that brought it.
    pub fn newer_versions_absent(&self) -> bool {
        self.newer_absent
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
        let peer = PeerStatus::new();
        let mut request = tonic::Request::new(request);
        request.extensions_mut().insert(peer.clone());
        // No `ready()` first: a `ProxyChannel` is always ready, and reports a
        // closed connection per request, with whether it was sent.
        let exchange = async move {
            grpc.unary(request, path, ProstCodec::<Req, Resp>::default())
                .await
                .map(tonic::Response::into_inner)
                .map_err(|status| self.status_error(operation, status, peer.code()))
        };
        let result = exchange.instrument(span.clone()).await;
        span.record("outcome", outcome(&result));
        result
    }

    /// The error for a status, by where it came from, never by its text:
    /// - made from a failed connection (as the transport tells, through
    ///   [`ChannelFailure`]): a transport failure, which says whether the request may have been
    ///   processed; an answer that is no gRPC answer at all is an invalid
    ///   response;
    /// - the proxy's own `grpc-status` (`peer`, as the channel saw it): the
    ///   host's failure, or for `Unavailable` and `Cancelled` (a proxy
    ///   shutting down) a transport failure;
    /// - anything else was made up by tonic from an answer it could not use
    ///   (too large, broken framing, no message, no status): an invalid
    ///   response, whose outcome is unknown.
    fn status_error(
        &self,
        operation: Operation,
        status: tonic::Status,
        peer: Option<Code>,
    ) -> Error {
        match ChannelFailure::of(&status) {
            Some(ChannelFailure::Connection { maybe_sent }) => {
                return self.transport_error(operation, maybe_sent, status)
            }
            Some(ChannelFailure::NotGrpc(reason)) => {
                return Error::invalid_response(operation, reason)
            }
            None => {}
        }
        match status.code() {
            code if peer != Some(code) || code == Code::Ok => Error::invalid_response(
                operation,
                format!("{code:?} made by the client: {}", status.message()),
            ),
            Code::Unavailable | Code::Cancelled => self.transport_error(operation, true, status),
            code => Error::host(operation, code, status.message()),
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
