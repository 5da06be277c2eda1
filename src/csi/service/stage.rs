//! `NodeStageVolume` and `NodeUnstageVolume`: a disk, share or iSCSI
//! target staged by the mounter, with the driver's hooks around it, and
//! the stage's contexts kept for stats and expand.

use std::collections::HashMap;

use tonic::Response;

use crate::api::Secret;
use crate::csi::checks;
use crate::csi::driver::{NodeDriver, Volume, VolumeRequest};
use crate::csi::recorded::Contexts;
use crate::csi::v1::*;
use crate::csi::NodeService;
use crate::mount::SmbCredentials;
use crate::{CsiNodeCall, Status};

use super::answer;

impl<D: NodeDriver> NodeService<D> {
    /// Stages the volume the driver names at the staging path.
    pub(super) async fn stage_volume(
        &self,
        r: &NodeStageVolumeRequest,
    ) -> Result<Response<NodeStageVolumeResponse>, Status> {
        let volume_id = checks::volume_id(&r.volume_id)?;
        let staging = checks::path("staging_target_path", &r.staging_target_path)?;
        let mode = checks::capability(r.volume_capability.as_ref())?;
        checks::context("volume_context", &r.volume_context)?;
        checks::context("publish_context", &r.publish_context)?;
        let request = VolumeRequest {
            call: CsiNodeCall::StageVolume,
            volume_id,
            volume_context: &r.volume_context,
            publish_context: &r.publish_context,
            secrets: &r.secrets,
            capability: r.volume_capability.as_ref(),
            staging_target_path: Some(&staging),
        };
        let volume = self.volume(&request)?;
        checks::usable(volume.kind(), mode, request.capability)?;
        let driver = &self.inner.driver;
        driver.before_stage(&request, &volume).await?;
        let mounter = &self.inner.mounter;
        let staged = answer(CsiNodeCall::StageVolume);
        match &volume {
            Volume::Disk(disk) => {
                let formatting = driver.formatting(volume_id);
                (mounter.stage_disk_for(volume_id, disk, &staging, formatting))
                    .await
                    .map_err(staged)?;
            }
            Volume::Smb(share, given) => {
                let credentials = match given {
                    Some(credentials) => credentials.clone(),
                    None => credentials(&r.secrets)?,
                };
                mounter
                    .stage_smb(volume_id, share, &credentials, &staging)
                    .await
                    .map_err(staged)?;
            }
            Volume::Iscsi(target) => {
                mounter
                    .stage_iscsi(volume_id, target, &staging)
                    .await
                    .map_err(staged)?;
            }
        }
        // Once the stage succeeded (a failed one leaves none behind), so
        // that stats and expand after a restart find them.
        let contexts = Contexts {
            volume: r.volume_context.clone(),
            publish: r.publish_context.clone(),
        };
        if let Err(error) = self.inner.recorded.set(volume_id, contexts).await {
            tracing::warn!(%error, "the volume's contexts could not be recorded");
        }
        driver.after_stage(&request, &volume, &staging).await?;
        Ok(Response::new(NodeStageVolumeResponse {}))
    }

    /// Unstages what the journal says is staged at the staging path.
    pub(super) async fn unstage_volume(
        &self,
        r: &NodeUnstageVolumeRequest,
    ) -> Result<Response<NodeUnstageVolumeResponse>, Status> {
        let volume_id = checks::volume_id(&r.volume_id)?;
        let staging = checks::path("staging_target_path", &r.staging_target_path)?;
        // The journal says what is staged there (a disk, a share, an
        // iSCSI target's disk); nothing there is done already. The
        // driver is not asked: an unstage must not depend on contexts.
        let disk = self.inner.driver.disk_after_unstage(volume_id);
        self.inner
            .mounter
            .unstage(volume_id, &staging, disk)
            .await
            .map_err(answer(CsiNodeCall::UnstageVolume))?;
        if let Err(error) = self.inner.recorded.remove(volume_id).await {
            tracing::warn!(%error, "the volume's contexts could not be forgotten");
        }
        Ok(Response::new(NodeUnstageVolumeResponse {}))
    }
}

/// The SMB credentials of the node-stage secrets `username` and
/// `password`.
fn credentials(secrets: &HashMap<String, String>) -> Result<SmbCredentials, Status> {
    let get = |key: &str| {
        secrets
            .get(key)
            .filter(|value| !value.is_empty())
            .ok_or_else(|| {
                Status::invalid_argument(format!(
                    "the node-stage secret {key} is missing: a share is mapped with \
                     the secrets username and password"
                ))
            })
    };
    Ok(SmbCredentials::new(
        get("username")?.clone(),
        Secret::new(get("password")?.clone()),
    ))
}
