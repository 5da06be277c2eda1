//! The texts kubelet's events show, and the fake proxy's upgrade to a
//! release (issue 48, items 4 and 5).
//!
//! A status message is a sentence a node operator reads in `kubectl
//! describe`: the error and its causes in words, never a Rust `Debug`
//! dump, and no message says that something "may still be running" when
//! nothing was started.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::node::FakeNode;
use csi_proxy_client::api::{SmbRemotePath, WindowsPath};
use csi_proxy_client::mount::{DiskSelector, Mounter, MounterBuilder};
use csi_proxy_client::testing::{FakeHost, ProxyRelease};
use csi_proxy_client::{
    ApiGroup, ApiVersion, Code, CsiNodeCall, CsiProxy, Error, Operation, Status,
};

const GIB: u64 = 1 << 30;
const PAGE83: &str = "Google  pvc-1";
const STAGING: &str = r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\pd\pv1\globalmount";

/// Fragments of Rust's `Debug` output, and of tonic's own text of a
/// status, that must never reach an operator.
const DEBUG_FRAGMENTS: [&str; 8] = [
    "{ kind:",
    "Custom {",
    "ConnectionError",
    "Status {",
    "code: '",
    "source:",
    "Kind(",
    "Io(",
];

fn assert_words(message: &str) {
    for fragment in DEBUG_FRAGMENTS {
        assert!(
            !message.contains(fragment),
            "{fragment:?} in the message: {message}"
        );
    }
}

/// A fake node at `release` with one raw 10 GiB disk and kubelet's
/// folders, its host, and a client.
async fn node_at(release: ProxyRelease) -> (FakeNode, FakeHost, CsiProxy) {
    let host = FakeHost::builder()
        .disk(1, PAGE83, 10 * GIB)
        .dir(r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\pd\pv1")
        .build();
    let node = FakeNode::at(release, &host).await;
    let proxy = node.client().await;
    (node, host, proxy)
}

fn mounter(proxy: CsiProxy, state: &std::path::Path) -> MounterBuilder {
    Mounter::builder(proxy, state)
        .poll_interval(Duration::from_millis(10))
        .disk_wait(Duration::from_millis(300))
        .volume_wait(Duration::from_secs(2))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_broken_mid_call_is_told_in_words() {
    let (mut node, host, proxy) = node_at(ProxyRelease::LATEST).await;
    // The partition runs on the host when the proxy goes away.
    host.delay_call(Operation::PartitionDisk, 1, Duration::from_secs(2));
    let disk = proxy.disk().unwrap();
    let call = tokio::spawn(async move { disk.partition_disk(1).await });
    let deadline = Instant::now() + Duration::from_secs(5);
    while host.calls_of(Operation::PartitionDisk) == 0 {
        assert!(Instant::now() < deadline, "the call never arrived");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    node.fake.stop_all().await;
    let error = call.await.unwrap().unwrap_err();
    assert!(
        matches!(
            error,
            Error::Transport {
                maybe_sent: true,
                ..
            }
        ),
        "{error:?}"
    );

    let text = error.to_string();
    assert_words(&text);
    let status = error.csi_status_for(CsiNodeCall::StageVolume);
    assert_eq!(status.code(), Code::Unavailable);
    let message = status.message();
    assert_words(message);
    assert_eq!(message, Status::from(error.clone()).message());
    assert!(
        message.starts_with("disk PartitionDisk failed at "),
        "{message}"
    );
    // "... failed at <socket>: the connection to CSI Proxy broke during
    // the call: stream closed because of a broken pipe; the request may
    // have reached CSI Proxy, so it may have run"
    assert!(
        message.contains(": the connection to CSI Proxy broke during the call: "),
        "{message}"
    );
    let cause = ["broken pipe", "reset"];
    assert!(cause.iter().any(|c| message.contains(c)), "{message}");
    assert!(
        message.ends_with("; the request may have reached CSI Proxy, so it may have run"),
        "{message}"
    );
    // Each cause once.
    assert_eq!(message.matches("CSI Proxy broke").count(), 1, "{message}");
}

#[test]
fn a_grpc_status_under_a_transport_failure_is_its_message() {
    // What tonic makes of a failed channel: a status of code Unknown with
    // the failure's text, the failure as its source; its own text ends
    // with the source's Debug.
    let io = std::io::Error::new(
        std::io::ErrorKind::BrokenPipe,
        "connection closed because of a broken pipe",
    );
    let status = Status::from_error(Box::new(io));
    assert!(
        status.to_string().contains("Custom {"),
        "tonic's text: {status}"
    );
    let error = Error::Transport {
        address: r"\\.\pipe\csi-proxy-disk-v1".into(),
        operation: Some(Operation::PartitionDisk),
        maybe_sent: false,
        source: Arc::new(status),
    };
    let message = Status::from(error).message().to_owned();
    assert_words(&message);
    assert_eq!(
        message,
        r"disk PartitionDisk failed at \\.\pipe\csi-proxy-disk-v1: connection closed because of a broken pipe"
    );

    // Connecting: no call yet.
    let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "no listener");
    let error = Error::Transport {
        address: "/run/csi-proxy/disk-v1".into(),
        operation: None,
        maybe_sent: false,
        source: Arc::new(refused),
    };
    assert_eq!(
        Status::from(error).message(),
        "connecting to CSI Proxy failed at /run/csi-proxy/disk-v1: no listener (connection refused)"
    );
}

#[test]
fn host_failures_name_their_code_in_words() {
    let usual = Error::host(
        Operation::MountVolume,
        Code::Unknown,
        "The device is not ready.",
    );
    assert_eq!(
        usual.to_string(),
        "volume MountVolume failed on the host: The device is not ready."
    );
    let other = Error::host(Operation::MountVolume, Code::AlreadyExists, "in use");
    assert_eq!(
        other.to_string(),
        "volume MountVolume failed on the host (code ALREADY_EXISTS): in use"
    );
}

#[tokio::test]
async fn expand_before_the_disk_has_grown_says_what_it_waits_for() {
    let (_node, host, proxy) = node_at(ProxyRelease::LATEST).await;
    let state = tempfile::tempdir().unwrap();
    let mounter = mounter(proxy, state.path()).build().unwrap();
    let (selector, staging) = (
        DiskSelector::page83(PAGE83),
        WindowsPath::new(STAGING).unwrap(),
    );
    mounter.stage_disk(&selector, &staging).await.unwrap();

    let error = mounter
        .expand(&selector, &staging, Some(20 * GIB))
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::InProgress { .. }) && error.is_retryable(),
        "{error}"
    );
    let status = error.csi_status_for(CsiNodeCall::ExpandVolume);
    assert_eq!(status.code(), Code::Aborted);
    assert_eq!(
        status.message(),
        "disk 1 has 10 GiB, 20 GiB were asked for: the controller's resize has not reached \
         the node yet; retry later"
    );

    // A size that is no whole number of GiB shows its bytes too.
    host.set_disk_size(1, 10 * GIB + GIB / 2);
    let error = mounter
        .expand(&selector, &staging, Some(20 * GIB))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "disk 1 has 10.5 GiB (11274289152 bytes), 20 GiB were asked for: the controller's \
         resize has not reached the node yet; retry later"
    );
}

#[tokio::test]
async fn a_format_that_may_still_run_is_one_sentence() {
    let (_node, host, proxy) = node_at(ProxyRelease::LATEST).await;
    let state = tempfile::tempdir().unwrap();
    let mounter = mounter(proxy, state.path())
        .format_deadline(Duration::from_millis(50))
        .format_grace(Duration::from_secs(60))
        .build()
        .unwrap();
    host.delay_call(Operation::FormatVolume, 1, Duration::from_millis(300));
    let formatted = || host.volumes().values().filter(|v| v.formatted).count();
    let before = formatted();
    let (selector, staging) = (
        DiskSelector::page83(PAGE83),
        WindowsPath::new(STAGING).unwrap(),
    );
    let error = mounter.stage_disk(&selector, &staging).await.unwrap_err();
    assert!(matches!(error, Error::Timeout { .. }), "{error}");
    let error = mounter.stage_disk(&selector, &staging).await.unwrap_err();
    assert!(
        matches!(error, Error::InProgress { .. }) && error.is_retryable(),
        "{error}"
    );
    let status = Status::from(error);
    assert_eq!(status.code(), Code::Aborted);
    let message = status.message();
    assert_words(message);
    assert!(message.starts_with("the format of volume "), "{message}");
    assert!(
        message.contains(
            " s ago, may still be running on the host (its answer was lost); a stage formats \
             it from "
        ),
        "{message}"
    );
    assert!(
        message.ends_with(" s) only if it still has no file system then; retry later"),
        "{message}"
    );
    assert!(!message.contains("not starting it again"), "{message}");
    assert_eq!(message.matches("may still be running").count(), 1);
    // Let the delayed format finish before the host goes.
    crate::common::wait_until("the delayed format is done", || formatted() > before).await;
}

#[test]
fn an_in_progress_error_is_its_own_sentence() {
    let what = "volume FormatVolume on vol-1, started 5 s ago, may still be running on the host \
                (its caller stopped waiting): not starting it again; retry later";
    let error = Error::InProgress { what: what.into() };
    assert_eq!(error.to_string(), what);
}

/// What RemoveSmbGlobalMapping of a share the node has no mapping of
/// answers: each release says "not found" in its own words.
async fn unmapped_removal(proxy: &CsiProxy) -> String {
    let remote = SmbRemotePath::new(r"\\server\share").unwrap();
    let error = proxy
        .smb()
        .unwrap()
        .remove_smb_global_mapping(&remote)
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Host { .. }), "{error:?}");
    error.to_string()
}

/// Group-versions as sorted text, to compare sets.
fn sorted(versions: Vec<(ApiGroup, ApiVersion)>) -> Vec<String> {
    let mut names: Vec<String> = versions
        .into_iter()
        .map(|(group, version)| format!("{group} {version}"))
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn upgrade_to_a_release_serves_its_versions_and_follows_its_rules() {
    let (mut node, host, proxy) = node_at(ProxyRelease::LATEST).await;
    let fake = &mut node.fake;
    let newest = unmapped_removal(&proxy).await;
    assert!(newest.contains("not found"), "{newest}");

    // A downgrade to v0.2.2: its versions, its rules, at once.
    fake.upgrade_to(ProxyRelease::V0_2_2).await.unwrap();
    fake.clear_calls();
    assert_eq!(sorted(fake.served()), sorted(ProxyRelease::V0_2_2.served()));
    assert_eq!(fake.release(), Some(ProxyRelease::V0_2_2));
    assert_eq!(host.release(), ProxyRelease::V0_2_2);
    let old = unmapped_removal(&proxy).await;
    assert!(old.contains("Remove-SmbGlobalMapping"), "{old}");
    let calls = fake.calls();
    assert!(
        calls.iter().any(|c| c.rpc == "RemoveSmbGlobalMapping")
            && calls.iter().all(|c| ProxyRelease::V0_2_2
                .served()
                .contains(&(c.group, c.version))),
        "{calls:?}"
    );

    // A restart swaps only the versions: v0.2.2's rules stay.
    fake.restart(ProxyRelease::LATEST.served()).await.unwrap();
    assert_eq!(host.release(), ProxyRelease::V0_2_2);
    assert!(unmapped_removal(&proxy)
        .await
        .contains("Remove-SmbGlobalMapping"));

    // And an upgrade back to the newest release brings its rules back.
    fake.upgrade_to(ProxyRelease::LATEST).await.unwrap();
    assert_eq!(sorted(fake.served()), sorted(ProxyRelease::LATEST.served()));
    assert_eq!(host.release(), ProxyRelease::LATEST);
    assert_eq!(unmapped_removal(&proxy).await, newest);
}
