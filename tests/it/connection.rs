//! The SDK's own HTTP/2 connection against a bare HTTP/2 server (h2, no
//! gRPC framework), which shows what the client puts on the wire frame by
//! frame and lets a test choose the server's settings: a limit of
//! concurrent streams, responses larger than the flow-control window,
//! request bodies that come in pieces, calls dropped at any point.
//!
//! Unix sockets here, named pipes when built for Windows.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::TestNode;
use bytes::Bytes;
use csi_proxy_client::testing::{listen, RawCodec};
use csi_proxy_client::wire::disk::v1 as wire;
use csi_proxy_client::{
    negotiate::Negotiator,
    transport::{ProxyChannel, Transport},
    ApiGroup, ApiVersion, CsiProxy,
};
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
    /// Answers wait until the server's `most_at_once` reaches this (0:
    /// they do not wait). Read at each answer.
    answer_when_open: Arc<AtomicUsize>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            max_streams: None,
            delay: Duration::ZERO,
            answer: Bytes::new(),
            answer_when_open: Arc::default(),
        }
    }
}

struct BareServer {
    seen: Arc<Mutex<Vec<Seen>>>,
    /// The most requests it was answering at once on one connection.
    most_at_once: Arc<AtomicUsize>,
    /// Requests open now (not yet answered or reset), on all connections.
    open: Arc<AtomicUsize>,
    /// Connections accepted.
    connections: Arc<AtomicUsize>,
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
        let open = Arc::new(AtomicUsize::new(0));
        let connections = Arc::new(AtomicUsize::new(0));
        let (s, m, o, c) = (
            seen.clone(),
            most_at_once.clone(),
            open.clone(),
            connections.clone(),
        );
        let task = tokio::spawn(async move {
            while let Some(Ok(stream)) = incoming.next().await {
                c.fetch_add(1, Ordering::SeqCst);
                let (settings, seen, most) = (settings.clone(), s.clone(), m.clone());
                let open = o.clone();
                let in_flight = Arc::new(AtomicUsize::new(0));
                tokio::spawn(async move {
                    let mut builder = h2::server::Builder::new();
                    // No limit on the client's resets (h2's defence against
                    // floods of them): a test sees the client's own doing.
                    builder
                        .max_pending_accept_reset_streams(usize::MAX)
                        .max_local_error_reset_streams(None);
                    if let Some(max) = settings.max_streams {
                        builder.max_concurrent_streams(max);
                    }
                    let Ok(mut connection) = builder.handshake::<_, Bytes>(stream).await else {
                        return;
                    };
                    while let Some(Ok((request, respond))) = connection.accept().await {
                        let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        open.fetch_add(1, Ordering::SeqCst);
                        let (settings, seen, in_flight) =
                            (settings.clone(), seen.clone(), in_flight.clone());
                        let (open, most) = (open.clone(), most.clone());
                        tokio::spawn(async move {
                            let request = answer(request, respond, &settings, &most).await;
                            seen.lock().unwrap().push(request);
                            in_flight.fetch_sub(1, Ordering::SeqCst);
                            open.fetch_sub(1, Ordering::SeqCst);
                        });
                    }
                });
            }
        });
        Self {
            seen,
            most_at_once,
            open,
            connections,
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
    most_at_once: &AtomicUsize,
) -> Seen {
    let path = request.uri().path().to_owned();
    let mut body = request.into_body();
    let mut frames = Vec::new();
    while let Some(Ok(data)) = body.data().await {
        let _ = body.flow_control().release_capacity(data.len());
        frames.push(data.len());
    }
    tokio::time::sleep(settings.delay).await;
    while most_at_once.load(Ordering::SeqCst) < settings.answer_when_open.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
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

/// A default client of `node` for disk only.
async fn connect(node: &TestNode) -> CsiProxy {
    let client = node.client_builder().groups([ApiGroup::Disk]);
    client.connect().await.unwrap()
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
    let disk = connect(&node).await.disk().unwrap();
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
    let disk = connect(&node).await.disk().unwrap();
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
    let disks = 24_000;
    let answer = disks_answer(disks);
    assert!(answer.len() > 3 << 20, "{}", answer.len());
    let _server = BareServer::start(
        &transport,
        Settings {
            answer,
            ..Settings::default()
        },
    )
    .await;
    let disk = connect(&node).await.disk().unwrap();
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

/// A ListDiskIDs answer of `disks` disks, about 140 bytes each.
fn disks_answer(disks: u32) -> Bytes {
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
    Bytes::from(response.encode_to_vec())
}

/// A call that is dropped at a point chosen by `rng`: before its first
/// poll, or after some turns of the runtime (while it sends, waits for the
/// answer's head, or reads its body part-way), or not at all. Whether it
/// was answered.
async fn call_dropped_at_random(
    disk: &Arc<dyn csi_proxy_client::api::DiskApi>,
    rng: &mut u64,
) -> bool {
    // xorshift64: the same points on every run.
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    let turns = *rng % 64;
    let call = disk.list_disk_ids();
    if turns == 0 {
        drop(call);
        return false;
    }
    // One in 64 waits for its answer: however slow the machine, some
    // calls are answered between the dropped ones.
    if turns == 63 {
        return call.await.is_ok();
    }
    let later = async {
        for _ in 0..turns {
            tokio::task::yield_now().await;
        }
    };
    tokio::select! {
        biased;
        answer = call => answer.is_ok(),
        () = later => false,
    }
}

/// `calls` calls dropped at random points, one after the other; how many
/// were answered.
async fn calls_dropped_at_random(
    disk: Arc<dyn csi_proxy_client::api::DiskApi>,
    seed: u64,
    calls: usize,
) -> usize {
    let mut rng = seed;
    let mut answered = 0;
    for _ in 0..calls {
        answered += usize::from(call_dropped_at_random(&disk, &mut rng).await);
    }
    answered
}

/// 10,000 calls dropped at random points, alone on the connection (the
/// caller drives it) and side by side (the connection's task drives it),
/// leave nothing behind: the proxy ends up with no stream open, the
/// connection is the same one, and afterwards as many calls as the proxy's
/// stream limit allows are answered at once. A dropped call that kept its
/// stream would hold one of the four streams forever; one that kept the
/// flow-control window of its unread answer (up to 20 KiB) would have shut
/// the 4 MiB connection window long before the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_calls_dropped_at_random_points_leave_nothing_behind() {
    let node = TestNode::new();
    let transport = node.transport();
    // About 20 KiB.
    let disks = 146;
    let answer = disks_answer(disks);
    let answer_when_open = Arc::new(AtomicUsize::new(0));
    let server = BareServer::start(
        &transport,
        Settings {
            max_streams: Some(4),
            answer,
            answer_when_open: answer_when_open.clone(),
            ..Settings::default()
        },
    )
    .await;
    let disk = connect(&node).await.disk().unwrap();
    disk.list_disk_ids().await.unwrap();
    let connections = server.connections.load(Ordering::SeqCst);

    let answered = tokio::time::timeout(Duration::from_secs(120), async {
        // Alone: on the runtime's block_on thread, one call at a time.
        let mut answered =
            calls_dropped_at_random(disk.clone(), 0x9E37_79B9_7F4A_7C15, 4_000).await;
        // Side by side: four spawned callers and this one.
        let mut callers = tokio::task::JoinSet::new();
        for seed in 1..=4u64 {
            callers.spawn(calls_dropped_at_random(
                disk.clone(),
                seed * 0x2545_F491_4F6C_DD1D,
                1_000,
            ));
        }
        answered += calls_dropped_at_random(disk.clone(), 0x6A09_E667_F3BC_C909, 2_000).await;
        while let Some(done) = callers.join_next().await {
            answered += done.unwrap();
        }
        answered
    })
    .await
    .expect("the dropped calls stalled the connection");
    // Calls were dropped at every stage: before the proxy saw them (one in
    // 64 is dropped unpolled), after, and some were answered (one in 64
    // waits for its answer; others may come before their turn).
    let reached = server.seen().len();
    assert!(
        answered > 10 && reached > answered + 1_000 && reached < 9_950,
        "{answered} answered, {reached} reached the proxy"
    );

    // The proxy sees every dropped stream end.
    let open = || server.open.load(Ordering::SeqCst);
    for _ in 0..500 {
        if open() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(open(), 0, "streams left open on the proxy");
    // Four calls at once, held by the proxy until all four are open: only
    // possible with all four streams free.
    server.most_at_once.store(0, Ordering::SeqCst);
    answer_when_open.store(4, Ordering::SeqCst);
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let disk = disk.clone();
        calls.spawn(async move { disk.list_disk_ids().await.map(|ids| ids.len()) });
    }
    let answered = tokio::time::timeout(Duration::from_secs(10), async {
        let mut answered = Vec::new();
        while let Some(done) = calls.join_next().await {
            answered.push(done.unwrap().unwrap());
        }
        answered
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "four calls at once on the proxy's four streams; open: {}, seen {}",
            open(),
            server.seen().len()
        )
    });
    assert_eq!(answered, [disks as usize; 4]);
    assert_eq!(server.connections.load(Ordering::SeqCst), connections);
}
