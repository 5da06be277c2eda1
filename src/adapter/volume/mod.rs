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

mod numbered_volume;
mod string_id_volume;

pub(crate) use numbered_volume::NumberedVolume;
pub(crate) use string_id_volume::StringIdVolume;

use super::convert::byte_count;
use super::fields::{AnswerField, RequestField};
use super::fields::{DecimalDisk, VolumeText, VolumeTexts};
use crate::api::{list_volumes_operation, VolumeId, VolumeStats};
use crate::availability::newer_settled_absent;
use crate::capability::Operation as Op;
use crate::error::{Error, Result};
use crate::wire::volume::v1beta2 as string_id;

impl StringIdVolume {
    /// Whether `VolumeStatsResponse.volume_size` is the free space (CSI
    /// Proxy v0.2.x) rather than the total, for the call running now: the
    /// newer versions were absent at negotiation and are still absent
    /// once the group settled (see the module docs).
    fn size_is_free_space(&self) -> bool {
        self.wire.newer_versions_absent() && newer_settled_absent()
    }

    /// No partition filter before v1beta3.
    async fn list_volumes(&self, disk: u32, partition: Option<u32>) -> Result<Vec<VolumeId>> {
        let operation = list_volumes_operation(partition);
        if operation == Op::ListVolumesOnPartition {
            return Err(self.wire.unsupported(operation));
        }
        let request = string_id::ListVolumesOnDiskRequest {
            disk_id: DecimalDisk::to_request(disk)?,
        };
        let response: string_id::ListVolumesOnDiskResponse =
            self.wire.call(Op::ListVolumesOnDisk, request).await?;
        VolumeTexts::from_answer(Op::ListVolumesOnDisk, "volume_ids", response.volume_ids)
    }

    /// `volume_size` is the free space or the total, by release.
    async fn volume_stats(&self, volume: &VolumeId) -> Result<VolumeStats> {
        let request = string_id::VolumeStatsRequest {
            volume_id: VolumeText::to_request(volume)?,
        };
        let response: string_id::VolumeStatsResponse =
            self.wire.call(Op::GetVolumeStats, request).await?;
        let size = byte_count(Op::GetVolumeStats, "volume size", response.volume_size)?;
        let used_bytes = byte_count(Op::GetVolumeStats, "used bytes", response.volume_used_size)?;
        if !self.size_is_free_space() {
            return Ok(VolumeStats {
                total_bytes: size,
                used_bytes,
            });
        }
        // v0.2.x: free space and used bytes; the total is their sum.
        let total_bytes = size.checked_add(used_bytes).ok_or_else(|| {
            Error::invalid_response(
                Op::GetVolumeStats,
                "free and used bytes add up to more than 2^64",
            )
        })?;
        Ok(VolumeStats {
            total_bytes,
            used_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::WindowsPath;
    use crate::error::ErrorKind;

    fn volume() -> VolumeId {
        VolumeId::new(r"\\?\Volume{1}\").unwrap()
    }

    #[test]
    fn each_layout_names_the_mount_s_folder_as_its_messages_do() {
        let target = WindowsPath::new(r"C:\var\lib\kubelet\plugins\x").unwrap();
        let old = StringIdVolume::mount_volume_request(&volume(), &target).unwrap();
        assert_eq!(
            (old.volume_id.as_str(), old.path.as_str()),
            (r"\\?\Volume{1}\", r"C:\var\lib\kubelet\plugins\x")
        );
        let new = NumberedVolume::mount_volume_request(&volume(), &target).unwrap();
        assert_eq!(new.target_path, old.path);
    }

    #[test]
    fn a_size_the_wire_cannot_carry_is_refused_before_anything_is_sent() {
        let error = NumberedVolume::resize_volume_request(&volume(), u64::MAX).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidArgument, "{error}");
        let request = StringIdVolume::resize_volume_request(&volume(), 1 << 30).unwrap();
        assert_eq!(request.size, 1 << 30);
    }
}
