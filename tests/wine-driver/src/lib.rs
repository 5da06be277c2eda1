//! The node-side code of a (tiny) Windows CSI driver: what its tests, in
//! `tests/`, hold to account against a fake CSI Proxy.

use csi_proxy_client::{api::WindowsPath, CsiProxy, Error};

/// NodeStageVolume's host work: the disk with page 0x83 ID `page83`,
/// partitioned and formatted if it is new, mounted at `staging` (a folder
/// kubelet made). A repeat finds the volume mounted and does nothing.
pub async fn stage(proxy: &CsiProxy, page83: &str, staging: &WindowsPath) -> Result<(), Error> {
    let volume = proxy.volume()?;
    if volume.get_volume_id_from_target_path(staging).await.is_ok() {
        return Ok(());
    }
    let disk = proxy.disk()?;
    let number = disk.get_disk_number_by_name(page83).await?;
    let mut ids = volume.list_volumes_on_disk(number, None).await?;
    if ids.is_empty() {
        disk.partition_disk(number).await?;
        ids = volume.list_volumes_on_disk(number, None).await?;
    }
    let id = ids.first().ok_or(Error::NotFound {
        what: format!("volume on disk {number}"),
    })?;
    if !volume.is_volume_formatted(id).await? {
        volume.format_volume(id).await?;
    }
    volume.mount_volume(id, staging).await
}
