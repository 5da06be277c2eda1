//! The endpoint's caps, over a real socket: the Node calls run at once
//! (more wait, and go on when one ends), the Identity calls' own cap, and
//! Identity getting through while every Node place is taken; the streams
//! of one connection (one more is refused); and the connections served
//! at once (one more waits in the backlog until one closes).

mod raw_h2;

use std::sync::Arc;
use std::time::Duration;

use csi_proxy_client::csi::v1::identity_client::IdentityClient;
use csi_proxy_client::csi::v1::identity_server::{Identity, IdentityServer};
use csi_proxy_client::csi::v1::node_client::NodeClient;
use csi_proxy_client::csi::v1::*;
use csi_proxy_client::csi::{
    serve, Listener, NodeDriver, ServeError, Services, Volume, VolumeKind, VolumeRequest,
    MAX_CONCURRENT_CALLS, MAX_CONNECTIONS, MAX_IDENTITY_CALLS, MAX_STREAMS_PER_CONNECTION,
};
use csi_proxy_client::mount::DiskSelector;
use csi_proxy_client::testing::ProxyRelease;
use csi_proxy_client::{Code, Status};
use tokio::sync::{oneshot, Semaphore};
use tokio::task::JoinHandle;
use tonic::transport::Channel;
use tonic::{Request, Response};

use super::{channel, stage, Node1};

/// Where calls wait until the test lets them go, counting those that
/// came.
#[derive(Clone)]
struct Gate {
    came: Arc<Semaphore>,
    go: Arc<Semaphore>,
}

impl Gate {
    fn new() -> Self {
        Self {
            came: Arc::new(Semaphore::new(0)),
            go: Arc::new(Semaphore::new(0)),
        }
    }

    /// A call's wait at the gate.
    async fn pass(&self) {
        self.came.add_permits(1);
        self.go.acquire().await.unwrap().forget();
    }

    /// Waits until `count` more calls came.
    async fn came(&self, count: u32) {
        self.came.acquire_many(count).await.unwrap().forget();
    }

    /// Whether one more call comes within a short while: long enough for
    /// one that could come to do so (not coming is what is shown).
    async fn one_more_comes(&self) -> bool {
        let next = tokio::time::timeout(Duration::from_millis(200), self.came(1));
        next.await.is_ok()
    }

    /// Lets `count` calls go.
    fn open(&self, count: usize) {
        self.go.add_permits(count);
    }
}

/// A driver whose stages wait at its gate (before any work on the host),
/// then are refused: `lun-<N>` is the disk at LUN N.
struct GatedDriver(Gate);

#[csi_proxy_client::async_trait]
impl NodeDriver for GatedDriver {
    fn name(&self) -> &str {
        "gated.csi"
    }
    fn version(&self) -> &str {
        "1.0.0"
    }
    fn kinds(&self) -> &[VolumeKind] {
        &[VolumeKind::Disk]
    }
    fn volume(&self, request: &VolumeRequest<'_>) -> Result<Volume, Status> {
        let lun = request.volume_id.strip_prefix("lun-");
        let lun = lun.ok_or_else(|| Status::not_found("not a volume of the test"))?;
        Ok(Volume::Disk(DiskSelector::lun(lun)))
    }
    async fn before_stage(&self, _: &VolumeRequest<'_>, _: &Volume) -> Result<(), Status> {
        self.0.pass().await;
        Err(Status::aborted("let go by the test"))
    }
}

/// An Identity service whose calls wait at its gate.
struct GatedIdentity(Gate);

#[csi_proxy_client::async_trait]
impl Identity for GatedIdentity {
    async fn get_plugin_info(
        &self,
        _: Request<GetPluginInfoRequest>,
    ) -> Result<Response<GetPluginInfoResponse>, Status> {
        self.0.pass().await;
        Ok(Response::new(GetPluginInfoResponse::default()))
    }
    async fn get_plugin_capabilities(
        &self,
        _: Request<GetPluginCapabilitiesRequest>,
    ) -> Result<Response<GetPluginCapabilitiesResponse>, Status> {
        self.0.pass().await;
        Ok(Response::new(GetPluginCapabilitiesResponse::default()))
    }
    async fn probe(&self, _: Request<ProbeRequest>) -> Result<Response<ProbeResponse>, Status> {
        self.0.pass().await;
        Ok(Response::new(ProbeResponse { ready: Some(true) }))
    }
}

/// `services` served on `endpoint` (its address, with the port the
/// system chose); the server stops when the sender fires.
struct Serving {
    endpoint: String,
    _stop: oneshot::Sender<()>,
    served: JoinHandle<Result<(), ServeError>>,
}

impl Serving {
    async fn start(endpoint: &str, services: Services) -> Self {
        let listener = Listener::bind(endpoint).await.unwrap();
        let endpoint = listener.endpoint().to_owned();
        let (stop, stopped) = oneshot::channel::<()>();
        let served = tokio::spawn(serve(listener, services, async {
            let _ = stopped.await;
        }));
        Self {
            endpoint,
            _stop: stop,
            served,
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.served.abort();
    }
}

/// Stages `lun-<N>` for each N of `luns`, a task each, on `channel`:
/// each task's answer is its code.
fn stages(channel: &Channel, luns: std::ops::Range<usize>) -> Vec<JoinHandle<Code>> {
    let stage_one = |lun: usize| {
        let mut client = NodeClient::new(channel.clone());
        tokio::spawn(async move {
            let answer = client.node_stage_volume(stage(&format!("lun-{lun}"))).await;
            answer.err().map_or(Code::Ok, |status| status.code())
        })
    };
    luns.map(stage_one).collect()
}

/// Every Node place taken by a stage held at `gate`: the stages, spread
/// on two connections (each under the streams' cap).
async fn every_node_place_taken(endpoint: &str, gate: &Gate) -> Vec<JoinHandle<Code>> {
    let half = MAX_CONCURRENT_CALLS / 2;
    let mut held = stages(&channel(endpoint).await, 0..half);
    held.extend(stages(&channel(endpoint).await, half..MAX_CONCURRENT_CALLS));
    gate.came(MAX_CONCURRENT_CALLS as u32).await;
    held
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_call_past_the_cap_waits_and_goes_on_when_one_ends() {
    let node = Node1::new(ProxyRelease::LATEST).await;
    let gate = Gate::new();
    let service = node.service(GatedDriver(gate.clone()));
    let serving = Serving::start("tcp://127.0.0.1:0", service.into()).await;
    let mut held = every_node_place_taken(&serving.endpoint, &gate).await;

    // One more, on a connection of its own (as kubelet dials one per
    // call): it waits for a place.
    let last = MAX_CONCURRENT_CALLS;
    held.extend(stages(&channel(&serving.endpoint).await, last..last + 1));
    assert!(!gate.one_more_comes().await, "a call past the cap ran");

    // One ends: the waiting one goes on.
    gate.open(1);
    gate.came(1).await;
    gate.open(MAX_CONCURRENT_CALLS);
    for stage in held {
        assert_eq!(stage.await.unwrap(), Code::Aborted, "the driver's answer");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_calls_get_through_while_every_node_place_is_taken() {
    let node = Node1::new(ProxyRelease::LATEST).await;
    let gate = Gate::new();
    let service = node.service(GatedDriver(gate.clone()));
    let serving = Serving::start("tcp://127.0.0.1:0", service.into()).await;
    let held = every_node_place_taken(&serving.endpoint, &gate).await;

    // kubelet's registration and the liveness probe.
    let mut identity = IdentityClient::new(channel(&serving.endpoint).await);
    let info = identity.get_plugin_info(GetPluginInfoRequest {}).await;
    assert_eq!(info.unwrap().into_inner().name, "gated.csi");
    let probe = identity.probe(ProbeRequest {}).await;
    assert_eq!(probe.unwrap().into_inner().ready, Some(true));

    gate.open(MAX_CONCURRENT_CALLS);
    for stage in held {
        assert_eq!(stage.await.unwrap(), Code::Aborted);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_identity_call_past_its_cap_waits_and_goes_on_when_one_ends() {
    let gate = Gate::new();
    let services = Services::new().with_service(IdentityServer::new(GatedIdentity(gate.clone())));
    let serving = Serving::start("tcp://127.0.0.1:0", services).await;
    let client = IdentityClient::new(channel(&serving.endpoint).await);
    let probe = || {
        let mut client = client.clone();
        tokio::spawn(async move { client.probe(ProbeRequest {}).await.map(drop) })
    };
    let mut probes: Vec<_> = (0..MAX_IDENTITY_CALLS).map(|_| probe()).collect();
    gate.came(MAX_IDENTITY_CALLS as u32).await;

    probes.push(probe());
    assert!(
        !gate.one_more_comes().await,
        "an Identity call past its cap ran"
    );
    gate.open(1);
    gate.came(1).await;
    gate.open(MAX_IDENTITY_CALLS);
    for probe in probes {
        probe.await.unwrap().unwrap();
    }
}

/// HTTP/2's answer to a stream past the cap: the server refuses it
/// (`REFUSED_STREAM`, which a client may send again), and takes one once
/// another ended. tonic's own client never sends it: it waits for room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_past_the_cap_on_one_connection_is_refused() {
    use raw_h2::*;

    let node = Node1::new(ProxyRelease::LATEST).await;
    let service = node.service(GatedDriver(Gate::new()));
    let serving = Serving::start("tcp://127.0.0.1:0", service.into()).await;
    let address = serving.endpoint.strip_prefix("tcp://").unwrap();
    let mut connection = RawConnection::open(address).await;
    let settings = connection.next_on(0).await;
    assert_eq!(settings.kind, SETTINGS);
    let cap = settings.setting(SETTINGS_MAX_CONCURRENT_STREAMS);
    assert_eq!(cap, Some(MAX_STREAMS_PER_CONNECTION));

    // As many streams as allowed, each a call whose request is not sent
    // yet: all stay open.
    const CAPABILITIES: &str = "/csi.v1.Node/NodeGetCapabilities";
    let streams: Vec<u32> = (0..MAX_STREAMS_PER_CONNECTION).map(|n| 2 * n + 1).collect();
    for &stream in &streams {
        connection.open_stream(stream, CAPABILITIES).await;
    }
    let past = 2 * MAX_STREAMS_PER_CONNECTION + 1;
    connection.open_stream(past, CAPABILITIES).await;
    let refused = connection.next_on(past).await;
    assert_eq!(refused.kind, RST_STREAM, "{refused:?}");
    assert_eq!(refused.error_code(), REFUSED_STREAM);

    // One ends: a new stream is served.
    connection.reset(streams[0]).await;
    let next = past + 2;
    connection
        .call(next, "/csi.v1.Identity/GetPluginInfo")
        .await;
    let answer = connection.next_on(next).await;
    assert_eq!(answer.kind, HEADERS, "{answer:?}");
}

/// `count` connections to `endpoint`, each shown served by a call.
async fn served_connections(endpoint: &str, count: usize) -> Vec<Channel> {
    let mut connections = Vec::new();
    for _ in 0..count {
        let connection = connect(endpoint).await;
        let mut client = IdentityClient::new(connection.clone());
        client
            .get_plugin_info(GetPluginInfoRequest {})
            .await
            .unwrap();
        connections.push(connection);
    }
    connections
}

/// A connection to a `tcp://` or `unix://` endpoint.
async fn connect(endpoint: &str) -> Channel {
    #[cfg(unix)]
    if let Some(path) = endpoint.strip_prefix("unix://") {
        let path = path.to_owned();
        let connector = tower::service_fn(move |_: tonic::transport::Uri| {
            let path = path.clone();
            async move {
                let socket = tokio::net::UnixStream::connect(path).await?;
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(socket))
            }
        });
        let endpoint = tonic::transport::Endpoint::from_static("http://csi");
        return endpoint.connect_with_connector(connector).await.unwrap();
    }
    channel(endpoint).await
}

/// With [`MAX_CONNECTIONS`] served on `endpoint`, one more waits (not
/// accepted: its call gets no answer) until one of them closes.
async fn one_connection_past_the_cap_waits_until_one_closes(endpoint: &str) {
    let node = Node1::new(ProxyRelease::LATEST).await;
    let service = node.service(GatedDriver(Gate::new()));
    let serving = Serving::start(endpoint, service.into()).await;
    let mut served = served_connections(&serving.endpoint, MAX_CONNECTIONS).await;

    let endpoint = serving.endpoint.clone();
    let mut waiting = tokio::spawn(async move {
        let mut client = IdentityClient::new(connect(&endpoint).await);
        client.get_plugin_info(GetPluginInfoRequest {}).await
    });
    let early = tokio::time::timeout(Duration::from_millis(200), &mut waiting).await;
    assert!(early.is_err(), "a connection past the cap was served");

    drop(served.pop());
    let answer = waiting.await.unwrap();
    assert_eq!(answer.unwrap().into_inner().name, "gated.csi");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tcp_connection_past_the_cap_waits_in_the_backlog_until_one_closes() {
    one_connection_past_the_cap_waits_until_one_closes("tcp://127.0.0.1:0").await;
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unix_connection_past_the_cap_waits_in_the_backlog_until_one_closes() {
    let dir = tempfile::tempdir().unwrap();
    let endpoint = format!("unix://{}", dir.path().join("csi.sock").display());
    one_connection_past_the_cap_waits_until_one_closes(&endpoint).await;
}
