//! The volume group.

use super::declare::define_group_traits;

/// Total and used bytes of a volume.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VolumeStats {
    /// The volume's size.
    pub total_bytes: u64,
    /// Bytes in use.
    pub used_bytes: u64,
}

/// The volume group's one declaration (see `api::declare`).
macro_rules! volume_group {
    ($then:ident $(($($extra:tt)*))?) => { $then! { ($($($extra)*)?)
        /// The volume group: format, mount, resize and inspect volumes.
        ///
        /// The proxy does not check volume paths against its working directories.
        ///
        /// ```
        /// use std::sync::Arc;
        /// use csi_proxy_client::{async_trait, Result, VolumeApi, VolumeId, VolumeStats};
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
        pub trait VolumeApi, backend VolumeBackend {
            /// The volumes on disk `disk`; with `partition`, only those of that
            /// partition (needs v1beta3; `Some(0)` means all, as on the wire).
            fn list_volumes_on_disk(
                &self,
                disk: u32,
                partition: Option<u32>,
            ) -> Vec<crate::api::VolumeId>
                = if partition.is_some() { ListVolumesOnPartition } else { ListVolumesOnDisk };

            /// Mounts `volume` at the folder `target` (idempotent for the same
            /// volume and folder).
            fn mount_volume(
                &self,
                volume: &crate::api::VolumeId,
                target: &crate::api::WindowsPath,
            ) -> () = MountVolume;

            /// Flushes `volume` and removes its mount at `target` (`DismountVolume`
            /// before v1beta3).
            fn unmount_volume(
                &self,
                volume: &crate::api::VolumeId,
                target: &crate::api::WindowsPath,
            ) -> () = UnmountVolume;

            /// Whether `volume` has a file system (before proxy v1.0: NTFS only).
            fn is_volume_formatted(
                &self,
                volume: &crate::api::VolumeId,
            ) -> bool = IsVolumeFormatted;

            /// Formats `volume` with NTFS.
            fn format_volume(&self, volume: &crate::api::VolumeId) -> () = FormatVolume;

            /// Resizes `volume`'s partition to `size_bytes`; 0 means as large as
            /// possible. Proxies from v1.2 skip growth below 100 MB.
            fn resize_volume(
                &self,
                volume: &crate::api::VolumeId,
                size_bytes: u64,
            ) -> () = ResizeVolume;

            /// Total and used bytes of `volume` (`VolumeStats` before v1beta3). Needs v1beta1.
            fn get_volume_stats(
                &self,
                volume: &crate::api::VolumeId,
            ) -> crate::api::VolumeStats = GetVolumeStats;

            /// The number of the disk that holds `volume` (`GetVolumeDiskNumber`
            /// before v1beta3). Needs v1beta1.
            fn get_disk_number_from_volume_id(
                &self,
                volume: &crate::api::VolumeId,
            ) -> u32 = GetDiskNumberFromVolumeId;

            /// The volume mounted at the folder `target` (`GetVolumeIDFromMount`
            /// before v1beta3). Needs v1beta1.
            fn get_volume_id_from_target_path(
                &self,
                target: &crate::api::WindowsPath,
            ) -> crate::api::VolumeId = GetVolumeIdFromTargetPath;

            /// Flushes `volume`'s file system cache to disk. Needs v1beta2.
            fn write_volume_cache(&self, volume: &crate::api::VolumeId) -> () = WriteVolumeCache;

            /// The volume that holds `path`, following symlinks up the tree. Needs
            /// v2alpha1.
            fn get_closest_volume_id_from_target_path(
                &self,
                path: &crate::api::WindowsPath,
            ) -> crate::api::VolumeId = GetClosestVolumeIdFromTargetPath;
        }
    } };
}
pub(crate) use volume_group;

volume_group!(define_group_traits);
