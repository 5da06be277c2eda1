//! A gRPC server that records the raw bytes of every request and answers
//! with whatever bytes (or status) a test scripts.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use super::{listen, RawCodec};
use crate::error::Result as SdkResult;
use crate::group::ApiGroup;
use crate::transport::Transport;
use crate::version::ApiVersion;
use tokio::sync::oneshot;
use tonic::codegen::{http, Body, BoxFuture, Service, StdError};
use tonic::server::{Grpc, UnaryService};
use tonic::Status;

/// What a [`ScriptedServer`] answers to a request path: the bytes of the
/// response message, or a status.
pub type Script = Arc<dyn Fn(&str) -> Result<Vec<u8>, Status> + Send + Sync>;

/// One request a [`ScriptedServer`] received.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedRequest {
    /// Its gRPC path, `/<package>.<Service>/<Method>`.
    pub path: String,
    /// Its protobuf payload.
    pub body: Vec<u8>,
}

/// Serves one group-version's endpoint and answers any request with what
/// its script says, whatever the method: to check exactly what a client
/// puts on the wire, and to feed it answers a broken proxy would send.
/// The endpoint closes when the server is dropped.
///
/// ```
/// use csi_proxy_client::testing::{LocalEndpoints, ScriptedServer};
/// use csi_proxy_client::{ApiGroup, ApiVersion, CsiProxy, Error};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> csi_proxy_client::Result<()> {
/// let endpoints = LocalEndpoints::new()?;
/// let server = ScriptedServer::start(&endpoints.transport(), ApiGroup::System, ApiVersion::V1ALPHA1)
///     .await?;
/// // Field 1 of the answer should be a string; a varint is not one.
/// server.reply_bytes(&[0x08, 0x01]);
/// let proxy = CsiProxy::builder()
///     .transport(endpoints.transport())
///     .groups([ApiGroup::System])
///     .connect()
///     .await?;
/// let answer = proxy.system()?.get_bios_serial_number().await;
/// assert!(matches!(answer, Err(Error::InvalidResponse { .. })), "{answer:?}");
/// assert_eq!(server.requests().len(), 1);
/// # Ok(()) }
/// ```
pub struct ScriptedServer {
    requests: Arc<Mutex<Vec<RecordedRequest>>>,
    script: Arc<Mutex<Script>>,
    _stop: oneshot::Sender<()>,
}

impl ScriptedServer {
    /// Serves the endpoint of `group` `version` on `transport`; answers
    /// every request with an empty message until scripted otherwise. A
    /// version the group does not have is an invalid argument.
    pub async fn start(
        transport: &Transport,
        group: ApiGroup,
        version: ApiVersion,
    ) -> SdkResult<Self> {
        if !group.has_version(version) {
            return Err(crate::Error::invalid_argument(
                "version",
                format!("CSI Proxy has no {group} {version}"),
            ));
        }
        let incoming = listen(transport, group, version).await?;
        let requests = Arc::new(Mutex::new(Vec::new()));
        let script: Arc<Mutex<Script>> = Arc::new(Mutex::new(Arc::new(|_| Ok(Vec::new()))));
        let service = ScriptedService {
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
        Ok(Self {
            requests,
            script,
            _stop: stop,
        })
    }

    /// Answers every request with `script(path)`, `path` being its gRPC
    /// path.
    pub fn script(&self, script: impl Fn(&str) -> Result<Vec<u8>, Status> + Send + Sync + 'static) {
        *lock(&self.script) = Arc::new(script);
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

    /// The requests so far, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.requests).clone()
    }

    /// The only request so far.
    ///
    /// # Panics
    ///
    /// When there was not exactly one: this is a test's assertion.
    pub fn only_request(&self) -> RecordedRequest {
        let requests = self.requests();
        assert_eq!(requests.len(), 1, "{requests:?}");
        requests.into_iter().next().unwrap()
    }
}

#[derive(Clone)]
struct ScriptedService {
    requests: Arc<Mutex<Vec<RecordedRequest>>>,
    script: Arc<Mutex<Script>>,
}

impl<B> Service<http::Request<B>> for ScriptedService
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
            script: lock(&self.script).clone(),
        };
        Box::pin(async move { Ok(Grpc::new(RawCodec).unary(handler, request).await) })
    }
}

struct Handler {
    path: String,
    requests: Arc<Mutex<Vec<RecordedRequest>>>,
    script: Script,
}

impl UnaryService<Vec<u8>> for Handler {
    type Response = Vec<u8>;
    type Future = BoxFuture<tonic::Response<Vec<u8>>, Status>;

    fn call(&mut self, request: tonic::Request<Vec<u8>>) -> Self::Future {
        lock(&self.requests).push(RecordedRequest {
            path: self.path.clone(),
            body: request.into_inner(),
        });
        let answer = (self.script)(&self.path).map(tonic::Response::new);
        Box::pin(async move { answer })
    }
}

/// The data behind `mutex`: a test that panicked while holding it left
/// nothing half-written that matters here.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
