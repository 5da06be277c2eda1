//! A CSI Controller for tests only (`--controller`), so that csi-sanity can
//! run a volume's whole life against a node: `CreateVolume` claims an
//! unused disk of the node through the SDK (online, with no volume on it,
//! never claimed before by this process: a disk a volume used keeps that
//! volume's data, and an offline one may be such a disk) or, for a share
//! driver, makes a folder named after the volume on the share of its
//! `share` parameter, as csi-driver-smb's controller does; `DeleteVolume`
//! releases the claim (and removes a share volume's folder);
//! `ListVolumes` and `GetCapacity` answer from the claims and the disks
//! left; `ControllerPublishVolume` returns how the node finds the disk (its
//! page 0x83 ID, or its LUN when it has none) as the publish context, as a
//! cloud's attach would. Claims live in this process only: a real
//! controller is the cloud's.
//!
//! A share's folder is made (and removed) on the node, through the SDK:
//! the node's mounter stages the share at a link of the controller's own
//! (`...\plugins\<driver>\controller\<hash of the folder's name>`), the
//! folder is made through that link with `Mkdir` (removed with `Rmdir`),
//! and the share is unstaged again. Staged by the mounter, the share's mapping is the one
//! the node's volumes of the share use: it is made if no volume has it, and
//! removed at the unstage only if no volume uses it, so that the
//! controller's work never takes a share away from a pod. The share's
//! credentials are the provisioner's and the deleter's secrets
//! (`CreateVolumeSecret`, `DeleteVolumeSecret`: `username`, `password`);
//! a delete without them keeps the folder, as csi-driver-smb does.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

use csi_proxy_client::api::{Secret, SmbRemotePath, WindowsPath};
use csi_proxy_client::mount::{Mounter, SmbCredentials};
use csi_proxy_client::{CsiProxy, Error};
use tonic::{Request, Response, Status};

use crate::csi::{
    controller_server::Controller, controller_service_capability, list_volumes_response,
    validate_volume_capabilities_response, volume_capability::access_mode::Mode,
    ControllerGetCapabilitiesRequest, ControllerGetCapabilitiesResponse,
    ControllerPublishVolumeRequest, ControllerPublishVolumeResponse, ControllerServiceCapability,
    ControllerUnpublishVolumeRequest, ControllerUnpublishVolumeResponse, CreateVolumeRequest,
    CreateVolumeResponse, DeleteVolumeRequest, DeleteVolumeResponse, GetCapacityRequest,
    GetCapacityResponse, ListVolumesRequest, ListVolumesResponse,
    ValidateVolumeCapabilitiesRequest, ValidateVolumeCapabilitiesResponse, Volume,
    VolumeCapability,
};
use crate::plugin::{check_capability, required, Kind, DRIVER_NAME};
use crate::volume_ref::VolumeRef;

/// A volume the controller made.
#[derive(Clone)]
struct Claim {
    volume_id: String,
    capacity: i64,
    context: HashMap<String, String>,
    /// A share volume's folder: the share and the folder's name on it.
    folder: Option<(SmbRemotePath, String)>,
}

/// How the mounter's volume IDs of the controller's work on a share begin:
/// never a CSI volume's ID (`smb:`, `disk:`).
const WORK_VOLUME: &str = "controller-work:";

/// Whether `volume` (a mounter's volume ID) is the controller's work on a
/// share, not a CSI volume: a stage of it that a crash left behind is not
/// live ([`Mounter::reconcile`]).
pub fn is_work_volume(volume: &str) -> bool {
    volume.starts_with(WORK_VOLUME)
}

/// What the controller does to a volume's folder on its share.
#[derive(Clone, Copy, Debug)]
enum FolderWork {
    Make,
    Remove,
}

/// The test controller.
pub struct TestController {
    pub proxy: CsiProxy,
    /// The node's mounter, through which the controller reaches shares.
    pub mounter: Mounter,
    pub node_id: String,
    pub kind: Kind,
    /// By volume name.
    claims: Mutex<HashMap<String, Claim>>,
    /// Every disk ever claimed, by identity: never claimed again.
    used: Mutex<HashSet<String>>,
    /// One create at a time, so that two never claim one disk.
    creating: tokio::sync::Mutex<()>,
}

impl TestController {
    pub fn new(proxy: CsiProxy, mounter: Mounter, node_id: String, kind: Kind) -> Self {
        Self {
            proxy,
            mounter,
            node_id,
            kind,
            claims: Mutex::default(),
            used: Mutex::default(),
            creating: tokio::sync::Mutex::default(),
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

    /// The lowest-numbered disk whose size `fits` that is online, has no
    /// volume and was never claimed: its identity (`page83` or `lun`, and
    /// the value) and size.
    async fn free_disk(
        &self,
        fits: impl Fn(i64) -> bool + Sync,
    ) -> Result<((String, String), i64), Status> {
        let found = self.free_disks_until(&fits).await?;
        found
            .into_iter()
            .find(|(_, size)| fits(*size))
            .ok_or_else(|| {
                Status::out_of_range("the node has no unused disk of the size asked for")
            })
    }

    /// Every disk a create could claim.
    async fn free_disks(&self) -> Result<Vec<((String, String), i64)>, Status> {
        self.free_disks_until(&|_| false).await
    }

    /// The disks a create could claim, lowest number first, up to the
    /// first whose size `enough` accepts (that one included).
    async fn free_disks_until(
        &self,
        enough: &(dyn Fn(i64) -> bool + Sync),
    ) -> Result<Vec<((String, String), i64)>, Status> {
        let (disk, volume) = (self.proxy.disk()?, self.proxy.volume()?);
        let locations = disk.list_disk_locations().await?;
        let ids = disk.list_disk_ids().await.unwrap_or_default();
        let mut free = Vec::new();
        for (number, location) in locations {
            // A LUN may repeat across adapters; a page 0x83 ID does not.
            let identity = match ids.get(&number).map(|ids| ids.page83.clone()) {
                Some(page83) if !page83.is_empty() => ("page83".to_owned(), page83),
                _ => ("lun".to_owned(), location.lun_id.clone()),
            };
            if self.was_claimed(&identity) {
                continue;
            }
            let online = !matches!(disk.get_disk_state(number).await, Ok(false));
            if !online || !volume.list_volumes_on_disk(number, None).await?.is_empty() {
                continue;
            }
            let size = i64::try_from(disk.get_disk_stats(number).await?).unwrap_or(i64::MAX);
            free.push((identity, size));
            if enough(size) {
                break;
            }
        }
        Ok(free)
    }

    /// Whether the disk of `identity` was claimed before.
    fn was_claimed(&self, (key, value): &(String, String)) -> bool {
        let used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        used.contains(&format!("{key}:{value}"))
    }

    /// Makes or removes `folder` on `share`, on the node: the share staged
    /// by the node's mounter at the controller's link for `folder` (a lease
    /// of the share's mapping, shared with the node's volumes), the folder
    /// made (`Mkdir`, with its parents) or removed (`Rmdir`, forced: with
    /// what it holds; a folder not there is removed already) through the
    /// link, and the share unstaged, whatever the work gave.
    ///
    /// A failure a retry may mend (a proxy restarting under a call) is
    /// retried a few times, as a CO would retry the create or delete:
    /// csi-sanity does not, and the whole work may be done again.
    async fn on_share(
        &self,
        share: &SmbRemotePath,
        folder: &str,
        credentials: &SmbCredentials,
        work: FolderWork,
    ) -> Result<(), Status> {
        let mut retries = 0;
        loop {
            match self.on_share_once(share, folder, credentials, work).await {
                Err(error) if error.is_retryable() && retries < 5 => {
                    retries += 1;
                    tokio::time::sleep(Duration::from_millis(200 * retries)).await;
                }
                done => return Ok(done?),
            }
        }
    }

    /// [`on_share`](Self::on_share), once.
    async fn on_share_once(
        &self,
        share: &SmbRemotePath,
        folder: &str,
        credentials: &SmbCredentials,
        work: FolderWork,
    ) -> Result<(), Error> {
        let filesystem = self.proxy.filesystem()?;
        let links = WindowsPath::new(format!(
            r"C:\var\lib\kubelet\plugins\{DRIVER_NAME}\controller"
        ))?;
        // A short name: the folder's own (up to 128 characters, as
        // csi-sanity's longest volume name) would take the path through the
        // link past Windows' 260.
        let link = links.join(format!("{:016x}", fnv1a(folder)))?;
        let volume = format!("{WORK_VOLUME}{folder}");
        filesystem.mkdir(&links).await?;
        self.mounter
            .stage_smb(&volume, share, credentials, &link)
            .await?;
        let on_share = link.join(folder)?;
        let done = match work {
            FolderWork::Make => filesystem.mkdir(&on_share).await,
            FolderWork::Remove => filesystem.rmdir(&on_share, true).await,
        };
        let unstaged = self.mounter.unstage_smb(&volume, &link).await;
        done?;
        unstaged?;
        Ok(())
    }

    /// Refuses access modes a disk of one node cannot give.
    fn check_modes(&self, capabilities: &[VolumeCapability]) -> Result<(), Status> {
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
        match self.kind == Kind::Smb || capabilities.iter().all(single_node) {
            true => Ok(()),
            false => Err(Status::invalid_argument(
                "a disk is attached to one node: only single-node access modes",
            )),
        }
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
            // An unsupported capability is an invalid argument of a create.
            check_capability(Some(capability))
                .map_err(|status| Status::invalid_argument(status.message()))?;
        }
        self.check_modes(&r.volume_capabilities)?;
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
        let claim = match self.kind {
            Kind::Disk => {
                let ((key, value), size) = self.free_disk(fits).await?;
                self.used
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(format!("{key}:{value}"));
                Claim {
                    volume_id: VolumeRef::disk_id(&key, &value),
                    capacity: size,
                    context: HashMap::from([(key, value)]),
                    folder: None,
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
                let share = SmbRemotePath::new(share)?;
                let remote = SmbRemotePath::new(format!(r"{share}\{folder}"))?;
                let credentials = credentials(&r.secrets).ok_or_else(|| {
                    Status::invalid_argument(
                        "the provisioner secrets username and password are missing: \
                         the volume's folder is made on the share with them",
                    )
                })?;
                self.on_share(&share, &folder, &credentials, FolderWork::Make)
                    .await?;
                Claim {
                    volume_id: VolumeRef::smb_id(&remote),
                    capacity: 0,
                    context: HashMap::new(),
                    folder: Some((share, folder)),
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
            .all(|c| check_capability(Some(c)).is_ok())
            && self.check_modes(&r.volume_capabilities).is_ok();
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
        let available = match self.kind {
            Kind::Disk => self.free_disks().await?.iter().map(|(_, size)| size).sum(),
            Kind::Smb => 0,
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

/// The 64-bit FNV-1a hash of `text`: a short name for a folder's link,
/// the same in every run.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The SMB credentials of a controller call's secrets (`username`,
/// `password`), if it has them.
fn credentials(secrets: &HashMap<String, String>) -> Option<SmbCredentials> {
    let get = |key: &str| secrets.get(key).filter(|value| !value.is_empty());
    Some(SmbCredentials::new(
        get("username")?.clone(),
        Secret::new(get("password")?.clone()),
    ))
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
