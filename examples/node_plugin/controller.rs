//! A CSI Controller for tests only (`--controller`), so that csi-sanity can
//! run a volume's whole life against a node: `CreateVolume` claims an
//! unused disk of the node through the SDK (never one with a volume on it,
//! never one already claimed) or, for a share driver, names a folder on the
//! share of its `share` parameter; `DeleteVolume` releases the claim;
//! `ControllerPublishVolume` returns the disk's LUN as the publish context,
//! as a cloud's attach would. Claims live in this process only: a real
//! controller is the cloud's.

use std::collections::HashMap;
use std::sync::Mutex;

use csi_proxy_client::api::SmbRemotePath;
use csi_proxy_client::CsiProxy;
use tonic::{Request, Response, Status};

use crate::csi::{
    controller_server::Controller, controller_service_capability,
    validate_volume_capabilities_response, ControllerGetCapabilitiesRequest,
    ControllerGetCapabilitiesResponse, ControllerPublishVolumeRequest,
    ControllerPublishVolumeResponse, ControllerServiceCapability, ControllerUnpublishVolumeRequest,
    ControllerUnpublishVolumeResponse, CreateVolumeRequest, CreateVolumeResponse,
    DeleteVolumeRequest, DeleteVolumeResponse, ValidateVolumeCapabilitiesRequest,
    ValidateVolumeCapabilitiesResponse, Volume,
};
use crate::plugin::{check_capability, required, Kind};
use crate::volume_ref::VolumeRef;

/// A volume the controller made.
#[derive(Clone)]
struct Claim {
    volume_id: String,
    capacity: i64,
    context: HashMap<String, String>,
    /// The disk's number (disk volumes).
    disk: Option<u32>,
}

/// The test controller.
pub struct TestController {
    pub proxy: CsiProxy,
    pub node_id: String,
    pub kind: Kind,
    /// By volume name.
    claims: Mutex<HashMap<String, Claim>>,
}

impl TestController {
    pub fn new(proxy: CsiProxy, node_id: String, kind: Kind) -> Self {
        Self {
            proxy,
            node_id,
            kind,
            claims: Mutex::default(),
        }
    }

    fn claims(&self) -> std::sync::MutexGuard<'_, HashMap<String, Claim>> {
        self.claims.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn claim_of(&self, volume_id: &str) -> Option<Claim> {
        self.claims()
            .values()
            .find(|c| c.volume_id == volume_id)
            .cloned()
    }

    /// The lowest-numbered disk whose size `fits` that has no volume and no
    /// claim: its number, LUN and size.
    async fn free_disk(&self, fits: impl Fn(i64) -> bool) -> Result<(u32, String, i64), Status> {
        let (disk, volume) = (self.proxy.disk()?, self.proxy.volume()?);
        let locations = disk.list_disk_locations().await?;
        for (number, location) in locations {
            let claimed = self.claims().values().any(|c| c.disk == Some(number));
            if claimed || !volume.list_volumes_on_disk(number, None).await?.is_empty() {
                continue;
            }
            let size = i64::try_from(disk.get_disk_stats(number).await?).unwrap_or(i64::MAX);
            if fits(size) {
                return Ok((number, location.lun_id, size));
            }
        }
        Err(Status::resource_exhausted(
            "the node has no unused disk of the size asked for",
        ))
    }
}

#[tonic::async_trait]
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
            check_capability(Some(capability))?;
        }
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
        let claim = match self.kind {
            Kind::Disk => {
                let (disk, lun, size) = self.free_disk(fits).await?;
                Claim {
                    volume_id: VolumeRef::disk_id(&lun),
                    capacity: size,
                    context: HashMap::from([("lun".to_owned(), lun)]),
                    disk: Some(disk),
                }
            }
            Kind::Smb => {
                let share = r
                    .parameters
                    .get("share")
                    .ok_or_else(|| Status::invalid_argument("the parameter share is missing"))?;
                // The folder is named after the volume, made safe for a path.
                let folder: String = name
                    .chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() || c == '-' {
                            c
                        } else {
                            '_'
                        }
                    })
                    .collect();
                let remote = SmbRemotePath::new(format!(r"{share}\{folder}"))?;
                Claim {
                    volume_id: VolumeRef::smb_id(&remote),
                    capacity: 0,
                    context: HashMap::new(),
                    disk: None,
                }
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
            publish_context: claim.context,
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
        self.claim_of(volume_id)
            .ok_or_else(|| Status::not_found(format!("no volume {volume_id}")))?;
        let all_mounts = r
            .volume_capabilities
            .iter()
            .all(|c| check_capability(Some(c)).is_ok());
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
                "only file system volumes are served".to_owned()
            },
        }))
    }

    async fn controller_get_capabilities(
        &self,
        _: Request<ControllerGetCapabilitiesRequest>,
    ) -> Result<Response<ControllerGetCapabilitiesResponse>, Status> {
        use controller_service_capability::{rpc::Type, Rpc, Type as Kind_};
        let capabilities = [Type::CreateDeleteVolume, Type::PublishUnpublishVolume]
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

fn volume(claim: &Claim) -> CreateVolumeResponse {
    CreateVolumeResponse {
        volume: Some(Volume {
            capacity_bytes: claim.capacity,
            volume_id: claim.volume_id.clone(),
            volume_context: claim.context.clone(),
            content_source: None,
            accessible_topology: Vec::new(),
        }),
    }
}
