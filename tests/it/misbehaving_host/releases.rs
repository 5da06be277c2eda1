//! Rules that changed between CSI Proxy releases within one API version.

use super::{host_failure, mapping, on_release, path, share, KUBELET};
use crate::common::TestNode;
use csi_proxy_client::api::{DiskApi, FilesystemApi, SmbApi, VolumeApi, VolumeId};
use csi_proxy_client::negotiate::Negotiator;
use csi_proxy_client::testing::{FakeHost, FakeProxy, ProxyRelease};
use csi_proxy_client::wire::volume::v1beta2 as wire;
use csi_proxy_client::{ApiGroup, ApiVersion};

const MIB: u64 = 1 << 20;

#[test]
fn the_host_follows_the_newest_release_unless_told_otherwise() {
    assert_eq!(FakeHost::default().release(), ProxyRelease::LATEST);
    let old = FakeHost::builder().release(ProxyRelease::V1_1_1).build();
    assert_eq!(old.release(), ProxyRelease::V1_1_1);
    old.behave_as(ProxyRelease::V1_2_0);
    assert_eq!(old.release(), ProxyRelease::V1_2_0);
    assert!(ProxyRelease::V1_1_1 < ProxyRelease::V1_1_2);
    assert!(ProxyRelease::V1_1_2 < ProxyRelease::V1_2_0);
    assert!(ProxyRelease::V1_2_0 < ProxyRelease::V1_3_0);
}

#[tokio::test]
async fn smb_mappings_before_v1_1_2_are_of_the_exact_remote_path() {
    let host = FakeHost::builder()
        .smb_share(r"\\srv\data", "u", "p")
        .share_folder(r"\\srv\data\a\b")
        .share_folder(r"\\srv\data\c\d")
        .release(ProxyRelease::V1_1_1)
        .build();
    let (deep, other) = (
        path(&format!(r"{KUBELET}\deep")),
        path(&format!(r"{KUBELET}\other")),
    );
    let deep_mapping = mapping(r"\\SRV\Data\a\b\", "u", "p").with_local_path(deep.clone());
    host.new_smb_global_mapping(&deep_mapping).await.unwrap();
    assert_eq!(host.smb_mappings(), [r"\\srv\data\a\b"]);
    let other_mapping = mapping(r"\\srv\data\c", "u", "p").with_local_path(other.clone());
    host.new_smb_global_mapping(&other_mapping).await.unwrap();
    assert_eq!(host.smb_mappings(), [r"\\srv\data\a\b", r"\\srv\data\c"]);

    // Removal names exactly the path mapped.
    let (_, message, _) = host_failure(host.remove_smb_global_mapping(&share(r"\\srv\data")).await);
    assert!(
        message.contains("No MSFT_SmbGlobalMapping objects found"),
        "{message}"
    );
    host.remove_smb_global_mapping(&share(r"\\srv\DATA\c\"))
        .await
        .unwrap();
    assert_eq!(host.smb_mappings(), [r"\\srv\data\a\b"]);
    assert!(host.is_symlink(&deep).await.unwrap(), "still mapped");
    assert!(
        host.is_symlink(&other).await.is_err(),
        "its mapping is gone: Windows refuses the share"
    );

    // From v1.1.2 on, the share's root: a path below a mapping leads
    // somewhere too.
    host.behave_as(ProxyRelease::V1_1_2);
    let root_link = path(&format!(r"{KUBELET}\root"));
    let below = mapping(r"\\srv\data\c\d", "u", "p").with_local_path(root_link.clone());
    host.new_smb_global_mapping(&below).await.unwrap();
    assert_eq!(host.smb_mappings(), [r"\\srv\data", r"\\srv\data\a\b"]);
    assert!(host.is_symlink(&root_link).await.unwrap());
    host.remove_smb_global_mapping(&share(r"\\srv\data\x"))
        .await
        .unwrap();
    assert_eq!(host.smb_mappings(), [r"\\srv\data\a\b"]);
    assert!(host.is_symlink(&root_link).await.is_err(), "unmapped");
}

/// A raw disk 1, partitioned, its volume formatted.
async fn formatted_volume(host: &FakeHost) -> VolumeId {
    host.partition_disk(1).await.unwrap();
    let id = host.list_volumes_on_disk(1, None).await.unwrap().remove(0);
    host.format_volume(&id).await.unwrap();
    id
}

#[tokio::test]
async fn mounting_the_same_volume_twice_fails_before_v1_3_0() {
    let host = FakeHost::builder()
        .disk(1, "d", 10 << 30)
        .dir(r"C:\var\lib\kubelet\staging")
        .release(ProxyRelease::V1_2_0)
        .build();
    let id = formatted_volume(&host).await;
    let staging = path(r"C:\var\lib\kubelet\staging");
    host.mount_volume(&id, &staging).await.unwrap();
    let (operation, message, _) = host_failure(host.mount_volume(&id, &staging).await);
    assert_eq!(operation, csi_proxy_client::Operation::MountVolume);
    assert_eq!(message, "The requested access path is already in use.");

    host.behave_as(ProxyRelease::V1_3_0);
    host.mount_volume(&id, &staging).await.unwrap();
    assert_eq!(host.volume(&id).unwrap().mounts.len(), 1);
}

#[tokio::test]
async fn resizes_before_v1_2_0_skip_only_what_is_not_larger() {
    let host = FakeHost::builder()
        .disk(1, "d", 10 << 30)
        .release(ProxyRelease::V1_1_1)
        .build();
    let id = formatted_volume(&host).await;
    let size = || host.volume(&id).unwrap().size_bytes;
    let before = size();
    assert!(host.set_disk_size(1, 20 << 30));

    // Not above the current size: skipped.
    host.resize_volume(&id, before).await.unwrap();
    host.resize_volume(&id, before - MIB).await.unwrap();
    assert_eq!(size(), before);
    // Less than 1 MiB more: refused (csi-proxy #195).
    let (_, message, _) = host_failure(host.resize_volume(&id, before + MIB / 2).await);
    assert_eq!(
        message,
        "Size Not Supported: the extent is less than the minimum of 1MB"
    );
    assert_eq!(size(), before);
    // No 100 MiB threshold: 50 MiB more grows.
    host.resize_volume(&id, before + 50 * MIB).await.unwrap();
    assert_eq!(size(), before + 50 * MIB);
    // Growing to the maximum, then again: the second has nothing to do.
    host.resize_volume(&id, 0).await.unwrap();
    let full = size();
    host.resize_volume(&id, 0).await.unwrap();
    assert_eq!(size(), full);

    // From v1.2.0: growth under 100 MiB is skipped.
    assert!(host.set_disk_size(1, 30 << 30));
    host.behave_as(ProxyRelease::V1_2_0);
    host.resize_volume(&id, full + 50 * MIB).await.unwrap();
    host.resize_volume(&id, full + MIB / 2).await.unwrap();
    assert_eq!(size(), full);
}

/// `VolumeStats` of volume `id` as the wire carries it at v1beta2:
/// (`volume_size`, `volume_used_size`).
async fn wire_stats(node: &TestNode, id: &VolumeId) -> (i64, i64) {
    let negotiated = Negotiator::new(node.transport())
        .negotiate(&[ApiGroup::Volume])
        .await
        .unwrap();
    let connection = negotiated.connection(ApiGroup::Volume).unwrap();
    assert_eq!(connection.version(), ApiVersion::V1BETA2);
    let mut client = wire::volume_client::VolumeClient::new(connection.channel());
    let request = wire::VolumeStatsRequest {
        volume_id: id.to_string(),
    };
    let answer = client.volume_stats(request).await.unwrap().into_inner();
    (answer.volume_size, answer.volume_used_size)
}

#[tokio::test]
async fn volume_stats_before_v1_0_0_carry_the_bytes_remaining() {
    let host = FakeHost::builder().disk(1, "d", 10 << 30).build();
    let id = formatted_volume(&host).await;
    let stats = host.get_volume_stats(&id).await.unwrap();
    let (total, used) = (stats.total_bytes as i64, stats.used_bytes as i64);
    assert!(used > 0 && used < total);

    // A node on v0.2.2: v1beta2 is its newest volume version.
    let (node, fake, _proxy) = on_release(&host, ProxyRelease::V0_2_2).await;
    assert_eq!(fake.release(), Some(ProxyRelease::V0_2_2));
    assert_eq!(
        host.release(),
        ProxyRelease::V0_2_2,
        "for_host: the host too"
    );
    assert_eq!(wire_stats(&node, &id).await, (total - used, used));
    drop(fake);

    // v1beta2 served alone, with no release given: the total, as v1.0.0
    // and later answer; then told it is v0.2.2.
    let node = TestNode::new();
    let mut fake = FakeProxy::for_host(node.transport(), &host);
    host.behave_as(ProxyRelease::LATEST);
    fake.serve(ApiGroup::Volume, ApiVersion::V1BETA2)
        .await
        .unwrap();
    assert_eq!(fake.release(), None);
    assert_eq!(wire_stats(&node, &id).await, (total, used));
    fake.behave_as(ProxyRelease::V0_2_2);
    assert_eq!(wire_stats(&node, &id).await, (total - used, used));
    assert_eq!(host.release(), ProxyRelease::V0_2_2);
    fake.behave_as(ProxyRelease::V1_0_0);
    assert_eq!(wire_stats(&node, &id).await, (total, used));

    // A proxy on a mock (no host): only the encoding follows.
    let node = TestNode::new();
    let mut fake = FakeProxy::new(node.transport(), host.backends());
    fake.serve(ApiGroup::Volume, ApiVersion::V1BETA2)
        .await
        .unwrap();
    fake.behave_as(ProxyRelease::V0_2_2);
    assert_eq!(wire_stats(&node, &id).await, (total - used, used));
    assert_eq!(
        host.release(),
        ProxyRelease::V1_0_0,
        "not this proxy's host"
    );
}

#[tokio::test]
async fn serve_release_makes_the_host_follow_the_release_over_the_wire() {
    let host = FakeHost::builder()
        .disk(1, "d", 10 << 30)
        .dir(r"C:\var\lib\kubelet\staging")
        .build();
    let (_node, _fake, proxy) = on_release(&host, ProxyRelease::V1_1_0).await;
    assert_eq!(host.release(), ProxyRelease::V1_1_0);
    let volume = proxy.volume().unwrap();
    proxy.disk().unwrap().partition_disk(1).await.unwrap();
    let id = volume
        .list_volumes_on_disk(1, None)
        .await
        .unwrap()
        .remove(0);
    volume.format_volume(&id).await.unwrap();
    let staging = path(r"C:\var\lib\kubelet\staging");
    volume.mount_volume(&id, &staging).await.unwrap();
    let (_, message, os_code) = host_failure(volume.mount_volume(&id, &staging).await);
    assert_eq!(message, "The requested access path is already in use.");
    assert_eq!(os_code, None, "over the wire, only the text");
    assert!(proxy
        .filesystem()
        .unwrap()
        .is_symlink(&staging)
        .await
        .unwrap());
}
