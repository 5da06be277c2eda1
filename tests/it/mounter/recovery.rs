//! Reboots, restarts and `reconcile`.

use super::{creds, path, Node, GIB, PAGE83, SHARE_ROOT as ROOT, STAGING, STAGING_2, TARGET};
use csi_proxy_client::api::{FilesystemApi, SmbRemotePath};
use csi_proxy_client::mount::{Change, DiskAfterUnstage};
use csi_proxy_client::testing::{FakeHost, PathEntry, ProxyRelease};

/// A node with share folder `pv1` staged at [`STAGING`], and the disk
/// staged at [`STAGING_2`] and published at [`TARGET`].
async fn share_and_disk_staged() -> (Node, SmbRemotePath) {
    let host = FakeHost::builder()
        .smb_share(ROOT, "user", "pw")
        .share_folder(r"\\files\share\pv1")
        .disk(1, PAGE83, 10 * GIB);
    let node = Node::on(ProxyRelease::LATEST, host).await;
    let share = SmbRemotePath::new(r"\\files\share\pv1").unwrap();
    node.mounter
        .stage_smb("pv1", &share, &creds(), &path(STAGING))
        .await
        .unwrap();
    node.stage_and_publish(STAGING_2, TARGET).await;
    (node, share)
}

#[tokio::test]
async fn a_reboot_drops_mappings_and_reconcile_clears_the_way_for_kubelet() {
    let (mut node, share) = share_and_disk_staged().await;

    node.host.reboot();
    node.restart_driver().await;
    let report = node
        .mounter
        .reconcile(|volume| volume == "pv1")
        .await
        .unwrap();
    assert_eq!(report.links_removed, vec![path(STAGING)], "{report:?}");
    // The disk's staging folder, unmounted by the reboot and made by the
    // mounter, is gone too; kubelet makes it again.
    assert_eq!(report.folders_removed, vec![path(STAGING_2)], "{report:?}");
    assert!(report.leases_dropped.is_empty());
    // kubelet makes its staging folder, and stages again: mapped again.
    node.host.mkdir(&path(STAGING)).await.unwrap();
    let again = node
        .mounter
        .stage_smb("pv1", &share, &creds(), &path(STAGING))
        .await
        .unwrap();
    assert_eq!(again, Change::Changed);
    assert_eq!(node.host.smb_mappings(), vec![ROOT.to_owned()]);
    // The disk's volume came back unmounted: its stage mounts it again,
    // and the pod's link leads to it once more.
    let staged = node.stage(STAGING_2).await;
    assert!(staged.change.changed() && !staged.formatted, "{staged:?}");
    assert_eq!(
        node.mounter
            .publish(&path(STAGING_2), &path(TARGET))
            .await
            .unwrap(),
        Change::Unchanged
    );
}

#[tokio::test]
async fn reconcile_drops_the_leases_of_volumes_that_are_gone_and_their_mapping() {
    let host = FakeHost::builder()
        .smb_share(ROOT, "user", "pw")
        .share_folder(r"\\files\share\pv1")
        .share_folder(r"\\files\share\pv2");
    let node = Node::on(ProxyRelease::LATEST, host).await;
    for (volume, staging) in [("pv1", STAGING), ("pv2", STAGING_2)] {
        let share = SmbRemotePath::new(format!(r"{ROOT}\{volume}")).unwrap();
        node.mounter
            .stage_smb(volume, &share, &creds(), &path(staging))
            .await
            .unwrap();
    }
    let report = node
        .mounter
        .reconcile(|volume| volume == "pv2")
        .await
        .unwrap();
    assert_eq!(report.leases_dropped, vec!["pv1".to_owned()]);
    assert!(report.mappings_removed.is_empty(), "pv2 still uses it");
    assert_eq!(node.host.entry(STAGING), None);
    let report = node.mounter.reconcile(|_| false).await.unwrap();
    assert_eq!(report.mappings_removed, vec![ROOT.to_owned()]);
    assert!(node.host.smb_mappings().is_empty());
}

#[tokio::test]
async fn reconcile_finishes_an_unstage_a_restart_cut_short() {
    let mut node = Node::with_disk(ProxyRelease::LATEST).await;
    node.stage(STAGING).await;
    node.fail_next_offline();
    node.mounter
        .unstage_disk(&path(STAGING), DiskAfterUnstage::TakeOffline)
        .await
        .unwrap_err();
    node.restart_driver().await;
    let report = node.mounter.reconcile(|_| true).await.unwrap();
    assert_eq!(report.unstages_finished, vec![path(STAGING)]);
    assert!(!node.host.disk(1).unwrap().online);
    let report = node.mounter.reconcile(|_| true).await.unwrap();
    assert!(report.unstages_finished.is_empty(), "{report:?}");
}

#[tokio::test]
async fn a_pre_1_1_2_proxy_maps_each_path_and_every_one_is_removed() {
    let host = FakeHost::builder()
        .smb_share(ROOT, "user", "pw")
        .share_folder(r"\\files\share\a")
        .share_folder(r"\\files\share\b");
    let node = Node::on("v1.1.1".parse().unwrap(), host).await;
    let a = SmbRemotePath::new(r"\\files\share\a").unwrap();
    let b = SmbRemotePath::new(r"\\files\share\b").unwrap();
    node.mounter
        .stage_smb("pv1", &a, &creds(), &path(STAGING))
        .await
        .unwrap();
    node.mounter
        .stage_smb("pv2", &b, &creds(), &path(STAGING_2))
        .await
        .unwrap();
    assert_eq!(node.host.smb_mappings().len(), 2);
    node.mounter
        .unstage_smb("pv1", &path(STAGING))
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
    assert_eq!(node.host.entry(STAGING_2), None);
}

#[tokio::test]
async fn reconcile_leaves_a_file_put_where_it_made_a_folder() {
    let host = FakeHost::builder().disk(1, PAGE83, 10 * GIB);
    let mut node = Node::on(ProxyRelease::LATEST, host).await;
    node.stage_and_publish(STAGING_2, TARGET).await;
    node.host.reboot();
    // The folder the mounter made (and the reboot unmounted) is replaced
    // by someone's file.
    node.host.rmdir(&path(STAGING_2), false).await.unwrap();
    node.host.put_file(STAGING_2);
    node.restart_driver().await;
    let report = node.mounter.reconcile(|_| false).await.unwrap();
    assert!(report.folders_removed.is_empty(), "{report:?}");
    assert_eq!(
        node.host.entry(STAGING_2),
        Some(csi_proxy_client::testing::PathEntry::File)
    );
}

#[tokio::test]
async fn reconcile_leaves_a_file_put_where_its_link_was_and_a_link_that_leads_nowhere() {
    let (mut node, _) = share_and_disk_staged().await;
    // Someone puts a file where each link was; the proxy reads a file as
    // it reads a link that leads nowhere.
    node.host.put_file(STAGING);
    node.host.put_file(TARGET);

    node.restart_driver().await;
    let report = node.mounter.reconcile(|_| true).await.unwrap();
    assert!(report.links_removed.is_empty(), "{report:?}");
    assert!(report.failed.is_empty(), "{report:?}");
    for file in [STAGING, TARGET] {
        assert_eq!(node.host.entry(file), Some(PathEntry::File), "{file}");
    }

    // A pod's link whose staging folder went (a reboot unmounted it,
    // and reconcile removed the folder it had made) reads the same: it
    // stays for kubelet's unpublish, which removes the link the journal
    // records.
    let host = FakeHost::builder().disk(1, PAGE83, 10 * GIB);
    let mut node = Node::on(ProxyRelease::LATEST, host).await;
    node.stage_and_publish(STAGING, TARGET).await;
    node.host.reboot();
    node.restart_driver().await;
    let first = node.mounter.reconcile(|_| true).await.unwrap();
    assert_eq!(first.folders_removed, vec![path(STAGING)], "{first:?}");
    let second = node.mounter.reconcile(|_| true).await.unwrap();
    assert!(second.links_removed.is_empty(), "{second:?}");
    assert!(matches!(
        node.host.entry(TARGET),
        Some(PathEntry::Symlink(_))
    ));
    assert_eq!(
        node.mounter.unpublish(&path(TARGET)).await.unwrap(),
        Change::Changed
    );
    assert_eq!(node.host.entry(TARGET), None);
}
