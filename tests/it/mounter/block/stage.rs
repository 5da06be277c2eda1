//! Staging a disk: what is partitioned and formatted and what keeps its
//! data, the waits, an offline or read-only disk, what is found at the
//! staging path and left alone, and each way of naming the disk.

use std::time::Duration;

use crate::mounter::{page83, path, Node, GIB, PAGE83, STAGING, STAGING_2};
use csi_proxy_client::api::{DiskLocation, FilesystemApi};
use csi_proxy_client::mount::{DiskAfterUnstage, DiskSelector, Formatting, PathState};
use csi_proxy_client::testing::{FakeDisk, FakeHost, PathEntry, ProxyRelease, WindowsError};
use csi_proxy_client::{Code, Error, HostCause, Operation as Op};

#[tokio::test]
async fn a_partition_found_is_formatted_only_when_the_driver_vouches_for_it() {
    // A partition the mounter did not make, reading as unformatted (what
    // an ext4 partition reads as): refused, nothing changed.
    let host = FakeHost::builder().partitioned_disk(1, PAGE83, 10 * GIB);
    let node = Node::on(ProxyRelease::LATEST, host).await;
    let error = node
        .mounter
        .stage_disk(&page83(), &path(STAGING))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::NotOurs { .. }), "{error}");
    assert_eq!(error.csi_code(), Code::FailedPrecondition);
    assert_eq!(node.host_calls(Op::FormatVolume), 0);
    assert_eq!(node.host.entry(STAGING), None);
    // A driver whose disks come partitioned and empty says so.
    let staged = node
        .mounter
        .stage_disk_for("pv1", &page83(), &path(STAGING), Formatting::AnyUnformatted)
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
            .stage_disk(&page83(), &path(STAGING))
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
        .stage_disk(&page83(), &path(STAGING))
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
async fn a_partition_whose_answers_were_lost_proves_nothing() {
    // The host partitions the disk, and both answers (the request and the
    // mounter's resend) are lost: the caller sees a timeout.
    let node = Node::with_disk(ProxyRelease::LATEST).await;
    let proxy = (node.client_builder())
        .deadline(Op::PartitionDisk, Duration::from_millis(200))
        .connect()
        .await
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    let mounter = crate::mounter::mounter(proxy, state.path());
    let mut held = node.host.hold_answer(1);
    let mut stage = tokio::spawn({
        let mounter = mounter.clone();
        async move { mounter.stage_disk(&page83(), &path(STAGING)).await }
    });
    let mut lost = Vec::new();
    let error = loop {
        tokio::select! {
            staged = &mut stage => break staged.unwrap().unwrap_err(),
            answer = &mut held => {
                let (operation, go) = answer.unwrap();
                held = node.host.hold_answer(1);
                match operation {
                    Op::PartitionDisk => lost.push(go),
                    _ => drop(go),
                }
            }
        }
    };
    drop((held, lost));
    assert!(error.may_have_run(), "{error}");
    assert_eq!(node.host_calls(Op::PartitionDisk), 2, "sent once more");
    assert!(node.host.disk(1).unwrap().partitioned, "the host did it");
    // The volume is there, and reads as unformatted: nothing shows that
    // it is the partition the mounter asked for, so it is not formatted.
    let error = mounter
        .stage_disk(&page83(), &path(STAGING))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::NotOurs { .. }), "{error}");
    assert_eq!(node.host_calls(Op::FormatVolume), 0);
    assert_eq!(node.host_calls(Op::PartitionDisk), 2);
    assert_eq!(node.host.entry(STAGING), None);
}

#[tokio::test]
async fn a_blank_disk_brought_online_is_partitioned_once_its_volumes_had_time_to_show() {
    let node = Node::on(
        ProxyRelease::LATEST,
        FakeHost::builder().disk(1, PAGE83, 10 * GIB).offline(1),
    )
    .await;
    let staged = node.stage(STAGING).await;
    assert!(staged.onlined && staged.partitioned && staged.formatted);
    // Looked at until the volume wait (2 s here) had passed since the
    // disk came online, then partitioned.
    assert!(node.host_calls(Op::ListVolumesOnDisk) > 2);
    assert_eq!(node.host_calls(Op::PartitionDisk), 1);
}

#[tokio::test]
async fn a_partition_answered_is_the_mounters_only_while_its_volume_shows_in_time() {
    // The listing after the partition fails, and the driver restarts: the
    // retry, within the volume wait of the answer, finds the volume the
    // journal's answer stands for, and formats it.
    let mut node = Node::with_disk(ProxyRelease::LATEST).await;
    let failure = WindowsError::new(WindowsError::IO_DEVICE);
    node.host.fail_call(Op::ListVolumesOnDisk, 2, failure);
    let error = node
        .mounter
        .stage_disk(&page83(), &path(STAGING))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Host { .. }), "{error}");
    node.restart_driver().await;
    let staged = node.stage(STAGING).await;
    assert!(!staged.partitioned && staged.formatted, "{staged:?}");
    assert_eq!(node.host_calls(Op::PartitionDisk), 1);

    // Windows lists the new partition's volume only after the stage's
    // volume wait (2 s here) has passed: the stage gives up, and the volume
    // listed later may be another partition's, so it is never formatted.
    let node = Node::with_disk(ProxyRelease::LATEST).await;
    node.host.hide_new_volumes(1, usize::MAX);
    let error = node
        .mounter
        .stage_disk(&page83(), &path(STAGING))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::NotFound { .. }), "{error}");
    node.host.hide_new_volumes(1, 0);
    let error = node
        .mounter
        .stage_disk(&page83(), &path(STAGING))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::NotOurs { .. }), "{error}");
    assert_eq!(node.host_calls(Op::FormatVolume), 0);
    assert_eq!(node.host_calls(Op::PartitionDisk), 1);
}
