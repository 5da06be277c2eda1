//! A stage whose format is still running when kubelet gives up and
//! retries, when a second stage comes, or when the proxy restarts: the
//! volume is formatted once.

use std::time::Duration;

use crate::common::wait_until;
use crate::mounter::{page83, path, Node, STAGING};
use csi_proxy_client::mount::{Change, Mounter};
use csi_proxy_client::testing::{PathEntry, ProxyRelease};
use csi_proxy_client::{Code, Error, Operation as Op};

#[tokio::test]
async fn a_format_that_outlives_kubelets_deadline_is_joined_by_the_retry() {
    // v1.1.1 refuses to mount a volume where it is: a retry that raced the
    // first stage's mount would fail there (azuredisk #2690).
    for release in ["v1.1.1".parse().unwrap(), ProxyRelease::LATEST] {
        let node = Node::with_disk(release).await;
        node.host
            .delay_call(Op::FormatVolume, 1, Duration::from_millis(400));
        let first = tokio::time::timeout(
            Duration::from_millis(100),
            node.mounter.stage_disk(&page83(), &path(STAGING)),
        )
        .await;
        assert!(first.is_err(), "kubelet gave up");
        let retry = node.stage(STAGING).await;
        assert_eq!(
            retry.change,
            Change::Changed,
            "the retry got the first stage's answer"
        );
        assert_eq!(node.host_calls(Op::FormatVolume), 1, "{release}");
        assert_eq!(node.host_calls(Op::MountVolume), 1, "{release}");
        assert!(matches!(
            node.host.entry(STAGING),
            Some(PathEntry::MountPoint(_))
        ));
    }
}

#[tokio::test]
async fn a_format_whose_outcome_is_unknown_is_not_sent_again_while_it_may_run() {
    let node = Node::with_disk(ProxyRelease::LATEST).await;
    let mounter = Mounter::builder(node.mounter.proxy().clone(), node.state_dir())
        .poll_interval(Duration::from_millis(10))
        .format_deadline(Duration::from_millis(50))
        .format_grace(Duration::from_secs(60))
        .build()
        .unwrap();
    node.host
        .delay_call(Op::FormatVolume, 1, Duration::from_millis(400));
    let formatted = || node.host.volumes().values().filter(|v| v.formatted).count();
    let before = formatted();
    let error = mounter
        .stage_disk(&page83(), &path(STAGING))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Timeout { .. }), "{error}");
    let error = mounter
        .stage_disk(&page83(), &path(STAGING))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::InProgress { .. }), "{error}");
    assert_eq!(
        (error.csi_code(), error.is_retryable()),
        (Code::Aborted, true)
    );
    wait_until("the first format is done", || formatted() > before).await;
    let staged = mounter.stage_disk(&page83(), &path(STAGING)).await.unwrap();
    assert!(!staged.formatted, "the first format did it");
    assert_eq!(node.host_calls(Op::FormatVolume), 1);
}

#[tokio::test]
async fn two_concurrent_stages_of_one_volume_format_once() {
    let node = Node::with_disk(ProxyRelease::V0_2_2).await;
    node.host
        .delay_call(Op::FormatVolume, 1, Duration::from_millis(100));
    let (selector, staging) = (page83(), path(STAGING));
    let (a, b) = tokio::join!(
        node.mounter.stage_disk(&selector, &staging),
        node.mounter.stage_disk(&selector, &staging),
    );
    assert_eq!(a.unwrap().volume, b.unwrap().volume);
    assert_eq!(node.host_calls(Op::FormatVolume), 1);
    assert_eq!(node.host_calls(Op::PartitionDisk), 1);
}

#[tokio::test]
async fn a_proxy_restart_mid_stage_converges_without_a_second_format() {
    let mut node = Node::with_disk(ProxyRelease::LATEST).await;
    node.host
        .delay_call(Op::FormatVolume, 1, Duration::from_millis(300));
    // The call in flight breaks with the connection; the host goes on.
    let mounter = node.mounter.clone();
    let before = node.host_calls(Op::FormatVolume);
    let first = tokio::spawn(async move { mounter.stage_disk(&page83(), &path(STAGING)).await });
    wait_until("the format is on the host", || {
        node.host_calls(Op::FormatVolume) > before
    })
    .await;
    node.fake
        .restart(ProxyRelease::LATEST.served())
        .await
        .unwrap();
    let first = first.await.unwrap();
    // kubelet retries until the stage is done.
    let mut outcome = first.map(|s| s.volume);
    for _ in 0..50 {
        if outcome.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        outcome = node
            .mounter
            .stage_disk(&page83(), &path(STAGING))
            .await
            .map(|s| s.volume);
    }
    let volume = outcome.unwrap();
    assert_eq!(node.host_calls(Op::FormatVolume), 1);
    assert_eq!(
        node.host.entry(STAGING),
        Some(PathEntry::MountPoint(volume))
    );
}
