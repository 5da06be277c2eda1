//! The cases a review of the mounter found: what a real node does between
//! the happy paths (renumbered disks, failed removals, answers that say
//! nothing), each with the outcome that keeps pods' data safe.

use std::time::Duration;

use super::{
    creds_with, path, share, Node, GIB, PAGE83, SHARE_ROOT as ROOT, STAGING, STAGING_2, TARGET,
};
use csi_proxy_client::mount::{Change, DiskAfterUnstage, DiskSelector};
use csi_proxy_client::testing::{
    FakeHost, PathEntry, ProxyRelease, SmbMappingStatus, WindowsError,
};
use csi_proxy_client::{Error, HostCause, Operation as Op};

#[tokio::test]
async fn a_stage_after_a_failed_unstage_is_not_undone_by_reconcile() {
    let mut node = Node::with_disk(ProxyRelease::LATEST).await;
    let staging = path(STAGING);
    node.stage(STAGING).await;
    node.fail_next_offline();
    node.mounter
        .unstage_disk(&staging, DiskAfterUnstage::TakeOffline)
        .await
        .unwrap_err();
    // kubelet stages the volume again for a new pod.
    let staged = node.stage(STAGING).await;
    node.restart_driver().await;
    let report = node.mounter.reconcile(|_| true).await.unwrap();
    assert!(report.unstages_finished.is_empty(), "{report:?}");
    assert_eq!(
        node.host.entry(STAGING),
        Some(PathEntry::MountPoint(staged.volume))
    );
    assert!(node.host.disk(1).unwrap().online);
}

#[tokio::test]
async fn the_disk_taken_offline_is_the_volumes_own_after_a_renumbering() {
    let host = FakeHost::builder()
        .disk(1, PAGE83, 10 * GIB)
        .disk(2, "Google  pvc-other", 10 * GIB);
    let node = Node::on(ProxyRelease::LATEST, host).await;
    let staging = path(STAGING);
    node.stage(STAGING).await;
    // A reboot gave the disks each other's numbers.
    node.host.swap_disk_numbers(1, 2);
    node.mounter
        .unstage_disk(&staging, DiskAfterUnstage::TakeOffline)
        .await
        .unwrap();
    assert!(
        !node.host.disk(2).unwrap().online,
        "the volume's disk, now number 2"
    );
    assert!(
        node.host.disk(1).unwrap().online,
        "the other disk, now number 1"
    );
}

#[tokio::test]
async fn an_answer_that_does_not_say_not_mounted_stops_the_unstage() {
    let node = Node::with_disk(ProxyRelease::LATEST).await;
    let staging = path(STAGING);
    let volume = node.stage(STAGING).await.volume;
    node.host.fail_call(
        Op::GetVolumeIdFromTargetPath,
        1,
        WindowsError::new(WindowsError::NOT_READY),
    );
    let error = node
        .mounter
        .unstage_disk(&staging, DiskAfterUnstage::TakeOffline)
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Host { .. }), "{error}");
    // Nothing was removed without an unmount.
    assert_eq!(
        node.host.entry(STAGING),
        Some(PathEntry::MountPoint(volume))
    );
    assert_eq!(node.host_calls(Op::Rmdir), 0);
    node.mounter
        .unstage_disk(&staging, DiskAfterUnstage::TakeOffline)
        .await
        .unwrap();
    assert_eq!(node.host.entry(STAGING), None);
}

#[tokio::test]
async fn another_volume_at_the_staging_path_is_not_unstaged() {
    let host = FakeHost::builder()
        .disk(1, PAGE83, 10 * GIB)
        .disk(2, "Google  pvc-other", 10 * GIB);
    let node = Node::on(ProxyRelease::LATEST, host).await;
    let staging = path(STAGING);
    let staged = node.stage(STAGING).await;
    // Someone else swapped the volume under the staging path.
    let api = node.mounter.proxy().volume().unwrap();
    api.unmount_volume(&staged.volume, &staging).await.unwrap();
    let other = node
        .mounter
        .stage_disk(&DiskSelector::lun(2), &path(STAGING_2))
        .await
        .unwrap();
    api.unmount_volume(&other.volume, &path(STAGING_2))
        .await
        .unwrap();
    api.mount_volume(&other.volume, &staging).await.unwrap();
    let error = node
        .mounter
        .unstage_disk(&staging, DiskAfterUnstage::TakeOffline)
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Conflict { .. }), "{error}");
    assert_eq!(
        node.host.entry(STAGING),
        Some(PathEntry::MountPoint(other.volume))
    );
    assert!(node.host.disk(2).unwrap().online && node.host.disk(1).unwrap().online);
}

#[tokio::test]
async fn a_publish_repeat_checks_the_volume_is_still_staged() {
    let node = Node::with_disk(ProxyRelease::LATEST).await;
    let (staging, target) = (path(STAGING), path(TARGET));
    let volume = node.stage_and_publish(STAGING, TARGET).await.volume;
    // The volume went from under the staging folder (an unstage that
    // stopped after its unmount): the pod's link would lead to the node's
    // own disk.
    let api = node.mounter.proxy().volume().unwrap();
    api.unmount_volume(&volume, &staging).await.unwrap();
    let error = node.mounter.publish(&staging, &target).await.unwrap_err();
    assert!(matches!(error, Error::NotStaged { .. }), "{error}");
}

#[tokio::test]
async fn a_failed_removal_of_the_last_mapping_is_retried() {
    let node = Node::on(
        ProxyRelease::LATEST,
        FakeHost::builder()
            .smb_share(ROOT, "user", "pw")
            .share_folder(r"\\files\share\a"),
    )
    .await;
    let staging = path(STAGING);
    node.mounter
        .stage_smb("pv1", &share("a"), &creds_with("pw"), &staging)
        .await
        .unwrap();
    node.host.fail_call(
        Op::RemoveSmbGlobalMapping,
        1,
        WindowsError::new(WindowsError::ACCESS_DENIED),
    );
    let error = node.mounter.unstage_smb("pv1", &staging).await.unwrap_err();
    assert_eq!(error.host_cause(), Some(HostCause::AccessDenied), "{error}");
    assert_eq!(node.host.smb_mappings(), vec![ROOT.to_owned()]);
    // kubelet's retry removes it.
    node.mounter.unstage_smb("pv1", &staging).await.unwrap();
    assert!(node.host.smb_mappings().is_empty());
}

#[tokio::test]
async fn a_failed_clean_up_after_a_refused_link_still_drops_the_lease() {
    let node = Node::on(
        ProxyRelease::LATEST,
        FakeHost::builder()
            .smb_share(ROOT, "user", "pw")
            .share_folder(r"\\files\share\a")
            .share_folder(r"\\files\share\b"),
    )
    .await;
    let nowhere = path(r"C:\var\lib\kubelet\plugins\missing\pv1");
    node.host.fail_call(
        Op::RemoveSmbGlobalMapping,
        1,
        WindowsError::new(WindowsError::ACCESS_DENIED),
    );
    node.mounter
        .stage_smb("pv1", &share("a"), &creds_with("pw"), &nowhere)
        .await
        .unwrap_err();
    // The mapping the failed stage made stays (its removal failed), but no
    // lease claims it: the next stage of the share is its first again,
    // and its last unstage removes the mapping.
    node.mounter
        .stage_smb("pv2", &share("b"), &creds_with("pw"), &path(STAGING_2))
        .await
        .unwrap();
    node.mounter
        .unstage_smb("pv2", &path(STAGING_2))
        .await
        .unwrap();
    assert!(
        node.host.smb_mappings().is_empty(),
        "{:?}",
        node.host.smb_mappings()
    );
}

#[tokio::test]
async fn repairing_one_broken_link_leaves_the_other_volumes_mapping_alone() {
    // Before v1.1.2 each volume has a mapping of its own path.
    let host = FakeHost::builder()
        .smb_share(ROOT, "user", "pw")
        .share_folder(r"\\files\share\a")
        .share_folder(r"\\files\share\b");
    let node = Node::on("v1.1.1".parse().unwrap(), host).await;
    node.mounter
        .stage_smb("pv1", &share("a"), &creds_with("pw"), &path(STAGING))
        .await
        .unwrap();
    node.mounter
        .stage_smb("pv2", &share("b"), &creds_with("pw"), &path(STAGING_2))
        .await
        .unwrap();
    node.host
        .set_smb_mapping_status(r"\\files\share\a", SmbMappingStatus::Disconnected);
    node.mounter
        .stage_smb("pv1", &share("a"), &creds_with("pw"), &path(STAGING))
        .await
        .unwrap();
    assert_eq!(
        node.host.smb_mapping_status(r"\\files\share\b"),
        Some(SmbMappingStatus::Ok),
        "pv2's mapping was not touched"
    );
    assert_eq!(
        node.host.smb_mapping_status(r"\\files\share\a"),
        Some(SmbMappingStatus::Ok)
    );
}

#[tokio::test]
async fn a_refused_rotation_leaves_the_share_unmapped_until_the_right_one() {
    let node = Node::on(
        ProxyRelease::LATEST,
        FakeHost::builder()
            .smb_share(ROOT, "user", "pw")
            .share_folder(r"\\files\share\a"),
    )
    .await;
    node.mounter
        .stage_smb("pv1", &share("a"), &creds_with("pw"), &path(STAGING))
        .await
        .unwrap();
    node.host.set_smb_share_password(ROOT, "pw2");
    let error = node
        .mounter
        .rotate_smb_credentials(&share("a"), &creds_with("wrong"))
        .await
        .unwrap_err();
    assert_eq!(error.host_cause(), Some(HostCause::LogonFailure), "{error}");
    assert!(
        node.host.smb_mappings().is_empty(),
        "removed before the refusal"
    );
    let rotated = node
        .mounter
        .rotate_smb_credentials(&share("a"), &creds_with("pw2"))
        .await
        .unwrap();
    assert_eq!(rotated.change, Change::Changed);
    assert_eq!(node.host.smb_mappings(), vec![ROOT.to_owned()]);
    assert_eq!(
        node.mounter.inspect(&path(STAGING)).await.unwrap(),
        csi_proxy_client::mount::PathState::SmbLink {
            remote: share("a"),
            reachable: true
        }
    );
}

#[tokio::test]
async fn reconcile_goes_on_past_an_item_it_cannot_finish() {
    let mut node = Node::with_disk(ProxyRelease::LATEST).await;
    let staging = path(STAGING);
    node.stage(STAGING).await;
    node.fail_next_offline();
    node.mounter
        .unstage_disk(&staging, DiskAfterUnstage::TakeOffline)
        .await
        .unwrap_err();
    node.restart_driver().await;
    // The offline fails again: reported, and the rest goes on.
    node.fail_next_offline();
    let report = node.mounter.reconcile(|_| true).await.unwrap();
    assert_eq!(report.failed.len(), 1, "{report:?}");
    assert!(report.failed[0].0.contains("globalmount"), "{report:?}");
    // The bound times nothing: a reconcile stuck on what failed before
    // would never end, and this turns that hang into a failure.
    let report = tokio::time::timeout(Duration::from_secs(60), node.mounter.reconcile(|_| true))
        .await
        .unwrap()
        .unwrap();
    assert!(
        report.failed.is_empty() && report.unstages_finished.len() == 1,
        "{report:?}"
    );
    assert!(!node.host.disk(1).unwrap().online);
}

#[tokio::test]
async fn a_change_whose_answer_a_restart_lost_is_sent_once_more() {
    let mut node = Node::with_disk(ProxyRelease::LATEST).await;
    node.stage(STAGING).await;
    // The offline is under way when the proxy restarts: its answer is lost.
    node.host
        .delay_call(Op::SetDiskState, 1, Duration::from_millis(300));
    let mounter = node.mounter.clone();
    let before = node.host.calls_of(Op::SetDiskState);
    let unstage = tokio::spawn(async move {
        mounter
            .unstage_disk(&path(STAGING), DiskAfterUnstage::TakeOffline)
            .await
    });
    crate::common::wait_until("the offline is on the host", || {
        node.host.calls_of(Op::SetDiskState) > before
    })
    .await;
    node.fake
        .restart(ProxyRelease::LATEST.served())
        .await
        .unwrap();
    // No error for kubelet: taking a disk offline twice is taking it once.
    assert_eq!(unstage.await.unwrap().unwrap(), Change::Changed);
    assert!(!node.host.disk(1).unwrap().online);
    assert_eq!(node.host_calls(Op::SetDiskState), 2);
}
