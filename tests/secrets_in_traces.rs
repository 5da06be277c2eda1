//! Secrets stay out of traces, at every level, even when the proxy echoes
//! them back in its errors and the driver logs those errors.

mod common;

use std::sync::{Arc, Mutex};

use common::TestNode;
use csi_proxy_client::testing::sample::{portal, share, IQN};
use csi_proxy_client::{
    api::{IscsiAuth, Secret, SmbMapping},
    ApiGroup, ApiVersion as V,
};

/// Collects everything tracing writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn secrets_never_show_in_traces() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    // Global, and alone in its test binary: a thread-local subscriber can
    // miss events while other tests register the same callsites.
    tracing::subscriber::set_global_default(subscriber).unwrap();

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
    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("csi_proxy_call") && logs.contains("outcome=\"host\""),
        "the SDK's spans were captured"
    );
    assert!(logs.contains("a driver logs the error"));
    for secret in ["smb-pa55", "chap-pa55", "mutual-pa55"] {
        assert!(!logs.contains(secret), "{secret} leaked into:\n{logs}");
    }
}
