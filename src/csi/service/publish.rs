//! `NodePublishVolume` and `NodeUnpublishVolume`: the link from the pod's
//! target path to the staged volume. A read-only publish is refused:
//! CSI Proxy cannot make a link or a mount read-only.

use tonic::Response;

use crate::csi::checks;
use crate::csi::driver::{NodeDriver, VolumeRequest};
use crate::csi::v1::*;
use crate::csi::NodeService;
use crate::{CsiNodeCall, Status};

use super::answer;

impl<D: NodeDriver> NodeService<D> {
    /// Links the target path to the volume staged at the staging path.
    pub(super) async fn publish_volume(
        &self,
        r: &NodePublishVolumeRequest,
    ) -> Result<Response<NodePublishVolumeResponse>, Status> {
        let volume_id = checks::volume_id(&r.volume_id)?;
        let target = checks::path("target_path", &r.target_path)?;
        let mode = checks::capability(r.volume_capability.as_ref())?;
        let staging = checks::path("staging_target_path", &r.staging_target_path)?;
        checks::context("volume_context", &r.volume_context)?;
        checks::context("publish_context", &r.publish_context)?;
        if r.readonly {
            return Err(checks::read_only("readonly"));
        }
        let request = VolumeRequest {
            call: CsiNodeCall::PublishVolume,
            volume_id,
            volume_context: &r.volume_context,
            publish_context: &r.publish_context,
            secrets: &r.secrets,
            capability: r.volume_capability.as_ref(),
            staging_target_path: Some(&staging),
        };
        let volume = self.volume(&request)?;
        checks::usable(volume.kind(), mode, request.capability)?;
        // Nothing staged there is `FAILED_PRECONDITION`: stage first.
        self.inner
            .mounter
            .publish_volume(volume_id, &staging, &target)
            .await
            .map_err(answer(CsiNodeCall::PublishVolume))?;
        Ok(Response::new(NodePublishVolumeResponse {}))
    }

    /// Removes the link at the target path.
    pub(super) async fn unpublish_volume(
        &self,
        r: &NodeUnpublishVolumeRequest,
    ) -> Result<Response<NodeUnpublishVolumeResponse>, Status> {
        let volume_id = checks::volume_id(&r.volume_id)?;
        let target = checks::path("target_path", &r.target_path)?;
        self.inner
            .mounter
            .unpublish_volume(volume_id, &target)
            .await
            .map_err(answer(CsiNodeCall::UnpublishVolume))?;
        Ok(Response::new(NodeUnpublishVolumeResponse {}))
    }
}
