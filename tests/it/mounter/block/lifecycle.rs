//! A staged disk's life as kubelet calls it: every operation twice, an
//! unstage finished by its retry, publish, expand and stats.

use crate::mounter::{
    page83, path, releases, Node, GIB, PAGE83, STAGING, STAGING_2, TARGET, TARGET_2,
};
use csi_proxy_client::api::FilesystemApi;
use csi_proxy_client::mount::{Change, DiskAfterUnstage, DiskSelector};
use csi_proxy_client::testing::{FakeHost, PathEntry, ProxyRelease};
use csi_proxy_client::{Error, Operation as Op};

#[tokio::test]
async fn every_operation_twice_changes_nothing_the_second_time() {
    for release in releases() {
        let node = Node::with_disk(release).await;
        let (staging, target, m) = (path(STAGING), path(TARGET), &node.mounter);
        let staged = node.stage(STAGING).await;
        assert_eq!(staged.change, Change::Changed, "{release}");
        assert!(
            staged.partitioned && staged.formatted,
            "{release}: {staged:?}"
        );
        let again = node.stage(STAGING).await;
        assert_eq!(
            (again.change, again.volume.clone()),
            (Change::Unchanged, staged.volume.clone())
        );
        assert_eq!(node.host_calls(Op::PartitionDisk), 1, "{release}");
        assert_eq!(node.host_calls(Op::FormatVolume), 1, "{release}");
        assert_eq!(node.host_calls(Op::MountVolume), 1, "{release}");

        assert_eq!(m.publish(&staging, &target).await.unwrap(), Change::Changed);
        assert_eq!(
            m.publish(&staging, &target).await.unwrap(),
            Change::Unchanged
        );
        assert_eq!(
            node.host.entry(TARGET),
            Some(PathEntry::Symlink(STAGING.into()))
        );

        node.host.set_disk_size(1, 20 * GIB);
        let grown = m.expand(&page83(), &target, Some(20 * GIB)).await.unwrap();
        assert!(grown.grew, "{release}");
        let again = m.expand(&page83(), &target, Some(20 * GIB)).await.unwrap();
        assert_eq!(
            (again.grew, again.total_bytes),
            (false, grown.total_bytes),
            "{release}"
        );

        assert_eq!(m.unpublish(&target).await.unwrap(), Change::Changed);
        assert_eq!(m.unpublish(&target).await.unwrap(), Change::Unchanged);
        assert_eq!(node.host.entry(TARGET), None);
        assert!(
            node.host.volume(&staged.volume).unwrap().formatted,
            "unpublish keeps the data"
        );

        assert_eq!(
            m.unstage_disk(&staging, DiskAfterUnstage::TakeOffline)
                .await
                .unwrap(),
            Change::Changed
        );
        assert_eq!(
            m.unstage_disk(&staging, DiskAfterUnstage::TakeOffline)
                .await
                .unwrap(),
            Change::Unchanged
        );
        assert_eq!(node.host.entry(STAGING), None);
        assert!(node.host.volume(&staged.volume).unwrap().mounts.is_empty());
        assert!(
            !node.host.disk(1).unwrap().online,
            "{release}: offline at unstage"
        );
    }
}

#[tokio::test]
async fn an_unstage_that_fails_at_offline_is_finished_by_its_retry() {
    let node = Node::with_disk(ProxyRelease::LATEST).await;
    node.stage(STAGING).await;
    node.fail_next_offline();
    node.mounter
        .unstage_disk(&path(STAGING), DiskAfterUnstage::TakeOffline)
        .await
        .unwrap_err();
    assert_eq!(
        node.host.entry(STAGING),
        None,
        "the folder went before the offline failed"
    );
    assert!(node.host.disk(1).unwrap().online);
    assert_eq!(
        node.mounter
            .unstage_disk(&path(STAGING), DiskAfterUnstage::TakeOffline)
            .await
            .unwrap(),
        Change::Changed
    );
    assert!(
        !node.host.disk(1).unwrap().online,
        "the retry took it offline"
    );
    assert_eq!(
        node.mounter
            .unstage_disk(&path(STAGING), DiskAfterUnstage::TakeOffline)
            .await
            .unwrap(),
        Change::Unchanged
    );
}

#[tokio::test]
async fn publish_replaces_an_empty_folder_and_refuses_a_link_elsewhere_or_no_stage() {
    let host = FakeHost::builder()
        .disk(1, PAGE83, 10 * GIB)
        .disk(2, "Google  pvc-2", 10 * GIB);
    let node = Node::on(ProxyRelease::LATEST, host).await;
    let m = &node.mounter;
    let (staging, target) = (path(STAGING), path(TARGET));
    // Before staging: nothing to publish, nothing made.
    let error = m.publish(&staging, &target).await.unwrap_err();
    assert!(matches!(error, Error::NotStaged { .. }), "{error}");
    assert_eq!(node.host.entry(TARGET), None);

    node.stage(STAGING).await;
    node.host.mkdir(&target).await.unwrap(); // kubelet's empty folder
    assert_eq!(m.publish(&staging, &target).await.unwrap(), Change::Changed);
    assert_eq!(
        m.publish(&staging, &target).await.unwrap(),
        Change::Unchanged
    );

    // The same target asked for another staging path: a conflict.
    m.stage_disk(&DiskSelector::lun(2), &path(STAGING_2))
        .await
        .unwrap();
    let error = m.publish(&path(STAGING_2), &target).await.unwrap_err();
    assert!(matches!(error, Error::Conflict { .. }), "{error}");
    assert_eq!(
        node.host.entry(TARGET),
        Some(PathEntry::Symlink(STAGING.into()))
    );

    // A pod folder with files in it is never replaced.
    node.host
        .mkdir(&path(&format!(r"{TARGET_2}\data")))
        .await
        .unwrap();
    let error = m.publish(&staging, &path(TARGET_2)).await.unwrap_err();
    assert!(matches!(error, Error::Conflict { .. }), "{error}");
    assert!(node.host.entry(&format!(r"{TARGET_2}\data")).is_some());
}

#[tokio::test]
async fn expand_waits_for_the_disk_and_nothing_to_grow_is_success() {
    // v1.1.1 fails a growth under 1 MB; v1.3 skips one under 100 MB.
    for release in ["v1.1.1".parse().unwrap(), ProxyRelease::LATEST] {
        let node = Node::with_disk(release).await;
        let staging = path(STAGING);
        node.stage(STAGING).await;
        let error = node
            .mounter
            .expand(&page83(), &staging, Some(20 * GIB))
            .await
            .unwrap_err();
        assert!(
            matches!(error, Error::InProgress { .. }) && error.is_retryable(),
            "{error}"
        );
        let before = node
            .mounter
            .expand(&page83(), &staging, None)
            .await
            .unwrap();
        assert!(!before.grew, "{release}: nothing to grow");
        node.host.set_disk_size(1, 20 * GIB);
        let after = node
            .mounter
            .expand(&page83(), &staging, Some(20 * GIB))
            .await
            .unwrap();
        assert!(
            after.grew && after.total_bytes > 19 * GIB,
            "{release}: {after:?}"
        );
    }
}

#[tokio::test]
async fn stats_are_right_through_the_link_and_the_staging_path_on_every_release() {
    for release in [ProxyRelease::V0_2_2, ProxyRelease::LATEST] {
        let node = Node::with_disk(release).await;
        let (staging, target) = (path(STAGING), path(TARGET));
        let volume = node.stage_and_publish(STAGING, TARGET).await.volume;
        let truth = node.host.volume(&volume).unwrap();
        for at in [&staging, &target] {
            let stats = node.mounter.stats(&page83(), at).await.unwrap();
            assert_eq!(stats.total_bytes, truth.size_bytes, "{release} {at}");
            assert_eq!(stats.used_bytes, truth.used_bytes, "{release} {at}");
            assert_eq!(stats.available_bytes, truth.size_bytes - truth.used_bytes);
        }
        // The volume group alone, as a driver without the mounter calls it.
        let direct = node
            .mounter
            .proxy()
            .volume()
            .unwrap()
            .get_volume_stats(&volume)
            .await
            .unwrap();
        assert_eq!(direct.total_bytes, truth.size_bytes, "{release}");
        let error = node
            .mounter
            .stats(&page83(), &path(TARGET_2))
            .await
            .unwrap_err();
        assert!(matches!(error, Error::NotFound { .. }), "{error}");
    }
}
