//! `NodeGetVolumeStats` and `NodeExpandVolume`: a staged volume's size,
//! answered only for the disk (or share) the driver names for that ID,
//! with the stage's contexts. A share is measured where the node can
//! measure it, and has nothing of the node's to grow.

use std::collections::HashMap;

use tonic::Response;

use crate::api::WindowsPath;
use crate::csi::checks;
use crate::csi::driver::{NodeDriver, Volume, VolumeRequest};
use crate::csi::v1::*;
use crate::csi::NodeService;
use crate::mount::{DiskSelector, IscsiVolume, Mounter};
use crate::{CsiNodeCall, Error, Status};

use super::answer;

impl<D: NodeDriver> NodeService<D> {
    /// The size and use of the volume at the volume path.
    pub(super) async fn volume_stats(
        &self,
        r: &NodeGetVolumeStatsRequest,
    ) -> Result<Response<NodeGetVolumeStatsResponse>, Status> {
        let call = CsiNodeCall::GetVolumeStats;
        let volume_id = checks::volume_id(&r.volume_id)?;
        let at = checks::volume_path(&r.volume_path)?;
        let staging = WindowsPath::new(&r.staging_target_path).ok();
        let contexts = self.inner.recorded.get(volume_id).await;
        let contexts = contexts.unwrap_or_default();
        let no_secrets = HashMap::new();
        let request = VolumeRequest {
            call,
            volume_id,
            volume_context: &contexts.volume,
            publish_context: &contexts.publish,
            secrets: &no_secrets,
            capability: None,
            staging_target_path: staging.as_ref(),
        };
        let volume = self.volume(&request)?;
        let stats = match &volume {
            Volume::Smb(share, _) => self.inner.mounter.share_stats(share, &at).await,
            _ => {
                let disk = self.disk_of(&volume, call).await?;
                self.inner.mounter.stats(&disk, &at).await.map(Some)
            }
        };
        let stats = stats.map_err(answer(call))?;
        // Unmeasured (a share the node cannot reach from here): the usage
        // with nothing set, which CSI reads as "not reported" and kubelet
        // takes without an error (no usage at all is one).
        let usage = stats.map_or(
            VolumeUsage {
                unit: volume_usage::Unit::Bytes as i32,
                ..VolumeUsage::default()
            },
            |stats| VolumeUsage {
                available: bytes(stats.available_bytes),
                total: bytes(stats.total_bytes),
                used: bytes(stats.used_bytes),
                unit: volume_usage::Unit::Bytes as i32,
            },
        );
        Ok(Response::new(NodeGetVolumeStatsResponse {
            usage: vec![usage],
            volume_condition: None,
        }))
    }

    /// Grows the volume at the volume path, on the disk the driver names.
    pub(super) async fn expand_volume(
        &self,
        r: &NodeExpandVolumeRequest,
    ) -> Result<Response<NodeExpandVolumeResponse>, Status> {
        let call = CsiNodeCall::ExpandVolume;
        let volume_id = checks::volume_id(&r.volume_id)?;
        let at = checks::volume_path(&r.volume_path)?;
        if r.volume_capability.is_some() {
            checks::capability(r.volume_capability.as_ref())?;
        }
        let staging = WindowsPath::new(&r.staging_target_path).ok();
        let contexts = self.inner.recorded.get(volume_id).await;
        let contexts = contexts.unwrap_or_default();
        let request = VolumeRequest {
            call,
            volume_id,
            volume_context: &contexts.volume,
            publish_context: &contexts.publish,
            secrets: &r.secrets,
            capability: r.volume_capability.as_ref(),
            staging_target_path: staging.as_ref(),
        };
        let volume = self.volume(&request)?;
        if let Volume::Smb(share, _) = &volume {
            // A share grows on its server (the controller's work): the node
            // has nothing to do. Its size where the node can read it, else
            // 0, CSI's "unknown".
            let stats = self.inner.mounter.share_stats(share, &at).await;
            let stats = stats.map_err(answer(call))?;
            return Ok(Response::new(NodeExpandVolumeResponse {
                capacity_bytes: stats.map_or(0, |stats| bytes(stats.total_bytes)),
            }));
        }
        let disk = self.disk_of(&volume, call).await?;
        let required_bytes = r
            .capacity_range
            .map(|range| u64::try_from(range.required_bytes).unwrap_or(0))
            .filter(|&bytes| bytes > 0);
        let expanded = self.inner.mounter.expand(&disk, &at, required_bytes).await;
        let expanded = expanded.map_err(answer(call))?;
        Ok(Response::new(NodeExpandVolumeResponse {
            capacity_bytes: bytes(expanded.total_bytes),
        }))
    }

    /// The disk that must hold a disk's or an iSCSI volume, for stats and
    /// expand.
    async fn disk_of(&self, volume: &Volume, call: CsiNodeCall) -> Result<DiskSelector, Status> {
        match volume {
            Volume::Disk(selector) => Ok(selector.clone()),
            Volume::Iscsi(target) => iscsi_disk(&self.inner.mounter, target)
                .await
                .map_err(|error| error.csi_status_for(call)),
            Volume::Smb(share, _) => Err(Status::internal(format!(
                "{share} is a share, measured as one: it has no disk"
            ))),
        }
    }
}

/// The disks of an iSCSI target the node is logged in to, as a selector:
/// the volume at a path must be on one of them. Not logged in: no disk,
/// `NotFound`.
async fn iscsi_disk(mounter: &Mounter, target: &IscsiVolume) -> crate::Result<DiskSelector> {
    let iscsi = mounter.proxy().iscsi()?;
    let disks = iscsi
        .get_target_disks(target.portal(), target.iqn())
        .await?;
    if disks.is_empty() {
        return Err(Error::NotFound {
            what: format!("a disk of iSCSI target {}", target.iqn()),
        });
    }
    let description = format!("disk of iSCSI target {}", target.iqn());
    Ok(DiskSelector::matching(description, move |candidate| {
        disks.contains(&candidate.number)
    }))
}

/// `n` bytes as CSI's `int64`: at most its largest.
fn bytes(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
