//! The volume group's RPCs, one method each (the form: `catalogue/README.md`).

use crate::adapter::fields::{Bytes, PartitionNumber, PathText, VolumeText, VolumeTexts, WideDisk};
use crate::api::{list_volumes_operation, VolumeId, VolumeStats, WindowsPath};

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
#[group(Volume, operations = VolumeOperation)]
#[layout(
    StringIdVolume,
    wire = crate::wire::volume::v1beta2,
    doc = "v1alpha1, v1beta1, v1beta2: disk numbers as decimal strings, the old
           field names, no partition filter.",
    server_release
)]
#[layout(
    NumberedVolume,
    wire = crate::wire::volume::v2alpha1,
    doc = "v1beta3, v1, v2alpha1: `uint32` disk numbers and a partition filter."
)]
trait VolumeApi {
    /// The volumes on disk `disk`; with `partition`, only those of that
    /// partition (needs v1beta3; `Some(0)` means all, as on the wire).
    #[operation(
        ListVolumesOnDisk,
        name = "ListVolumesOnDisk",
        effect = Reads,
        doc = "The volumes on a disk.",
        since(V1ALPHA1 = Native("ListVolumesOnDisk"))
    )]
    #[operation(
        ListVolumesOnPartition,
        name = "ListVolumesOnDisk (one partition)",
        effect = Reads,
        doc = "The volumes of one partition of a disk (`ListVolumesOnDisk` with a
               partition number).",
        since(V1ALPHA1 = No, V1BETA3 = Native("ListVolumesOnDisk"))
    )]
    #[pick(list_volumes_operation(partition))]
    #[wire(StringIdVolume, by_hand = list_volumes)]
    // One RPC: a partition number of 0 lists the whole disk.
    #[wire(
        NumberedVolume,
        request = ListVolumesOnDiskRequest {
            disk_number: disk,
            partition_number: PartitionNumber(partition),
        },
        response = ListVolumesOnDiskResponse { volume_ids: VolumeTexts(volume_ids) }
    )]
    async fn list_volumes_on_disk(
        &self,
        disk: u32,
        partition: Option<u32>,
    ) -> Result<Vec<VolumeId>>;

    /// Mounts `volume` at the folder `target` (idempotent for the same
    /// volume and folder).
    #[operation(
        MountVolume,
        name = "MountVolume",
        effect = Mutates,
        doc = "Mount a volume at a folder.",
        since(V1ALPHA1 = Native("MountVolume"))
    )]
    #[wire(
        StringIdVolume,
        request = MountVolumeRequest { volume_id: VolumeText(volume), path: PathText(target) },
        response = MountVolumeResponse {}
    )]
    #[wire(
        NumberedVolume,
        request = MountVolumeRequest { volume_id: VolumeText(volume), target_path: PathText(target) },
        response = MountVolumeResponse {}
    )]
    async fn mount_volume(&self, volume: &VolumeId, target: &WindowsPath) -> Result<()>;

    /// Flushes `volume` and removes its mount at `target` (`DismountVolume`
    /// before v1beta3).
    #[operation(
        UnmountVolume,
        name = "UnmountVolume",
        effect = Mutates,
        doc = "Remove a volume's folder mount.",
        since(V1ALPHA1 = Native("DismountVolume"), V1BETA3 = Native("UnmountVolume"))
    )]
    #[wire(
        StringIdVolume,
        request = DismountVolumeRequest { volume_id: VolumeText(volume), path: PathText(target) },
        response = DismountVolumeResponse {}
    )]
    #[wire(
        NumberedVolume,
        request = UnmountVolumeRequest { volume_id: VolumeText(volume), target_path: PathText(target) },
        response = UnmountVolumeResponse {}
    )]
    async fn unmount_volume(&self, volume: &VolumeId, target: &WindowsPath) -> Result<()>;

    /// Whether `volume` has a file system (before proxy v1.0: NTFS only).
    #[operation(
        IsVolumeFormatted,
        name = "IsVolumeFormatted",
        effect = Reads,
        doc = "Whether a volume has a file system.",
        since(V1ALPHA1 = Native("IsVolumeFormatted"))
    )]
    #[wire(
        StringIdVolume,
        request = IsVolumeFormattedRequest { volume_id: VolumeText(volume) },
        response = IsVolumeFormattedResponse { formatted }
    )]
    #[wire(
        NumberedVolume,
        request = IsVolumeFormattedRequest { volume_id: VolumeText(volume) },
        response = IsVolumeFormattedResponse { formatted }
    )]
    async fn is_volume_formatted(&self, volume: &VolumeId) -> Result<bool>;

    /// Formats `volume` with NTFS.
    #[operation(
        FormatVolume,
        name = "FormatVolume",
        effect = SlowlyMutates,
        doc = "Format a volume.",
        since(V1ALPHA1 = Native("FormatVolume"))
    )]
    #[wire(
        StringIdVolume,
        request = FormatVolumeRequest { volume_id: VolumeText(volume) },
        response = FormatVolumeResponse {}
    )]
    #[wire(
        NumberedVolume,
        request = FormatVolumeRequest { volume_id: VolumeText(volume) },
        response = FormatVolumeResponse {}
    )]
    async fn format_volume(&self, volume: &VolumeId) -> Result<()>;

    /// Resizes `volume`'s partition to `size_bytes`; 0 means as large as
    /// possible. Proxies from v1.2 skip growth below 100 MB.
    #[operation(
        ResizeVolume,
        name = "ResizeVolume",
        effect = SlowlyMutates,
        doc = "Resize a volume.",
        since(V1ALPHA1 = Native("ResizeVolume"))
    )]
    #[wire(
        StringIdVolume,
        request = ResizeVolumeRequest { volume_id: VolumeText(volume), size: Bytes(size_bytes) },
        response = ResizeVolumeResponse {}
    )]
    #[wire(
        NumberedVolume,
        request = ResizeVolumeRequest { volume_id: VolumeText(volume), size_bytes: Bytes(size_bytes) },
        response = ResizeVolumeResponse {}
    )]
    async fn resize_volume(&self, volume: &VolumeId, size_bytes: u64) -> Result<()>;

    /// Total and used bytes of `volume` (`VolumeStats` before v1beta3). Needs v1beta1.
    #[operation(
        GetVolumeStats,
        name = "GetVolumeStats",
        effect = Reads,
        doc = "Total and used bytes of a volume.",
        since(
            V1ALPHA1 = No,
            V1BETA1 = Native("VolumeStats"),
            V1BETA3 = Native("GetVolumeStats")
        ),
        read_by_release
    )]
    #[wire(StringIdVolume, by_hand = volume_stats)]
    #[wire(
        NumberedVolume,
        request = GetVolumeStatsRequest { volume_id: VolumeText(volume) },
        response = GetVolumeStatsResponse {
            total_bytes: Bytes(total_bytes),
            used_bytes: Bytes(used_bytes),
        },
        answer = VolumeStats { total_bytes, used_bytes }
    )]
    async fn get_volume_stats(&self, volume: &VolumeId) -> Result<VolumeStats>;

    /// The number of the disk that holds `volume` (`GetVolumeDiskNumber`
    /// before v1beta3). Needs v1beta1.
    #[operation(
        GetDiskNumberFromVolumeId,
        name = "GetDiskNumberFromVolumeID",
        effect = Reads,
        doc = "The disk that holds a volume.",
        since(
            V1ALPHA1 = No,
            V1BETA1 = Native("GetVolumeDiskNumber"),
            V1BETA3 = Native("GetDiskNumberFromVolumeID")
        )
    )]
    #[wire(
        StringIdVolume,
        request = VolumeDiskNumberRequest { volume_id: VolumeText(volume) },
        response = VolumeDiskNumberResponse { disk_number: WideDisk(disk_number) }
    )]
    #[wire(
        NumberedVolume,
        request = GetDiskNumberFromVolumeIdRequest { volume_id: VolumeText(volume) },
        response = GetDiskNumberFromVolumeIdResponse { disk_number }
    )]
    async fn get_disk_number_from_volume_id(&self, volume: &VolumeId) -> Result<u32>;

    /// The volume mounted at the folder `target` (`GetVolumeIDFromMount`
    /// before v1beta3). Needs v1beta1.
    #[operation(
        GetVolumeIdFromTargetPath,
        name = "GetVolumeIDFromTargetPath",
        effect = Reads,
        doc = "The volume mounted at a folder.",
        since(
            V1ALPHA1 = No,
            V1BETA1 = Native("GetVolumeIDFromMount"),
            V1BETA3 = Native("GetVolumeIDFromTargetPath")
        )
    )]
    #[wire(
        StringIdVolume,
        request = VolumeIdFromMountRequest { mount: PathText(target) },
        response = VolumeIdFromMountResponse { volume_id: VolumeText(volume_id) }
    )]
    #[wire(
        NumberedVolume,
        request = GetVolumeIdFromTargetPathRequest { target_path: PathText(target) },
        response = GetVolumeIdFromTargetPathResponse { volume_id: VolumeText(volume_id) }
    )]
    async fn get_volume_id_from_target_path(&self, target: &WindowsPath) -> Result<VolumeId>;

    /// Flushes `volume`'s file system cache to disk. Needs v1beta2.
    #[operation(
        WriteVolumeCache,
        name = "WriteVolumeCache",
        effect = Mutates,
        doc = "Flush a volume's cache.",
        since(V1ALPHA1 = No, V1BETA2 = Native("WriteVolumeCache"))
    )]
    #[wire(
        StringIdVolume,
        request = WriteVolumeCacheRequest { volume_id: VolumeText(volume) },
        response = WriteVolumeCacheResponse {}
    )]
    #[wire(
        NumberedVolume,
        request = WriteVolumeCacheRequest { volume_id: VolumeText(volume) },
        response = WriteVolumeCacheResponse {}
    )]
    async fn write_volume_cache(&self, volume: &VolumeId) -> Result<()>;

    /// The volume that holds `path`, following symlinks up the tree. Needs
    /// v2alpha1.
    #[operation(
        GetClosestVolumeIdFromTargetPath,
        name = "GetClosestVolumeIDFromTargetPath",
        effect = Reads,
        doc = "The volume that holds a path.",
        since(V1ALPHA1 = No, V2ALPHA1 = Native("GetClosestVolumeIDFromTargetPath"))
    )]
    #[wire(StringIdVolume, absent)]
    #[wire(
        NumberedVolume,
        request = GetClosestVolumeIdFromTargetPathRequest { target_path: PathText(path) },
        response = GetClosestVolumeIdFromTargetPathResponse { volume_id: VolumeText(volume_id) }
    )]
    async fn get_closest_volume_id_from_target_path(&self, path: &WindowsPath) -> Result<VolumeId>;
}
