//! A scripted gRPC server that records the raw bytes of every request and
//! answers with whatever bytes (or status) a test scripts, so that tests can
//! check exactly what an adapter puts on the wire and feed it malformed
//! answers.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use csi_proxy_client::testing::{listen, RawCodec};
use csi_proxy_client::{ApiGroup, ApiVersion, Transport};
use tokio::sync::oneshot;
use tonic::codegen::{http, Body, BoxFuture, Service, StdError};
use tonic::server::{Grpc, UnaryService};
use tonic::Status;

/// What the server answers to a request path.
pub type Script = Arc<dyn Fn(&str) -> Result<Vec<u8>, Status> + Send + Sync>;

/// One request: its gRPC path and its protobuf payload.
#[derive(Clone, Debug, PartialEq)]
pub struct RawRequest {
    pub path: String,
    pub body: Vec<u8>,
}

pub struct RawServer {
    requests: Arc<Mutex<Vec<RawRequest>>>,
    script: Arc<Mutex<Script>>,
    _stop: oneshot::Sender<()>,
}

impl RawServer {
    /// Serves the endpoint of `group` `version`; answers every request with
    /// an empty message until scripted otherwise.
    pub async fn start(transport: &Transport, group: ApiGroup, version: ApiVersion) -> Self {
        let incoming = listen(transport, group, version).await.expect("listen");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let script: Arc<Mutex<Script>> = Arc::new(Mutex::new(Arc::new(|_| Ok(Vec::new()))));
        let service = RawService {
            requests: requests.clone(),
            script: script.clone(),
        };
        let routes: tonic::service::Routes = tonic::service::Routes::default()
            .into_axum_router()
            .fallback_service(service)
            .into();
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_routes(routes)
                .serve_with_incoming_shutdown(incoming, async {
                    let _ = stopped.await;
                })
                .await;
        });
        Self {
            requests,
            script,
            _stop: stop,
        }
    }

    /// Answers every request with `script(path)`.
    pub fn script(&self, script: impl Fn(&str) -> Result<Vec<u8>, Status> + Send + Sync + 'static) {
        *self.script.lock().unwrap() = Arc::new(script);
    }

    /// Answers every request with `message`.
    pub fn reply(&self, message: impl prost::Message) {
        let bytes = message.encode_to_vec();
        self.script(move |_| Ok(bytes.clone()));
    }

    /// Answers every request with raw `bytes`.
    pub fn reply_bytes(&self, bytes: &[u8]) {
        let bytes = bytes.to_vec();
        self.script(move |_| Ok(bytes.clone()));
    }

    pub fn requests(&self) -> Vec<RawRequest> {
        self.requests.lock().unwrap().clone()
    }

    /// The only request so far.
    pub fn only_request(&self) -> RawRequest {
        let requests = self.requests();
        assert_eq!(requests.len(), 1, "{requests:?}");
        requests.into_iter().next().unwrap()
    }
}

#[derive(Clone)]
struct RawService {
    requests: Arc<Mutex<Vec<RawRequest>>>,
    script: Arc<Mutex<Script>>,
}

impl<B> Service<http::Request<B>> for RawService
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
        let handler = Handler {
            path: request.uri().path().to_owned(),
            requests: self.requests.clone(),
            script: self.script.lock().unwrap().clone(),
        };
        Box::pin(async move { Ok(Grpc::new(RawCodec).unary(handler, request).await) })
    }
}

struct Handler {
    path: String,
    requests: Arc<Mutex<Vec<RawRequest>>>,
    script: Script,
}

impl UnaryService<Vec<u8>> for Handler {
    type Response = Vec<u8>;
    type Future = BoxFuture<tonic::Response<Vec<u8>>, Status>;

    fn call(&mut self, request: tonic::Request<Vec<u8>>) -> Self::Future {
        self.requests.lock().unwrap().push(RawRequest {
            path: self.path.clone(),
            body: request.into_inner(),
        });
        let answer = (self.script)(&self.path).map(tonic::Response::new);
        Box::pin(async move { answer })
    }
}
