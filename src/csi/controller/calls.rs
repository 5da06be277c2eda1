//! The Controller service's calls: each request checked, then answered
//! from the claims, the node's free disks or a share's folder.

use std::collections::HashMap;

use tonic::{Request, Response};

use crate::csi::checks::{capability as check_capability, required};
use crate::csi::driver::VolumeKind;
use crate::csi::v1::{
    controller_server::Controller, controller_service_capability, list_volumes_response,
    validate_volume_capabilities_response, volume_capability::access_mode::Mode,
    ControllerGetCapabilitiesRequest, ControllerGetCapabilitiesResponse,
    ControllerPublishVolumeRequest, ControllerPublishVolumeResponse, ControllerServiceCapability,
    ControllerUnpublishVolumeRequest, ControllerUnpublishVolumeResponse, CreateVolumeRequest,
    CreateVolumeResponse, DeleteVolumeRequest, DeleteVolumeResponse, GetCapacityRequest,
    GetCapacityResponse, ListVolumesRequest, ListVolumesResponse,
    ValidateVolumeCapabilitiesRequest, ValidateVolumeCapabilitiesResponse, Volume as CsiVolume,
    VolumeCapability,
};
use crate::Status;

use super::claims::Claim;
use super::naming::named_as;
use super::shares::{credentials, FolderWork};
use super::TestController;

impl TestController {
    /// The kind of volume a create makes: a folder on a share with a
    /// `share` parameter (or for a node of shares only), else a disk.
    fn kind_of(&self, parameters: &HashMap<String, String>) -> VolumeKind {
        let smb = self.kinds.contains(&VolumeKind::Smb);
        let disk = self.kinds.contains(&VolumeKind::Disk);
        match smb && (parameters.contains_key("share") || !disk) {
            true => VolumeKind::Smb,
            false => VolumeKind::Disk,
        }
    }

    /// Refuses access modes a disk of one node cannot give.
    fn check_modes(kind: VolumeKind, capabilities: &[VolumeCapability]) -> Result<(), Status> {
        let single_node = |c: &VolumeCapability| {
            c.access_mode.as_ref().is_some_and(|mode| {
                matches!(
                    Mode::try_from(mode.mode),
                    Ok(Mode::SingleNodeWriter
                        | Mode::SingleNodeReaderOnly
                        | Mode::SingleNodeSingleWriter
                        | Mode::SingleNodeMultiWriter)
                )
            })
        };
        match kind.multi_node() || capabilities.iter().all(single_node) {
            true => Ok(()),
            false => Err(Status::invalid_argument(
                "a disk is attached to one node: only single-node access modes",
            )),
        }
    }
}

#[crate::async_trait]
impl Controller for TestController {
    async fn create_volume(
        &self,
        request: Request<CreateVolumeRequest>,
    ) -> Result<Response<CreateVolumeResponse>, Status> {
        let r = request.into_inner();
        let name = required("name", &r.name)?;
        if r.volume_capabilities.is_empty() {
            return Err(Status::invalid_argument("volume_capabilities is missing"));
        }
        for capability in &r.volume_capabilities {
            // An unsupported capability is an invalid argument of a create.
            check_capability(Some(capability))
                .map_err(|status| Status::invalid_argument(status.message()))?;
        }
        let kind = self.kind_of(&r.parameters);
        Self::check_modes(kind, &r.volume_capabilities)?;
        let _one_at_a_time = self.creating.lock().await;
        let (required_bytes, limit) = r
            .capacity_range
            .map_or((0, 0), |range| (range.required_bytes, range.limit_bytes));
        let fits = |capacity: i64| capacity >= required_bytes && (limit == 0 || capacity <= limit);
        if let Some(claim) = self.claims().get(name).cloned() {
            // A share's size is unknown (0): any capacity is its own.
            return match claim.capacity == 0 || fits(claim.capacity) {
                true => Ok(Response::new(volume(&claim))),
                false => Err(Status::already_exists(format!(
                    "volume {name} exists with {} bytes",
                    claim.capacity
                ))),
            };
        }
        let claim = match kind {
            VolumeKind::Smb => self.make_folder(name, &r.parameters, &r.secrets).await?,
            _ => {
                let (identity, disk, size) = self.free_disk(fits).await?;
                let named = named_as(&disk, self.volume_ids.as_ref())?;
                self.check_unique(name, &named)?;
                self.mark_claimed(&identity);
                Claim::new(kind, size, named, None)
            }
        };
        // Two creates of one name at once: the first one's claim stands.
        let claim = self
            .claims()
            .entry(name.to_owned())
            .or_insert(claim)
            .clone();
        Ok(Response::new(volume(&claim)))
    }

    async fn delete_volume(
        &self,
        request: Request<DeleteVolumeRequest>,
    ) -> Result<Response<DeleteVolumeResponse>, Status> {
        let r = request.into_inner();
        let volume_id = required("volume_id", &r.volume_id)?;
        // A share volume's folder goes with it, when the deleter's secrets
        // say how to reach the share; the claim stays until it is gone, so
        // that a retry removes it.
        let folder = self.claim_of(volume_id).and_then(|claim| claim.folder);
        if let (Some((share, folder)), Some(credentials)) = (folder, credentials(&r.secrets)) {
            self.on_share(&share, &folder, &credentials, FolderWork::Remove)
                .await?;
        }
        // An unknown ID is deleted already.
        self.claims()
            .retain(|_, claim| claim.volume_id != volume_id);
        Ok(Response::new(DeleteVolumeResponse {}))
    }

    async fn controller_publish_volume(
        &self,
        request: Request<ControllerPublishVolumeRequest>,
    ) -> Result<Response<ControllerPublishVolumeResponse>, Status> {
        let r = request.into_inner();
        let volume_id = required("volume_id", &r.volume_id)?;
        let node_id = required("node_id", &r.node_id)?;
        check_capability(r.volume_capability.as_ref())?;
        let claim = self
            .claim_of(volume_id)
            .ok_or_else(|| Status::not_found(format!("no volume {volume_id}")))?;
        if node_id != self.node_id {
            return Err(Status::not_found(format!("no node {node_id}")));
        }
        Ok(Response::new(ControllerPublishVolumeResponse {
            publish_context: claim.publish_context,
        }))
    }

    async fn controller_unpublish_volume(
        &self,
        request: Request<ControllerUnpublishVolumeRequest>,
    ) -> Result<Response<ControllerUnpublishVolumeResponse>, Status> {
        required("volume_id", &request.get_ref().volume_id)?;
        Ok(Response::new(ControllerUnpublishVolumeResponse {}))
    }

    async fn validate_volume_capabilities(
        &self,
        request: Request<ValidateVolumeCapabilitiesRequest>,
    ) -> Result<Response<ValidateVolumeCapabilitiesResponse>, Status> {
        let r = request.into_inner();
        let volume_id = required("volume_id", &r.volume_id)?;
        if r.volume_capabilities.is_empty() {
            return Err(Status::invalid_argument("volume_capabilities is missing"));
        }
        let claim = self
            .claim_of(volume_id)
            .ok_or_else(|| Status::not_found(format!("no volume {volume_id}")))?;
        let all_mounts = r
            .volume_capabilities
            .iter()
            .all(|c| check_capability(Some(c)).is_ok())
            && Self::check_modes(claim.kind, &r.volume_capabilities).is_ok();
        let confirmed = all_mounts.then_some(validate_volume_capabilities_response::Confirmed {
            volume_context: r.volume_context,
            volume_capabilities: r.volume_capabilities,
            parameters: r.parameters,
            mutable_parameters: r.mutable_parameters,
        });
        Ok(Response::new(ValidateVolumeCapabilitiesResponse {
            confirmed,
            message: if all_mounts {
                String::new()
            } else {
                "only file system volumes, on one node, are served".to_owned()
            },
        }))
    }

    /// The volumes claimed, by volume ID, a page at a time; a page's token
    /// is the index of its first volume.
    async fn list_volumes(
        &self,
        request: Request<ListVolumesRequest>,
    ) -> Result<Response<ListVolumesResponse>, Status> {
        let r = request.into_inner();
        let max = match r.max_entries {
            0 => usize::MAX,
            n => usize::try_from(n)
                .map_err(|_| Status::invalid_argument("max_entries is negative"))?,
        };
        let mut claims: Vec<Claim> = self.claims().values().cloned().collect();
        claims.sort_by(|a, b| a.volume_id.cmp(&b.volume_id));
        let start = match r.starting_token.as_str() {
            "" => 0,
            token => token
                .parse::<usize>()
                .ok()
                .filter(|&start| start <= claims.len())
                .ok_or_else(|| Status::aborted(format!("{token:?} is not a token of this list")))?,
        };
        let page: Vec<Claim> = claims[start..].iter().take(max).cloned().collect();
        let next = start + page.len();
        Ok(Response::new(ListVolumesResponse {
            entries: page
                .iter()
                .map(|claim| list_volumes_response::Entry {
                    volume: volume(claim).volume,
                    status: None,
                })
                .collect(),
            next_token: if next < claims.len() {
                next.to_string()
            } else {
                String::new()
            },
        }))
    }

    /// The bytes of the disks a create could still claim (a share's size
    /// is unknown: 0).
    async fn get_capacity(
        &self,
        _: Request<GetCapacityRequest>,
    ) -> Result<Response<GetCapacityResponse>, Status> {
        let available = match self.kinds.contains(&VolumeKind::Disk) {
            true => self
                .free_disks()
                .await?
                .iter()
                .map(|(_, _, size)| size)
                .sum(),
            false => 0,
        };
        Ok(Response::new(GetCapacityResponse {
            available_capacity: available,
            maximum_volume_size: None,
            minimum_volume_size: None,
        }))
    }

    async fn controller_get_capabilities(
        &self,
        _: Request<ControllerGetCapabilitiesRequest>,
    ) -> Result<Response<ControllerGetCapabilitiesResponse>, Status> {
        use controller_service_capability::{rpc::Type, Rpc, Type as Kind_};
        let capabilities = [
            Type::CreateDeleteVolume,
            Type::PublishUnpublishVolume,
            Type::ListVolumes,
            Type::GetCapacity,
        ]
        .into_iter()
        .map(|rpc| ControllerServiceCapability {
            r#type: Some(Kind_::Rpc(Rpc { r#type: rpc as i32 })),
        })
        .collect();
        Ok(Response::new(ControllerGetCapabilitiesResponse {
            capabilities,
        }))
    }
}

/// The CSI volume of `claim`, as a create answers it.
fn volume(claim: &Claim) -> CreateVolumeResponse {
    CreateVolumeResponse {
        volume: Some(CsiVolume {
            capacity_bytes: claim.capacity,
            volume_id: claim.volume_id.clone(),
            volume_context: claim.volume_context.clone(),
            content_source: None,
            accessible_topology: Vec::new(),
        }),
    }
}
