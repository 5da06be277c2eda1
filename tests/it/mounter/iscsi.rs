//! iSCSI volumes: a target's disks staged like any other, the session
//! leased by the volumes staged from it.

use super::{path, Node, GIB, STAGING, STAGING_2};
use csi_proxy_client::api::{IscsiAuth, Secret};
use csi_proxy_client::mount::{DiskAfterUnstage, IscsiVolume, PathState};
use csi_proxy_client::testing::sample::portal;
use csi_proxy_client::testing::{FakeHost, ProxyRelease, WindowsError};
use csi_proxy_client::{Error, ErrorKind, Operation as Op};

const IQN: &str = "iqn.2026-11.io.example:storage.t1";

fn chap() -> IscsiAuth {
    IscsiAuth::OneWayChap {
        username: "node".into(),
        secret: Secret::new("chap-secret-1"),
    }
}

/// A node whose portal offers a target with two disks behind one-way CHAP.
pub(super) async fn node_with_target(release: ProxyRelease) -> Node {
    let disks = [("iscsi-lun-0", 5 * GIB), ("iscsi-lun-1", 5 * GIB)];
    let host = FakeHost::builder().iscsi_target(
        portal(),
        IQN,
        &disks,
        Some(("node", "chap-secret-1")),
        None,
    );
    Node::on(release, host).await
}

pub(super) fn lun(n: u32) -> IscsiVolume {
    IscsiVolume::new(portal(), IQN)
        .with_auth(chap())
        .with_lun(n)
}

#[tokio::test]
async fn a_target_s_volumes_share_its_session_until_the_last_is_unstaged() {
    for release in ["v1.1.1".parse().unwrap(), ProxyRelease::LATEST] {
        let node = node_with_target(release).await;
        let m = &node.mounter;
        let (a, b) = (path(STAGING), path(STAGING_2));
        let first = m.stage_iscsi("pv-a", &lun(0), &a).await.unwrap();
        assert!(first.formatted, "{release}");
        let second = m.stage_iscsi("pv-b", &lun(1), &b).await.unwrap();
        assert_ne!(first.disk, second.disk, "{release}");
        // kubelet's repeat changes nothing.
        let again = m.stage_iscsi("pv-a", &lun(0), &a).await.unwrap();
        assert!(!again.change.changed(), "{release}");
        assert_eq!(node.host.iscsi_sessions().len(), 1, "{release}");
        assert!(matches!(
            m.inspect(&a).await.unwrap(),
            PathState::VolumeMount { .. }
        ));
        m.unstage("pv-a", &a, DiskAfterUnstage::KeepOnline)
            .await
            .unwrap();
        assert_eq!(
            node.host.iscsi_sessions().len(),
            1,
            "{release}: pv-b uses it"
        );
        m.unstage_iscsi("pv-b", &b, DiskAfterUnstage::KeepOnline)
            .await
            .unwrap();
        assert!(node.host.iscsi_sessions().is_empty(), "{release}");
        assert_eq!(m.inspect(&b).await.unwrap(), PathState::Absent);
    }
}

#[tokio::test]
async fn a_wrong_chap_secret_is_refused_and_leaves_no_lease() {
    let node = node_with_target(ProxyRelease::LATEST).await;
    let wrong = IscsiVolume::new(portal(), IQN)
        .with_auth(IscsiAuth::OneWayChap {
            username: "node".into(),
            secret: Secret::new("not-the-secret"),
        })
        .with_lun(0);
    let error = node
        .mounter
        .stage_iscsi("pv-a", &wrong, &path(STAGING))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Host { .. }), "{error:?}");
    assert!(node.host.iscsi_sessions().is_empty());
    // No lease: the unstage has nothing of the target's to log out.
    node.mounter
        .unstage("pv-a", &path(STAGING), DiskAfterUnstage::KeepOnline)
        .await
        .unwrap();
    node.mounter
        .stage_iscsi("pv-a", &lun(0), &path(STAGING))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_target_with_several_disks_needs_a_lun_and_bad_input_sends_nothing() {
    let node = node_with_target(ProxyRelease::LATEST).await;
    let any = IscsiVolume::new(portal(), IQN).with_auth(chap());
    let error = node
        .mounter
        .stage_iscsi("pv-a", &any, &path(STAGING))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Ambiguous, "{error:?}");
    node.take_rpcs();
    let empty = IscsiVolume::new(portal(), "");
    let error = node
        .mounter
        .stage_iscsi("pv-a", &empty, &path(STAGING))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidArgument, "{error:?}");
    assert!(node.take_rpcs().is_empty());
}

#[tokio::test]
async fn leases_outlive_a_restart_and_reconcile_logs_out_for_volumes_that_are_gone() {
    let mut node = node_with_target(ProxyRelease::LATEST).await;
    node.mounter
        .stage_iscsi("pv-a", &lun(0), &path(STAGING))
        .await
        .unwrap();
    node.mounter
        .stage_iscsi("pv-b", &lun(1), &path(STAGING_2))
        .await
        .unwrap();
    node.restart_driver().await;
    let report = node
        .mounter
        .reconcile(|volume| volume == "pv-b")
        .await
        .unwrap();
    assert_eq!(report.leases_dropped, vec!["pv-a".to_owned()], "{report:?}");
    assert_eq!(node.host.iscsi_sessions().len(), 1);
    let report = node.mounter.reconcile(|_| false).await.unwrap();
    assert_eq!(report.leases_dropped, vec!["pv-b".to_owned()], "{report:?}");
    assert!(node.host.iscsi_sessions().is_empty());
    assert!(report.failed.is_empty(), "{report:?}");
}

#[tokio::test]
async fn a_target_logged_in_already_is_not_logged_in_again() {
    let node = node_with_target(ProxyRelease::LATEST).await;
    let m = &node.mounter;
    m.stage_iscsi("pv-a", &lun(0), &path(STAGING))
        .await
        .unwrap();
    let logins = node.host_calls(Op::ConnectTarget);
    // Another LUN of the target, and kubelet's repeat of the first.
    m.stage_iscsi("pv-b", &lun(1), &path(STAGING_2))
        .await
        .unwrap();
    m.stage_iscsi("pv-a", &lun(0), &path(STAGING))
        .await
        .unwrap();
    assert_eq!(node.host_calls(Op::ConnectTarget), logins);
}

#[tokio::test]
async fn a_logout_done_before_a_crash_recorded_it_is_not_tried_forever() {
    let node = node_with_target(ProxyRelease::LATEST).await;
    let m = &node.mounter;
    m.stage_iscsi("pv-a", &lun(0), &path(STAGING))
        .await
        .unwrap();
    m.unstage_disk(&path(STAGING), DiskAfterUnstage::KeepOnline)
        .await
        .unwrap();
    // The session went (the logout of a driver that crashed before its
    // record), and the proxy now refuses to log out of nothing.
    let iscsi = node.mounter.proxy().iscsi().unwrap();
    iscsi.disconnect_target(&portal(), IQN).await.unwrap();
    let refusal = WindowsError::with_message(1, "the session does not exist");
    node.host.fail_call(Op::DisconnectTarget, 1, refusal);
    m.unstage_iscsi("pv-a", &path(STAGING), DiskAfterUnstage::KeepOnline)
        .await
        .unwrap();
    assert!(node.host.iscsi_sessions().is_empty());
    let report = m.reconcile(|_| false).await.unwrap();
    assert!(report.failed.is_empty(), "{report:?}");
}
