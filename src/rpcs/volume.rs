//! The volume group's RPCs (see [the module](super)).

/// The volume group's RPCs, each defined once (see [the module](super)).
macro_rules! volume_rpcs {
    ($then:ident $($carry:tt)*) => {
        $then! {
            $($carry)*
            {
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
            trait VolumeApi: Volume => VolumeOperation;

            /// The volumes on disk `disk`; with `partition`, only those of that
            /// partition (needs v1beta3; `Some(0)` means all, as on the wire).
            fn list_volumes_on_disk(&self, disk: u32, partition: Option<u32>) -> Vec<VolumeId>
                = by list_volumes_operation(partition) => {
                    /// The volumes on a disk.
                    ListVolumesOnDisk = "ListVolumesOnDisk", Reads,
                        [V1ALPHA1 => Native("ListVolumesOnDisk")];
                    /// The volumes of one partition of a disk (`ListVolumesOnDisk` with a
                    /// partition number).
                    ListVolumesOnPartition = "ListVolumesOnDisk (one partition)", Reads,
                        [V1ALPHA1 => No, V1BETA3 => Native("ListVolumesOnDisk")]
                };

            /// Mounts `volume` at the folder `target` (idempotent for the same
            /// volume and folder).
            fn mount_volume(&self, volume: &VolumeId, target: &WindowsPath) -> () = {
                /// Mount a volume at a folder.
                MountVolume = "MountVolume", Mutates, [V1ALPHA1 => Native("MountVolume")]
            };

            /// Flushes `volume` and removes its mount at `target` (`DismountVolume`
            /// before v1beta3).
            fn unmount_volume(&self, volume: &VolumeId, target: &WindowsPath) -> () = {
                /// Remove a volume's folder mount.
                UnmountVolume = "UnmountVolume", Mutates,
                    [V1ALPHA1 => Native("DismountVolume"), V1BETA3 => Native("UnmountVolume")]
            };

            /// Whether `volume` has a file system (before proxy v1.0: NTFS only).
            fn is_volume_formatted(&self, volume: &VolumeId) -> bool = {
                /// Whether a volume has a file system.
                IsVolumeFormatted = "IsVolumeFormatted", Reads,
                    [V1ALPHA1 => Native("IsVolumeFormatted")]
            };

            /// Formats `volume` with NTFS.
            fn format_volume(&self, volume: &VolumeId) -> () = {
                /// Format a volume.
                FormatVolume = "FormatVolume", SlowlyMutates, [V1ALPHA1 => Native("FormatVolume")]
            };

            /// Resizes `volume`'s partition to `size_bytes`; 0 means as large as
            /// possible. Proxies from v1.2 skip growth below 100 MB.
            fn resize_volume(&self, volume: &VolumeId, size_bytes: u64) -> () = {
                /// Resize a volume.
                ResizeVolume = "ResizeVolume", SlowlyMutates, [V1ALPHA1 => Native("ResizeVolume")]
            };

            /// Total and used bytes of `volume` (`VolumeStats` before v1beta3). Needs v1beta1.
            fn get_volume_stats(&self, volume: &VolumeId) -> VolumeStats = {
                /// Total and used bytes of a volume.
                GetVolumeStats = "GetVolumeStats", Reads, [
                    V1ALPHA1 => No,
                    V1BETA1 => Native("VolumeStats"),
                    V1BETA3 => Native("GetVolumeStats"),
                ]
            };

            /// The number of the disk that holds `volume` (`GetVolumeDiskNumber`
            /// before v1beta3). Needs v1beta1.
            fn get_disk_number_from_volume_id(&self, volume: &VolumeId) -> u32 = {
                /// The disk that holds a volume.
                GetDiskNumberFromVolumeId = "GetDiskNumberFromVolumeID", Reads, [
                    V1ALPHA1 => No,
                    V1BETA1 => Native("GetVolumeDiskNumber"),
                    V1BETA3 => Native("GetDiskNumberFromVolumeID"),
                ]
            };

            /// The volume mounted at the folder `target` (`GetVolumeIDFromMount`
            /// before v1beta3). Needs v1beta1.
            fn get_volume_id_from_target_path(&self, target: &WindowsPath) -> VolumeId = {
                /// The volume mounted at a folder.
                GetVolumeIdFromTargetPath = "GetVolumeIDFromTargetPath", Reads, [
                    V1ALPHA1 => No,
                    V1BETA1 => Native("GetVolumeIDFromMount"),
                    V1BETA3 => Native("GetVolumeIDFromTargetPath"),
                ]
            };

            /// Flushes `volume`'s file system cache to disk. Needs v1beta2.
            fn write_volume_cache(&self, volume: &VolumeId) -> () = {
                /// Flush a volume's cache.
                WriteVolumeCache = "WriteVolumeCache", Mutates,
                    [V1ALPHA1 => No, V1BETA2 => Native("WriteVolumeCache")]
            };

            /// The volume that holds `path`, following symlinks up the tree. Needs
            /// v2alpha1.
            fn get_closest_volume_id_from_target_path(&self, path: &WindowsPath) -> VolumeId = {
                /// The volume that holds a path.
                GetClosestVolumeIdFromTargetPath = "GetClosestVolumeIDFromTargetPath", Reads,
                    [V1ALPHA1 => No, V2ALPHA1 => Native("GetClosestVolumeIDFromTargetPath")]
            };
            }
        }
    };
}
pub(crate) use volume_rpcs;
