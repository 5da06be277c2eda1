//! What the client logs, and at which level: a warning is for something
//! an operator should look at, never for the ordinary end of a proxy.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::TestNode;
use csi_proxy_client::{ApiGroup, ApiVersion};

/// Collects everything tracing writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    fn lines_with(&self, level: &str, text: &str) -> Vec<String> {
        let bytes = self.0.lock().unwrap().clone();
        String::from_utf8_lossy(&bytes)
            .lines()
            .filter(|line| line.contains(level) && line.contains(text))
            .map(str::to_owned)
            .collect()
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

async fn wait_until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..500 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("gave up waiting: {what}");
}

#[tokio::test]
async fn a_proxy_that_stops_right_after_the_connect_is_no_warning_but_twice_in_a_row_is() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    // Global, and alone in its test binary: a thread-local subscriber can
    // miss events while other tests register the same callsites.
    tracing::subscriber::set_global_default(subscriber).unwrap();
    let (disk, v1) = (ApiGroup::Disk, ApiVersion::V1);
    let warning = "end as soon as they are made";

    let mut node = TestNode::serving(&[(disk, v1)]).await;
    let proxy = node.connect(disk, v1).await;
    // The proxy stops within a second of the connect, as at the end of
    // every short test: said at debug level.
    node.stop(disk, v1).await;
    wait_until("the connection ended", || !proxy.is_served(disk)).await;
    let said = "ended within a second of being made";
    wait_until("the debug line", || {
        !captured.lines_with("DEBUG", said).is_empty()
    })
    .await;
    assert!(captured.lines_with("WARN", warning).is_empty());

    // It comes back, and stops young again: now it is worth a warning, once.
    node.serve(disk, v1).await;
    wait_until("found again", || proxy.is_served(disk)).await;
    node.stop(disk, v1).await;
    wait_until("the connection ended again", || !proxy.is_served(disk)).await;
    wait_until("the warning", || {
        !captured.lines_with("WARN", warning).is_empty()
    })
    .await;
    let warnings = captured.lines_with("WARN", warning);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("disk"), "{warnings:?}");
}
