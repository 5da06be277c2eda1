//! Requests the proxy says it never processed (REFUSED_STREAM, or above a
//! GOAWAY's last stream): safe to send once more, even a mutation, and
//! only once.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{
    bare_client, drain_for_a_while, serve_h2, Endpoint, Reply, GOAWAY_NOTHING_PROCESSED, SETTINGS,
};
use crate::common::TestNode;
use csi_proxy_client::Error;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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
