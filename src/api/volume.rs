//! The volume group.

use super::define::group_trait;
use super::{VolumeId, WindowsPath};
use crate::capability::Operation;

/// Total and used bytes of a volume.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VolumeStats {
    /// The volume's size.
    pub total_bytes: u64,
    /// Bytes in use.
    pub used_bytes: u64,
}

/// The volume group's RPCs, each defined once: its method, its arguments,
/// its answer, its [`Operation`] and the checks its arguments get before
/// anything is sent. `volume_rpcs!(m)` hands the list to the macro `m`:
/// [`group_trait`](super::define) makes the trait of it, and the client
/// its handle.
macro_rules! volume_rpcs {
    ($then:ident) => {
        $then! {
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
            trait VolumeApi;

            /// The volumes on disk `disk`; with `partition`, only those of that
            /// partition (needs v1beta3; `Some(0)` means all, as on the wire).
            fn list_volumes_on_disk(&self, disk: u32, partition: Option<u32>) -> Vec<VolumeId>
                = crate::api::list_volumes_operation(partition);

            /// Mounts `volume` at the folder `target` (idempotent for the same
            /// volume and folder).
            fn mount_volume(&self, volume: &VolumeId, target: &WindowsPath) -> ()
                = Operation::MountVolume;

            /// Flushes `volume` and removes its mount at `target` (`DismountVolume`
            /// before v1beta3).
            fn unmount_volume(&self, volume: &VolumeId, target: &WindowsPath) -> ()
                = Operation::UnmountVolume;

            /// Whether `volume` has a file system (before proxy v1.0: NTFS only).
            fn is_volume_formatted(&self, volume: &VolumeId) -> bool = Operation::IsVolumeFormatted;

            /// Formats `volume` with NTFS.
            fn format_volume(&self, volume: &VolumeId) -> () = Operation::FormatVolume;

            /// Resizes `volume`'s partition to `size_bytes`; 0 means as large as
            /// possible. Proxies from v1.2 skip growth below 100 MB.
            fn resize_volume(&self, volume: &VolumeId, size_bytes: u64) -> ()
                = Operation::ResizeVolume;

            /// Total and used bytes of `volume` (`VolumeStats` before v1beta3). Needs v1beta1.
            fn get_volume_stats(&self, volume: &VolumeId) -> VolumeStats
                = Operation::GetVolumeStats;

            /// The number of the disk that holds `volume` (`GetVolumeDiskNumber`
            /// before v1beta3). Needs v1beta1.
            fn get_disk_number_from_volume_id(&self, volume: &VolumeId) -> u32
                = Operation::GetDiskNumberFromVolumeId;

            /// The volume mounted at the folder `target` (`GetVolumeIDFromMount`
            /// before v1beta3). Needs v1beta1.
            fn get_volume_id_from_target_path(&self, target: &WindowsPath) -> VolumeId
                = Operation::GetVolumeIdFromTargetPath;

            /// Flushes `volume`'s file system cache to disk. Needs v1beta2.
            fn write_volume_cache(&self, volume: &VolumeId) -> () = Operation::WriteVolumeCache;

            /// The volume that holds `path`, following symlinks up the tree. Needs
            /// v2alpha1.
            fn get_closest_volume_id_from_target_path(&self, path: &WindowsPath) -> VolumeId
                = Operation::GetClosestVolumeIdFromTargetPath;
        }
    };
}
pub(crate) use volume_rpcs;

volume_rpcs!(group_trait);

/// What `list_volumes_on_disk` is: one partition's volumes for a partition
/// number other than 0 (which needs v1beta3), else the disk's, as on the
/// wire, where 0 means every partition.
pub(crate) fn list_volumes_operation(partition: Option<u32>) -> Operation {
    match partition {
        Some(p) if p != 0 => Operation::ListVolumesOnPartition,
        _ => Operation::ListVolumesOnDisk,
    }
}
