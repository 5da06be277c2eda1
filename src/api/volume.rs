//! The volume group.

use async_trait::async_trait;

use super::{not_implemented, VolumeId, WindowsPath};
use crate::capability::Operation;
use crate::error::Result;

/// Total and used bytes of a volume.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VolumeStats {
    /// The volume's size.
    pub total_bytes: u64,
    /// Bytes in use.
    pub used_bytes: u64,
}

/// The volume group: format, mount, resize and inspect volumes.
///
/// The proxy does not check volume paths against its working directories.
///
/// ```
/// use std::sync::Arc;
/// use csi_proxy_client::{api::{VolumeApi, VolumeId, VolumeStats}, async_trait, Result};
///
/// /// Every volume is half full.
/// struct HalfFull;
///
/// #[async_trait]
/// impl VolumeApi for HalfFull {
///     async fn get_volume_stats(&self, _volume: &VolumeId) -> Result<VolumeStats> {
///         Ok(VolumeStats { total_bytes: 2 << 30, used_bytes: 1 << 30 })
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<()> {
/// let volumes: Arc<dyn VolumeApi> = Arc::new(HalfFull);
/// let id = VolumeId::new(r"\\?\Volume{1}\")?;
/// assert_eq!(volumes.get_volume_stats(&id).await?.used_bytes, 1 << 30);
/// # Ok(()) }
/// ```
#[async_trait]
// The defaults answer `NotImplemented`, whatever the arguments.
#[allow(unused_variables)]
pub trait VolumeApi: Send + Sync {
    /// The volumes on disk `disk`; with `partition`, only those of that
    /// partition (needs v1beta3; `Some(0)` means all, as on the wire).
    async fn list_volumes_on_disk(
        &self,
        disk: u32,
        partition: Option<u32>,
    ) -> Result<Vec<VolumeId>> {
        not_implemented(if partition.is_some() {
            Operation::ListVolumesOnPartition
        } else {
            Operation::ListVolumesOnDisk
        })
    }

    /// Mounts `volume` at the folder `target` (idempotent for the same
    /// volume and folder).
    async fn mount_volume(&self, volume: &VolumeId, target: &WindowsPath) -> Result<()> {
        not_implemented(Operation::MountVolume)
    }

    /// Flushes `volume` and removes its mount at `target` (`DismountVolume`
    /// before v1beta3).
    async fn unmount_volume(&self, volume: &VolumeId, target: &WindowsPath) -> Result<()> {
        not_implemented(Operation::UnmountVolume)
    }

    /// Whether `volume` has a file system (before proxy v1.0: NTFS only).
    async fn is_volume_formatted(&self, volume: &VolumeId) -> Result<bool> {
        not_implemented(Operation::IsVolumeFormatted)
    }

    /// Formats `volume` with NTFS.
    async fn format_volume(&self, volume: &VolumeId) -> Result<()> {
        not_implemented(Operation::FormatVolume)
    }

    /// Resizes `volume`'s partition to `size_bytes`; 0 means as large as
    /// possible. Proxies from v1.2 skip growth below 100 MB.
    async fn resize_volume(&self, volume: &VolumeId, size_bytes: u64) -> Result<()> {
        not_implemented(Operation::ResizeVolume)
    }

    /// Total and used bytes of `volume` (`VolumeStats` before v1beta3). Needs v1beta1.
    async fn get_volume_stats(&self, volume: &VolumeId) -> Result<VolumeStats> {
        not_implemented(Operation::GetVolumeStats)
    }

    /// The number of the disk that holds `volume` (`GetVolumeDiskNumber`
    /// before v1beta3). Needs v1beta1.
    async fn get_disk_number_from_volume_id(&self, volume: &VolumeId) -> Result<u32> {
        not_implemented(Operation::GetDiskNumberFromVolumeId)
    }

    /// The volume mounted at the folder `target` (`GetVolumeIDFromMount`
    /// before v1beta3). Needs v1beta1.
    async fn get_volume_id_from_target_path(&self, target: &WindowsPath) -> Result<VolumeId> {
        not_implemented(Operation::GetVolumeIdFromTargetPath)
    }

    /// Flushes `volume`'s file system cache to disk. Needs v1beta2.
    async fn write_volume_cache(&self, volume: &VolumeId) -> Result<()> {
        not_implemented(Operation::WriteVolumeCache)
    }

    /// The volume that holds `path`, following symlinks up the tree. Needs
    /// v2alpha1.
    async fn get_closest_volume_id_from_target_path(&self, path: &WindowsPath) -> Result<VolumeId> {
        not_implemented(Operation::GetClosestVolumeIdFromTargetPath)
    }
}
