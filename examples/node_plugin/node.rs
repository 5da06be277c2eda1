//! One volume's life on a Windows node, as a CSI node plugin's handlers do
//! it: `NodeStageVolume`, `NodePublishVolume`, `NodeGetVolumeStats`,
//! `NodeExpandVolume`, `NodeUnpublishVolume` and `NodeUnstageVolume`, as
//! plain async functions over the SDK's traits. A driver's gRPC server
//! calls them with the paths kubelet gives; no wire version appears here,
//! so the same code runs on a node with CSI Proxy v0.2.2 and on one with
//! v1.1. Each is idempotent, as CSI requires: kubelet repeats calls.

use csi_proxy_client::{
    api::{VolumeId, VolumeStats, WindowsPath},
    CsiProxy, Error,
};

/// `NodeStageVolume`: finds the disk whose SCSI page 0x83 ID is `page83`,
/// partitions it if it is raw, formats its volume if it has no file system,
/// and mounts the volume at `staging`. A volume already mounted there is
/// left as it is.
pub async fn node_stage_volume(
    proxy: &CsiProxy,
    page83: &str,
    staging: &WindowsPath,
) -> Result<VolumeId, Error> {
    if let Some(staged) = volume_mounted_at(proxy, staging).await? {
        return Ok(staged);
    }
    let (disk, volume) = (proxy.disk()?, proxy.volume()?);
    let number = disk.get_disk_number_by_name(page83).await?;
    let mut volumes = volume.list_volumes_on_disk(number, None).await?;
    if volumes.is_empty() {
        disk.partition_disk(number).await?;
        volumes = volume.list_volumes_on_disk(number, None).await?;
    }
    let Some(id) = volumes.into_iter().next() else {
        return Err(Error::NotFound {
            what: format!("volume on disk {number} after partitioning it"),
        });
    };
    if !volume.is_volume_formatted(&id).await? {
        volume.format_volume(&id).await?;
    }
    proxy.filesystem()?.mkdir(staging).await?;
    volume.mount_volume(&id, staging).await?;
    Ok(id)
}

/// `NodePublishVolume`: makes `target` (in the pod's directory) a link to
/// the staged volume. kubelet may have created `target` as an empty
/// directory; it is replaced by the link.
pub async fn node_publish_volume(
    proxy: &CsiProxy,
    staging: &WindowsPath,
    target: &WindowsPath,
) -> Result<(), Error> {
    let filesystem = proxy.filesystem()?;
    if filesystem.path_exists(target).await? {
        if filesystem.is_symlink(target).await? {
            return Ok(());
        }
        filesystem.rmdir(target, false).await?;
    }
    filesystem.create_symlink(staging, target).await
}

/// `NodeGetVolumeStats`: the size and use of the volume behind
/// `volume_path` (the published link or the staging path).
pub async fn node_get_volume_stats(
    proxy: &CsiProxy,
    volume_path: &WindowsPath,
) -> Result<VolumeStats, Error> {
    let volume = proxy.volume()?;
    let id = volume.get_volume_id_from_target_path(volume_path).await?;
    volume.get_volume_stats(&id).await
}

/// `NodeExpandVolume`: after the controller grew the disk, lets Windows
/// see the new size and grows the volume to fill the disk. Returns the
/// volume's size now.
pub async fn node_expand_volume(proxy: &CsiProxy, volume_path: &WindowsPath) -> Result<u64, Error> {
    let volume = proxy.volume()?;
    let id = volume.get_volume_id_from_target_path(volume_path).await?;
    proxy.disk()?.rescan().await?;
    // 0: as large as the disk allows. A volume that already fills it is
    // left alone.
    volume.resize_volume(&id, 0).await?;
    Ok(volume.get_volume_stats(&id).await?.total_bytes)
}

/// `NodeUnpublishVolume`: removes the pod's link; the staged volume stays.
pub async fn node_unpublish_volume(proxy: &CsiProxy, target: &WindowsPath) -> Result<(), Error> {
    // Forced: a path that is already gone is no error.
    proxy.filesystem()?.rmdir(target, true).await
}

/// `NodeUnstageVolume`: unmounts the volume from `staging` (writing its
/// cache out first) and removes the staging directory.
pub async fn node_unstage_volume(proxy: &CsiProxy, staging: &WindowsPath) -> Result<(), Error> {
    if let Some(id) = volume_mounted_at(proxy, staging).await? {
        proxy.volume()?.unmount_volume(&id, staging).await?;
    }
    proxy.filesystem()?.rmdir(staging, true).await
}

/// The volume mounted at `path`, if any. The proxy answers a path that is
/// no mount point with a host error; that is the "no" here.
async fn volume_mounted_at(
    proxy: &CsiProxy,
    path: &WindowsPath,
) -> Result<Option<VolumeId>, Error> {
    if !proxy.filesystem()?.path_exists(path).await? {
        return Ok(None);
    }
    match proxy.volume()?.get_volume_id_from_target_path(path).await {
        Ok(id) => Ok(Some(id)),
        Err(Error::Host { .. }) => Ok(None),
        Err(other) => Err(other),
    }
}
