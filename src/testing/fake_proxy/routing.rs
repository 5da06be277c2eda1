//! How a fake proxy routes a request: from an endpoint's RPC path to its
//! group's operation, and to the server of the endpoint's layout (each
//! layout's server is generated from the catalogue, in
//! `<group>/<layout>.rs`, and so is `routes_for`, which picks it, in
//! `routing/layouts.rs`).

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tonic::codegen::{http, Body, BoxFuture, Service, StdError};
use tonic::server::{Grpc, UnaryService};
use tonic::service::Routes;
use tonic::Status;

use super::server::WireServer;
use super::timeline::Timeline;
use super::Call;
use crate::capability::GroupOperation;
use crate::group::ApiGroup;
use crate::testing::raw_codec::RawCodec;
use crate::version::ApiVersion;

mod layouts;

pub(super) use layouts::routes_for;

/// One served group-version, before its server is known.
pub(super) struct Endpoint {
    pub group: ApiGroup,
    pub version: ApiVersion,
    pub calls: Arc<Mutex<Vec<Call>>>,
    pub timeline: Arc<Timeline>,
}

impl Endpoint {
    /// Every request of the endpoint routed to `server`, which handles the
    /// operations `O` of the endpoint's group.
    fn routes<O: GroupOperation>(self, server: impl WireServer<O> + 'static) -> Routes {
        let dispatch = Dispatch {
            group: self.group,
            version: self.version,
            prefix: Arc::from(format!("/{}.{}/", self.version, self.group.service_name())),
            server: Arc::new(server),
            calls: self.calls,
            timeline: self.timeline,
        };
        Routes::default()
            .into_axum_router()
            .fallback_service(dispatch)
            .into()
    }
}

/// Routes every request of one endpoint to its layout's server.
struct Dispatch<O> {
    group: ApiGroup,
    version: ApiVersion,
    /// `/<version>.<Service>/`
    prefix: Arc<str>,
    server: Arc<dyn WireServer<O>>,
    calls: Arc<Mutex<Vec<Call>>>,
    timeline: Arc<Timeline>,
}

impl<O> Clone for Dispatch<O> {
    fn clone(&self) -> Self {
        Self {
            group: self.group,
            version: self.version,
            prefix: self.prefix.clone(),
            server: self.server.clone(),
            calls: self.calls.clone(),
            timeline: self.timeline.clone(),
        }
    }
}

impl<O: GroupOperation, B> Service<http::Request<B>> for Dispatch<O>
where
    B: Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let rpc = request
            .uri()
            .path()
            .strip_prefix(&*self.prefix)
            .map(str::to_owned);
        let operation = (rpc.as_deref()).and_then(|rpc| O::served_as(self.version, rpc));
        if let (Some(rpc), Ok(mut calls)) = (&rpc, self.calls.lock()) {
            calls.push(Call {
                group: self.group,
                version: self.version,
                rpc: rpc.clone(),
                operation: operation.map(Into::into),
            });
        }
        let handler = Handler {
            operation,
            server: self.server.clone(),
        };
        let (timeline, began) = match &rpc {
            Some(rpc) => (Some(self.timeline.clone()), self.timeline.begin(rpc)),
            None => (None, 0),
        };
        Box::pin(async move {
            let answer = Grpc::new(RawCodec).unary(handler, request).await;
            if let Some(timeline) = timeline {
                timeline.end(began);
            }
            Ok(answer)
        })
    }
}

/// Answers one unary call.
struct Handler<O> {
    operation: Option<O>,
    server: Arc<dyn WireServer<O>>,
}

impl<O: GroupOperation> UnaryService<Vec<u8>> for Handler<O> {
    type Response = Vec<u8>;
    type Future = BoxFuture<tonic::Response<Vec<u8>>, Status>;

    fn call(&mut self, request: tonic::Request<Vec<u8>>) -> Self::Future {
        let (operation, server) = (self.operation, self.server.clone());
        Box::pin(async move {
            // Like grpc-go for a method the service does not have.
            let operation = operation.ok_or_else(|| Status::unimplemented("unknown method"))?;
            let body = request.into_inner();
            server
                .handle(operation, &body)
                .await
                .map(tonic::Response::new)
        })
    }
}
