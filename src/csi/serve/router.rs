//! The endpoint's services as one tower service, routed by the path's
//! service name, with a cap on the calls that run at once: one for the
//! Node calls, and a smaller one of its own for Identity's.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::sync::Semaphore;
use tonic::body::Body;
use tonic::codegen::http;
use tonic::server::NamedService;
use tower::util::BoxCloneSyncService;
use tower::{Service, ServiceExt};
use tracing::instrument::{Instrument, WithSubscriber};

use crate::csi::driver::NodeDriver;
use crate::csi::service::NodeService;
use crate::csi::v1::identity_server;
use crate::Status;

/// The CSI Node calls an endpoint runs at once; more wait for a place
/// (Identity calls have places of their own, [`MAX_IDENTITY_CALLS`]). A
/// call goes on when its caller stops waiting (kubelet's deadline), and
/// keeps its place until its work ends; [`serve`](super::serve) waits for
/// it when it stops, within [`SHUTDOWN_DEADLINE`](super::SHUTDOWN_DEADLINE).
/// kubelet makes a few per volume, so a node at its volume limit stays far
/// below it; a client that floods the endpoint queues behind it.
pub const MAX_CONCURRENT_CALLS: usize = 64;

/// The Identity calls (`GetPluginInfo`, `GetPluginCapabilities`, `Probe`)
/// an endpoint runs at once; more wait for a place, in turn. Their places
/// are not the Node calls' ([`MAX_CONCURRENT_CALLS`]): kubelet's
/// registration and the liveness probe get through however busy the Node
/// calls are. An Identity call does no work on the host, and answers
/// within moments (a `Probe` while the proxy is not ready looks for it,
/// 2 s at most, a look shared by the probes at once); its legitimate
/// callers (node-driver-registrar, the liveness probe) make one at a time.
/// One beyond the cap waits rather than being refused: a short burst then
/// delays a probe instead of failing it, and a flood still holds no more
/// than these places (the waiting calls are bounded by the connections
/// and their streams). A call whose caller left gives its place back.
pub const MAX_IDENTITY_CALLS: usize = 8;

/// One gRPC service of the endpoint.
type Route = BoxCloneSyncService<http::Request<Body>, http::Response<Body>, Infallible>;

/// The gRPC services served on one endpoint: the node's Identity and
/// Node (`Services::from(node_service)`), and any other, such as a
/// Controller ([`with_service`](Self::with_service)). A call to a service that is not there is
/// `UNIMPLEMENTED`.
#[derive(Clone, Default)]
pub struct Services {
    routes: Vec<(&'static str, Route)>,
}

impl Services {
    /// No service yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// With `service` (a generated `*Server`, such as
    /// [`ControllerServer`](crate::csi::v1::controller_server::ControllerServer)),
    /// served under its name.
    pub fn with_service<S>(mut self, service: S) -> Self
    where
        S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
            + NamedService
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
    {
        self.routes
            .push((S::NAME, BoxCloneSyncService::new(service)));
        self
    }
}

impl<D: NodeDriver> From<NodeService<D>> for Services {
    fn from(node: NodeService<D>) -> Self {
        Services::new()
            .with_service(node.identity_server())
            .with_service(node.node_server())
    }
}

impl fmt::Debug for Services {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.routes.iter().map(|(name, _)| *name).collect();
        f.debug_struct("Services").field("served", &names).finish()
    }
}

/// The services as one tower service: by the path's service name, at
/// most [`MAX_CONCURRENT_CALLS`] Node (and other non-Identity) calls at
/// once, each counted until its work ends, whether or not its caller
/// still waits; and at most [`MAX_IDENTITY_CALLS`] Identity calls.
#[derive(Clone)]
pub(super) struct Router {
    routes: Arc<[(&'static str, Route)]>,
    /// The places of the Node calls: never closed.
    node: Arc<Semaphore>,
    /// How many there are.
    node_places: u32,
    /// The places of the Identity calls: never closed.
    identity: Arc<Semaphore>,
}

impl Router {
    /// `services` with the caps' places.
    pub(super) fn new(services: Services) -> Self {
        Self::with_places(services, MAX_CONCURRENT_CALLS, MAX_IDENTITY_CALLS)
    }

    fn with_places(services: Services, node: usize, identity: usize) -> Self {
        Self {
            routes: services.routes.into(),
            node: Arc::new(Semaphore::new(node)),
            node_places: u32::try_from(node).unwrap_or(u32::MAX),
            identity: Arc::new(Semaphore::new(identity)),
        }
    }

    /// Completes once no Node call is at work (every place is back), for
    /// the calls whose callers left.
    pub(super) fn calls_ended(&self) -> impl Future<Output = ()> + Send + 'static {
        let (places, all) = (self.node.clone(), self.node_places);
        async move {
            // Never closed: the places come back once the work ends.
            let _all_back = places.acquire_many(all).await;
        }
    }

    fn route(&self, service: Option<&str>) -> Option<Route> {
        let found = self.routes.iter().find(|(name, _)| Some(*name) == service);
        found.map(|(_, route)| route.clone())
    }
}

type Answer = Pin<Box<dyn Future<Output = Result<http::Response<Body>, Infallible>> + Send>>;

impl Service<http::Request<Body>> for Router {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Answer;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Answer {
        let path = request.uri().path();
        let service = path
            .strip_prefix('/')
            .and_then(|rest| rest.split_once('/'))
            .map(|(service, _)| service);
        match self.route(service) {
            Some(route) if service == Some(identity_server::SERVICE_NAME) => {
                Box::pin(identity_call(route, request, self.identity.clone()))
            }
            Some(route) => Box::pin(node_call(route, request, self.node.clone())),
            None => {
                let status = Status::unimplemented(format!("{path} is not served here"));
                Box::pin(async move { Ok(status.into_http()) })
            }
        }
    }
}

/// An Identity call, once it has a place of Identity's: it looks for the
/// proxy at most, so a caller that leaves may drop it, and its place.
async fn identity_call(
    route: Route,
    request: http::Request<Body>,
    places: Arc<Semaphore>,
) -> Result<http::Response<Body>, Infallible> {
    // Never closed, so a place always comes.
    let _place = places.acquire_owned().await;
    route.oneshot(request).await
}

/// A Node call, once it has a place: it runs to its end in a task of its
/// own, which holds the place, since a call whose caller left (kubelet's
/// deadline) still works on the host, so it still counts.
async fn node_call(
    route: Route,
    request: http::Request<Body>,
    places: Arc<Semaphore>,
) -> Result<http::Response<Body>, Infallible> {
    // Never closed, so a place always comes.
    let place = places.acquire_owned().await;
    let work = async move {
        let answer = route.oneshot(request).await;
        drop(place);
        answer
    };
    let call = tokio::spawn(work.in_current_span().with_current_subscriber());
    call.await.unwrap_or_else(|failed| {
        tracing::error!(error = %failed, "a CSI call stopped before it answered");
        let status = Status::internal("the call stopped before it answered");
        Ok(status.into_http())
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::sync::Notify;
    use tower::service_fn;

    use super::*;

    /// A service whose calls each wait for a release, counting the calls
    /// that began.
    #[derive(Clone)]
    struct Gate {
        release: Arc<Notify>,
        started: Arc<Semaphore>,
    }

    impl Gate {
        fn new() -> Self {
            Self {
                release: Arc::new(Notify::new()),
                started: Arc::new(Semaphore::new(0)),
            }
        }

        fn route(&self) -> Route {
            let gate = self.clone();
            BoxCloneSyncService::new(service_fn(move |_: http::Request<Body>| {
                let gate = gate.clone();
                async move {
                    gate.started.add_permits(1);
                    gate.release.notified().await;
                    Ok::<_, Infallible>(http::Response::new(Body::empty()))
                }
            }))
        }

        /// Waits until one more call began.
        async fn started(&self) {
            self.started.acquire().await.unwrap().forget();
        }

        /// Whether one more call begins within a short while: long enough
        /// for a call that could begin to do so.
        async fn one_more_starts(&self) -> bool {
            let next = tokio::time::timeout(Duration::from_millis(200), self.started());
            next.await.is_ok()
        }

        fn release_one(&self) {
            self.release.notify_one();
        }
    }

    /// A router of `node` and `identity`, with one place each.
    fn router(node: &Gate, identity: &Gate) -> Router {
        let routes = vec![
            ("csi.v1.Node", node.route()),
            (identity_server::SERVICE_NAME, identity.route()),
        ];
        Router::with_places(Services { routes }, 1, 1)
    }

    fn call(path: &str) -> http::Request<Body> {
        let request = http::Request::builder().uri(path);
        request.body(Body::empty()).unwrap()
    }

    const STAGE: &str = "/csi.v1.Node/NodeStageVolume";
    const PROBE: &str = "/csi.v1.Identity/Probe";

    fn is_ok(answer: Result<Result<http::Response<Body>, Infallible>, tokio::task::JoinError>) {
        assert_eq!(answer.unwrap().unwrap().status(), http::StatusCode::OK);
    }

    #[tokio::test]
    async fn a_call_whose_caller_left_keeps_its_place_until_its_work_ends() {
        let (node, identity) = (Gate::new(), Gate::new());
        let mut router = router(&node, &identity);
        // The first call starts, then its caller gives up on it.
        let first = tokio::spawn(router.call(call(STAGE)));
        node.started().await;
        first.abort();
        let _ = first.await;
        // Its work goes on: the second call waits for the place.
        let second = tokio::spawn(router.call(call(STAGE)));
        assert!(
            !node.one_more_starts().await,
            "the second call started while the first still ran"
        );
        // The first one's work ends: the second runs, and answers.
        node.release_one();
        node.started().await;
        node.release_one();
        is_ok(second.await);
    }

    #[tokio::test]
    async fn identity_calls_have_places_of_their_own() {
        let (node, identity) = (Gate::new(), Gate::new());
        let mut router = router(&node, &identity);
        // A node call holds the only node place...
        let stage = tokio::spawn(router.call(call(STAGE)));
        node.started().await;
        // ... and a probe still runs, in Identity's only place...
        let first = tokio::spawn(router.call(call(PROBE)));
        identity.started().await;
        // ... where a second one waits...
        let second = tokio::spawn(router.call(call(PROBE)));
        assert!(!identity.one_more_starts().await, "two probes at once");
        // ... until the first ends.
        identity.release_one();
        is_ok(first.await);
        identity.started().await;
        identity.release_one();
        is_ok(second.await);
        node.release_one();
        is_ok(stage.await);
    }

    #[tokio::test]
    async fn an_identity_call_whose_caller_left_gives_its_place_back() {
        let (node, identity) = (Gate::new(), Gate::new());
        let mut router = router(&node, &identity);
        let left = tokio::spawn(router.call(call(PROBE)));
        identity.started().await;
        left.abort();
        let _ = left.await;
        let next = tokio::spawn(router.call(call(PROBE)));
        identity.started().await;
        identity.release_one();
        is_ok(next.await);
    }
}
