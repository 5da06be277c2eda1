//! The build drivers ship. `tests/shipped-client` is the crate with default
//! features only (no `testing`, so tonic without its server), in a process
//! of its own; the fake proxies it talks to are served here. Every scenario
//! also runs through this test's own client, built with `testing`: the
//! facts a driver acts on must not depend on a cargo feature.
//!
//! Unix only: the client is built for the host with a nested `cargo build`.
#![cfg(unix)]

#[path = "shipped/build_it.rs"]
mod build_it;
#[path = "shipped/calls.rs"]
mod calls;
#[allow(dead_code, unused_imports)] // the helpers of the main test binary
#[path = "it/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use calls::Call;
use common::slow::serve_slow_volumes;
use csi_proxy_client::testing::ScriptedServer;
use csi_proxy_client::testing::{FakeHost, FakeProxy};
use csi_proxy_client::{transport::Transport, ApiGroup, ApiVersion};
use tokio_stream::StreamExt;

/// Builds the shipped client once per test run; returns its executable.
fn shipped_client() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| build_it::build_shipped_client(false))
}

/// A socket directory and its transport.
struct Node {
    dir: tempfile::TempDir,
}

impl Node {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn transport(&self) -> Transport {
        Transport::unix_sockets(self.dir.path()).unwrap()
    }

    /// Runs the shipped client with `args` in its own process; its outcome
    /// line.
    async fn shipped(&self, args: &[&str]) -> String {
        run_shipped(self.dir.path().to_owned(), args).await
    }

    /// Runs the same call with this test's client (the `testing` build).
    async fn in_process(&self, args: &[&str]) -> String {
        calls::run(self.transport(), &Call::parse(args).unwrap()).await
    }

    /// Both builds' outcomes of `args`, checked to state the same facts.
    async fn both(&self, args: &[&str]) -> [String; 2] {
        let shipped = self.shipped(args).await;
        let in_process = self.in_process(args).await;
        assert_eq!(
            facts(&shipped),
            facts(&in_process),
            "{shipped}\n{in_process}"
        );
        [shipped, in_process]
    }
}

/// Runs the shipped client on the sockets in `dir` with `args`, in its own
/// process; its outcome line.
async fn run_shipped(dir: PathBuf, args: &[&str]) -> String {
    let mut command = Command::new(shipped_client());
    command.arg(dir).args(args);
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .expect("run the shipped client");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// The matchable part of an outcome line.
fn facts(line: &str) -> &str {
    line.split(" | ").next().unwrap()
}

#[tokio::test]
async fn a_host_error_is_a_host_error() {
    let node = Node::new();
    let host = FakeHost::builder().build();
    let mut fake = FakeProxy::for_host(node.transport(), &host);
    fake.serve(ApiGroup::Filesystem, ApiVersion::V1)
        .await
        .unwrap();
    let missing = r"C:\var\lib\kubelet\plugins\missing";
    for line in node.both(&["rmdir", missing]).await {
        assert_eq!(facts(&line), "Host operation=Rmdir code=Unknown", "{line}");
    }
}

#[tokio::test]
async fn an_operation_the_version_lacks_is_unsupported_and_not_sent() {
    let node = Node::new();
    let host = FakeHost::builder().disk(1, "pd-1", 1 << 30).build();
    let mut fake = FakeProxy::for_host(node.transport(), &host);
    fake.serve(ApiGroup::Disk, ApiVersion::V1ALPHA1)
        .await
        .unwrap();
    for line in node.both(&["list-disk-ids"]).await {
        assert_eq!(
            facts(&line),
            "Unsupported operation=ListDiskIds served=v1alpha1 needed=v1beta1",
            "{line}"
        );
    }
    assert!(fake.calls().is_empty(), "{:?}", fake.calls());
}

#[tokio::test]
async fn a_call_past_its_deadline_is_a_timeout_naming_the_operation() {
    let node = Node::new();
    let (_backend, _fake) = serve_slow_volumes(node.transport(), 5_000).await;
    let args = ["format-volume", r"\\?\Volume{1}\", "--deadline-ms", "300"];
    for line in node.both(&args).await {
        assert_eq!(
            facts(&line),
            "Timeout operation=FormatVolume after=300ms",
            "{line}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mutation_cut_off_by_a_broken_connection_may_have_been_sent() {
    let node = Node::new();
    let args = ["format-volume", r"\\?\Volume{1}\"];
    for shipped in [true, false] {
        let (backend, mut fake) = serve_slow_volumes(node.transport(), 10_000).await;
        let call = {
            let (dir, transport) = (node.dir.path().to_owned(), node.transport());
            tokio::spawn(async move {
                if shipped {
                    run_shipped(dir, &args).await
                } else {
                    calls::run(transport, &Call::parse(&args).unwrap()).await
                }
            })
        };
        let started = Instant::now();
        while backend.formats.load(Ordering::SeqCst) == 0 {
            assert!(started.elapsed() < Duration::from_secs(60), "never arrived");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        fake.stop_all().await;
        let line = call.await.unwrap();
        assert_eq!(
            facts(&line),
            "Transport operation=Some(FormatVolume) maybe_sent=true",
            "{line}"
        );
        assert_eq!(backend.formats.load(Ordering::SeqCst), 1, "sent once");
    }
}

#[tokio::test]
async fn an_answer_that_is_no_grpc_is_an_invalid_response_in_both_builds() {
    let node = Node::new();
    let server = serve_bare(&node.transport(), |mut respond| {
        let not_found = tonic::codegen::http::Response::builder()
            .status(404)
            .body(())
            .unwrap();
        let _ = respond.send_response(not_found, true);
    })
    .await;
    for line in node.both(&["list-disk-ids"]).await {
        assert_eq!(
            facts(&line),
            "InvalidResponse operation=ListDiskIds csi_code=Internal",
            "{line}"
        );
    }
    server.abort();
}

#[tokio::test]
async fn answers_tonic_cannot_use_are_invalid_responses_in_both_builds() {
    // Statuses that tonic makes up itself, where a feature could change
    // what a driver is told.
    let answers = [
        (
            "a length prefix past the body",
            vec![0, 0, 0, 0, 10, 1, 2],
            Some("0"),
        ),
        (
            "the compressed flag with no grpc-encoding",
            vec![1, 0, 0, 0, 0],
            Some("0"),
        ),
        ("no grpc-status", vec![0, 0, 0, 0, 0], None),
    ];
    for (what, body, status) in answers {
        let node = Node::new();
        let server = serve_bare(&node.transport(), move |mut respond| {
            let head = tonic::codegen::http::Response::builder()
                .status(200)
                .header("content-type", "application/grpc")
                .body(())
                .unwrap();
            let Ok(mut stream) = respond.send_response(head, false) else {
                return;
            };
            let _ = stream.send_data(bytes::Bytes::from(body.clone()), false);
            let mut trailers = tonic::codegen::http::HeaderMap::new();
            if let Some(code) = status {
                trailers.insert("grpc-status", code.parse().unwrap());
            }
            let _ = stream.send_trailers(trailers);
        })
        .await;
        for line in node.both(&["list-disk-ids"]).await {
            assert_eq!(
                facts(&line),
                "InvalidResponse operation=ListDiskIds csi_code=Internal",
                "{what}: {line}"
            );
        }
        server.abort();
    }
}

#[tokio::test]
async fn a_group_the_node_lacks_is_not_served_at_once_in_both_builds() {
    let node = Node::new();
    let host = FakeHost::builder().build();
    let mut fake = FakeProxy::for_host(node.transport(), &host);
    fake.serve(ApiGroup::Disk, ApiVersion::V1).await.unwrap();
    // Built first, so that the time below is the calls' alone.
    tokio::task::spawn_blocking(shipped_client).await.unwrap();
    let started = Instant::now();
    for line in node.both(&["smb-map", "pw"]).await {
        assert_eq!(facts(&line), "NotServed group=smb", "{line}");
    }
    // A mutation's deadline is two minutes; it must not be waited out.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn an_endpoint_that_is_no_socket_is_a_configuration_error_in_both_builds() {
    let node = Node::new();
    std::fs::write(node.dir.path().join("csi-proxy-disk-v1"), b"").unwrap();
    for line in node.both(&["list-disk-ids"]).await {
        assert!(
            facts(&line).ends_with("Configuration csi_code=FailedPrecondition"),
            "{line}"
        );
    }
}

/// Serves `group` `version` with a bare HTTP/2 server that resets every
/// stream with `reason` as soon as its headers arrive.
async fn serve_resets(transport: &Transport, reason: h2::Reason) -> tokio::task::JoinHandle<()> {
    serve_bare(transport, move |mut respond| respond.send_reset(reason)).await
}

/// Serves disk v1 with a bare HTTP/2 server that answers every stream
/// with `answer` as soon as its headers arrive.
async fn serve_bare(
    transport: &Transport,
    answer: impl Fn(h2::server::SendResponse<bytes::Bytes>) + Clone + Send + Sync + 'static,
) -> tokio::task::JoinHandle<()> {
    let mut incoming = csi_proxy_client::testing::listen(transport, ApiGroup::Disk, ApiVersion::V1)
        .await
        .unwrap();
    tokio::spawn(async move {
        while let Some(Ok(stream)) = incoming.next().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                let Ok(mut connection) = h2::server::handshake(stream).await else {
                    return;
                };
                while let Some(Ok((_request, respond))) = connection.accept().await {
                    answer(respond);
                }
            });
        }
    })
}

#[tokio::test]
async fn a_stream_the_server_resets_is_a_transport_error_in_both_builds() {
    // A refused stream was not processed (RFC 9113 §8.7): sent once more,
    // and when refused again, reported as not sent.
    for (reason, maybe_sent) in [
        (h2::Reason::INTERNAL_ERROR, true),
        (h2::Reason::PROTOCOL_ERROR, true),
        (h2::Reason::REFUSED_STREAM, false),
    ] {
        let node = Node::new();
        let server = serve_resets(&node.transport(), reason).await;
        for line in node.both(&["list-disk-ids"]).await {
            assert_eq!(
                facts(&line),
                format!("Transport operation=Some(ListDiskIds) maybe_sent={maybe_sent}"),
                "{reason:?}: {line}"
            );
        }
        server.abort();
    }
}

#[tokio::test]
async fn an_echoed_password_shows_in_no_variant_and_in_no_quoting() {
    let secret = r#"Zq9"W\x"#;
    let go_quoted = r#"Zq9\"W\\x"#;
    let answers = [
        tonic::Status::unavailable(format!("mapping failed for {secret}")),
        tonic::Status::unknown(format!("bad password \"{go_quoted}\"")),
        tonic::Status::internal(format!("password {secret:?} rejected")),
    ];
    for answer in answers {
        let node = Node::new();
        let server = ScriptedServer::start(&node.transport(), ApiGroup::Smb, ApiVersion::V1)
            .await
            .unwrap();
        let script = answer.clone();
        server.script(move |_| Err(script.clone()));
        for line in node.both(&["smb-map", secret]).await {
            assert!(!line.contains("Zq9") && !line.contains("W\\"), "{line}");
            assert!(line.contains("***"), "{line}");
        }
    }

    // Past ASCII: Go's `%+q` and JSON that escapes all but ASCII write the
    // `é` as `\u00e9`; an extra trailer shows it as bytes in the status.
    let secret = r#"s3cr3t"Pa55é%w\rd"#;
    let ascii_escaped = r#"s3cr3t\"Pa55\u00e9%w\\rd"#;
    let mut in_a_trailer = tonic::Status::unavailable("mapping failed");
    in_a_trailer.metadata_mut().insert(
        "x-echo",
        tonic::metadata::MetadataValue::try_from(secret.as_bytes()).unwrap(),
    );
    let answers = [
        tonic::Status::unknown(format!("bad password \"{ascii_escaped}\"")),
        tonic::Status::unavailable(format!("{{\"password\":\"{ascii_escaped}\"}}")),
        in_a_trailer,
    ];
    for answer in answers {
        let node = Node::new();
        let server = ScriptedServer::start(&node.transport(), ApiGroup::Smb, ApiVersion::V1)
            .await
            .unwrap();
        let script = answer.clone();
        server.script(move |_| Err(script.clone()));
        for line in node.both(&["smb-map", secret]).await {
            assert!(!line.contains("s3cr3t") && !line.contains("Pa55"), "{line}");
        }
    }
}
