//! Volumes through the service: stats and expand only for the volume the
//! driver names, with the stage's contexts also after a restart; the
//! driver's hooks; a share and an iSCSI target staged, published,
//! measured and let go.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use csi_proxy_client::api::WindowsPath;
use csi_proxy_client::csi::v1::node_server::Node;
use csi_proxy_client::csi::v1::*;
use csi_proxy_client::csi::VolumeKind;
use csi_proxy_client::mount::{FsStats, ShareSpace};
use csi_proxy_client::testing::{PathEntry, ProxyRelease};
use csi_proxy_client::{Code, Status};
use tonic::Request;

use super::{
    code, publish, stage, staging, stats, target, unstage, Node1, TestDriver, GIB, ISCSI_TARGET,
};

#[tokio::test]
async fn stats_and_expand_answer_for_the_drivers_volume_with_the_stages_contexts() {
    let node = Node1::new(ProxyRelease::V1_1_0).await;
    let service = node.service(TestDriver::of(&[VolumeKind::Disk]));
    // A volume whose ID does not say its disk: its LUN is in the publish
    // context, which only the stage carries.
    let mut by_context = stage("by-context");
    by_context.publish_context = HashMap::from([("lun".into(), "1".into())]);
    service
        .node_stage_volume(Request::new(by_context))
        .await
        .unwrap();
    service
        .node_stage_volume(Request::new(stage("lun-2")))
        .await
        .unwrap();
    let total = |answer: Result<tonic::Response<NodeGetVolumeStatsResponse>, Status>| {
        answer.unwrap().into_inner().usage[0].total
    };
    let answer = service
        .node_get_volume_stats(Request::new(stats("by-context", &staging("by-context"))))
        .await;
    assert!(total(answer) > 0);
    // Another volume's path: NOT_FOUND, never the other's figures.
    let answer = service
        .node_get_volume_stats(Request::new(stats("by-context", &staging("lun-2"))))
        .await;
    assert_eq!(code(answer), Code::NotFound);

    // The plugin restarts: the contexts were kept.
    let restarted = node.service(TestDriver::of(&[VolumeKind::Disk]));
    let answer = restarted
        .node_get_volume_stats(Request::new(stats("by-context", &staging("by-context"))))
        .await;
    assert!(total(answer) > 0);
    assert!(node.host.set_disk_size(1, 20 * GIB));
    let expand = NodeExpandVolumeRequest {
        volume_id: "by-context".into(),
        volume_path: staging("by-context"),
        capacity_range: Some(CapacityRange {
            required_bytes: 20 << 30,
            limit_bytes: 0,
        }),
        ..Default::default()
    };
    let expanded = restarted
        .node_expand_volume(Request::new(expand.clone()))
        .await;
    assert!(expanded.unwrap().into_inner().capacity_bytes > 19 << 30);
    let other = NodeExpandVolumeRequest {
        volume_path: staging("lun-2"),
        ..expand
    };
    let answer = restarted.node_expand_volume(Request::new(other)).await;
    assert_eq!(code(answer), Code::NotFound);

    // Unstaged, the contexts are forgotten, and the disk goes offline
    // (kept online for `keep-`).
    restarted
        .node_unstage_volume(Request::new(unstage("by-context")))
        .await
        .unwrap();
    assert!(!node.host.disk(1).unwrap().online);
    let answer = restarted
        .node_get_volume_stats(Request::new(stats("by-context", &staging("by-context"))))
        .await;
    assert_eq!(
        code(answer),
        Code::InvalidArgument,
        "the driver lacks its context"
    );
    restarted
        .node_unstage_volume(Request::new(unstage("lun-2")))
        .await
        .unwrap();
    restarted
        .node_stage_volume(Request::new(stage("keep-2")))
        .await
        .unwrap();
    restarted
        .node_unstage_volume(Request::new(unstage("keep-2")))
        .await
        .unwrap();
    assert!(node.host.disk(2).unwrap().online);
}

#[tokio::test]
async fn the_hooks_run_around_the_stage_and_a_refusal_stages_nothing() {
    let node = Node1::new(ProxyRelease::LATEST).await;
    let service = node.service(TestDriver::of(&[VolumeKind::Disk]));
    service
        .node_stage_volume(Request::new(stage("lun-1")))
        .await
        .unwrap();
    service
        .node_stage_volume(Request::new(stage("lun-1")))
        .await
        .unwrap();
    let driver = service.driver();
    assert_eq!(driver.before.load(Ordering::SeqCst), 2);
    assert_eq!(
        driver.after.load(Ordering::SeqCst),
        2,
        "a repeat runs it too"
    );

    let mut refused = stage("refused-by-hook");
    refused.publish_context = HashMap::from([("lun".into(), "2".into())]);
    let answer = service.node_stage_volume(Request::new(refused)).await;
    assert_eq!(code(answer), Code::PermissionDenied);
    assert_eq!(node.host.entry(&staging("refused-by-hook")), None);
    assert_eq!(driver.after.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_share_is_staged_with_the_node_stage_secrets_and_published() {
    let node = Node1::new(ProxyRelease::LATEST).await;
    let service = node.service(TestDriver::of(&[VolumeKind::Smb]));
    let volume = r"share-\\files\data\pv";
    // kubelet makes the staging path's parent.
    let parent = staging(volume).trim_end_matches(r"\globalmount").to_owned();
    let filesystem = node.proxy.filesystem().unwrap();
    filesystem
        .mkdir(&WindowsPath::new(parent).unwrap())
        .await
        .unwrap();
    let mut request = stage(volume);
    request.secrets = HashMap::from([
        ("username".into(), "user".into()),
        ("password".into(), "pw".into()),
    ]);
    service
        .node_stage_volume(Request::new(request))
        .await
        .unwrap();
    assert_eq!(node.host.smb_mappings().len(), 1);
    service
        .node_publish_volume(Request::new(publish(volume)))
        .await
        .unwrap();
    assert!(matches!(
        node.host.entry(&target(volume)),
        Some(PathEntry::Symlink(_))
    ));
    // A node that cannot reach the share from the plugin answers a usage
    // with nothing set, which kubelet takes.
    struct Unreachable;
    impl ShareSpace for Unreachable {
        fn measure(&self, _: &csi_proxy_client::api::SmbRemotePath) -> Option<FsStats> {
            None
        }
    }
    let unreachable = node.service_on(TestDriver::of(&[VolumeKind::Smb]), |mounter| {
        mounter.share_space(Unreachable)
    });
    let answer = unreachable
        .node_get_volume_stats(Request::new(stats(volume, &target(volume))))
        .await;
    let usage = answer.unwrap().into_inner().usage;
    assert_eq!(usage.len(), 1);
    assert_eq!(
        (usage[0].total, usage[0].used, usage[0].available),
        (0, 0, 0)
    );
    assert_eq!(usage[0].unit, volume_usage::Unit::Bytes as i32);
    // One that reaches it measures the share, through the pod's link or
    // the staging path; a plugin of disks and shares grows nothing of it.
    let measuring =
        node.service_measuring_shares(TestDriver::of(&[VolumeKind::Disk, VolumeKind::Smb]));
    for path in [target(volume), staging(volume)] {
        let answer = measuring
            .node_get_volume_stats(Request::new(stats(volume, &path)))
            .await;
        let usage = &answer.unwrap().into_inner().usage[0];
        assert_eq!((usage.total, usage.used), (100 << 30, 30 << 30), "{path}");
        assert_eq!(usage.available, 70 << 30);
    }
    let expand = NodeExpandVolumeRequest {
        volume_id: volume.into(),
        volume_path: target(volume),
        ..Default::default()
    };
    let expanded = measuring.node_expand_volume(Request::new(expand)).await;
    assert_eq!(expanded.unwrap().into_inner().capacity_bytes, 100 << 30);
    // Another share folder's ID at this path: it is not there.
    let other = r"share-\\files\data\other";
    let answer = measuring
        .node_get_volume_stats(Request::new(stats(other, &target(volume))))
        .await;
    assert_eq!(code(answer), Code::NotFound);
    let unpublish = NodeUnpublishVolumeRequest {
        volume_id: volume.into(),
        target_path: target(volume),
    };
    service
        .node_unpublish_volume(Request::new(unpublish))
        .await
        .unwrap();
    // The journal says it is a share: unmapped with its last volume.
    service
        .node_unstage_volume(Request::new(unstage(volume)))
        .await
        .unwrap();
    assert!(node.host.smb_mappings().is_empty());
}

#[tokio::test]
async fn an_iscsi_volume_is_logged_in_staged_measured_and_logged_out() {
    let node = Node1::new(ProxyRelease::LATEST).await;
    let service = node.service(TestDriver::of(&[VolumeKind::Iscsi]));
    let mut request = stage(ISCSI_TARGET);
    // A wrong CHAP secret: refused, nothing logged in.
    request.secrets = HashMap::from([("chap".into(), "wrong".into())]);
    let refused = service
        .node_stage_volume(Request::new(request.clone()))
        .await;
    assert_ne!(code(refused), Code::Ok);
    assert!(node.host.iscsi_sessions().is_empty());
    request.secrets = HashMap::from([("chap".into(), "chap-secret".into())]);
    for _ in 0..2 {
        let staged = service
            .node_stage_volume(Request::new(request.clone()))
            .await;
        staged.unwrap();
    }
    assert_eq!(node.host.iscsi_sessions().len(), 1);
    let path = staging(ISCSI_TARGET);
    assert!(matches!(
        node.host.entry(&path),
        Some(PathEntry::MountPoint(_))
    ));
    // Stats and expand: the volume at the path is on the target's disk;
    // another volume's path is NOT_FOUND.
    let usage = service
        .node_get_volume_stats(Request::new(stats(ISCSI_TARGET, &path)))
        .await;
    assert!(usage.unwrap().into_inner().usage[0].total > 9 * GIB as i64);
    service
        .node_stage_volume(Request::new(stage("lun-1")))
        .await
        .unwrap();
    let other = service
        .node_get_volume_stats(Request::new(stats(ISCSI_TARGET, &staging("lun-1"))))
        .await;
    assert_eq!(code(other), Code::NotFound);
    // The journal says it is an iSCSI volume: its unstage logs out.
    for _ in 0..2 {
        let unstaged = service.node_unstage_volume(Request::new(unstage(ISCSI_TARGET)));
        unstaged.await.unwrap();
    }
    assert!(node.host.iscsi_sessions().is_empty());
    assert_eq!(node.host.entry(&path), None);
}
