//! The CSI codes the mounter's errors answer per node call (issue 43,
//! item 7), and disk selectors on a node whose OS disk shares a LUN with a
//! data disk (item 9).

use std::time::Duration;

use csi_proxy_client::api::{DiskLocation, FilesystemApi};
use csi_proxy_client::mount::{Change, DiskAfterUnstage, DiskSelector};
use csi_proxy_client::testing::{FakeDisk, FakeHost, PathEntry, ProxyRelease};
use csi_proxy_client::{Code, CsiNodeCall, Error, ErrorKind};

use super::{page83, path, releases, Node, GIB, PAGE83, STAGING, STAGING_2, TARGET, TARGET_2};

/// A disk at `lun` of target 0 on `adapter`.
fn data_disk(page83: &str, adapter: &str, lun: &str) -> FakeDisk {
    let location = DiskLocation {
        adapter: adapter.into(),
        bus: "0".into(),
        target: "0".into(),
        lun_id: lun.into(),
    };
    FakeDisk::new(page83, 10 * GIB, location)
}

/// Each node call's code for `error`, in the order of [`CsiNodeCall::ALL`]
/// (stage, publish, stats, expand, unpublish, unstage).
fn codes(error: &Error) -> Vec<Code> {
    (CsiNodeCall::ALL.iter())
        .map(|&call| {
            let status = error.csi_status_for(call);
            assert_eq!(status.code(), error.csi_code_for(call));
            assert!(status.message().starts_with(&error.to_string()));
            status.code()
        })
        .collect()
}

#[tokio::test]
async fn a_publish_with_nothing_staged_answers_failed_precondition() {
    for release in releases() {
        let node = Node::with_disk(release).await;
        let m = &node.mounter;
        let (staging, target) = (path(STAGING), path(TARGET));

        // kubelet publishes after a failed stage: nothing is made.
        let error = m.publish(&staging, &target).await.unwrap_err();
        assert!(
            matches!(&error, Error::NotStaged { path, .. } if path == STAGING),
            "{release}: {error}"
        );
        assert_eq!(error.kind(), ErrorKind::NotStaged);
        assert_eq!(error.kind().as_str(), "not_staged");
        assert_eq!(error.csi_code(), Code::FailedPrecondition, "{release}");
        assert!(!error.is_retryable());
        assert_eq!(
            error.csi_code_for(CsiNodeCall::PublishVolume),
            Code::FailedPrecondition
        );
        assert_eq!(
            tonic::Status::from(error.clone()).code(),
            Code::FailedPrecondition
        );
        // Where a call names a path that must hold the volume, the spec's
        // code for "not there" is NOT_FOUND.
        let (fp, nf) = (Code::FailedPrecondition, Code::NotFound);
        assert_eq!(codes(&error), [fp, fp, nf, nf, fp, fp], "{release}");
        assert_eq!(node.host.entry(TARGET), None, "{release}");

        // Staged: the publish goes ahead.
        node.stage(STAGING).await;
        assert_eq!(m.publish(&staging, &target).await.unwrap(), Change::Changed);

        // The volume went from under the staging folder: a repeat answers
        // the same, and the pod's link is not taken for the volume.
        let volume = node.host.volumes_on(1).remove(0);
        let api = m.proxy().volume().unwrap();
        api.unmount_volume(&volume, &staging).await.unwrap();
        let error = m.publish(&staging, &target).await.unwrap_err();
        assert!(
            matches!(error, Error::NotStaged { .. }),
            "{release}: {error}"
        );
        assert_eq!(
            error.csi_status_for(CsiNodeCall::PublishVolume).code(),
            Code::FailedPrecondition
        );
    }
}

#[tokio::test]
async fn a_conflict_answers_already_exists_only_where_the_spec_lists_it() {
    let host = FakeHost::builder()
        .disk(1, PAGE83, 10 * GIB)
        .disk(2, "Google  pvc-2", 10 * GIB);
    let node = Node::on(ProxyRelease::LATEST, host).await;
    let m = &node.mounter;
    let (ae, fp, nf) = (
        Code::AlreadyExists,
        Code::FailedPrecondition,
        Code::NotFound,
    );
    let (staging, staging_2) = (path(STAGING), path(STAGING_2));

    // NodeStageVolume: another volume at the staging path.
    let staged = node.stage(STAGING).await;
    let other = m
        .stage_disk(&DiskSelector::lun(2), &staging_2)
        .await
        .unwrap();
    let error = m.stage_disk(&page83(), &staging_2).await.unwrap_err();
    assert!(matches!(error, Error::Conflict { .. }), "{error}");
    assert_eq!(error.csi_code(), ae);
    assert_eq!(error.csi_code_for(CsiNodeCall::StageVolume), ae);

    // NodePublishVolume: a pod folder with files in it.
    let data = format!(r"{TARGET_2}\data");
    node.host.mkdir(&path(&data)).await.unwrap();
    let error = m.publish(&staging, &path(TARGET_2)).await.unwrap_err();
    assert!(matches!(error, Error::Conflict { .. }), "{error}");
    assert_eq!(error.csi_code_for(CsiNodeCall::PublishVolume), ae);

    // NodeUnpublishVolume of that folder: the spec has no ALREADY_EXISTS
    // for it.
    let error = m.unpublish(&path(TARGET_2)).await.unwrap_err();
    assert!(matches!(error, Error::Conflict { .. }), "{error}");
    assert_eq!(error.csi_code(), ae, "Status::from keeps its one code");
    let status = error.csi_status_for(CsiNodeCall::UnpublishVolume);
    assert_eq!(status.code(), fp);
    assert!(node.host.entry(&data).is_some(), "the folder stays");
    assert_eq!(codes(&error), [ae, ae, nf, nf, fp, fp]);

    // NodeUnstageVolume: someone swapped the volume under the staging path.
    let api = m.proxy().volume().unwrap();
    api.unmount_volume(&staged.volume, &staging).await.unwrap();
    api.unmount_volume(&other.volume, &staging_2).await.unwrap();
    api.mount_volume(&other.volume, &staging).await.unwrap();
    let error = m
        .unstage_disk(&staging, DiskAfterUnstage::TakeOffline)
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Conflict { .. }), "{error}");
    assert_eq!(error.csi_code_for(CsiNodeCall::UnstageVolume), fp);
    assert_eq!(
        node.host.entry(STAGING),
        Some(PathEntry::MountPoint(other.volume))
    );
}

/// An Azure-like node: the OS disk (C:) at LUN 0 on adapter 0, and data
/// disks at LUN 0 on a SCSI adapter of their own.
fn azure_node(data_disks: &[(u32, &str, &str)]) -> csi_proxy_client::testing::FakeHostBuilder {
    let mut host = FakeHost::builder().system_disk(0, "Msft Virtual Disk os", 128 * GIB);
    for &(number, page83, adapter) in data_disks {
        host = host.custom_disk(number, data_disk(page83, adapter, "0"));
    }
    host
}

#[tokio::test]
async fn a_data_disk_at_lun_0_is_found_beside_the_os_disk_at_lun_0() {
    for release in [ProxyRelease::V0_2_2, ProxyRelease::LATEST] {
        let node = Node::on(release, azure_node(&[(2, PAGE83, "1")])).await;
        let m = &node.mounter;
        let system = node.host.system_volume().unwrap();
        let wait = Duration::from_millis(50);
        assert_eq!(
            m.find_disk(&DiskSelector::lun(0), wait).await.unwrap(),
            2,
            "{release}"
        );

        // The stage takes the data disk; C:'s volume is not touched.
        let staged = m
            .stage_disk(&DiskSelector::lun(0), &path(STAGING))
            .await
            .unwrap();
        assert_eq!((staged.disk, staged.partitioned), (2, true), "{release}");
        assert!(staged.formatted, "{release}");
        assert_eq!(node.host.volume(&staged.volume).unwrap().disk, 2);
        assert!(node.host.volume(&system).unwrap().mounts.is_empty());
        // A repeat is the same stage.
        let again = m
            .stage_disk(&DiskSelector::lun(0), &path(STAGING))
            .await
            .unwrap();
        assert_eq!(again.change, Change::Unchanged, "{release}");

        // Said exactly: the OS disk's own place is the OS disk.
        let exact = DiskSelector::lun_on(0, 0, 0);
        assert_eq!(m.find_disk(&exact, wait).await.unwrap(), 0);
        assert_eq!(
            m.find_disk(&DiskSelector::lun_on(1, 0, 0), wait)
                .await
                .unwrap(),
            2
        );
        let error = m
            .find_disk(&DiskSelector::lun_on(1, 0, 3), wait)
            .await
            .unwrap_err();
        assert!(matches!(error, Error::NotFound { .. }), "{error}");
    }
}

#[tokio::test]
async fn two_data_disks_at_lun_0_are_ambiguous_and_lun_on_tells_them_apart() {
    let host = azure_node(&[(2, PAGE83, "1"), (3, "Google  pvc-2", "2")]);
    let node = Node::on(ProxyRelease::LATEST, host).await;
    let m = &node.mounter;
    let wait = Duration::from_millis(50);

    let error = m.find_disk(&DiskSelector::lun(0), wait).await.unwrap_err();
    let Error::Ambiguous { what, candidates } = &error else {
        panic!("{error}");
    };
    assert_eq!(what, "disk at LUN 0");
    // The OS disk on adapter 0 is passed over; each one left is named with
    // where it sits.
    assert_eq!(
        candidates,
        &[
            "disk 2 (adapter 1, target 0, LUN 0)",
            "disk 3 (adapter 2, target 0, LUN 0)"
        ]
    );
    assert_eq!(error.csi_code(), Code::FailedPrecondition);
    // Nothing was staged or made.
    let error = m
        .stage_disk(&DiskSelector::lun(0), &path(STAGING))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Ambiguous { .. }), "{error}");
    assert_eq!(
        node.host_calls(csi_proxy_client::Operation::PartitionDisk),
        0
    );

    let second = DiskSelector::lun_on(2, 0, 0);
    assert_eq!(second.to_string(), "disk at adapter 2, target 0, LUN 0");
    let staged = m.stage_disk(&second, &path(STAGING)).await.unwrap();
    assert_eq!(staged.disk, 3);
}
