//! Volume adapters.
//!
//! - [`StringIdVolume`]: v1alpha1, v1beta1, v1beta2 — disk numbers as
//!   decimal strings, no partition filter, `path`/`mount`/`size` field
//!   names, `DismountVolume`, `VolumeStats`, `GetVolumeDiskNumber` (int64)
//!   and `GetVolumeIDFromMount`.
//! - [`NumberedVolume`]: v1beta3, v1, v2alpha1.
//!
//! One answer depends on the proxy's release, not its wire version:
//! `VolumeStatsResponse.volume_size` (v1beta1, v1beta2) is the volume's
//! *free* space from CSI Proxy v0.2.0 to v0.2.2 and its *total* size from
//! v1.0.0 on. Every v1.x release also serves volume v1beta3 and v1, which
//! the default policy prefers, so a client on a string-ID version whose
//! newer volume versions are absent is on v0.2.x and reads the field as
//! free space. Absent means settled: found absent by negotiation, and
//! again by the group's settling look once the grace of a proxy creating
//! its pipes had passed (`availability::newer_settled_absent`, which the
//! call policy sets for this call). A v1.x proxy caught while it starts
//! lacks them for a moment, and one whose newer endpoint exists but failed
//! has them: both read the total. So does a client kept on
//! v1beta1/v1beta2 by its policy (nothing newer tried), which cannot
//! tell: every release of the last years sends the total. The rule is
//! decided per call, for the version the call goes to, so it is decided
//! again whenever the group moves to another version.

use async_trait::async_trait;

use super::convert::{byte_count, disk_number_from_i64, volume_id, wire_bytes};
use super::WireClient;
use crate::api::{list_volumes_operation, VolumeApi, VolumeId, VolumeStats, WindowsPath};
use crate::availability::newer_settled_absent;
use crate::capability::Operation as Op;
use crate::error::Result;
use crate::wire::volume::{v1beta2 as string_id, v2alpha1 as numbered};

/// Requests that are the same message, by the same name, in every version.
macro_rules! volume_only_request {
    ($module:ident :: $request:ident, $volume:expr) => {
        $module::$request {
            volume_id: $volume.to_string(),
        }
    };
}

/// The stats of either family, checked.
fn volume_stats(total: i64, used: i64) -> Result<VolumeStats> {
    Ok(VolumeStats {
        total_bytes: byte_count(Op::GetVolumeStats, "total bytes", total)?,
        used_bytes: byte_count(Op::GetVolumeStats, "used bytes", used)?,
    })
}

/// The volume IDs of `ListVolumesOnDisk`, checked.
fn volume_ids(operation: Op, ids: Vec<String>) -> Result<Vec<VolumeId>> {
    ids.into_iter().map(|id| volume_id(operation, id)).collect()
}

pub(super) struct StringIdVolume {
    wire: WireClient,
}

impl StringIdVolume {
    pub fn new(wire: WireClient) -> Self {
        Self { wire }
    }

    /// Whether `VolumeStatsResponse.volume_size` is the free space (CSI
    /// Proxy v0.2.x) rather than the total, for the call running now: the
    /// newer versions were absent at negotiation and are still absent
    /// once the group settled (see the module docs).
    fn size_is_free_space(&self) -> bool {
        self.wire.newer_versions_absent() && newer_settled_absent()
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl VolumeApi for StringIdVolume {
    async fn list_volumes_on_disk(
        &self,
        disk: u32,
        partition: Option<u32>,
    ) -> Result<Vec<VolumeId>> {
        let operation = list_volumes_operation(partition);
        if operation == Op::ListVolumesOnPartition {
            return Err(self.wire.unsupported(operation));
        }
        let request = string_id::ListVolumesOnDiskRequest {
            disk_id: disk.to_string(),
        };
        let response: string_id::ListVolumesOnDiskResponse =
            self.wire.call(Op::ListVolumesOnDisk, request).await?;
        volume_ids(Op::ListVolumesOnDisk, response.volume_ids)
    }

    async fn mount_volume(&self, volume: &VolumeId, target: &WindowsPath) -> Result<()> {
        let request = string_id::MountVolumeRequest {
            volume_id: volume.to_string(),
            path: target.to_string(),
        };
        let _: string_id::MountVolumeResponse = self.wire.call(Op::MountVolume, request).await?;
        Ok(())
    }

    async fn unmount_volume(&self, volume: &VolumeId, target: &WindowsPath) -> Result<()> {
        let request = string_id::DismountVolumeRequest {
            volume_id: volume.to_string(),
            path: target.to_string(),
        };
        let _: string_id::DismountVolumeResponse =
            self.wire.call(Op::UnmountVolume, request).await?;
        Ok(())
    }

    async fn is_volume_formatted(&self, volume: &VolumeId) -> Result<bool> {
        let request = volume_only_request!(string_id::IsVolumeFormattedRequest, volume);
        let response: string_id::IsVolumeFormattedResponse =
            self.wire.call(Op::IsVolumeFormatted, request).await?;
        Ok(response.formatted)
    }

    async fn format_volume(&self, volume: &VolumeId) -> Result<()> {
        let request = volume_only_request!(string_id::FormatVolumeRequest, volume);
        let _: string_id::FormatVolumeResponse = self.wire.call(Op::FormatVolume, request).await?;
        Ok(())
    }

    async fn resize_volume(&self, volume: &VolumeId, size_bytes: u64) -> Result<()> {
        let request = string_id::ResizeVolumeRequest {
            volume_id: volume.to_string(),
            size: wire_bytes(size_bytes)?,
        };
        let _: string_id::ResizeVolumeResponse = self.wire.call(Op::ResizeVolume, request).await?;
        Ok(())
    }

    async fn get_volume_stats(&self, volume: &VolumeId) -> Result<VolumeStats> {
        let request = volume_only_request!(string_id::VolumeStatsRequest, volume);
        let response: string_id::VolumeStatsResponse =
            self.wire.call(Op::GetVolumeStats, request).await?;
        let stats = volume_stats(response.volume_size, response.volume_used_size)?;
        if !self.size_is_free_space() {
            return Ok(stats);
        }
        // v0.2.x: free space and used bytes; the total is their sum.
        let total_bytes = stats
            .total_bytes
            .checked_add(stats.used_bytes)
            .ok_or_else(|| {
                crate::error::Error::invalid_response(
                    Op::GetVolumeStats,
                    "free and used bytes add up to more than 2^64",
                )
            })?;
        Ok(VolumeStats {
            total_bytes,
            ..stats
        })
    }

    async fn get_disk_number_from_volume_id(&self, volume: &VolumeId) -> Result<u32> {
        let request = volume_only_request!(string_id::VolumeDiskNumberRequest, volume);
        let response: string_id::VolumeDiskNumberResponse = self
            .wire
            .call(Op::GetDiskNumberFromVolumeId, request)
            .await?;
        disk_number_from_i64(Op::GetDiskNumberFromVolumeId, response.disk_number)
    }

    async fn get_volume_id_from_target_path(&self, target: &WindowsPath) -> Result<VolumeId> {
        let request = string_id::VolumeIdFromMountRequest {
            mount: target.to_string(),
        };
        let response: string_id::VolumeIdFromMountResponse = self
            .wire
            .call(Op::GetVolumeIdFromTargetPath, request)
            .await?;
        volume_id(Op::GetVolumeIdFromTargetPath, response.volume_id)
    }

    async fn write_volume_cache(&self, volume: &VolumeId) -> Result<()> {
        let request = volume_only_request!(string_id::WriteVolumeCacheRequest, volume);
        let _: string_id::WriteVolumeCacheResponse =
            self.wire.call(Op::WriteVolumeCache, request).await?;
        Ok(())
    }

    async fn get_closest_volume_id_from_target_path(
        &self,
        _path: &WindowsPath,
    ) -> Result<VolumeId> {
        Err(self.wire.unsupported(Op::GetClosestVolumeIdFromTargetPath))
    }
}

pub(super) struct NumberedVolume {
    wire: WireClient,
}

impl NumberedVolume {
    pub fn new(wire: WireClient) -> Self {
        Self { wire }
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl VolumeApi for NumberedVolume {
    async fn list_volumes_on_disk(
        &self,
        disk: u32,
        partition: Option<u32>,
    ) -> Result<Vec<VolumeId>> {
        let operation = list_volumes_operation(partition);
        let request = numbered::ListVolumesOnDiskRequest {
            disk_number: disk,
            partition_number: partition.unwrap_or(0),
        };
        let response: numbered::ListVolumesOnDiskResponse =
            self.wire.call(operation, request).await?;
        volume_ids(operation, response.volume_ids)
    }

    async fn mount_volume(&self, volume: &VolumeId, target: &WindowsPath) -> Result<()> {
        let request = numbered::MountVolumeRequest {
            volume_id: volume.to_string(),
            target_path: target.to_string(),
        };
        let _: numbered::MountVolumeResponse = self.wire.call(Op::MountVolume, request).await?;
        Ok(())
    }

    async fn unmount_volume(&self, volume: &VolumeId, target: &WindowsPath) -> Result<()> {
        let request = numbered::UnmountVolumeRequest {
            volume_id: volume.to_string(),
            target_path: target.to_string(),
        };
        let _: numbered::UnmountVolumeResponse = self.wire.call(Op::UnmountVolume, request).await?;
        Ok(())
    }

    async fn is_volume_formatted(&self, volume: &VolumeId) -> Result<bool> {
        let request = volume_only_request!(numbered::IsVolumeFormattedRequest, volume);
        let response: numbered::IsVolumeFormattedResponse =
            self.wire.call(Op::IsVolumeFormatted, request).await?;
        Ok(response.formatted)
    }

    async fn format_volume(&self, volume: &VolumeId) -> Result<()> {
        let request = volume_only_request!(numbered::FormatVolumeRequest, volume);
        let _: numbered::FormatVolumeResponse = self.wire.call(Op::FormatVolume, request).await?;
        Ok(())
    }

    async fn resize_volume(&self, volume: &VolumeId, size_bytes: u64) -> Result<()> {
        let request = numbered::ResizeVolumeRequest {
            volume_id: volume.to_string(),
            size_bytes: wire_bytes(size_bytes)?,
        };
        let _: numbered::ResizeVolumeResponse = self.wire.call(Op::ResizeVolume, request).await?;
        Ok(())
    }

    async fn get_volume_stats(&self, volume: &VolumeId) -> Result<VolumeStats> {
        let request = volume_only_request!(numbered::GetVolumeStatsRequest, volume);
        let response: numbered::GetVolumeStatsResponse =
            self.wire.call(Op::GetVolumeStats, request).await?;
        volume_stats(response.total_bytes, response.used_bytes)
    }

    async fn get_disk_number_from_volume_id(&self, volume: &VolumeId) -> Result<u32> {
        let request = volume_only_request!(numbered::GetDiskNumberFromVolumeIdRequest, volume);
        let response: numbered::GetDiskNumberFromVolumeIdResponse = self
            .wire
            .call(Op::GetDiskNumberFromVolumeId, request)
            .await?;
        Ok(response.disk_number)
    }

    async fn get_volume_id_from_target_path(&self, target: &WindowsPath) -> Result<VolumeId> {
        let request = numbered::GetVolumeIdFromTargetPathRequest {
            target_path: target.to_string(),
        };
        let response: numbered::GetVolumeIdFromTargetPathResponse = self
            .wire
            .call(Op::GetVolumeIdFromTargetPath, request)
            .await?;
        volume_id(Op::GetVolumeIdFromTargetPath, response.volume_id)
    }

    async fn write_volume_cache(&self, volume: &VolumeId) -> Result<()> {
        let request = volume_only_request!(numbered::WriteVolumeCacheRequest, volume);
        let _: numbered::WriteVolumeCacheResponse =
            self.wire.call(Op::WriteVolumeCache, request).await?;
        Ok(())
    }

    async fn get_closest_volume_id_from_target_path(&self, path: &WindowsPath) -> Result<VolumeId> {
        let request = numbered::GetClosestVolumeIdFromTargetPathRequest {
            target_path: path.to_string(),
        };
        let response: numbered::GetClosestVolumeIdFromTargetPathResponse = self
            .wire
            .call(Op::GetClosestVolumeIdFromTargetPath, request)
            .await?;
        volume_id(Op::GetClosestVolumeIdFromTargetPath, response.volume_id)
    }
}
