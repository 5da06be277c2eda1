//! What became of a request, as its error says it ([`Error::delivery`],
//! [`Error::may_have_run`]), for each way a proxy can fail a call: over a
//! real connection to a bare HTTP/2 server on disk v1 that answers every
//! request one way. The call policy's choices agree with it: a request
//! refused unprocessed goes once more, a mutation that may have run does
//! not go again (issue 47, item 2).
//!
//! Unix sockets here, named pipes when built for Windows.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use csi_proxy_client::negotiate::VersionPolicy;
use csi_proxy_client::testing::{listen, LocalEndpoints};
use csi_proxy_client::{ApiGroup, ApiVersion, CsiProxy, Delivery, Error};
use tokio_stream::StreamExt;

/// How the server answers every request.
#[derive(Clone, Copy)]
enum Answer {
    /// RST_STREAM with this reason.
    Reset(h2::Reason),
    /// A response head that ends the stream: an HTTP status, a content
    /// type, and a `grpc-status` with its `grpc-message` (a trailers-only
    /// answer) if any.
    Head {
        status: u16,
        content_type: &'static str,
        grpc: Option<(&'static str, &'static str)>,
    },
}

/// A bare HTTP/2 server on disk v1; counts the requests.
struct Server {
    requests: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    async fn start(endpoints: &LocalEndpoints, answer: Answer) -> Self {
        let mut incoming = listen(&endpoints.transport(), ApiGroup::Disk, ApiVersion::V1)
            .await
            .unwrap();
        let requests = Arc::new(AtomicUsize::new(0));
        let count = requests.clone();
        let task = tokio::spawn(async move {
            while let Some(Ok(stream)) = incoming.next().await {
                let count = count.clone();
                tokio::spawn(async move {
                    let Ok(mut connection) = h2::server::handshake(stream).await else {
                        return;
                    };
                    while let Some(Ok((request, respond))) = connection.accept().await {
                        count.fetch_add(1, Ordering::SeqCst);
                        tokio::spawn(reply(request, respond, answer));
                    }
                });
            }
        });
        Self { requests, task }
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

async fn reply(
    request: tonic::codegen::http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    answer: Answer,
) {
    let mut body = request.into_body();
    while let Some(Ok(data)) = body.data().await {
        let _ = body.flow_control().release_capacity(data.len());
    }
    match answer {
        Answer::Reset(reason) => respond.send_reset(reason),
        Answer::Head {
            status,
            content_type,
            grpc,
        } => {
            let mut head = tonic::codegen::http::Response::builder()
                .status(status)
                .header("content-type", content_type);
            if let Some((code, message)) = grpc {
                head = head
                    .header("grpc-status", code)
                    .header("grpc-message", message);
            }
            let _ = respond.send_response(head.body(()).unwrap(), true);
        }
    }
}

/// A client of disk v1 alone on `endpoints`.
async fn client(endpoints: &LocalEndpoints) -> CsiProxy {
    CsiProxy::builder()
        .transport(endpoints.transport())
        .policy(VersionPolicy::default().pin(ApiGroup::Disk, ApiVersion::V1))
        .groups([ApiGroup::Disk])
        .require(ApiGroup::Disk)
        .connect()
        .await
        .unwrap()
}

/// A mutation (disk rescan) against a server that answers `answer`: its
/// error, and how many requests the server saw.
async fn rescan_against(answer: Answer) -> (Error, usize) {
    let endpoints = LocalEndpoints::new().unwrap();
    let server = Server::start(&endpoints, answer).await;
    let proxy = client(&endpoints).await;
    let error = proxy.disk().unwrap().rescan().await.unwrap_err();
    (error, server.requests())
}

/// The error's answers agree: `may_have_run` is the delivery's, and a
/// transport failure's `maybe_sent` says the same.
fn assert_consistent(error: &Error) {
    assert_eq!(
        error.may_have_run(),
        error.delivery() == Delivery::MayHaveRun,
        "{error}"
    );
    if let Error::Transport { maybe_sent, .. } = error {
        assert_eq!(*maybe_sent, error.may_have_run(), "{error}");
    }
}

#[tokio::test]
async fn a_request_refused_twice_was_refused_unprocessed() {
    let (error, requests) = rescan_against(Answer::Reset(h2::Reason::REFUSED_STREAM)).await;
    assert!(matches!(error, Error::Transport { .. }), "{error}");
    assert_eq!(error.delivery(), Delivery::RefusedUnprocessed, "{error}");
    assert!(!error.may_have_run());
    assert_consistent(&error);
    // Refused unprocessed: sent once more, and only once.
    assert_eq!(requests, 2);
}

#[tokio::test]
async fn a_mutation_whose_stream_broke_may_have_run_and_is_not_sent_again() {
    let (error, requests) = rescan_against(Answer::Reset(h2::Reason::INTERNAL_ERROR)).await;
    assert!(matches!(error, Error::Transport { .. }), "{error}");
    assert_eq!(error.delivery(), Delivery::MayHaveRun, "{error}");
    assert_consistent(&error);
    assert_eq!(requests, 1, "a mutation that may have run goes once");
}

#[tokio::test]
async fn the_proxys_own_failure_was_answered() {
    let (error, requests) = rescan_against(Answer::Head {
        status: 200,
        content_type: "application/grpc",
        grpc: Some(("2", "The device is not ready.")),
    })
    .await;
    assert!(matches!(error, Error::Host { .. }), "{error}");
    assert_eq!(error.delivery(), Delivery::Answered, "{error}");
    assert_consistent(&error);
    assert_eq!(requests, 1);
}

#[tokio::test]
async fn an_answer_that_is_no_grpc_may_have_run() {
    let (error, requests) = rescan_against(Answer::Head {
        status: 502,
        content_type: "text/html",
        grpc: None,
    })
    .await;
    assert!(matches!(error, Error::InvalidResponse { .. }), "{error}");
    assert_eq!(error.delivery(), Delivery::MayHaveRun, "{error}");
    assert_consistent(&error);
    assert_eq!(requests, 1);
}

#[tokio::test]
async fn nothing_is_sent_to_a_proxy_that_is_not_there() {
    let endpoints = LocalEndpoints::new().unwrap();
    let error = CsiProxy::builder()
        .transport(endpoints.transport())
        .groups([ApiGroup::Disk])
        .require(ApiGroup::Disk)
        .wait_for_proxy(std::time::Duration::ZERO)
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(error, Error::NotServed { .. }), "{error}");
    assert_eq!(error.delivery(), Delivery::NotSent);
    assert_consistent(&error);
}
