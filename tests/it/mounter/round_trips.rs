//! How many calls each CSI node call of the example plugin sends, first
//! and repeated, on v1 and v0.2.2: the figures `docs/mounting.md` compares
//! with the Go mounters' (and `cargo run --example bench` prints). A change
//! that adds a round trip shows here.

use super::{path, Node, GIB, PAGE83, STAGING, TARGET};
use crate::node_plugin::node;
use csi_proxy_client::api::FilesystemApi;
use csi_proxy_client::testing::ProxyRelease;

/// The RPCs of each step, in order.
async fn rpcs_of_each_call(release: ProxyRelease) -> Vec<(&'static str, Vec<String>)> {
    let node = Node::with_disk(release).await;
    let (m, staging, target) = (&node.mounter, path(STAGING), path(TARGET));
    // kubelet makes the staging folder before NodeStageVolume.
    node.host.mkdir(&staging).await.unwrap();
    let mut steps = Vec::new();
    let mut step = |name, node: &Node| steps.push((name, node.take_rpcs()));
    node.take_rpcs();
    node::node_stage_volume(m, PAGE83, &staging).await.unwrap();
    step("stage", &node);
    node::node_stage_volume(m, PAGE83, &staging).await.unwrap();
    step("stage again", &node);
    node::node_publish_volume(m, &staging, &target)
        .await
        .unwrap();
    step("publish", &node);
    node::node_publish_volume(m, &staging, &target)
        .await
        .unwrap();
    step("publish again", &node);
    node::node_get_volume_stats(m, PAGE83, &target)
        .await
        .unwrap();
    step("stats", &node);
    node.host.set_disk_size(1, 20 * GIB);
    node::node_expand_volume(m, PAGE83, &target, Some(20 * GIB))
        .await
        .unwrap();
    step("expand", &node);
    node::node_unpublish_volume(m, &target).await.unwrap();
    step("unpublish", &node);
    node::node_unpublish_volume(m, &target).await.unwrap();
    step("unpublish again", &node);
    node::node_unstage_volume(m, &staging).await.unwrap();
    step("unstage", &node);
    node::node_unstage_volume(m, &staging).await.unwrap();
    step("unstage again", &node);
    steps
}

#[tokio::test]
async fn each_node_call_sends_the_calls_the_docs_count() {
    let v1 = [
        ("stage", "IsSymlink GetVolumeIDFromTargetPath ListDiskIDs GetDiskState ListVolumesOnDisk PartitionDisk ListVolumesOnDisk IsVolumeFormatted FormatVolume MountVolume"),
        ("stage again", "IsSymlink GetVolumeIDFromTargetPath GetDiskNumberFromVolumeID"),
        ("publish", "IsSymlink GetVolumeIDFromTargetPath CreateSymlink"),
        ("publish again", "IsSymlink GetVolumeIDFromTargetPath"),
        ("stats", "GetVolumeIDFromTargetPath GetVolumeStats"),
        ("expand", "GetVolumeIDFromTargetPath GetDiskNumberFromVolumeID Rescan GetDiskStats GetVolumeStats ResizeVolume GetVolumeStats"),
        ("unpublish", "Rmdir"),
        ("unpublish again", "IsSymlink"),
        ("unstage", "GetVolumeIDFromTargetPath WriteVolumeCache UnmountVolume Rmdir GetDiskNumberFromVolumeID ListVolumesOnDisk SetDiskState"),
        ("unstage again", "GetVolumeIDFromTargetPath IsSymlink"),
    ];
    let v0_2_2 = [
        ("stage", "IsMountPoint GetVolumeIDFromMount ListDiskIDs GetAttachState ListVolumesOnDisk PartitionDisk ListVolumesOnDisk IsVolumeFormatted FormatVolume MountVolume"),
        ("stage again", "IsMountPoint GetVolumeIDFromMount GetVolumeDiskNumber"),
        ("publish", "IsMountPoint GetVolumeIDFromMount LinkPath"),
        ("publish again", "IsMountPoint GetVolumeIDFromMount"),
        ("stats", "GetVolumeIDFromMount VolumeStats"),
        ("expand", "GetVolumeIDFromMount GetVolumeDiskNumber Rescan DiskStats VolumeStats ResizeVolume VolumeStats"),
        ("unpublish", "Rmdir"),
        ("unpublish again", "IsMountPoint"),
        ("unstage", "GetVolumeIDFromMount WriteVolumeCache DismountVolume Rmdir GetVolumeDiskNumber ListVolumesOnDisk SetAttachState"),
        ("unstage again", "GetVolumeIDFromMount IsMountPoint"),
    ];
    for (release, expected) in [(ProxyRelease::LATEST, v1), (ProxyRelease::V0_2_2, v0_2_2)] {
        let steps: Vec<(&str, String)> = rpcs_of_each_call(release)
            .await
            .into_iter()
            .map(|(name, rpcs)| (name, rpcs.join(" ")))
            .collect();
        let expected: Vec<(&str, String)> =
            expected.iter().map(|(n, r)| (*n, r.to_string())).collect();
        assert_eq!(steps, expected, "{release}");
    }
}

#[tokio::test]
async fn a_share_stages_and_unstages_in_few_calls() {
    use csi_proxy_client::api::{Secret, SmbRemotePath};
    use csi_proxy_client::mount::SmbCredentials;
    use csi_proxy_client::testing::FakeHost;

    let host = FakeHost::builder()
        .smb_share(r"\\files\share", "user", "pw")
        .share_folder(r"\\files\share\pv1");
    let node = Node::on(ProxyRelease::LATEST, host).await;
    let (m, staging) = (&node.mounter, path(STAGING));
    let share = SmbRemotePath::new(r"\\files\share\pv1").unwrap();
    let creds = SmbCredentials::new("user", Secret::new("pw"));
    node.take_rpcs();
    m.stage_smb("pv1", &share, &creds, &staging).await.unwrap();
    // The staging path, the share's root (before its first mapping), the
    // mapping and link, the link looked through.
    assert_eq!(
        node.take_rpcs().join(" "),
        "IsSymlink IsSymlink NewSmbGlobalMapping IsSymlink"
    );
    m.stage_smb("pv1", &share, &creds, &staging).await.unwrap();
    assert_eq!(node.take_rpcs().join(" "), "IsSymlink");
    m.unstage_smb("pv1", &staging).await.unwrap();
    assert_eq!(node.take_rpcs().join(" "), "Rmdir RemoveSmbGlobalMapping");
    m.unstage_smb("pv1", &staging).await.unwrap();
    assert_eq!(node.take_rpcs().join(" "), "IsSymlink");
}
