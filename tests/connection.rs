//! The SDK's own HTTP/2 connection against a bare HTTP/2 server (h2, no
//! gRPC framework), which shows what the client puts on the wire frame by
//! frame and lets a test choose the server's settings: a limit of
//! concurrent streams, responses larger than the flow-control window,
//! request bodies that come in pieces.
//!
//! Unix sockets here, named pipes when built for Windows.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use common::TestNode;
use csi_proxy_client::testing::{listen, RawCodec};
use csi_proxy_client::wire::disk::v1 as wire;
use csi_proxy_client::{ApiGroup, ApiVersion, CsiProxy, Negotiator, ProxyChannel, Transport};
use prost::Message;
use tokio_stream::StreamExt;

/// What the server saw of one request: its path and the sizes of its DATA
/// frames, in order (an empty frame that only ends the stream counts too).
#[derive(Clone, Debug)]
struct Seen {
    path: String,
    frames: Vec<usize>,
}

/// How the bare server behaves.
#[derive(Clone)]
struct Settings {
    /// SETTINGS_MAX_CONCURRENT_STREAMS, if limited.
    max_streams: Option<u32>,
    /// How long each answer takes once the request has ended.
    delay: Duration,
    /// The response message (protobuf bytes) for every request.
    answer: Bytes,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            max_streams: None,
            delay: Duration::ZERO,
            answer: Bytes::new(),
        }
    }
}

struct BareServer {
    seen: Arc<Mutex<Vec<Seen>>>,
    /// The most requests it was answering at once on one connection.
    most_at_once: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for BareServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl BareServer {
    /// Serves disk v1 on `transport`: reads each request to its end, then
    /// answers `settings.answer` with status OK.
    async fn start(transport: &Transport, settings: Settings) -> Self {
        let mut incoming = listen(transport, ApiGroup::Disk, ApiVersion::V1)
            .await
            .unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let most_at_once = Arc::new(AtomicUsize::new(0));
        let (s, m) = (seen.clone(), most_at_once.clone());
        let task = tokio::spawn(async move {
            while let Some(Ok(stream)) = incoming.next().await {
                let (settings, seen, most) = (settings.clone(), s.clone(), m.clone());
                let in_flight = Arc::new(AtomicUsize::new(0));
                tokio::spawn(async move {
                    let mut builder = h2::server::Builder::new();
                    if let Some(max) = settings.max_streams {
                        builder.max_concurrent_streams(max);
                    }
                    let Ok(mut connection) = builder.handshake::<_, Bytes>(stream).await else {
                        return;
                    };
                    while let Some(Ok((request, respond))) = connection.accept().await {
                        let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        let (settings, seen, in_flight) =
                            (settings.clone(), seen.clone(), in_flight.clone());
                        tokio::spawn(async move {
                            let request = answer(request, respond, &settings).await;
                            seen.lock().unwrap().push(request);
                            in_flight.fetch_sub(1, Ordering::SeqCst);
                        });
                    }
                });
            }
        });
        Self {
            seen,
            most_at_once,
            task,
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// Reads one request to its end and answers it.
async fn answer(
    request: tonic::codegen::http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    settings: &Settings,
) -> Seen {
    let path = request.uri().path().to_owned();
    let mut body = request.into_body();
    let mut frames = Vec::new();
    while let Some(Ok(data)) = body.data().await {
        let _ = body.flow_control().release_capacity(data.len());
        frames.push(data.len());
    }
    tokio::time::sleep(settings.delay).await;
    let head = tonic::codegen::http::Response::builder()
        .header("content-type", "application/grpc")
        .body(())
        .unwrap();
    if let Ok(mut stream) = respond.send_response(head, false) {
        let mut framed = Vec::with_capacity(5 + settings.answer.len());
        framed.push(0);
        framed.extend_from_slice(&(settings.answer.len() as u32).to_be_bytes());
        framed.extend_from_slice(&settings.answer);
        let _ = stream.send_data(framed.into(), false);
        let mut trailers = tonic::codegen::http::HeaderMap::new();
        trailers.insert("grpc-status", "0".parse().unwrap());
        let _ = stream.send_trailers(trailers);
    }
    Seen { path, frames }
}

async fn connect(transport: &Transport) -> CsiProxy {
    CsiProxy::builder()
        .transport(transport.clone())
        .groups([ApiGroup::Disk])
        .connect()
        .await
        .unwrap()
}

async fn channel(transport: &Transport) -> ProxyChannel {
    Negotiator::new(transport.clone())
        .negotiate(&[ApiGroup::Disk])
        .await
        .unwrap()
        .connection(ApiGroup::Disk)
        .unwrap()
        .channel()
}

#[tokio::test]
async fn a_unary_request_is_one_data_frame_that_ends_the_stream() {
    let node = TestNode::new();
    let transport = node.transport();
    let server = BareServer::start(&transport, Settings::default()).await;
    let disk = connect(&transport).await.disk().unwrap();
    disk.list_disk_ids().await.unwrap();
    let seen = server.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].path, "/v1.Disk/ListDiskIDs");
    // The empty request message in gRPC's 5-byte frame, and no empty DATA
    // frame after it: the end of the stream rode on the data.
    assert_eq!(seen[0].frames, [5]);
}

#[tokio::test]
async fn calls_beyond_the_proxys_stream_limit_wait_for_a_free_stream() {
    let node = TestNode::new();
    let transport = node.transport();
    let settings = Settings {
        max_streams: Some(1),
        delay: Duration::from_millis(20),
        ..Settings::default()
    };
    let server = BareServer::start(&transport, settings).await;
    let disk = connect(&transport).await.disk().unwrap();
    let channel = channel(&transport).await;
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let disk = disk.clone();
        calls.spawn(async move {
            disk.list_disk_ids()
                .await
                .map(drop)
                .map_err(|e| e.to_string())
        });
        // The generated client asks `poll_ready` first, as tower wants.
        let mut client = wire::disk_client::DiskClient::new(channel.clone());
        calls.spawn(async move {
            client
                .list_disk_i_ds(wire::ListDiskIDsRequest {})
                .await
                .map(drop)
                .map_err(|e| e.to_string())
        });
    }
    while let Some(outcome) = calls.join_next().await {
        outcome.unwrap().unwrap();
    }
    assert_eq!(server.seen().len(), 8);

    // Requests started on one channel before any is answered, without
    // `poll_ready`: the third finds the channel's own second request still
    // waiting for a stream, and waits behind it.
    let mut one = channel.clone();
    let started: Vec<_> = (0..3)
        .map(|_| {
            let request = tonic::codegen::http::Request::post("/v1.Disk/ListDiskIDs")
                .header("content-type", "application/grpc")
                .body(tonic::body::Body::empty())
                .unwrap();
            tonic::codegen::Service::call(&mut one, request)
        })
        .collect();
    for response in started {
        assert_eq!(response.await.unwrap().status(), 200);
    }
    assert_eq!(server.seen().len(), 11);
    assert_eq!(server.most_at_once.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_response_larger_than_the_flow_control_window_arrives_whole() {
    let node = TestNode::new();
    let transport = node.transport();
    // About 3 MiB, three times the stream's receive window: it only
    // arrives if the client hands back window as it reads.
    let disks = 24_000u32;
    let response = wire::ListDiskIDsResponse {
        disk_i_ds: (0..disks)
            .map(|n| {
                let ids = wire::DiskIDs {
                    page83: format!("{n:0>120}"),
                    serial_number: format!("sn-{n}"),
                };
                (n, ids)
            })
            .collect(),
    };
    let answer = Bytes::from(response.encode_to_vec());
    assert!(answer.len() > 3 << 20, "{}", answer.len());
    let _server = BareServer::start(
        &transport,
        Settings {
            answer,
            ..Settings::default()
        },
    )
    .await;
    let disk = connect(&transport).await.disk().unwrap();
    let ids = disk.list_disk_ids().await.unwrap();
    assert_eq!(ids.len(), disks as usize);
    assert_eq!(ids[&7].page83, format!("{:0>120}", 7));
}

#[tokio::test]
async fn a_request_body_that_comes_in_pieces_is_sent_as_it_comes() {
    let node = TestNode::new();
    let transport = node.transport();
    let server = BareServer::start(&transport, Settings::default()).await;
    let mut grpc = tonic::client::Grpc::new(channel(&transport).await);
    // Three messages, the later ones only after a pause: the body is not
    // all there when the request starts.
    let (send, messages) = tokio::sync::mpsc::channel(1);
    tokio::spawn(async move {
        for message in [vec![1u8; 10], vec![2; 20], vec![3; 30]] {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let _ = send.send(message).await;
        }
    });
    let messages = tokio_stream::wrappers::ReceiverStream::new(messages);
    let path = "/v1.Disk/ListDiskIDs".parse().unwrap();
    grpc.client_streaming(tonic::Request::new(messages), path, RawCodec)
        .await
        .unwrap();
    let seen = server.seen();
    // Each message framed as it came, and the last one ended the stream
    // (the server answers only after the end).
    assert_eq!(seen[0].frames, [15, 25, 35]);
}
