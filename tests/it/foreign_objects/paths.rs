//! Paths: ownership follows the folder Windows opens, not the text that
//! names it, and each volume's leases stay with the path they were taken
//! for. An alias of a staging path (another case, doubled or trailing
//! separators) is the same path; an 8.3 short name is refused; a volume
//! the host answers at an unrecorded folder is another volume's if the
//! journal staged it for one; an unstage at a path the journal does not
//! record for a volume releases nothing the volume holds elsewhere.

use super::*;

/// The plugin's staging path of `volume` as Windows also opens it.
fn aliases(volume: &str) -> [String; 4] {
    let staging = staging(volume);
    [
        staging.to_uppercase(),
        staging.replacen(r"\test.csi\", r"\test.csi\\", 1),
        format!(r"{staging}\"),
        staging.replace(r"\plugins\", r"\\Plugins\\"),
    ]
}

/// A publish of `volume` from `staging`, which need not be its own.
fn publish_from(volume: &str, staging: &str) -> NodePublishVolumeRequest {
    NodePublishVolumeRequest {
        staging_target_path: staging.to_owned(),
        ..publish(volume)
    }
}

/// A share volume of the test driver, on the node's share.
const SHARE_VOLUME: &str = r"share-\\files\data\pv-existing";
const SHARE_VOLUME_B: &str = r"share-\\files\data\pv-b";

#[tokio::test]
async fn an_alias_of_a_staging_path_never_publishes_or_unstages_another_volume() {
    for release in [ProxyRelease::V0_2_2, ProxyRelease::LATEST] {
        let node = ForeignNode::new(release).await;
        let s = node.service();
        s.node_stage_volume(Request::new(stage("lun-5")))
            .await
            .unwrap();
        for alias in aliases("lun-5") {
            let published = s
                .node_publish_volume(Request::new(publish_from("lun-7", &alias)))
                .await;
            // Refused as another volume's path (AlreadyExists, as a
            // publish of a staging path another volume holds).
            assert_eq!(code(published), Code::AlreadyExists, "{release}: {alias}");
            assert_eq!(
                node.host.entry(&target("lun-7")),
                None,
                "{release}: {alias}"
            );
            let unstaged = s
                .node_unstage_volume(Request::new(unstage_at("lun-7", &alias)))
                .await;
            assert_eq!(
                code(unstaged),
                Code::FailedPrecondition,
                "{release}: {alias}"
            );
        }
        // The volume's own calls through an alias are its own.
        let alias = &aliases("lun-5")[1];
        s.node_publish_volume(Request::new(publish_from("lun-5", alias)))
            .await
            .unwrap();
        assert!(matches!(
            node.host.entry(&staging("lun-5")),
            Some(PathEntry::MountPoint(_))
        ));
        s.node_unpublish_volume(Request::new(unpublish("lun-5", &target("lun-5"))))
            .await
            .unwrap();
        s.node_unstage_volume(Request::new(unstage_at("lun-5", alias)))
            .await
            .unwrap();
        assert_eq!(node.host.entry(&staging("lun-5")), None, "{release}");
        node.assert_intact();
    }
}

#[tokio::test]
async fn a_short_name_is_refused_before_anything_is_sent() {
    let node = ForeignNode::new(ProxyRelease::LATEST).await;
    let s = node.service();
    s.node_stage_volume(Request::new(stage("lun-5")))
        .await
        .unwrap();
    let short = format!(r"{PLUGINS}\LUN-5~1\globalmount");
    let published = s
        .node_publish_volume(Request::new(publish_from("lun-7", &short)))
        .await;
    let message = published.unwrap_err();
    assert_eq!(message.code(), Code::InvalidArgument);
    assert!(message.message().contains("8.3 short name"), "{message:?}");
    let unstaged = s
        .node_unstage_volume(Request::new(unstage_at("lun-7", &short)))
        .await;
    assert_eq!(code(unstaged), Code::InvalidArgument);
    assert_eq!(node.host.entry(&target("lun-7")), None);
    node.assert_intact();
}

#[tokio::test]
async fn a_volume_the_host_answers_at_an_unrecorded_folder_is_published_only_for_its_own_volume_id()
{
    for release in [ProxyRelease::V0_2_2, ProxyRelease::LATEST] {
        let node = ForeignNode::new(release).await;
        let s = node.service();
        s.node_stage_volume(Request::new(stage("lun-5")))
            .await
            .unwrap();
        let Some(PathEntry::MountPoint(volume)) = node.host.entry(&staging("lun-5")) else {
            panic!("{release}: lun-5 is not mounted");
        };
        // The same volume at a second folder the journal never recorded
        // (as Windows resolves a name the mounter cannot key).
        let elsewhere = format!(r"{PLUGINS}\second\globalmount");
        let filesystem = node.proxy.filesystem().unwrap();
        filesystem.mkdir(&path(&elsewhere)).await.unwrap();
        let volumes = node.proxy.volume().unwrap();
        volumes
            .mount_volume(&volume, &path(&elsewhere))
            .await
            .unwrap();
        let published = s
            .node_publish_volume(Request::new(publish_from("lun-7", &elsewhere)))
            .await;
        assert_eq!(code(published), Code::AlreadyExists, "{release}");
        assert_eq!(node.host.entry(&target("lun-7")), None, "{release}");
        // Its own volume ID may publish it: it is that volume's data.
        s.node_publish_volume(Request::new(publish_from("lun-5", &elsewhere)))
            .await
            .unwrap();
        node.assert_intact();
    }
}

#[tokio::test]
async fn a_share_s_unstage_at_a_path_not_recorded_for_it_releases_nothing() {
    for release in [ProxyRelease::V0_2_2, ProxyRelease::LATEST] {
        let node = ForeignNode::new(release).await;
        let s = node.service();
        let request = stage_share(&node, SHARE_VOLUME).await;
        s.node_stage_volume(Request::new(request)).await.unwrap();
        let mapped = node.host.smb_mappings();
        assert!(!mapped.is_empty(), "{release}");
        // kubelet names another staging path for the volume (its path
        // format changed across an upgrade): nothing of it is there.
        let moved = format!(r"{PLUGINS}\moved\globalmount");
        s.node_unstage_volume(Request::new(unstage_at(SHARE_VOLUME, &moved)))
            .await
            .unwrap();
        assert_eq!(node.host.smb_mappings(), mapped, "{release}");
        assert!(matches!(
            node.host.entry(&staging(SHARE_VOLUME)),
            Some(PathEntry::Symlink(_))
        ));
        // Another share volume named at this one's path: refused.
        node.host.add_share_folder(r"\\files\data\pv-b");
        let request = stage_share(&node, SHARE_VOLUME_B).await;
        s.node_stage_volume(Request::new(request)).await.unwrap();
        let mapped = node.host.smb_mappings();
        let wrong = s
            .node_unstage_volume(Request::new(unstage_at(
                SHARE_VOLUME_B,
                &staging(SHARE_VOLUME),
            )))
            .await;
        assert_eq!(code(wrong), Code::FailedPrecondition, "{release}");
        assert_eq!(node.host.smb_mappings(), mapped, "{release}");
        for volume in [SHARE_VOLUME, SHARE_VOLUME_B] {
            assert!(
                matches!(
                    node.host.entry(&staging(volume)),
                    Some(PathEntry::Symlink(_))
                ),
                "{release}: {volume}"
            );
        }
        node.assert_intact();
    }
}

#[tokio::test]
async fn the_test_controller_never_hands_out_a_disk_the_node_would_refuse() {
    use csi_proxy_client::api::DiskLocation;
    use csi_proxy_client::csi::v1::controller_server::Controller;
    use csi_proxy_client::csi::TestController;
    use csi_proxy_client::testing::FakeDisk;

    // Upstream's fake host: its first blank disk at adapter 0, LUN 0, with
    // no page 0x83 ID; a LUN never names a disk there.
    let boot = DiskLocation {
        adapter: "0".into(),
        bus: "0".into(),
        target: "0".into(),
        lun_id: "0".into(),
    };
    let host = FakeHost::builder()
        .custom_disk(0, FakeDisk::new("", 10 * GIB, boot))
        .disk(1, "", 10 * GIB)
        .build();
    let node = FakeNode::at(ProxyRelease::LATEST, &host).await;
    let proxy = node.client().await;
    let state = tempfile::tempdir().unwrap();
    let mounter = Mounter::builder(proxy, state.path()).build().unwrap();
    let controller = TestController::new(mounter, "node-1", "test.csi", &[VolumeKind::Disk]);
    let create = |name: &str| CreateVolumeRequest {
        name: name.into(),
        volume_capabilities: vec![writer()],
        ..Default::default()
    };
    let made = controller
        .create_volume(Request::new(create("pv-1")))
        .await
        .unwrap()
        .into_inner();
    let published = controller
        .controller_publish_volume(Request::new(ControllerPublishVolumeRequest {
            volume_id: made.volume.unwrap().volume_id,
            node_id: "node-1".into(),
            volume_capability: Some(writer()),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        published.publish_context["lun"], "1",
        "the data disk, not the boot adapter's"
    );
    // The boot adapter's disk is never offered: no other disk is free.
    let second = controller.create_volume(Request::new(create("pv-2"))).await;
    assert_eq!(code(second), Code::OutOfRange);
}
