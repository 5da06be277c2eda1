//! The volume group's checks.

use super::{ensure, ensure_eq, is_host_error, Outcome, Steps, VolumeFixture};
use crate::api::VolumeApi;
use crate::capability::Operation as O;

/// A disk number no node in a test has.
const MISSING_DISK: u32 = 99;

/// Checks `api` against the volume rules on the disk `fixture` describes:
/// its one volume is listed (by disk and by partition; a missing disk has
/// none), formats, mounts at the mount point (twice: the same volume again
/// is no change), is found from the mount point and leads back to its
/// disk, grows to the maximum with a resize to 0, reports its use, flushes
/// its cache, and unmounts (a second unmount fails: nothing is mounted
/// there).
pub async fn volume(api: &dyn VolumeApi, fixture: &VolumeFixture) -> Outcome {
    let mut steps = Steps::default();
    let (disk, target) = (fixture.disk, &fixture.mount_point);

    if let Some(none) = steps
        .ok(
            O::ListVolumesOnDisk,
            api.list_volumes_on_disk(MISSING_DISK, None),
        )
        .await?
    {
        ensure(none.is_empty(), O::ListVolumesOnDisk, || {
            format!("a missing disk has no volumes, got {none:?}")
        })?;
    }
    let volumes = steps
        .ok(O::ListVolumesOnDisk, api.list_volumes_on_disk(disk, None))
        .await?
        .unwrap_or_default();
    ensure_eq(
        &volumes.len(),
        &1,
        O::ListVolumesOnDisk,
        "volumes on the disk",
    )?;
    let id = &volumes[0];
    if let Some(on_partition) = steps
        .ok(
            O::ListVolumesOnPartition,
            api.list_volumes_on_disk(disk, Some(fixture.partition)),
        )
        .await?
    {
        ensure_eq(
            &on_partition,
            &volumes,
            O::ListVolumesOnPartition,
            "volumes on the partition",
        )?;
    }
    // Partition 0 is "every partition", as on the wire.
    if let Some(on_any) = steps
        .ok(
            O::ListVolumesOnPartition,
            api.list_volumes_on_disk(disk, Some(0)),
        )
        .await?
    {
        ensure_eq(
            &on_any,
            &volumes,
            O::ListVolumesOnPartition,
            "volumes on partition 0 (every partition)",
        )?;
    }
    steps
        .answers(
            O::IsVolumeFormatted,
            api.is_volume_formatted(id),
            false,
            "formatted before formatting",
        )
        .await?;
    steps.ok(O::FormatVolume, api.format_volume(id)).await?;
    steps
        .answers(
            O::IsVolumeFormatted,
            api.is_volume_formatted(id),
            true,
            "formatted after formatting",
        )
        .await?;

    steps
        .ok(O::MountVolume, api.mount_volume(id, target))
        .await?;
    steps
        .ok(O::MountVolume, api.mount_volume(id, target))
        .await?;
    if let Some(found) = steps
        .ok(
            O::GetVolumeIdFromTargetPath,
            api.get_volume_id_from_target_path(target),
        )
        .await?
    {
        ensure_eq(
            &found,
            id,
            O::GetVolumeIdFromTargetPath,
            "the mounted volume",
        )?;
    }
    if let Some(found) = steps
        .ok(
            O::GetClosestVolumeIdFromTargetPath,
            api.get_closest_volume_id_from_target_path(target),
        )
        .await?
    {
        ensure_eq(
            &found,
            id,
            O::GetClosestVolumeIdFromTargetPath,
            "the mounted volume",
        )?;
    }
    if let Some(found) = steps
        .ok(
            O::GetDiskNumberFromVolumeId,
            api.get_disk_number_from_volume_id(id),
        )
        .await?
    {
        ensure_eq(
            &found,
            &disk,
            O::GetDiskNumberFromVolumeId,
            "the volume's disk",
        )?;
    }
    let before = steps
        .ok(O::GetVolumeStats, api.get_volume_stats(id))
        .await?;
    steps.ok(O::ResizeVolume, api.resize_volume(id, 0)).await?;
    if let (Some(before), Some(after)) = (
        before,
        steps
            .ok(O::GetVolumeStats, api.get_volume_stats(id))
            .await?,
    ) {
        ensure(
            after.total_bytes >= before.total_bytes,
            O::ResizeVolume,
            || format!("a resize to 0 grows the volume: {before:?} became {after:?}"),
        )?;
        ensure(
            after.used_bytes > 0 && after.used_bytes < after.total_bytes,
            O::GetVolumeStats,
            || format!("a formatted volume uses part of its size: {after:?}"),
        )?;
    }
    steps
        .ok(O::WriteVolumeCache, api.write_volume_cache(id))
        .await?;
    steps
        .ok(O::UnmountVolume, api.unmount_volume(id, target))
        .await?;
    steps
        .fails(
            O::UnmountVolume,
            api.unmount_volume(id, target),
            is_host_error,
            "unmounting where nothing is mounted fails on the host",
        )
        .await?;
    steps.finish()
}
