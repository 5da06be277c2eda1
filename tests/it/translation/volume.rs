//! Volume: string disk IDs and old names on the old versions, the
//! partition filter from v1beta3, numbers and sizes checked, and each
//! argument in its own field on the numbered versions.

use super::{assert_invalid_response, pinned};
use csi_proxy_client::testing::sample::{path, pod_path, volume};
use csi_proxy_client::{
    wire,
    ApiGroup::{Disk, Volume},
    ApiVersion as V, Error, Operation,
};
use prost::Message;

#[tokio::test]
async fn old_volume_requests_use_string_disk_ids_and_old_names() {
    let (_node, raw, proxy) = pinned(Volume, V::V1BETA1).await;
    let volumes = proxy.volume().unwrap();
    raw.reply(wire::volume::v1beta2::ListVolumesOnDiskResponse {
        volume_ids: vec![volume().to_string()],
    });
    assert_eq!(
        volumes.list_volumes_on_disk(12, None).await.unwrap(),
        [volume()]
    );
    // Partition 0 means all partitions, which every version can do.
    volumes.list_volumes_on_disk(12, Some(0)).await.unwrap();
    raw.reply(wire::volume::v1beta2::DismountVolumeResponse {});
    volumes.unmount_volume(&volume(), &path()).await.unwrap();
    volumes.resize_volume(&volume(), 5 << 30).await.unwrap();
    raw.reply(wire::volume::v1beta2::VolumeIdFromMountResponse {
        volume_id: volume().to_string(),
    });
    assert_eq!(
        volumes
            .get_volume_id_from_target_path(&path())
            .await
            .unwrap(),
        volume()
    );

    let sent = raw.requests();
    let paths: Vec<_> = sent.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/v1beta1.Volume/ListVolumesOnDisk",
            "/v1beta1.Volume/ListVolumesOnDisk",
            "/v1beta1.Volume/DismountVolume",
            "/v1beta1.Volume/ResizeVolume",
            "/v1beta1.Volume/GetVolumeIDFromMount",
        ]
    );
    assert_eq!(sent[0].body, [0x0a, 0x02, b'1', b'2']);
    let dismount = wire::volume::v1beta2::DismountVolumeRequest::decode(&sent[2].body[..]).unwrap();
    assert_eq!(dismount.path, path().as_str());
    let resize = wire::volume::v1beta2::ResizeVolumeRequest::decode(&sent[3].body[..]).unwrap();
    assert_eq!(resize.size, 5 << 30);
    let mount = wire::volume::v1beta2::VolumeIdFromMountRequest::decode(&sent[4].body[..]).unwrap();
    assert_eq!(mount.mount, path().as_str());
}

#[tokio::test]
async fn the_partition_filter_needs_v1beta3() {
    let (_node, raw, proxy) = pinned(Volume, V::V1BETA2).await;
    match proxy
        .volume()
        .unwrap()
        .list_volumes_on_disk(12, Some(2))
        .await
    {
        Err(Error::Unsupported {
            operation,
            served,
            needed,
        }) => {
            assert_eq!(operation, Operation::ListVolumesOnPartition);
            assert_eq!((served, needed), (V::V1BETA2, V::V1BETA3));
        }
        other => panic!("{other:?}"),
    }
    assert!(raw.requests().is_empty());

    let (_node, raw, proxy) = pinned(Volume, V::V1).await;
    proxy
        .volume()
        .unwrap()
        .list_volumes_on_disk(12, Some(2))
        .await
        .unwrap();
    assert_eq!(raw.only_request().body, [0x08, 12, 0x10, 2]);
}

#[tokio::test]
async fn volume_disk_numbers_and_sizes_are_checked() {
    let (_node, raw, proxy) = pinned(Volume, V::V1BETA1).await;
    let volumes = proxy.volume().unwrap();
    raw.reply(wire::volume::v1beta2::VolumeDiskNumberResponse { disk_number: 7 });
    assert_eq!(
        volumes
            .get_disk_number_from_volume_id(&volume())
            .await
            .unwrap(),
        7
    );
    assert_eq!(
        raw.requests()[0].path,
        "/v1beta1.Volume/GetVolumeDiskNumber"
    );
    for bad in [-1, 1 << 33] {
        raw.reply(wire::volume::v1beta2::VolumeDiskNumberResponse { disk_number: bad });
        assert_invalid_response(
            volumes.get_disk_number_from_volume_id(&volume()).await,
            Operation::GetDiskNumberFromVolumeId,
        );
    }
    raw.reply(wire::volume::v1beta2::VolumeStatsResponse {
        volume_size: 10,
        volume_used_size: 4,
    });
    let stats = volumes.get_volume_stats(&volume()).await.unwrap();
    assert_eq!((stats.total_bytes, stats.used_bytes), (10, 4));
    raw.reply(wire::volume::v1beta2::VolumeStatsResponse {
        volume_size: 10,
        volume_used_size: -4,
    });
    assert_invalid_response(
        volumes.get_volume_stats(&volume()).await,
        Operation::GetVolumeStats,
    );
    raw.reply(wire::volume::v1beta2::ListVolumesOnDiskResponse {
        volume_ids: vec![String::new()],
    });
    assert_invalid_response(
        volumes.list_volumes_on_disk(1, None).await,
        Operation::ListVolumesOnDisk,
    );
}

#[tokio::test]
async fn new_volume_requests_use_target_path_and_size_bytes() {
    let (_node, raw, proxy) = pinned(Volume, V::V2ALPHA1).await;
    let volumes = proxy.volume().unwrap();
    volumes.mount_volume(&volume(), &path()).await.unwrap();
    volumes.resize_volume(&volume(), 0).await.unwrap();
    raw.reply(
        wire::volume::v2alpha1::GetClosestVolumeIdFromTargetPathResponse {
            volume_id: volume().to_string(),
        },
    );
    assert_eq!(
        volumes
            .get_closest_volume_id_from_target_path(&pod_path())
            .await
            .unwrap(),
        volume()
    );
    let sent = raw.requests();
    let mount = wire::volume::v2alpha1::MountVolumeRequest::decode(&sent[0].body[..]).unwrap();
    assert_eq!(
        (mount.volume_id, mount.target_path),
        (volume().to_string(), path().to_string())
    );
    assert_eq!(
        sent[2].path,
        "/v2alpha1.Volume/GetClosestVolumeIDFromTargetPath"
    );
}

#[tokio::test]
async fn numbered_requests_put_each_argument_in_its_own_field() {
    let (_node, raw, proxy) = pinned(Volume, V::V1).await;
    let volumes = proxy.volume().unwrap();
    volumes.unmount_volume(&volume(), &path()).await.unwrap();
    volumes.resize_volume(&volume(), 5 << 30).await.unwrap();
    let sent = raw.requests();
    assert_eq!(sent[0].path, "/v1.Volume/UnmountVolume");
    let unmount = wire::volume::v1::UnmountVolumeRequest::decode(&sent[0].body[..]).unwrap();
    assert_eq!(
        (unmount.volume_id, unmount.target_path),
        (volume().to_string(), path().to_string())
    );
    let resize = wire::volume::v1::ResizeVolumeRequest::decode(&sent[1].body[..]).unwrap();
    assert_eq!(
        (resize.volume_id, resize.size_bytes),
        (volume().to_string(), 5 << 30)
    );

    let (_node, raw, proxy) = pinned(Disk, V::V1).await;
    proxy.disk().unwrap().set_disk_state(7, true).await.unwrap();
    let sent = raw.only_request();
    assert_eq!(sent.path, "/v1.Disk/SetDiskState");
    let state = wire::disk::v1::SetDiskStateRequest::decode(&sent.body[..]).unwrap();
    assert_eq!((state.disk_number, state.is_online), (7, true));
}
