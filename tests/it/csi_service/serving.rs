//! Serving: a stop that answers the calls under way and leaves one that
//! never ends, an endpoint that cannot be served, the plugin's flags, and
//! the socket bound (a stale one replaced) before the proxy is dialled.

use std::sync::Arc;
use std::time::Duration;

use csi_proxy_client::csi::v1::identity_server::Identity;
use csi_proxy_client::csi::v1::*;
use csi_proxy_client::csi::VolumeKind;
use csi_proxy_client::testing::{PathEntry, ProxyRelease};
use csi_proxy_client::Status;
use tonic::Request;

// The socket's test alone (Unix) starts a proxy of its own.
#[cfg(unix)]
use csi_proxy_client::testing::{FakeHost, FakeProxy};

use super::{channel, stage, staging, Node1, TestDriver};
use crate::common::TestNode;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_answers_the_calls_under_way_before_serving_ends() {
    use csi_proxy_client::csi::v1::node_client::NodeClient;
    use csi_proxy_client::csi::{serve, Listener};
    use csi_proxy_client::Operation;

    let node = Node1::new(ProxyRelease::LATEST).await;
    let service = node.service(TestDriver::of(&[VolumeKind::Disk]));
    let listener = Listener::bind("tcp://127.0.0.1:0").await.unwrap();
    let endpoint = listener.endpoint().to_owned();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(serve(listener, service.into(), async {
        let _ = stopped.await;
    }));
    let mut client = NodeClient::new(channel(&endpoint).await);
    // A stage whose format takes a while; the stop comes in the middle.
    node.host
        .set_latency(Operation::FormatVolume, Duration::from_millis(500));
    let staged = tokio::spawn(async move { client.node_stage_volume(stage("lun-1")).await });
    crate::common::wait_until("the format has started", || {
        node.host.calls_of(Operation::FormatVolume) > 0
    })
    .await;
    stop.send(()).unwrap();
    let answer = staged.await.unwrap();
    assert!(answer.is_ok(), "{answer:?}");
    served.await.unwrap().unwrap();
    assert!(matches!(
        node.host.entry(&staging("lun-1")),
        Some(PathEntry::MountPoint(_))
    ));
    // Stopped: no new connection is served.
    let address = endpoint.strip_prefix("tcp://").unwrap();
    assert!(tokio::net::TcpStream::connect(address).await.is_err());
}

/// A call that never ends does not keep the plugin from stopping: serving
/// ends `SHUTDOWN_DEADLINE` after the stop, without it. (Time is the
/// runtime's, paused: it jumps ahead while everything waits.)
#[tokio::test(start_paused = true)]
async fn a_call_that_never_ends_is_left_at_the_shutdown_deadline() {
    use csi_proxy_client::csi::v1::identity_client::IdentityClient;
    use csi_proxy_client::csi::v1::identity_server::IdentityServer;
    use csi_proxy_client::csi::{serve, Listener, Services, SHUTDOWN_DEADLINE};
    use tokio::sync::Notify;

    /// Its `Probe` never answers; it says when one came.
    struct Stuck(Arc<Notify>);

    #[csi_proxy_client::async_trait]
    impl Identity for Stuck {
        async fn get_plugin_info(
            &self,
            _: Request<GetPluginInfoRequest>,
        ) -> Result<tonic::Response<GetPluginInfoResponse>, Status> {
            Err(Status::unimplemented("not here"))
        }
        async fn get_plugin_capabilities(
            &self,
            _: Request<GetPluginCapabilitiesRequest>,
        ) -> Result<tonic::Response<GetPluginCapabilitiesResponse>, Status> {
            Err(Status::unimplemented("not here"))
        }
        async fn probe(
            &self,
            _: Request<ProbeRequest>,
        ) -> Result<tonic::Response<ProbeResponse>, Status> {
            self.0.notify_one();
            std::future::pending().await
        }
    }

    let came = Arc::new(Notify::new());
    let services = Services::new().with_service(IdentityServer::new(Stuck(came.clone())));
    let listener = Listener::bind("tcp://127.0.0.1:0").await.unwrap();
    let endpoint = listener.endpoint().to_owned();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(serve(listener, services, async {
        let _ = stopped.await;
    }));
    let mut client = IdentityClient::new(channel(&endpoint).await);
    let stuck = tokio::spawn(async move { client.probe(ProbeRequest {}).await });
    came.notified().await;
    let stopping = tokio::time::Instant::now();
    stop.send(()).unwrap();
    served.await.unwrap().unwrap();
    let took = stopping.elapsed();
    assert!(
        took >= SHUTDOWN_DEADLINE && took < SHUTDOWN_DEADLINE + Duration::from_secs(5),
        "{took:?}"
    );
    // Serving ended without answering it.
    assert!(!stuck.is_finished(), "the stuck call was answered");
    stuck.abort();
}

#[tokio::test]
async fn an_endpoint_that_cannot_be_served_stops_the_start_before_the_proxy() {
    use csi_proxy_client::csi::{NodePlugin, ServeError};
    let dir = tempfile::tempdir().unwrap();
    let no_proxy = TestNode::new();
    for endpoint in ["http://127.0.0.1:1", "unix://", "tcp://256.0.0.1:0"] {
        // The proxy would be waited for a minute: the endpoint is first.
        let started = NodePlugin::new(TestDriver::of(&[VolumeKind::Disk]))
            .endpoint(endpoint)
            .state_dir(dir.path())
            .proxy(|proxy| {
                proxy
                    .transport(no_proxy.transport())
                    .wait_for_proxy(Duration::from_secs(60))
                    .require(csi_proxy_client::ApiGroup::Disk)
            })
            .run();
        let answer = tokio::time::timeout(Duration::from_secs(10), started).await;
        let error = answer.expect("it stops at once").unwrap_err();
        assert!(
            matches!(error, ServeError::Endpoint { .. }),
            "{endpoint}: {error}"
        );
    }
}

/// A plugin started on Linux without `--socket-dir` says which flag to
/// give, not which builder method to call.
#[cfg(unix)]
#[tokio::test]
async fn the_plugins_start_errors_name_its_flags() {
    use csi_proxy_client::csi::{NodePlugin, ServeError};
    let dir = tempfile::tempdir().unwrap();
    let args = ["--endpoint", "tcp://127.0.0.1:0", "--state-dir"].map(str::to_owned);
    let args = args.into_iter().chain([dir.path().display().to_string()]);
    let plugin = NodePlugin::new(TestDriver::of(&[VolumeKind::Disk]))
        .args(args)
        .unwrap();
    let error = plugin.run().await.unwrap_err();
    let ServeError::Usage(text) = &error else {
        panic!("not a usage error: {error}");
    };
    assert!(
        text.starts_with("CSI Proxy's named pipes exist only on Windows: give --socket-dir"),
        "{text}"
    );
    assert!(!text.contains("CsiProxyBuilder"), "{text}");
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_socket_is_bound_before_the_proxy_is_dialled_and_a_stale_one_replaced() {
    use csi_proxy_client::csi::v1::identity_client::IdentityClient;
    use csi_proxy_client::csi::NodePlugin;
    use hyper_util::rt::TokioIo;

    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("csi.sock");
    // A crashed run's socket.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    let proxy_dir = dir.path().join("proxy");
    std::fs::create_dir(&proxy_dir).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let plugin = NodePlugin::new(TestDriver::of(&[VolumeKind::Disk]))
        .args([
            format!("--endpoint=unix://{}", socket.display()),
            "--socket-dir".into(),
            proxy_dir.display().to_string(),
            "--state-dir".into(),
            dir.path().join("state").display().to_string(),
            "--node-id".into(),
            "node-7".into(),
        ])
        .unwrap()
        // The proxy is required, and waited for: it is not there yet.
        .proxy(|proxy| {
            use csi_proxy_client::ApiGroup::{Disk, Filesystem, Volume};
            let proxy = proxy.wait_for_proxy(Duration::from_secs(60));
            proxy.require(Disk).require(Volume).require(Filesystem)
        })
        .stop_on(async {
            let _ = stopped.await;
        });
    let running = tokio::spawn(plugin.run());

    // The socket is there (the stale one replaced) while the plugin waits
    // for the proxy: kubelet's connection is taken, and answered once the
    // proxy came and serving started.
    let connected = async {
        loop {
            if let Ok(stream) = tokio::net::UnixStream::connect(&socket).await {
                break stream;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let early = tokio::time::timeout(Duration::from_secs(10), connected).await;
    drop(early.expect("bound while the proxy is waited for"));
    let path = socket.clone();
    let endpoint = tonic::transport::Endpoint::from_static("http://csi");
    let channel = endpoint.connect_with_connector(tower::service_fn(move |_| {
        let path = path.clone();
        async move {
            tokio::net::UnixStream::connect(path)
                .await
                .map(TokioIo::new)
        }
    }));
    let mut fake = FakeProxy::for_host(
        csi_proxy_client::transport::Transport::unix_sockets(&proxy_dir).unwrap(),
        &FakeHost::default(),
    );
    assert!(!running.is_finished());
    fake.serve_release(ProxyRelease::LATEST).await.unwrap();
    let mut client = IdentityClient::new(channel.await.unwrap());
    let info = client
        .get_plugin_info(GetPluginInfoRequest {})
        .await
        .unwrap();
    assert_eq!(info.into_inner().name, "test.csi");
    // Ready once the proxy serves the disk groups (each found in turn).
    let mut ready = None;
    for _ in 0..200 {
        let answer = client.probe(ProbeRequest {}).await.unwrap();
        ready = answer.into_inner().ready;
        if ready == Some(true) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(ready, Some(true));
    drop(client);

    stop.send(()).unwrap();
    running.await.unwrap().unwrap();
    assert!(!socket.exists(), "the socket is removed at the stop");
    fake.shutdown().await;
}
