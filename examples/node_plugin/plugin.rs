//! The CSI Identity and Node services of the example plugin, on the SDK's
//! mounter: each handler checks its request, finds the volume, and makes
//! one mounter call. Every SDK error becomes the CSI status kubelet needs,
//! from the error's type, never from its text: with the code the CSI spec
//! gives it in that call (`answer(CsiNodeCall::...)`, which converts with
//! `Error::csi_status_for`), so that a conflict is `ALREADY_EXISTS` in a
//! publish but `FAILED_PRECONDITION` in an unpublish, and a publish before
//! the stage is `FAILED_PRECONDITION`.

use std::collections::HashMap;

use csi_proxy_client::api::WindowsPath;
use csi_proxy_client::mount::{DiskAfterUnstage, DiskSelector, Mounter, SmbCredentials};
use csi_proxy_client::{api::Secret, ApiGroup, CsiNodeCall, Error};
use tonic::{Request, Response, Status};

use crate::csi::{
    identity_server::Identity, node_server::Node, node_service_capability, plugin_capability,
    volume_capability::AccessType, volume_usage, GetPluginCapabilitiesRequest,
    GetPluginCapabilitiesResponse, GetPluginInfoRequest, GetPluginInfoResponse,
    NodeExpandVolumeRequest, NodeExpandVolumeResponse, NodeGetCapabilitiesRequest,
    NodeGetCapabilitiesResponse, NodeGetInfoRequest, NodeGetInfoResponse,
    NodeGetVolumeStatsRequest, NodeGetVolumeStatsResponse, NodePublishVolumeRequest,
    NodePublishVolumeResponse, NodeServiceCapability, NodeStageVolumeRequest,
    NodeStageVolumeResponse, NodeUnpublishVolumeRequest, NodeUnpublishVolumeResponse,
    NodeUnstageVolumeRequest, NodeUnstageVolumeResponse, PluginCapability, ProbeRequest,
    ProbeResponse, VolumeCapability, VolumeUsage,
};
use crate::volume_ref::VolumeRef;

/// The name this plugin registers with kubelet.
pub const DRIVER_NAME: &str = "node-plugin.example.csi-proxy-client.rs";

/// Which volumes the plugin serves: a driver is a disk driver or a share
/// driver, as azuredisk and csi-driver-smb are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Disks of the node, by LUN or page 0x83 ID.
    Disk,
    /// Folders on SMB shares.
    Smb,
}

/// The Identity and Node services.
pub struct Plugin {
    pub mounter: Mounter,
    pub node_id: String,
    pub kind: Kind,
    /// Whether the test controller is served too (it says so in
    /// `GetPluginCapabilities`).
    pub with_controller: bool,
}

/// The groups the plugin cannot work without: what `Probe` checks.
fn needed_groups(kind: Kind) -> &'static [ApiGroup] {
    match kind {
        Kind::Disk => &[ApiGroup::Disk, ApiGroup::Volume, ApiGroup::Filesystem],
        Kind::Smb => &[ApiGroup::Smb, ApiGroup::Filesystem],
    }
}

/// The status kubelet gets for an SDK error in `call`: the code the CSI
/// spec gives it there.
fn answer(call: CsiNodeCall) -> impl Fn(Error) -> Status {
    move |error| error.csi_status_for(call)
}

/// `value`, which the request must have.
pub fn required<'a>(what: &str, value: &'a str) -> Result<&'a str, Status> {
    match value {
        "" => Err(Status::invalid_argument(format!("{what} is missing"))),
        value => Ok(value),
    }
}

/// A path the request must have, as Windows writes it.
fn path(what: &str, value: &str) -> Result<WindowsPath, Status> {
    Ok(WindowsPath::new(required(what, value)?)?)
}

/// A path at which a volume is looked for: one that cannot be a Windows
/// path holds no volume.
fn volume_path(value: &str) -> Result<WindowsPath, Status> {
    let value = required("volume_path", value)?;
    WindowsPath::new(value).map_err(|_| Status::not_found(format!("no volume at {value:?}")))
}

/// The capability must be there, and be a file system (no raw block).
pub fn check_capability(capability: Option<&VolumeCapability>) -> Result<(), Status> {
    let capability =
        capability.ok_or_else(|| Status::invalid_argument("volume_capability is missing"))?;
    match capability.access_type {
        Some(AccessType::Mount(_)) => Ok(()),
        Some(AccessType::Block(_)) => Err(Status::invalid_argument(
            "raw block volumes are not served by this plugin",
        )),
        None => Err(Status::invalid_argument(
            "volume_capability has no access type",
        )),
    }
}

/// The SMB credentials of the node-stage secrets (`username`, `password`).
fn credentials(secrets: &HashMap<String, String>) -> Result<SmbCredentials, Status> {
    let get = |key: &str| {
        secrets.get(key).filter(|v| !v.is_empty()).ok_or_else(|| {
            Status::invalid_argument(format!("the node-stage secret {key} is missing"))
        })
    };
    Ok(SmbCredentials::new(
        get("username")?.clone(),
        Secret::new(get("password")?.clone()),
    ))
}

impl Plugin {
    /// The disk and path of a stats or expand request, checked: both
    /// fields there (`InvalidArgument`), the volume one of this driver's
    /// disks. The mounter answers `NotFound` when another volume is there.
    fn volume_located(
        &self,
        volume_id: &str,
        path: &str,
    ) -> Result<(DiskSelector, WindowsPath), Status> {
        let volume_id = required("volume_id", volume_id)?;
        required("volume_path", path)?;
        match VolumeRef::from_id(volume_id)? {
            VolumeRef::Disk(selector) => Ok((selector, volume_path(path)?)),
            VolumeRef::Smb(_) => Err(Status::invalid_argument(format!(
                "{volume_id} is a share, which has no disk"
            ))),
        }
    }
}

#[tonic::async_trait]
impl Identity for Plugin {
    async fn get_plugin_info(
        &self,
        _: Request<GetPluginInfoRequest>,
    ) -> Result<Response<GetPluginInfoResponse>, Status> {
        Ok(Response::new(GetPluginInfoResponse {
            name: DRIVER_NAME.to_owned(),
            vendor_version: env!("CARGO_PKG_VERSION").to_owned(),
            manifest: HashMap::new(),
        }))
    }

    async fn get_plugin_capabilities(
        &self,
        _: Request<GetPluginCapabilitiesRequest>,
    ) -> Result<Response<GetPluginCapabilitiesResponse>, Status> {
        use plugin_capability::{service, volume_expansion, Service, Type, VolumeExpansion};
        let mut capabilities = Vec::new();
        if self.with_controller {
            capabilities.push(PluginCapability {
                r#type: Some(Type::Service(Service {
                    r#type: service::Type::ControllerService as i32,
                })),
            });
        }
        if self.kind == Kind::Disk {
            capabilities.push(PluginCapability {
                r#type: Some(Type::VolumeExpansion(VolumeExpansion {
                    r#type: volume_expansion::Type::Online as i32,
                })),
            });
        }
        Ok(Response::new(GetPluginCapabilitiesResponse {
            capabilities,
        }))
    }

    /// Ready while CSI Proxy serves every group the plugin needs.
    async fn probe(&self, _: Request<ProbeRequest>) -> Result<Response<ProbeResponse>, Status> {
        let ready = self
            .mounter
            .proxy()
            .health()
            .is_ready(needed_groups(self.kind));
        Ok(Response::new(ProbeResponse { ready: Some(ready) }))
    }
}

#[tonic::async_trait]
impl Node for Plugin {
    async fn node_stage_volume(
        &self,
        request: Request<NodeStageVolumeRequest>,
    ) -> Result<Response<NodeStageVolumeResponse>, Status> {
        let r = request.into_inner();
        let volume_id = required("volume_id", &r.volume_id)?;
        let staging = path("staging_target_path", &r.staging_target_path)?;
        check_capability(r.volume_capability.as_ref())?;
        let staged = answer(CsiNodeCall::StageVolume);
        match VolumeRef::of(volume_id, &r.publish_context, &r.volume_context)? {
            VolumeRef::Disk(disk) => {
                self.mounter
                    .stage_disk(&disk, &staging)
                    .await
                    .map_err(&staged)?;
            }
            VolumeRef::Smb(share) => {
                let credentials = credentials(&r.secrets)?;
                self.mounter
                    .stage_smb(volume_id, &share, &credentials, &staging)
                    .await
                    .map_err(&staged)?;
            }
        }
        Ok(Response::new(NodeStageVolumeResponse {}))
    }

    async fn node_unstage_volume(
        &self,
        request: Request<NodeUnstageVolumeRequest>,
    ) -> Result<Response<NodeUnstageVolumeResponse>, Status> {
        let r = request.into_inner();
        let volume_id = required("volume_id", &r.volume_id)?;
        let staging = path("staging_target_path", &r.staging_target_path)?;
        let unstaged = match VolumeRef::from_id(volume_id)? {
            // Offline, so that the controller's detach does not hang
            // (aws-ebs #1116).
            VolumeRef::Disk(_) => {
                self.mounter
                    .unstage_disk(&staging, DiskAfterUnstage::TakeOffline)
                    .await
            }
            VolumeRef::Smb(_) => self.mounter.unstage_smb(volume_id, &staging).await,
        };
        unstaged.map_err(answer(CsiNodeCall::UnstageVolume))?;
        Ok(Response::new(NodeUnstageVolumeResponse {}))
    }

    async fn node_publish_volume(
        &self,
        request: Request<NodePublishVolumeRequest>,
    ) -> Result<Response<NodePublishVolumeResponse>, Status> {
        let r = request.into_inner();
        let volume_id = required("volume_id", &r.volume_id)?;
        let target = path("target_path", &r.target_path)?;
        check_capability(r.volume_capability.as_ref())?;
        let staging = path("staging_target_path", &r.staging_target_path)?;
        if r.readonly {
            // A link cannot make a volume read-only for one pod.
            return Err(Status::failed_precondition(
                "read-only publishing is not served by this plugin",
            ));
        }
        VolumeRef::of(volume_id, &r.publish_context, &r.volume_context)?;
        // Nothing staged there is `FAILED_PRECONDITION`: stage first.
        self.mounter
            .publish(&staging, &target)
            .await
            .map_err(answer(CsiNodeCall::PublishVolume))?;
        Ok(Response::new(NodePublishVolumeResponse {}))
    }

    async fn node_unpublish_volume(
        &self,
        request: Request<NodeUnpublishVolumeRequest>,
    ) -> Result<Response<NodeUnpublishVolumeResponse>, Status> {
        let r = request.into_inner();
        required("volume_id", &r.volume_id)?;
        let target = path("target_path", &r.target_path)?;
        self.mounter
            .unpublish(&target)
            .await
            .map_err(answer(CsiNodeCall::UnpublishVolume))?;
        Ok(Response::new(NodeUnpublishVolumeResponse {}))
    }

    async fn node_get_volume_stats(
        &self,
        request: Request<NodeGetVolumeStatsRequest>,
    ) -> Result<Response<NodeGetVolumeStatsResponse>, Status> {
        let r = request.into_inner();
        let (disk, at) = self.volume_located(&r.volume_id, &r.volume_path)?;
        let stats = self.mounter.stats(&disk, &at).await;
        let stats = stats.map_err(answer(CsiNodeCall::GetVolumeStats))?;
        let bytes = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        Ok(Response::new(NodeGetVolumeStatsResponse {
            usage: vec![VolumeUsage {
                available: bytes(stats.available_bytes),
                total: bytes(stats.total_bytes),
                used: bytes(stats.used_bytes),
                unit: volume_usage::Unit::Bytes as i32,
            }],
            volume_condition: None,
        }))
    }

    async fn node_expand_volume(
        &self,
        request: Request<NodeExpandVolumeRequest>,
    ) -> Result<Response<NodeExpandVolumeResponse>, Status> {
        let r = request.into_inner();
        let (disk, at) = self.volume_located(&r.volume_id, &r.volume_path)?;
        let required_bytes = r
            .capacity_range
            .map(|range| u64::try_from(range.required_bytes).unwrap_or(0))
            .filter(|&bytes| bytes > 0);
        let expanded = self.mounter.expand(&disk, &at, required_bytes).await;
        let expanded = expanded.map_err(answer(CsiNodeCall::ExpandVolume))?;
        Ok(Response::new(NodeExpandVolumeResponse {
            capacity_bytes: i64::try_from(expanded.total_bytes).unwrap_or(i64::MAX),
        }))
    }

    async fn node_get_capabilities(
        &self,
        _: Request<NodeGetCapabilitiesRequest>,
    ) -> Result<Response<NodeGetCapabilitiesResponse>, Status> {
        use node_service_capability::{rpc::Type, Rpc, Type as Kind_};
        let mut rpcs = vec![Type::StageUnstageVolume];
        if self.kind == Kind::Disk {
            rpcs.extend([Type::GetVolumeStats, Type::ExpandVolume]);
        }
        let capabilities = rpcs
            .into_iter()
            .map(|rpc| NodeServiceCapability {
                r#type: Some(Kind_::Rpc(Rpc { r#type: rpc as i32 })),
            })
            .collect();
        Ok(Response::new(NodeGetCapabilitiesResponse { capabilities }))
    }

    async fn node_get_info(
        &self,
        _: Request<NodeGetInfoRequest>,
    ) -> Result<Response<NodeGetInfoResponse>, Status> {
        Ok(Response::new(NodeGetInfoResponse {
            node_id: self.node_id.clone(),
            max_volumes_per_node: 0,
            accessible_topology: None,
        }))
    }
}
