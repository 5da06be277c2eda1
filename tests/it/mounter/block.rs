//! Block volumes: stage, publish, expand, stats, unpublish, unstage.

use std::time::Duration;

use super::{page83, path, releases, Node, GIB, PAGE83, STAGING, STAGING_2, TARGET, TARGET_2};
use csi_proxy_client::api::{DiskLocation, FilesystemApi};
use csi_proxy_client::mount::{
    Change, DiskAfterUnstage, DiskSelector, Formatting, Mounter, PathState,
};
use csi_proxy_client::testing::{FakeDisk, FakeHost, PathEntry, ProxyRelease, WindowsError};
use csi_proxy_client::{Code, Error, HostCause, Operation as Op};

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
async fn a_partition_found_is_formatted_only_when_the_driver_vouches_for_it() {
    // A partition the mounter did not make, reading as unformatted (what
    // an ext4 partition reads as): refused, nothing changed.
    let host = FakeHost::builder().partitioned_disk(1, PAGE83, 10 * GIB);
    let node = Node::on(ProxyRelease::LATEST, host).await;
    let error = node
        .mounter
        .stage_disk(&super::page83(), &path(STAGING))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::NotOurs { .. }), "{error}");
    assert_eq!(error.csi_code(), Code::FailedPrecondition);
    assert_eq!(node.host_calls(Op::FormatVolume), 0);
    assert_eq!(node.host.entry(STAGING), None);
    // A driver whose disks come partitioned and empty says so.
    let staged = node
        .mounter
        .stage_disk_for(
            "pv1",
            &super::page83(),
            &path(STAGING),
            Formatting::AnyUnformatted,
        )
        .await
        .unwrap();
    assert!(!staged.partitioned && staged.formatted, "{staged:?}");
    assert_eq!(node.host_calls(Op::PartitionDisk), 0);
}

#[tokio::test]
async fn a_partition_the_mounter_made_is_formatted_after_a_failed_format() {
    for release in [ProxyRelease::V0_2_2, ProxyRelease::LATEST] {
        let mut node = Node::with_disk(release).await;
        let failure = WindowsError::new(WindowsError::IO_DEVICE);
        node.host.fail_call(Op::FormatVolume, 1, failure);
        let error = node
            .mounter
            .stage_disk(&super::page83(), &path(STAGING))
            .await
            .unwrap_err();
        assert!(matches!(error, Error::Host { .. }), "{release}: {error}");
        // The journal recorded the partition before it was asked for: the
        // plugin, restarted, formats its own partition.
        node.restart_driver().await;
        let staged = node.stage(STAGING).await;
        assert!(
            !staged.partitioned && staged.formatted,
            "{release}: {staged:?}"
        );
        assert_eq!(node.host_calls(Op::PartitionDisk), 1);
    }
}

#[tokio::test]
async fn a_formatted_disk_keeps_its_data() {
    // A disk that has a file system, with data on it: mounted as it is.
    let node = Node::with_disk(ProxyRelease::V0_2_2).await;
    let volume = node.stage(STAGING).await.volume;
    node.mounter
        .unstage_disk(&path(STAGING), DiskAfterUnstage::KeepOnline)
        .await
        .unwrap();
    let used = node.host.volume(&volume).unwrap().used_bytes;
    let staged = node.stage(STAGING_2).await;
    assert_eq!(staged.volume, volume);
    assert!(!staged.formatted && !staged.partitioned, "{staged:?}");
    assert_eq!(
        node.host_calls(Op::FormatVolume),
        1,
        "formatted once, in its first stage"
    );
    assert_eq!(node.host.volume(&volume).unwrap().used_bytes, used);
}

#[tokio::test]
async fn a_volume_listed_only_on_the_third_look_is_waited_for() {
    let node = Node::with_disk(ProxyRelease::LATEST).await;
    node.host.hide_new_volumes(1, 2);
    let staged = node.stage(STAGING).await;
    assert!(staged.formatted);
    assert_eq!(
        node.host_calls(Op::ListVolumesOnDisk),
        4,
        "one before partitioning, three after"
    );
    assert_eq!(node.host_calls(Op::PartitionDisk), 1);
}

#[tokio::test]
async fn an_offline_disk_is_brought_online_and_a_read_only_one_is_named() {
    let node = Node::on(
        ProxyRelease::LATEST,
        FakeHost::builder().disk(1, PAGE83, 10 * GIB).offline(1),
    )
    .await;
    let staged = node.stage(STAGING).await;
    assert!(staged.onlined && staged.formatted, "{staged:?}");
    assert!(node.host.disk(1).unwrap().online);

    let node = Node::on(
        ProxyRelease::LATEST,
        FakeHost::builder().disk(1, PAGE83, 10 * GIB).read_only(1),
    )
    .await;
    let error = node
        .mounter
        .stage_disk(&page83(), &path(STAGING))
        .await
        .unwrap_err();
    assert_eq!(
        error.host_cause(),
        Some(HostCause::WriteProtected),
        "{error}"
    );
    assert_eq!(error.csi_code(), Code::FailedPrecondition);
    assert!(!error.is_retryable());
    assert_eq!(node.host.entry(STAGING), None, "nothing mounted");
}

#[tokio::test]
async fn a_staging_link_no_record_names_that_leads_nowhere_stays() {
    let node = Node::with_disk(ProxyRelease::LATEST).await;
    // A link someone left to a folder that is gone: the proxy cannot tell
    // it from a file, so it is not the mounter's to remove.
    let gone = path(r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\pd\gone");
    node.host.mkdir(&gone).await.unwrap();
    node.host
        .create_symlink(&gone, &path(STAGING))
        .await
        .unwrap();
    node.host.rmdir(&gone, false).await.unwrap();
    assert_eq!(
        node.mounter.inspect(&path(STAGING)).await.unwrap(),
        PathState::Directory
    );

    let error = node
        .mounter
        .stage_disk(&super::page83(), &path(STAGING))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::NotOurs { .. }), "{error}");
    assert_eq!(
        node.host.entry(STAGING),
        Some(PathEntry::Symlink(gone.as_str().to_owned()))
    );
}

#[tokio::test]
async fn another_volume_at_the_staging_path_is_a_conflict_and_stays() {
    let host = FakeHost::builder()
        .disk(1, PAGE83, 10 * GIB)
        .disk(2, "Google  pvc-2", 10 * GIB);
    let node = Node::on(ProxyRelease::LATEST, host).await;
    let other = node
        .mounter
        .stage_disk(&DiskSelector::lun(2), &path(STAGING))
        .await
        .unwrap();
    let error = node
        .mounter
        .stage_disk(&page83(), &path(STAGING))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Conflict { .. }), "{error}");
    assert_eq!(error.csi_code(), Code::AlreadyExists);
    assert_eq!(
        node.host.entry(STAGING),
        Some(PathEntry::MountPoint(other.volume))
    );
    assert_eq!(
        node.host_calls(Op::PartitionDisk),
        1,
        "disk 1 was not touched"
    );

    // A directory with files in it is not mounted over either.
    node.host
        .mkdir(&path(&format!(r"{STAGING_2}\lost+found")))
        .await
        .unwrap();
    let error = node
        .mounter
        .stage_disk(&page83(), &path(STAGING_2))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Conflict { .. }), "{error}");
    assert!(node
        .host
        .entry(&format!(r"{STAGING_2}\lost+found"))
        .is_some());
}

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
    tokio::time::sleep(Duration::from_millis(500)).await;
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
async fn every_disk_selector_finds_its_disk_and_an_ambiguous_one_is_typed() {
    let mut serial = FakeDisk::new(
        "Google  pvc-2",
        10 * GIB,
        DiskLocation {
            adapter: "1".into(),
            bus: "0".into(),
            target: "0".into(),
            lun_id: "7".into(),
        },
    );
    serial.serial_number = "vol0123456789".into();
    let host = FakeHost::builder()
        .disk(1, PAGE83, 10 * GIB)
        .custom_disk(2, serial)
        .disk(3, PAGE83, 5 * GIB);
    let node = Node::on(ProxyRelease::LATEST, host).await;
    let wait = Duration::from_millis(50);
    let m = &node.mounter;
    assert_eq!(m.find_disk(&DiskSelector::lun(7), wait).await.unwrap(), 2);
    assert_eq!(
        m.find_disk(&DiskSelector::page83("Google  pvc-2"), wait)
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        m.find_disk(&DiskSelector::serial_number("vol0123456789"), wait)
            .await
            .unwrap(),
        2
    );
    let by_size = DiskSelector::matching("serial containing 0123", |d| {
        d.ids
            .as_ref()
            .is_some_and(|ids| ids.serial_number.contains("0123"))
    });
    assert_eq!(m.find_disk(&by_size, wait).await.unwrap(), 2);
    let error = m
        .find_disk(&DiskSelector::page83(PAGE83), wait)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, Error::Ambiguous { candidates, .. } if candidates.len() == 2),
        "{error}"
    );
    let rescans = node.host.rescans();
    let error = m
        .find_disk(&DiskSelector::lun(9), Duration::from_millis(100))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::NotFound { .. }), "{error}");
    let looks = node.host.rescans() - rescans;
    assert!(
        (1..=11).contains(&looks),
        "at most one rescan a look: {looks}"
    );
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

#[tokio::test]
async fn a_proxy_restart_mid_stage_converges_without_a_second_format() {
    let mut node = Node::with_disk(ProxyRelease::LATEST).await;
    node.host
        .delay_call(Op::FormatVolume, 1, Duration::from_millis(300));
    // The call in flight breaks with the connection; the host goes on.
    let mounter = node.mounter.clone();
    let first = tokio::spawn(async move { mounter.stage_disk(&page83(), &path(STAGING)).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
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
