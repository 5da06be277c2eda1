//! The fake proxy's servers of the volume layouts: each is generated from
//! the catalogue (`string_id_volume.rs`, `numbered_volume.rs`), but for
//! what is written by hand on both sides, here.

mod numbered_volume;
mod string_id_volume;

pub(super) use numbered_volume::NumberedVolumeServer;
pub(super) use string_id_volume::StringIdVolumeServer;

use super::codec::{decode, host, reply, Answer};
use super::fields::{ReadRequest, WriteAnswer};
use super::server::not_in_layout;
use crate::adapter::fields::{Bytes, DecimalDisk, VolumeText, VolumeTexts};
use crate::api::VolumeStats;
use crate::capability::VolumeOperation as Op;
use crate::testing::ProxyRelease;
use crate::wire::volume::v1beta2 as string_id;

impl StringIdVolumeServer {
    /// No partition filter in this layout.
    async fn list_volumes(&self, op: Op, body: &[u8]) -> Answer {
        if op == Op::ListVolumesOnPartition {
            return Err(not_in_layout(op));
        }
        let request: string_id::ListVolumesOnDiskRequest = decode(body)?;
        let disk = DecimalDisk::from_request(request.disk_id)?;
        let ids = host!(self.api.list_volumes_on_disk(disk, None));
        reply(string_id::ListVolumesOnDiskResponse {
            volume_ids: VolumeTexts::to_answer(ids),
        })
    }

    async fn volume_stats(&self, _: Op, body: &[u8]) -> Answer {
        let request: string_id::VolumeStatsRequest = decode(body)?;
        let volume = VolumeText::from_request(request.volume_id)?;
        let stats = host!(self.api.get_volume_stats(&volume));
        reply(string_id::VolumeStatsResponse {
            volume_size: Bytes::to_answer(self.volume_size(&stats)),
            volume_used_size: Bytes::to_answer(stats.used_bytes),
        })
    }

    /// What goes in `volume_size`, which depends on the release the server
    /// stands for: CSI Proxy v0.2.x put the bytes remaining there, v1.0.0
    /// and later the total.
    fn volume_size(&self, stats: &VolumeStats) -> u64 {
        let remaining = self.release.get().is_some_and(|r| r < ProxyRelease::V1_0_0);
        match remaining {
            true => stats.total_bytes.saturating_sub(stats.used_bytes),
            false => stats.total_bytes,
        }
    }
}
