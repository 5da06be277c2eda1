//! Server side of the volume layouts.

use std::sync::Arc;

use async_trait::async_trait;

use super::codec::{bytes, decode, disk_id, host, path, reply, volume, wire_bytes, Answer};
use super::routing::WireServer;
use super::ReleaseCell;
use crate::api::{VolumeApi, VolumeStats};
use crate::capability::VolumeOperation as Op;
use crate::testing::ProxyRelease;
use crate::wire::volume::{v1beta2 as string_id, v2alpha1 as numbered};

/// The server of the string-ID layout (v1alpha1 to v1beta2). Its
/// `VolumeStats` answer depends on the release it stands for: CSI Proxy
/// v0.2.x put the bytes remaining in `volume_size`, v1.0.0 and later the
/// total.
pub(super) struct StringIdVolume {
    pub api: Arc<dyn VolumeApi>,
    pub release: ReleaseCell,
}

impl StringIdVolume {
    /// What goes in `volume_size`.
    fn volume_size(&self, stats: &VolumeStats) -> u64 {
        let remaining = self.release.get().is_some_and(|r| r < ProxyRelease::V1_0_0);
        match remaining {
            true => stats.total_bytes.saturating_sub(stats.used_bytes),
            false => stats.total_bytes,
        }
    }
}

#[async_trait]
impl WireServer<Op> for StringIdVolume {
    async fn handle(&self, op: Op, body: &[u8]) -> Answer {
        let api = &self.api;
        match op {
            Op::ListVolumesOnDisk => {
                let request: string_id::ListVolumesOnDiskRequest = decode(body)?;
                let ids = host!(api.list_volumes_on_disk(disk_id(&request.disk_id)?, None));
                reply(string_id::ListVolumesOnDiskResponse {
                    volume_ids: ids.iter().map(ToString::to_string).collect(),
                })
            }
            Op::MountVolume => {
                let request: string_id::MountVolumeRequest = decode(body)?;
                host!(api.mount_volume(&volume(request.volume_id)?, &path(&request.path)?));
                reply(string_id::MountVolumeResponse {})
            }
            Op::UnmountVolume => {
                let request: string_id::DismountVolumeRequest = decode(body)?;
                host!(api.unmount_volume(&volume(request.volume_id)?, &path(&request.path)?));
                reply(string_id::DismountVolumeResponse {})
            }
            Op::IsVolumeFormatted => {
                let request: string_id::IsVolumeFormattedRequest = decode(body)?;
                let formatted = host!(api.is_volume_formatted(&volume(request.volume_id)?));
                reply(string_id::IsVolumeFormattedResponse { formatted })
            }
            Op::FormatVolume => {
                let request: string_id::FormatVolumeRequest = decode(body)?;
                host!(api.format_volume(&volume(request.volume_id)?));
                reply(string_id::FormatVolumeResponse {})
            }
            Op::ResizeVolume => {
                let request: string_id::ResizeVolumeRequest = decode(body)?;
                host!(api.resize_volume(&volume(request.volume_id)?, bytes(request.size)?));
                reply(string_id::ResizeVolumeResponse {})
            }
            Op::GetVolumeStats => {
                let request: string_id::VolumeStatsRequest = decode(body)?;
                let stats = host!(api.get_volume_stats(&volume(request.volume_id)?));
                reply(string_id::VolumeStatsResponse {
                    volume_size: wire_bytes(self.volume_size(&stats)),
                    volume_used_size: wire_bytes(stats.used_bytes),
                })
            }
            Op::GetDiskNumberFromVolumeId => {
                let request: string_id::VolumeDiskNumberRequest = decode(body)?;
                let disk = host!(api.get_disk_number_from_volume_id(&volume(request.volume_id)?));
                reply(string_id::VolumeDiskNumberResponse {
                    disk_number: i64::from(disk),
                })
            }
            Op::GetVolumeIdFromTargetPath => {
                let request: string_id::VolumeIdFromMountRequest = decode(body)?;
                let id = host!(api.get_volume_id_from_target_path(&path(&request.mount)?));
                reply(string_id::VolumeIdFromMountResponse {
                    volume_id: id.to_string(),
                })
            }
            Op::WriteVolumeCache => {
                let request: string_id::WriteVolumeCacheRequest = decode(body)?;
                host!(api.write_volume_cache(&volume(request.volume_id)?));
                reply(string_id::WriteVolumeCacheResponse {})
            }
            // Not in this layout.
            Op::ListVolumesOnPartition | Op::GetClosestVolumeIdFromTargetPath => {
                Err(super::routing::not_in_layout(op))
            }
        }
    }
}

pub(super) struct NumberedVolume(pub Arc<dyn VolumeApi>);

#[async_trait]
impl WireServer<Op> for NumberedVolume {
    async fn handle(&self, op: Op, body: &[u8]) -> Answer {
        let api = &self.0;
        match op {
            // One RPC: a partition number of 0 lists the whole disk.
            Op::ListVolumesOnDisk | Op::ListVolumesOnPartition => {
                let request: numbered::ListVolumesOnDiskRequest = decode(body)?;
                let partition = Some(request.partition_number).filter(|&p| p != 0);
                let ids = host!(api.list_volumes_on_disk(request.disk_number, partition));
                reply(numbered::ListVolumesOnDiskResponse {
                    volume_ids: ids.iter().map(ToString::to_string).collect(),
                })
            }
            Op::MountVolume => {
                let request: numbered::MountVolumeRequest = decode(body)?;
                host!(api.mount_volume(&volume(request.volume_id)?, &path(&request.target_path)?));
                reply(numbered::MountVolumeResponse {})
            }
            Op::UnmountVolume => {
                let request: numbered::UnmountVolumeRequest = decode(body)?;
                host!(api.unmount_volume(&volume(request.volume_id)?, &path(&request.target_path)?));
                reply(numbered::UnmountVolumeResponse {})
            }
            Op::IsVolumeFormatted => {
                let request: numbered::IsVolumeFormattedRequest = decode(body)?;
                let formatted = host!(api.is_volume_formatted(&volume(request.volume_id)?));
                reply(numbered::IsVolumeFormattedResponse { formatted })
            }
            Op::FormatVolume => {
                let request: numbered::FormatVolumeRequest = decode(body)?;
                host!(api.format_volume(&volume(request.volume_id)?));
                reply(numbered::FormatVolumeResponse {})
            }
            Op::ResizeVolume => {
                let request: numbered::ResizeVolumeRequest = decode(body)?;
                host!(api.resize_volume(&volume(request.volume_id)?, bytes(request.size_bytes)?));
                reply(numbered::ResizeVolumeResponse {})
            }
            Op::GetVolumeStats => {
                let request: numbered::GetVolumeStatsRequest = decode(body)?;
                let stats = host!(api.get_volume_stats(&volume(request.volume_id)?));
                reply(numbered::GetVolumeStatsResponse {
                    total_bytes: wire_bytes(stats.total_bytes),
                    used_bytes: wire_bytes(stats.used_bytes),
                })
            }
            Op::GetDiskNumberFromVolumeId => {
                let request: numbered::GetDiskNumberFromVolumeIdRequest = decode(body)?;
                let disk_number =
                    host!(api.get_disk_number_from_volume_id(&volume(request.volume_id)?));
                reply(numbered::GetDiskNumberFromVolumeIdResponse { disk_number })
            }
            Op::GetVolumeIdFromTargetPath => {
                let request: numbered::GetVolumeIdFromTargetPathRequest = decode(body)?;
                let id = host!(api.get_volume_id_from_target_path(&path(&request.target_path)?));
                reply(numbered::GetVolumeIdFromTargetPathResponse {
                    volume_id: id.to_string(),
                })
            }
            Op::WriteVolumeCache => {
                let request: numbered::WriteVolumeCacheRequest = decode(body)?;
                host!(api.write_volume_cache(&volume(request.volume_id)?));
                reply(numbered::WriteVolumeCacheResponse {})
            }
            Op::GetClosestVolumeIdFromTargetPath => {
                let request: numbered::GetClosestVolumeIdFromTargetPathRequest = decode(body)?;
                let id =
                    host!(api.get_closest_volume_id_from_target_path(&path(&request.target_path)?));
                reply(numbered::GetClosestVolumeIdFromTargetPathResponse {
                    volume_id: id.to_string(),
                })
            }
        }
    }
}
