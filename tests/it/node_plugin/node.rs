//! One volume's life on a Windows node, as a CSI node plugin's handlers do
//! it: `NodeStageVolume`, `NodePublishVolume`, `NodeGetVolumeStats`,
//! `NodeExpandVolume`, `NodeUnpublishVolume` and `NodeUnstageVolume`, as
//! plain async functions over the SDK's [`Mounter`]: the calls the
//! library's node service (`csi::NodeService`) makes for a disk, and what a
//! driver with a gRPC server of its own calls. No wire version appears
//! here, so the same code runs on a node with CSI Proxy v0.2.2 and on one
//! with v1.3. The round-trip tests (`tests/it/mounter/round_trips.rs`) and
//! the benchmark (`examples/bench.rs`) count the proxy calls they make.

use csi_proxy_client::{
    api::{VolumeId, WindowsPath},
    mount::{DiskAfterUnstage, DiskSelector, FsStats, Mounter},
    Error,
};

/// `NodeStageVolume`: the disk whose SCSI page 0x83 ID is `page83`,
/// online, partitioned if raw, formatted if it has no file system, and
/// mounted at `staging`. Another volume there is a conflict
/// (`ALREADY_EXISTS`), never replaced.
pub async fn node_stage_volume(
    mounter: &Mounter,
    page83: &str,
    staging: &WindowsPath,
) -> Result<VolumeId, Error> {
    let staged = mounter
        .stage_disk(&DiskSelector::page83(page83), staging)
        .await?;
    Ok(staged.volume)
}

/// `NodePublishVolume`: `target` (in the pod's directory) becomes a link
/// to the staged volume; an empty directory kubelet made there is
/// replaced, a link to anything else is a conflict.
pub async fn node_publish_volume(
    mounter: &Mounter,
    staging: &WindowsPath,
    target: &WindowsPath,
) -> Result<(), Error> {
    mounter.publish(staging, target).await.map(drop)
}

/// `NodeGetVolumeStats`: the size and use of the volume of disk `page83`
/// behind `volume_path` (the published link or the staging path); another
/// volume there is `NOT_FOUND`.
pub async fn node_get_volume_stats(
    mounter: &Mounter,
    page83: &str,
    volume_path: &WindowsPath,
) -> Result<FsStats, Error> {
    mounter
        .stats(&DiskSelector::page83(page83), volume_path)
        .await
}

/// `NodeExpandVolume`: after the controller grew disk `page83` to
/// `required_bytes`, lets Windows see it and grows the volume to fill the
/// disk. Returns the volume's size now.
pub async fn node_expand_volume(
    mounter: &Mounter,
    page83: &str,
    volume_path: &WindowsPath,
    required_bytes: Option<u64>,
) -> Result<u64, Error> {
    let selector = DiskSelector::page83(page83);
    let expanded = mounter
        .expand(&selector, volume_path, required_bytes)
        .await?;
    Ok(expanded.total_bytes)
}

/// `NodeUnpublishVolume`: removes the pod's link; the staged volume stays.
pub async fn node_unpublish_volume(mounter: &Mounter, target: &WindowsPath) -> Result<(), Error> {
    mounter.unpublish(target).await.map(drop)
}

/// `NodeUnstageVolume`: flushes and unmounts the volume, removes the
/// staging folder, and takes the disk offline so that the controller's
/// detach does not hang (aws-ebs #1116).
pub async fn node_unstage_volume(mounter: &Mounter, staging: &WindowsPath) -> Result<(), Error> {
    mounter
        .unstage_disk(staging, DiskAfterUnstage::TakeOffline)
        .await
        .map(drop)
}
