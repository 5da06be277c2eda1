//! Endpoints that misbehave as a broken or squatted proxy would, written
//! byte by byte or on a bare HTTP/2 server (h2, no gRPC framework): the
//! client never spins or multiplies against them, and every answer it
//! gives is true (a broken answer is never the host's failure, a refused
//! request is sent once more, a deadline reports the real failure).
//!
//! Unix sockets here, named pipes when built for Windows.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::TestNode;
use bytes::Bytes;
use csi_proxy_client::testing::{listen, ServerStream};
use csi_proxy_client::{
    api::{DiskApi, DiskLocation},
    async_trait, ApiGroup, ApiVersion, Backends, CallOptions, CsiProxy, Error, Operation, Result,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_stream::StreamExt;

/// An HTTP/2 SETTINGS frame with no settings: what a server sends first.
const SETTINGS: [u8; 9] = [0, 0, 0, 4, 0, 0, 0, 0, 0];

/// GOAWAY with last stream id 0 and NO_ERROR: "I processed nothing".
const GOAWAY_NOTHING_PROCESSED: [u8; 17] = [0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];

/// How a raw endpoint treats each connection.
#[derive(Clone, Copy)]
enum Raw {
    /// SETTINGS, then GOAWAY(0), then it waits for the client to close.
    GoAwayAfterSettings,
    /// SETTINGS, then it closes at once.
    CloseAfterHandshake,
    /// Answers like an HTTP/1 server.
    Http1,
}

/// Reads and drops what the client sends until it closes, for at most 2 s:
/// the endpoint keeps the connection open without answering.
async fn drain_for_a_while(stream: &mut (impl AsyncReadExt + Unpin)) {
    let mut buf = [0u8; 4096];
    let drain = async { while let Ok(1..) = stream.read(&mut buf).await {} };
    let _ = tokio::time::timeout(Duration::from_secs(2), drain).await;
}

/// An endpoint for disk v1 that accepts every connection and serves it on
/// a task of its own, as `serve` makes of it and of the endpoint's count
/// (`serve` is called in the accept loop, before the task is spawned).
struct Endpoint {
    count: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Endpoint {
    async fn start<F, Fut>(node: &TestNode, mut serve: F) -> Self
    where
        F: FnMut(ServerStream, Arc<AtomicUsize>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let mut incoming = listen(&node.transport(), ApiGroup::Disk, ApiVersion::V1)
            .await
            .unwrap();
        let count = Arc::new(AtomicUsize::new(0));
        let counter = count.clone();
        let task = tokio::spawn(async move {
            while let Some(Ok(stream)) = incoming.next().await {
                tokio::spawn(serve(stream, counter.clone()));
            }
        });
        Self { count, task }
    }

    /// A raw endpoint treating each connection as `behaviour` says; it
    /// counts the connections it accepted.
    async fn raw(node: &TestNode, behaviour: Raw) -> Self {
        Self::start(node, move |mut stream, accepted| {
            accepted.fetch_add(1, Ordering::SeqCst);
            async move {
                let mut buf = [0u8; 4096];
                match behaviour {
                    Raw::GoAwayAfterSettings => {
                        let _ = stream.write_all(&SETTINGS).await;
                        let _ = stream.write_all(&GOAWAY_NOTHING_PROCESSED).await;
                        drain_for_a_while(&mut stream).await;
                    }
                    Raw::CloseAfterHandshake => {
                        let _ = stream.write_all(&SETTINGS).await;
                    }
                    Raw::Http1 => {
                        let _ = stream.read(&mut buf).await;
                        let answer = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n";
                        let _ = stream.write_all(answer).await;
                    }
                }
            }
        })
        .await
    }

    /// A bare HTTP/2 server answering each request by `answer`; it counts
    /// the requests.
    async fn bare(node: &TestNode, answer: Answer) -> Self {
        Self::start(node, move |stream, requests| {
            serve_h2(stream, requests, answer.clone())
        })
        .await
    }

    /// What it counted so far.
    fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }
}

/// A default client of `node` for disk only, connected while the endpoint
/// answers.
async fn disk_client(node: &TestNode) -> CsiProxy {
    let client = node.client_builder().groups([ApiGroup::Disk]);
    client.connect().await.unwrap()
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// Looks at most every 20 ms doubling to 250 ms: in `secs` seconds, at
/// most this many connections (with room for a caller's and the
/// background's looks side by side, and a slow machine).
fn paced_connections(secs: u64) -> usize {
    (6 + 4 * secs as usize) * 2 + 4
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_that_says_goaway_at_once_is_neither_spun_on_nor_multiplied() {
    let node = TestNode::new();
    let endpoint = Endpoint::raw(&node, Raw::GoAwayAfterSettings).await;
    let proxy = disk_client(&node).await;
    let tasks_at_start = alive_tasks();

    // A call: refused unprocessed, or sent on a connection already gone,
    // on the schedule only, and answered with that failure (not sent).
    let hasty = proxy.with_call_options(CallOptions::default().deadline(Duration::from_secs(2)));
    let before = endpoint.count();
    let err = hasty
        .disk()
        .unwrap()
        .list_disk_locations()
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Transport {
                maybe_sent: false,
                ..
            }
        ),
        "{err}"
    );
    let during = endpoint.count() - before;
    assert!(
        during <= paced_connections(2),
        "{during} connections in 2 s"
    );

    // Idle: the client looks on its schedule, not in a loop.
    let before = endpoint.count();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let idle = endpoint.count() - before;
    assert!(idle <= paced_connections(3), "{idle} connections in 3 s");
    assert!(idle >= 2, "it keeps looking: {idle}");
    let tasks = alive_tasks();
    assert!(
        tasks <= tasks_at_start + 8,
        "{tasks_at_start} -> {tasks} tasks"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_that_closes_after_the_handshake_is_neither_spun_on_nor_multiplied() {
    let node = TestNode::new();
    let endpoint = Endpoint::raw(&node, Raw::CloseAfterHandshake).await;
    let proxy = disk_client(&node).await;
    let tasks_at_start = alive_tasks();

    let before = endpoint.count();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let idle = endpoint.count() - before;
    assert!(idle <= paced_connections(3), "{idle} connections in 3 s");
    let tasks = alive_tasks();
    assert!(
        tasks <= tasks_at_start + 8,
        "{tasks_at_start} -> {tasks} tasks"
    );

    // A call ends at its deadline, with the failure it met rather than a
    // bare timeout, having connected on the schedule only.
    let hasty = proxy.with_call_options(CallOptions::default().deadline(Duration::from_secs(1)));
    let before = endpoint.count();
    let err = hasty
        .disk()
        .unwrap()
        .list_disk_locations()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err}");
    let during = endpoint.count() - before;
    assert!(
        during <= paced_connections(1),
        "{during} connections in 1 s"
    );
}

#[tokio::test]
async fn an_endpoint_that_speaks_http1_is_no_proxy() {
    let node = TestNode::new();
    let _endpoint = Endpoint::raw(&node, Raw::Http1).await;
    let err = node
        .client_builder()
        .groups([ApiGroup::Disk])
        .require(ApiGroup::Disk)
        .retry(csi_proxy_client::RetryPolicy::none())
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err}");
    let text = format!("{err} {:?}", std::error::Error::source(&err));
    assert!(text.contains("SETTINGS"), "{text}");
}

/// A disk backend whose every call fails as certainly not sent.
#[derive(Default)]
struct NeverSent {
    calls: AtomicUsize,
}

#[async_trait]
impl DiskApi for NeverSent {
    async fn list_disk_locations(&self) -> Result<std::collections::BTreeMap<u32, DiskLocation>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Err(Error::Transport {
            address: "mock".into(),
            operation: Some(Operation::ListDiskLocations),
            maybe_sent: false,
            source: Arc::new(std::io::Error::other("the mock sends nothing")),
        })
    }
}

#[tokio::test]
async fn a_backend_that_keeps_failing_unsent_is_paced_and_its_failure_reported() {
    let mock = Arc::new(NeverSent::default());
    let proxy = CsiProxy::from_backends(Backends {
        disk: Some(mock.clone()),
        ..Backends::default()
    })
    .with_call_options(CallOptions::default().deadline(Duration::from_secs(1)));
    let err = proxy
        .disk()
        .unwrap()
        .list_disk_locations()
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Transport {
                maybe_sent: false,
                ..
            }
        ),
        "the real failure, not a bare timeout: {err}"
    );
    let calls = mock.calls.load(Ordering::SeqCst);
    // 0, 20, 40, 80, 160, 250, 250, 250 ms: about eight in a second.
    assert!((3..=12).contains(&calls), "{calls} calls in 1 s");
}

/// What a bare HTTP/2 server answers to each request, by its number.
type Answer = Arc<dyn Fn(usize) -> Reply + Send + Sync>;

/// One scripted answer.
#[derive(Clone)]
enum Reply {
    /// RST_STREAM with this reason.
    Reset(h2::Reason),
    /// A response head, body bytes and trailers (none if empty).
    Http {
        status: u16,
        headers: Vec<(&'static str, &'static str)>,
        body: Vec<u8>,
        trailers: Vec<(&'static str, &'static str)>,
    },
}

impl Reply {
    /// A gRPC answer: `body` as it goes on the wire (prefix included).
    fn grpc(body: Vec<u8>, trailers: Vec<(&'static str, &'static str)>) -> Self {
        Reply::Http {
            status: 200,
            headers: vec![("content-type", "application/grpc")],
            body,
            trailers,
        }
    }

    /// A well-formed gRPC answer with an empty message and status OK.
    fn ok() -> Self {
        Self::grpc(vec![0, 0, 0, 0, 0], vec![("grpc-status", "0")])
    }
}

/// Serves HTTP/2 on `stream`, answering each request by `answer` of its
/// number, counted in `requests`.
async fn serve_h2(stream: ServerStream, requests: Arc<AtomicUsize>, answer: Answer) {
    let Ok(mut connection) = h2::server::handshake(stream).await else {
        return;
    };
    while let Some(Ok((request, respond))) = connection.accept().await {
        let n = requests.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(reply(request, respond, answer(n)));
    }
}

async fn reply(
    request: tonic::codegen::http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    reply: Reply,
) {
    let mut body = request.into_body();
    while let Some(Ok(data)) = body.data().await {
        let _ = body.flow_control().release_capacity(data.len());
    }
    let (status, headers, payload, trailers) = match reply {
        Reply::Reset(reason) => return respond.send_reset(reason),
        Reply::Http {
            status,
            headers,
            body,
            trailers,
        } => (status, headers, body, trailers),
    };
    let mut head = tonic::codegen::http::Response::builder().status(status);
    for (name, value) in headers {
        head = head.header(name, value);
    }
    let only_head = payload.is_empty() && trailers.is_empty();
    let Ok(mut stream) = respond.send_response(head.body(()).unwrap(), only_head) else {
        return;
    };
    if only_head {
        return;
    }
    let _ = stream.send_data(Bytes::from(payload), trailers.is_empty());
    if !trailers.is_empty() {
        let mut map = tonic::codegen::http::HeaderMap::new();
        for (name, value) in trailers {
            map.insert(name, value.parse().unwrap());
        }
        let _ = stream.send_trailers(map);
    }
}

/// A client of disk v1 on `node`, with no retries of its own.
async fn bare_client(node: &TestNode) -> CsiProxy {
    node.connect(ApiGroup::Disk, ApiVersion::V1).await
}

#[tokio::test]
async fn a_refused_request_is_sent_once_more_whatever_it_does() {
    let node = TestNode::new();
    let server = Endpoint::bare(
        &node,
        Arc::new(|n| match n {
            0 => Reply::Reset(h2::Reason::REFUSED_STREAM),
            _ => Reply::ok(),
        }),
    )
    .await;
    let proxy = bare_client(&node).await;
    // A mutation: not processed the first time, so safe to send again.
    proxy.disk().unwrap().rescan().await.unwrap();
    assert_eq!(server.count(), 2);
}

#[tokio::test]
async fn a_request_refused_twice_is_reported_as_not_sent() {
    let node = TestNode::new();
    let server = Endpoint::bare(
        &node,
        Arc::new(|_| Reply::Reset(h2::Reason::REFUSED_STREAM)),
    )
    .await;
    let proxy = bare_client(&node).await;
    let err = proxy.disk().unwrap().rescan().await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Transport {
                maybe_sent: false,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(server.count(), 2, "once more, not in a loop");
}

/// Reads, after the client's preface, frame after frame until a HEADERS
/// frame: a request. False if the connection ends first.
async fn read_until_a_request(stream: &mut (impl AsyncReadExt + Unpin)) -> bool {
    let mut preface = [0u8; 24];
    if stream.read_exact(&mut preface).await.is_err() {
        return false;
    }
    loop {
        let mut head = [0u8; 9];
        if stream.read_exact(&mut head).await.is_err() {
            return false;
        }
        let length = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let mut payload = vec![0u8; length];
        if stream.read_exact(&mut payload).await.is_err() {
            return false;
        }
        const HEADERS: u8 = 1;
        if head[3] == HEADERS {
            return true;
        }
    }
}

#[tokio::test]
async fn a_request_above_a_goaways_last_stream_is_sent_once_more() {
    let node = TestNode::new();
    let mut first = true;
    let server = Endpoint::start(&node, move |mut stream, requests| {
        let first = std::mem::take(&mut first);
        async move {
            if !first {
                return serve_h2(stream, requests, Arc::new(|_| Reply::ok())).await;
            }
            // Takes the request, then says it processed no stream.
            let _ = stream.write_all(&SETTINGS).await;
            if read_until_a_request(&mut stream).await {
                requests.fetch_add(1, Ordering::SeqCst);
                let _ = stream.write_all(&GOAWAY_NOTHING_PROCESSED).await;
            }
            drain_for_a_while(&mut stream).await;
        }
    })
    .await;
    let proxy = bare_client(&node).await;
    // A mutation: the proxy said it never processed it, so it is safe to
    // send again, on the next connection.
    proxy.disk().unwrap().rescan().await.unwrap();
    assert_eq!(server.count(), 2);
    drop(server);
}

/// Answers that are no proper gRPC answer, each with what it is.
fn broken_answers() -> Vec<(&'static str, Reply)> {
    let grpc = |body: Vec<u8>| Reply::grpc(body, vec![("grpc-status", "0")]);
    vec![
        ("a message over the size limit", {
            let mut prefix = vec![0, 0, 0, 0x08, 0x00];
            prefix.extend(vec![0u8; 2048]);
            grpc(prefix)
        }),
        (
            "the compressed flag without grpc-encoding",
            grpc(vec![1, 0, 0, 0, 0]),
        ),
        ("an invalid compression flag", grpc(vec![2, 0, 0, 0, 0])),
        (
            "a length prefix longer than the body",
            grpc(vec![0, 0, 0, 0, 9, 1]),
        ),
        (
            "a trailers-only OK with no message",
            Reply::Http {
                status: 200,
                headers: vec![("content-type", "application/grpc"), ("grpc-status", "0")],
                body: vec![],
                trailers: vec![],
            },
        ),
        (
            "no grpc-status",
            Reply::grpc(vec![0, 0, 0, 0, 0], vec![("x-other", "1")]),
        ),
        (
            "a non-numeric grpc-status",
            Reply::grpc(vec![0, 0, 0, 0, 0], vec![("grpc-status", "two")]),
        ),
        (
            "HTTP 404",
            Reply::Http {
                status: 404,
                headers: vec![],
                body: vec![],
                trailers: vec![],
            },
        ),
        (
            "HTTP 500 with a gRPC status",
            Reply::Http {
                status: 500,
                headers: vec![("content-type", "application/grpc"), ("grpc-status", "2")],
                body: vec![],
                trailers: vec![],
            },
        ),
        (
            "an HTML page",
            Reply::Http {
                status: 200,
                headers: vec![("content-type", "text/html")],
                body: b"<html>busy</html>".to_vec(),
                trailers: vec![],
            },
        ),
    ]
}

#[tokio::test]
async fn an_answer_the_client_cannot_understand_is_an_invalid_response_not_the_hosts_failure() {
    for (what, answer) in broken_answers() {
        let node = TestNode::new();
        let server = Endpoint::bare(&node, Arc::new(move |_| answer.clone())).await;
        let proxy = node
            .client_builder()
            .groups([ApiGroup::Disk])
            .max_response_size(1024)
            .connect()
            .await
            .unwrap();
        let disk = proxy.disk().unwrap();

        let err = disk.list_disk_locations().await.unwrap_err();
        assert!(
            matches!(err, Error::InvalidResponse { .. }),
            "{what}: {err}"
        );
        // A mutation: its outcome is unknown, and it says so.
        let err = disk.rescan().await.unwrap_err();
        assert!(
            matches!(err, Error::InvalidResponse { .. }),
            "{what}: {err}"
        );
        assert!(
            err.to_string().contains("outcome is unknown"),
            "{what}: {err}"
        );
        assert_eq!(server.count(), 2, "{what}: nothing is sent again");
    }
}

#[tokio::test]
async fn the_proxys_own_status_is_the_hosts_failure() {
    let node = TestNode::new();
    let _server = Endpoint::bare(
        &node,
        Arc::new(|_| {
            Reply::grpc(
                vec![],
                vec![("grpc-status", "2"), ("grpc-message", "disk is busy")],
            )
        }),
    )
    .await;
    let proxy = bare_client(&node).await;
    let err = proxy.disk().unwrap().rescan().await.unwrap_err();
    match err {
        Error::Host { code, message, .. } => {
            assert_eq!(code, tonic::Code::Unknown);
            assert_eq!(message, "disk is busy");
        }
        other => panic!("{other}"),
    }
}

#[tokio::test]
async fn the_size_limit_is_a_setting() {
    let node = TestNode::new();
    // A valid answer of 3 KiB (a field 15 of bytes, which the decoder skips).
    let mut message = vec![0x7a, 0x80, 0x18];
    message.extend(std::iter::repeat_n(b'x', 3072));
    let mut body = vec![0u8];
    body.extend((message.len() as u32).to_be_bytes());
    body.extend(message);
    let _server = Endpoint::bare(
        &node,
        Arc::new(move |_| Reply::grpc(body.clone(), vec![("grpc-status", "0")])),
    )
    .await;
    let client = |limit| {
        node.client_builder()
            .groups([ApiGroup::Disk])
            .max_response_size(limit)
            .connect()
    };
    let small = client(2048).await.unwrap();
    let err = small.disk().unwrap().rescan().await.unwrap_err();
    assert!(matches!(err, Error::InvalidResponse { .. }), "{err}");
    let large = client(4096).await.unwrap();
    large.disk().unwrap().rescan().await.unwrap();
}
