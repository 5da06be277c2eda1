//! What the client writes to tracing: secrets never, at any level, even
//! when the proxy echoes them back and the driver logs its errors; and a
//! warning only for what an operator should look at.
//!
//! A binary of its own: the subscriber that captures it all is global (a
//! thread-local one can miss events while other tests register the same
//! callsites), set once for both tests here.

#[allow(dead_code, unused_imports)] // the helpers of the main test binary
#[path = "it/common/mod.rs"]
mod common;

use std::sync::{Arc, Mutex, OnceLock};

use common::{wait_until, TestNode};
use csi_proxy_client::api::{IscsiAuth, Secret, SmbMapping};
use csi_proxy_client::testing::sample::{portal, share, IQN};
use csi_proxy_client::{ApiGroup, ApiVersion};
use ApiVersion as V;

/// Collects everything tracing writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    /// The lines at `level` about the disk group (the other test here
    /// uses SMB and iSCSI) that contain `text`.
    fn disk_lines(&self, level: &str, text: &str) -> Vec<String> {
        self.text()
            .lines()
            .filter(|line| line.contains(level) && line.contains("group=disk"))
            .filter(|line| line.contains(text))
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

/// What tracing wrote in this process, at every level, from the first
/// call on.
fn captured() -> Captured {
    static CAPTURED: OnceLock<Captured> = OnceLock::new();
    CAPTURED
        .get_or_init(|| {
            let captured = Captured::default();
            let writer = captured.clone();
            let subscriber = tracing_subscriber::fmt()
                .with_max_level(tracing::Level::TRACE)
                .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
                .with_ansi(false)
                .with_writer(move || writer.clone())
                .finish();
            tracing::subscriber::set_global_default(subscriber).unwrap();
            captured
        })
        .clone()
}

#[tokio::test]
async fn secrets_never_show_in_traces() {
    let captured = captured();

    for (group, version) in [(ApiGroup::Smb, V::V1BETA1), (ApiGroup::Iscsi, V::V1ALPHA2)] {
        let node = TestNode::new();
        let raw = node.raw(group, version).await;
        // The proxy echoes the secret of each request back in its error.
        raw.script(|path| {
            let secret = match path.rsplit('/').next() {
                Some("NewSmbGlobalMapping") => "smb-pa55",
                Some("ConnectTarget") => "chap-pa55",
                _ => "mutual-pa55",
            };
            Err(tonic::Status::unknown(format!("failed for {secret}")))
        });
        let proxy = node.connect(group, version).await;
        if group == ApiGroup::Smb {
            let mapping = SmbMapping::new(share(), "user", Secret::new("smb-pa55"));
            let err = proxy
                .smb()
                .unwrap()
                .new_smb_global_mapping(&mapping)
                .await
                .unwrap_err();
            tracing::error!(%err, ?err, "a driver logs the error");
        } else {
            let iscsi = proxy.iscsi().unwrap();
            let auth = IscsiAuth::OneWayChap {
                username: "u".into(),
                secret: Secret::new("chap-pa55"),
            };
            let err = iscsi
                .connect_target(&portal(), IQN, &auth)
                .await
                .unwrap_err();
            tracing::error!(%err, ?err, "a driver logs the error");
            let err = iscsi
                .set_mutual_chap_secret(&Secret::new("mutual-pa55"))
                .await
                .unwrap_err();
            tracing::error!(%err, ?err, "a driver logs the error");
        }
    }
    let logs = captured.text();
    assert!(
        logs.contains("csi_proxy_call") && logs.contains("outcome=\"host\""),
        "the SDK's spans were captured"
    );
    assert!(logs.contains("a driver logs the error"));
    for secret in ["smb-pa55", "chap-pa55", "mutual-pa55"] {
        assert!(!logs.contains(secret), "{secret} leaked into:\n{logs}");
    }
}

#[tokio::test]
async fn a_proxy_that_stops_right_after_the_connect_is_no_warning_but_twice_in_a_row_is() {
    let captured = captured();
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
        !captured.disk_lines("DEBUG", said).is_empty()
    })
    .await;
    assert!(captured.disk_lines("WARN", warning).is_empty());

    // It comes back, and stops young again: now it is worth a warning, once.
    node.serve(disk, v1).await;
    wait_until("found again", || proxy.is_served(disk)).await;
    node.stop(disk, v1).await;
    wait_until("the connection ended again", || !proxy.is_served(disk)).await;
    wait_until("the warning", || {
        !captured.disk_lines("WARN", warning).is_empty()
    })
    .await;
    let warnings = captured.disk_lines("WARN", warning);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
}
