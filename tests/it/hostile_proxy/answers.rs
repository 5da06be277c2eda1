//! Answers from a bare HTTP/2 server: one that is no proper gRPC answer is
//! an invalid response (a mutation's outcome unknown), never the host's
//! failure; the proxy's own status is the host's; the size limit is a
//! setting.

use std::sync::Arc;

use super::{bare_client, Endpoint, Reply};
use crate::common::TestNode;
use csi_proxy_client::{ApiGroup, Error};

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
