//! The Node service's calls: each one runs in its span
//! ([`observed`]) and goes to its handler (stage, publish, usage); the
//! capabilities and the node's info are answered here.

use tonic::{Request, Response};

use crate::csi::driver::NodeDriver;
use crate::csi::observe::observed;
use crate::csi::v1::node_server::Node;
use crate::csi::v1::*;
use crate::csi::NodeService;
use crate::Status;

#[crate::async_trait]
impl<D: NodeDriver> Node for NodeService<D> {
    async fn node_stage_volume(
        &self,
        request: Request<NodeStageVolumeRequest>,
    ) -> Result<Response<NodeStageVolumeResponse>, Status> {
        let r = request.into_inner();
        observed("NodeStageVolume", &r.volume_id, self.stage_volume(&r)).await
    }

    async fn node_unstage_volume(
        &self,
        request: Request<NodeUnstageVolumeRequest>,
    ) -> Result<Response<NodeUnstageVolumeResponse>, Status> {
        let r = request.into_inner();
        observed("NodeUnstageVolume", &r.volume_id, self.unstage_volume(&r)).await
    }

    async fn node_publish_volume(
        &self,
        request: Request<NodePublishVolumeRequest>,
    ) -> Result<Response<NodePublishVolumeResponse>, Status> {
        let r = request.into_inner();
        observed("NodePublishVolume", &r.volume_id, self.publish_volume(&r)).await
    }

    async fn node_unpublish_volume(
        &self,
        request: Request<NodeUnpublishVolumeRequest>,
    ) -> Result<Response<NodeUnpublishVolumeResponse>, Status> {
        let r = request.into_inner();
        observed(
            "NodeUnpublishVolume",
            &r.volume_id,
            self.unpublish_volume(&r),
        )
        .await
    }

    async fn node_get_volume_stats(
        &self,
        request: Request<NodeGetVolumeStatsRequest>,
    ) -> Result<Response<NodeGetVolumeStatsResponse>, Status> {
        let r = request.into_inner();
        observed("NodeGetVolumeStats", &r.volume_id, self.volume_stats(&r)).await
    }

    async fn node_expand_volume(
        &self,
        request: Request<NodeExpandVolumeRequest>,
    ) -> Result<Response<NodeExpandVolumeResponse>, Status> {
        let r = request.into_inner();
        observed("NodeExpandVolume", &r.volume_id, self.expand_volume(&r)).await
    }

    async fn node_get_capabilities(
        &self,
        _: Request<NodeGetCapabilitiesRequest>,
    ) -> Result<Response<NodeGetCapabilitiesResponse>, Status> {
        use node_service_capability::{rpc::Type, Rpc, Type as Kind};
        observed("NodeGetCapabilities", "", async {
            // Stats for every kind (a share as the node measures it);
            // expand where a kind has a volume of the node's to grow.
            let mut rpcs = vec![Type::StageUnstageVolume, Type::GetVolumeStats];
            if self.has_volumes() {
                rpcs.push(Type::ExpandVolume);
            }
            let capabilities = rpcs
                .into_iter()
                .map(|rpc| NodeServiceCapability {
                    r#type: Some(Kind::Rpc(Rpc { r#type: rpc as i32 })),
                })
                .collect();
            Ok(Response::new(NodeGetCapabilitiesResponse { capabilities }))
        })
        .await
    }

    async fn node_get_info(
        &self,
        _: Request<NodeGetInfoRequest>,
    ) -> Result<Response<NodeGetInfoResponse>, Status> {
        observed("NodeGetInfo", "", async {
            let info = self.inner.driver.node_info(&self.inner.node_id);
            let accessible_topology = (!info.topology.is_empty()).then_some(Topology {
                segments: info.topology,
            });
            Ok(Response::new(NodeGetInfoResponse {
                node_id: info.node_id,
                max_volumes_per_node: info.max_volumes_per_node,
                accessible_topology,
            }))
        })
        .await
    }
}
