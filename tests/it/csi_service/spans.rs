//! A span and metrics per call, by method and code.
//!
//! The test's subscriber is its thread's alone. While one dispatcher is
//! all the process has, tracing asks the thread that first meets a
//! callsite (another test's, with none) and caches that no one wants it
//! (tokio-rs/tracing#3611), so the test keeps a second one registered:
//! then every dispatcher is asked.

use std::sync::{Arc, Mutex};

use csi_proxy_client::csi::v1::node_server::Node;
use csi_proxy_client::csi::v1::*;
use csi_proxy_client::csi::{VolumeKind, CSI_CALLS_TOTAL};
use csi_proxy_client::testing::ProxyRelease;
use tonic::Request;

use super::{stage, Node1, TestDriver};
use crate::common::recorder::LogRecorder;

/// A process-wide dispatcher that records nothing, so that this test's
/// is never the only one (see the module's docs).
fn keep_a_second_dispatcher() {
    static SET: std::sync::Once = std::sync::Once::new();
    SET.call_once(|| {
        let none = tracing::subscriber::NoSubscriber::default();
        // Another test's global one would serve as well.
        let _ = tracing::subscriber::set_global_default(none);
    });
}

#[tokio::test]
async fn each_call_has_a_span_and_counts_by_method_and_code() {
    keep_a_second_dispatcher();
    #[derive(Clone, Default)]
    struct Log(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Log {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let log = Log::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _traced = tracing::subscriber::set_default(subscriber);
    let recorder = LogRecorder::default();
    let _recorded = metrics::set_default_local_recorder(&recorder);

    let node = Node1::new(ProxyRelease::LATEST).await;
    let service = node.service(TestDriver::of(&[VolumeKind::Disk]));
    service
        .node_stage_volume(Request::new(stage("lun-1")))
        .await
        .unwrap();
    let _ = service
        .node_stage_volume(Request::new(stage("vol-9")))
        .await;
    let _ = service
        .node_get_info(Request::new(NodeGetInfoRequest {}))
        .await;

    let count =
        |method, code| recorder.count(CSI_CALLS_TOTAL, &[("method", method), ("code", code)]);
    assert_eq!(count("NodeStageVolume", "OK"), 1);
    assert_eq!(count("NodeStageVolume", "NOT_FOUND"), 1);
    assert_eq!(count("NodeGetInfo", "OK"), 1);
    let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("csi_call{")).collect();
    let found = |method: &str, code: &str| {
        lines.iter().any(|line| {
            line.contains(&format!("method=\"{method}\""))
                && line.contains(&format!("code=\"{code}\""))
                && line.contains("duration_ms=")
        })
    };
    assert!(found("NodeStageVolume", "OK"), "{text}");
    assert!(found("NodeStageVolume", "NOT_FOUND"), "{text}");
    assert!(text.contains("volume_id=\"vol-9\""), "{text}");
}
