//! Endpoints that misbehave as a broken or squatted proxy would, written
//! byte by byte or on a bare HTTP/2 server (h2, no gRPC framework): the
//! client never spins or multiplies against them, and every answer it
//! gives is true (a broken answer is never the host's failure, a refused
//! request is sent once more, a deadline reports the real failure).
//!
//! Unix sockets here, named pipes when built for Windows.

mod answers;
mod pacing;
mod refusals;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::TestNode;
use bytes::Bytes;
use csi_proxy_client::testing::{listen, ServerStream};
use csi_proxy_client::{ApiGroup, ApiVersion, CsiProxy};
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
