//! The bridge that serves a plugin's `unix://` endpoint on Windows
//! (src/csi/blocking_unix.rs, feature `csi`), where tokio has no AF_UNIX. On Linux the same code runs on std's blocking Unix sockets:
//! real CSI calls through it, large transfers both ways, and every thread
//! of it gone once either side closes. Under Wine, which has no AF_UNIX,
//! the plugin must stop at start and say to use `tcp://` instead.

// The library compiles it on Windows only; here it runs on Unix too.
#[path = "../../../src/csi/blocking_unix.rs"]
mod blocking_unix;

use std::collections::HashMap;

use csi_proxy_client::csi::v1::identity_client::IdentityClient;
use csi_proxy_client::csi::v1::identity_server::{Identity, IdentityServer};
use csi_proxy_client::csi::v1::{
    GetPluginInfoRequest, GetPluginInfoResponse, ProbeRequest, ProbeResponse,
};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::transport::{Channel, Server};
use tonic::{Request, Response, Status};

/// A manifest value larger than every buffer on the way.
const BIG: usize = 1 << 20;

/// An Identity service with a large answer.
struct TestIdentity;

#[tonic::async_trait]
impl Identity for TestIdentity {
    async fn get_plugin_info(
        &self,
        _: Request<GetPluginInfoRequest>,
    ) -> Result<Response<GetPluginInfoResponse>, Status> {
        Ok(Response::new(GetPluginInfoResponse {
            name: "bridge.test".into(),
            vendor_version: "1".into(),
            manifest: HashMap::from([("big".into(), "x".repeat(BIG))]),
        }))
    }

    async fn probe(&self, _: Request<ProbeRequest>) -> Result<Response<ProbeResponse>, Status> {
        Ok(Response::new(ProbeResponse { ready: Some(true) }))
    }
}

/// `count` places for the connections bridged at once.
fn places(count: usize) -> std::sync::Arc<tokio::sync::Semaphore> {
    std::sync::Arc::new(tokio::sync::Semaphore::new(count))
}

/// Serves the Identity service through the bridge until the sender fires.
fn serve<L: blocking_unix::Listener>(
    listener: L,
) -> (
    oneshot::Sender<()>,
    JoinHandle<Result<(), tonic::transport::Error>>,
) {
    let (stop, stopped) = oneshot::channel::<()>();
    let server = Server::builder()
        .add_service(IdentityServer::new(TestIdentity))
        .serve_with_incoming_shutdown(
            blocking_unix::incoming(listener, places(64)).unwrap(),
            async {
                let _ = stopped.await;
            },
        );
    (stop, tokio::spawn(server))
}

/// CSI calls as kubelet makes them: one after another, and at once on the
/// same connection (HTTP/2 streams interleaved through the bridge).
async fn check_identity(channel: Channel) {
    let mut client = IdentityClient::new(channel);
    for _ in 0..3 {
        let info = client
            .get_plugin_info(GetPluginInfoRequest {})
            .await
            .unwrap()
            .into_inner();
        assert_eq!(info.name, "bridge.test");
        assert_eq!(info.manifest["big"].len(), BIG);
    }
    let (mut a, mut b) = (client.clone(), client.clone());
    let (info, probe) = tokio::join!(
        a.get_plugin_info(GetPluginInfoRequest {}),
        b.probe(ProbeRequest {})
    );
    assert_eq!(info.unwrap().into_inner().manifest["big"].len(), BIG);
    assert_eq!(probe.unwrap().into_inner().ready, Some(true));
}

#[cfg(unix)]
mod on_unix {
    use std::future::Future;
    use std::io::{Read, Write};
    use std::os::unix::net::{UnixListener, UnixStream};
    use std::path::{Path, PathBuf};
    use std::time::{Duration, Instant};

    use hyper_util::rt::TokioIo;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_stream::StreamExt;
    use tonic::transport::{Endpoint, Uri};

    use super::*;

    /// The threads' counts below are the process's: one test at a time.
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

    /// A client's channel to the socket at `path`, on tokio's own socket.
    async fn channel(path: PathBuf) -> Channel {
        Endpoint::from_static("http://csi")
            .connect_with_connector(tower::service_fn(move |_: Uri| {
                let path = path.clone();
                async move {
                    tokio::net::UnixStream::connect(path)
                        .await
                        .map(TokioIo::new)
                }
            }))
            .await
            .unwrap()
    }

    /// `work`'s answer, if it comes within 10 s: a bridge that lost an end
    /// fails the test instead of hanging it.
    async fn within<F: Future>(work: F) -> F::Output {
        let limit = Duration::from_secs(10);
        tokio::time::timeout(limit, work)
            .await
            .expect("the bridge passed nothing on for 10 s")
    }

    /// Runs blocking `work` on a thread of its own from now on; its result,
    /// awaited [`within`] the limit.
    fn on_thread<T: Send + 'static>(
        work: impl FnOnce() -> T + Send + 'static,
    ) -> impl Future<Output = T> {
        let (done, result) = oneshot::channel();
        std::thread::spawn(move || done.send(work()));
        async { within(result).await.expect("the thread panicked") }
    }

    /// The bridge's threads still running (Linux names them).
    fn bridge_threads() -> Vec<String> {
        let tasks = std::fs::read_dir("/proc/self/task").unwrap().flatten();
        tasks
            .filter_map(|task| std::fs::read_to_string(task.path().join("comm")).ok())
            .map(|name| name.trim().to_owned())
            .filter(|name| name.starts_with("csi-uds-"))
            .collect()
    }

    /// Waits (up to 10 s) until the bridge has no thread left.
    async fn no_bridge_threads_left() {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !bridge_threads().is_empty() {
            assert!(
                Instant::now() < deadline,
                "threads left: {:?}",
                bridge_threads()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until only the accept thread is left (the clients are gone).
    async fn no_bridge_threads_left_but_accept() {
        let deadline = Instant::now() + Duration::from_secs(10);
        while bridge_threads() != ["csi-uds-accept"] {
            assert!(Instant::now() < deadline, "threads: {:?}", bridge_threads());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Once tonic has stopped, the accept thread ends at the next
    /// connection (it blocks in `accept` until then).
    fn release_accept_thread(path: &Path) {
        let _ = UnixStream::connect(path);
    }

    #[tokio::test]
    async fn csi_calls_go_through_the_bridge_on_a_real_unix_socket() {
        let _one = ONE_AT_A_TIME.lock().await;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("csi.sock");
        let (stop, server) = serve(UnixListener::bind(&path).unwrap());

        // Two connections, one after the other: each its own pair of threads.
        within(check_identity(channel(path.clone()).await)).await;
        within(check_identity(channel(path.clone()).await)).await;

        // The clients are gone; then the server stops.
        no_bridge_threads_left_but_accept().await;
        stop.send(()).unwrap();
        within(server).await.unwrap().unwrap();
        release_accept_thread(&path);
        no_bridge_threads_left().await;
    }

    #[tokio::test]
    async fn bytes_and_ends_cross_the_bridge_both_ways() {
        let _one = ONE_AT_A_TIME.lock().await;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("echo.sock");
        let mut incoming =
            blocking_unix::incoming(UnixListener::bind(&path).unwrap(), places(64)).unwrap();
        let sent: Vec<u8> = (0..4 * BIG).map(|i| (i % 251) as u8).collect();

        // The client sends 4 MiB and its end; the server echoes all of it
        // once it has read that end, and closes; the client reads to the end.
        let client = {
            let (path, sent) = (path.clone(), sent.clone());
            on_thread(move || {
                let mut socket = UnixStream::connect(path).unwrap();
                let mut writer = socket.try_clone().unwrap();
                let sending = std::thread::spawn(move || {
                    writer.write_all(&sent).unwrap();
                    writer.shutdown(std::net::Shutdown::Write).unwrap();
                });
                let mut echoed = Vec::new();
                socket.read_to_end(&mut echoed).unwrap();
                sending.join().unwrap();
                echoed
            })
        };
        let mut server = within(incoming.next()).await.unwrap().unwrap();
        let mut received = Vec::new();
        within(server.read_to_end(&mut received)).await.unwrap();
        assert!(received == sent, "the server read other bytes");
        within(server.write_all(&received)).await.unwrap();
        drop(server);
        assert!(client.await == sent, "the client read other bytes");
        no_bridge_threads_left_but_accept().await;

        // The server closes first, while the client holds its socket open
        // and sends nothing: the client sees the end, and the thread that
        // was reading the socket does not stay blocked.
        let mut socket = UnixStream::connect(&path).unwrap();
        drop(within(incoming.next()).await.unwrap().unwrap());
        let (socket, rest) = on_thread(move || {
            let mut rest = Vec::new();
            socket.read_to_end(&mut rest).unwrap();
            (socket, rest)
        })
        .await;
        assert!(rest.is_empty());
        no_bridge_threads_left_but_accept().await;
        drop(socket);

        drop(incoming);
        release_accept_thread(&path);
        no_bridge_threads_left().await;
    }

    #[tokio::test]
    async fn a_connection_past_the_places_waits_in_the_backlog_until_one_ends() {
        let _one = ONE_AT_A_TIME.lock().await;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("capped.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let mut incoming = blocking_unix::incoming(listener, places(2)).unwrap();
        // Three clients connect: the third waits in the backlog.
        let mut clients: Vec<UnixStream> = (0..3)
            .map(|_| UnixStream::connect(&path).unwrap())
            .collect();
        let first = within(incoming.next()).await.unwrap().unwrap();
        let second = within(incoming.next()).await.unwrap().unwrap();
        let early = tokio::time::timeout(Duration::from_millis(200), incoming.next()).await;
        assert!(early.is_err(), "a third connection bridged with two places");

        // The first one ends: the third is bridged, and what it sends
        // comes through.
        drop(first);
        let mut third = within(incoming.next()).await.unwrap().unwrap();
        clients[2].write_all(b"third").unwrap();
        let mut sent = [0; 5];
        within(third.read_exact(&mut sent)).await.unwrap();
        assert_eq!(&sent, b"third");

        // Both places are taken, so the accept thread waits for one, not
        // in `accept`: once tonic's end is gone, the first place back ends it.
        drop(incoming);
        drop((second, third, clients));
        no_bridge_threads_left().await;
    }
}

/// On Windows: where AF_UNIX sockets exist, CSI calls through the bridge
/// on `uds_windows`; where they do not (Wine), the error that stops the
/// plugin's start says so and what to use instead.
#[cfg(windows)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unix_endpoints_on_windows_serve_or_say_to_use_tcp() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("csi.sock");
    let path = path.to_str().unwrap().to_owned();
    // (A stale socket is the plugin's Listener's to clear: a file at the
    // path is never removed, second_instance.rs.)
    match blocking_unix::bind(&path) {
        Ok(listener) => {
            let (stop, server) = serve(listener);
            let channel = tonic::transport::Endpoint::from_static("http://csi")
                .connect_with_connector(tower::service_fn(move |_| {
                    let path = path.clone();
                    async move {
                        let socket = tokio::task::spawn_blocking(move || {
                            uds_windows::UnixStream::connect(path)
                        })
                        .await??;
                        let runtime = tokio::runtime::Handle::current();
                        let stream = blocking_unix::bridge(socket, &runtime, ())?;
                        Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(stream))
                    }
                }))
                .await
                .unwrap();
            check_identity(channel).await;
            stop.send(()).unwrap();
            server.await.unwrap().unwrap();
        }
        Err(error) => {
            // Wine 8: socket(AF_UNIX) fails with WSAEAFNOSUPPORT (10047).
            for needed in [
                "(WSAEAFNOSUPPORT, os error 10047)",
                "has no AF_UNIX sockets",
                "use the endpoint tcp://127.0.0.1:PORT instead",
            ] {
                assert!(error.contains(needed), "{needed:?} not in: {error}");
            }
        }
    }
}
