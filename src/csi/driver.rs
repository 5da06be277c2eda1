//! The driver's part: [`NodeDriver`], and what it answers with.

use std::collections::HashMap;
use std::fmt;

use crate::api::{SmbRemotePath, WindowsPath};
use crate::mount::{DiskAfterUnstage, DiskSelector, Formatting, IscsiVolume, SmbCredentials};
use crate::{ApiGroup, CsiNodeCall, Status};

use super::v1::VolumeCapability;

/// What a driver decides; the [`NodeService`](super::NodeService) does the
/// rest.
///
/// Only three methods have no default: the driver's name and version
/// (`GetPluginInfo`), the kinds of volumes it serves, and
/// [`volume`](Self::volume), which says what a request's volume is on
/// the node. The rest are choices with the defaults most drivers want.
///
/// ```
/// use csi_proxy_client::csi::{NodeDriver, Volume, VolumeKind, VolumeRequest};
/// use csi_proxy_client::mount::DiskSelector;
/// use csi_proxy_client::Status;
///
/// /// A GCE-style driver: the disk's page 0x83 ID is "Google  " and the
/// /// volume ID's last part.
/// struct PdDriver;
///
/// impl NodeDriver for PdDriver {
///     fn name(&self) -> &str {
///         "pd.csi.example.com"
///     }
///     fn version(&self) -> &str {
///         "1.0.0"
///     }
///     fn kinds(&self) -> &[VolumeKind] {
///         &[VolumeKind::Disk]
///     }
///     fn volume(&self, request: &VolumeRequest<'_>) -> Result<Volume, Status> {
///         match request.volume_id.rsplit_once("/disks/") {
///             Some((_, name)) => Ok(Volume::Disk(DiskSelector::page83(format!("Google  {name}")))),
///             None => Err(Status::not_found(format!("no volume {}", request.volume_id))),
///         }
///     }
/// }
/// ```
#[crate::async_trait]
pub trait NodeDriver: Send + Sync + 'static {
    /// The name the plugin registers with kubelet (`GetPluginInfo`), such
    /// as `disk.csi.example.com`. It also names the default folder of the
    /// mounter's journal.
    fn name(&self) -> &str;

    /// The plugin's version (`GetPluginInfo`), such as
    /// `env!("CARGO_PKG_VERSION")`.
    fn version(&self) -> &str;

    /// The kinds of volumes the driver serves. They decide the
    /// capabilities answered (`GET_VOLUME_STATS` for every kind,
    /// `EXPAND_VOLUME` only with a kind that has a volume of its own:
    /// disks, iSCSI), the
    /// access modes accepted, and which CSI Proxy groups `Probe` waits
    /// for ([`VolumeKind::groups`]).
    fn kinds(&self) -> &[VolumeKind];

    /// What the request's volume is on the node: a disk, a share (with
    /// the credentials to map it, or `None` for the node-stage secrets
    /// `username` and `password`), or an iSCSI target.
    ///
    /// Asked for every `NodeStageVolume` and `NodePublishVolume`, with
    /// what the request carries; and for `NodeGetVolumeStats` and
    /// `NodeExpandVolume`, which carry neither context, with the contexts
    /// the volume was staged with (the service keeps them, beside the
    /// mounter's journal, until the volume is unstaged; empty for a
    /// volume staged before). Stats and expand answer only for the volume
    /// this returns: another volume at the path is `NOT_FOUND`.
    ///
    /// A volume ID the driver never made is `Status::not_found`; a
    /// context it needs and lacks, `Status::invalid_argument`. The
    /// answer must not depend on secrets for other calls than the stage:
    /// only it has them.
    fn volume(&self, request: &VolumeRequest<'_>) -> Result<Volume, Status>;

    /// `NodeGetInfo`: the node's ID, as the driver's controller knows the
    /// node, and its topology and volume limit. `node_id` is what the
    /// plugin was given ([`NodePlugin::node_id`](super::NodePlugin::node_id),
    /// else the `NODE_NAME` environment variable, else the host's name).
    fn node_info(&self, node_id: &str) -> NodeInfo {
        NodeInfo::new(node_id)
    }

    /// What becomes of a disk (or an iSCSI target's disk) once the volume
    /// `volume_id` is unstaged: by default it is taken offline, so that
    /// the controller's detach does not hang.
    fn disk_after_unstage(&self, volume_id: &str) -> DiskAfterUnstage {
        let _ = volume_id;
        DiskAfterUnstage::TakeOffline
    }

    /// Which disk volume without a file system the stage of `volume_id`
    /// may format: by default only one on a partition the mounter made
    /// ([`Formatting::PartitionedHere`]): the controller made the disk
    /// blank. A driver whose controller hands out disks partitioned and
    /// empty answers [`Formatting::AnyUnformatted`]; see
    /// [`Mounter::stage_disk`](crate::mount::Mounter::stage_disk).
    fn formatting(&self, volume_id: &str) -> Formatting {
        let _ = volume_id;
        Formatting::PartitionedHere
    }

    /// Whether the volume `volume_id`, which a crash or a reboot left
    /// staged (or leasing a share), is still in use; asked by
    /// [`Mounter::reconcile`](crate::mount::Mounter::reconcile) when the
    /// plugin starts. A volume that is not has its share lease dropped.
    /// By default every volume is.
    fn is_live(&self, volume_id: &str) -> bool {
        let _ = volume_id;
        true
    }

    /// Runs before the mounter stages `volume` (after the request was
    /// checked): an error is the stage's answer, and nothing is staged.
    async fn before_stage(
        &self,
        request: &VolumeRequest<'_>,
        volume: &Volume,
    ) -> Result<(), Status> {
        let _ = (request, volume);
        Ok(())
    }

    /// Runs after the mounter staged `volume` at `staging` (also when it
    /// was staged already: kubelet repeats calls): an error is the
    /// stage's answer, and the volume stays staged.
    async fn after_stage(
        &self,
        request: &VolumeRequest<'_>,
        volume: &Volume,
        staging: &WindowsPath,
    ) -> Result<(), Status> {
        let _ = (request, volume, staging);
        Ok(())
    }
}

/// A kind of volume a driver serves ([`NodeDriver::kinds`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum VolumeKind {
    /// Disks attached to the node (cloud disks, by LUN, page 0x83 ID or
    /// serial number).
    Disk,
    /// Folders on SMB shares.
    Smb,
    /// Disks of iSCSI targets, logged in to at the stage.
    Iscsi,
}

impl VolumeKind {
    /// The CSI Proxy groups a volume of this kind needs: what `Probe`
    /// waits for.
    pub fn groups(self) -> &'static [ApiGroup] {
        match self {
            VolumeKind::Disk => &[ApiGroup::Disk, ApiGroup::Volume, ApiGroup::Filesystem],
            VolumeKind::Smb => &[ApiGroup::Smb, ApiGroup::Filesystem],
            VolumeKind::Iscsi => &[
                ApiGroup::Iscsi,
                ApiGroup::Disk,
                ApiGroup::Volume,
                ApiGroup::Filesystem,
            ],
        }
    }

    /// Whether a volume of this kind is a volume of the node's own (with
    /// a file system the node can measure and grow): disks and iSCSI
    /// targets, not shares.
    pub fn has_volume(self) -> bool {
        matches!(self, VolumeKind::Disk | VolumeKind::Iscsi)
    }

    /// Whether one volume may be used from several nodes at once: shares
    /// only (a disk is attached to one node).
    pub fn multi_node(self) -> bool {
        self == VolumeKind::Smb
    }
}

/// What a request's volume is on the node ([`NodeDriver::volume`]).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Volume {
    /// A disk of the node, staged with
    /// [`Mounter::stage_disk`](crate::mount::Mounter::stage_disk).
    Disk(DiskSelector),
    /// A share, or a folder on it, staged with
    /// [`Mounter::stage_smb`](crate::mount::Mounter::stage_smb); with the
    /// credentials to map it, or `None` for the request's node-stage
    /// secrets `username` and `password`.
    Smb(SmbRemotePath, Option<SmbCredentials>),
    /// An iSCSI target's disk, staged with
    /// [`Mounter::stage_iscsi`](crate::mount::Mounter::stage_iscsi).
    Iscsi(IscsiVolume),
}

impl Volume {
    /// Its kind.
    pub fn kind(&self) -> VolumeKind {
        match self {
            Volume::Disk(_) => VolumeKind::Disk,
            Volume::Smb(..) => VolumeKind::Smb,
            Volume::Iscsi(_) => VolumeKind::Iscsi,
        }
    }
}

/// What a node call says of its volume, for [`NodeDriver::volume`] and the
/// hooks. Fields a call does not carry are empty (`None`).
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct VolumeRequest<'a> {
    /// The call.
    pub call: CsiNodeCall,
    /// The volume ID, never empty (the service answers
    /// `INVALID_ARGUMENT` first).
    pub volume_id: &'a str,
    /// The volume context (the controller's `CreateVolume` answer);
    /// for stats and expand, the stage's.
    pub volume_context: &'a HashMap<String, String>,
    /// The publish context (the controller's `ControllerPublishVolume`
    /// answer, such as a LUN); for stats and expand, the stage's.
    pub publish_context: &'a HashMap<String, String>,
    /// The call's secrets (node-stage secrets at the stage, node-publish
    /// secrets at the publish, node-expand secrets at the expand). Never
    /// logged or kept by the service.
    pub secrets: &'a HashMap<String, String>,
    /// The volume capability, when the call carries one.
    pub capability: Option<&'a VolumeCapability>,
    /// The staging path, when the call carries one.
    pub staging_target_path: Option<&'a WindowsPath>,
}

impl<'a> VolumeRequest<'a> {
    /// A request of `call` for `volume_id` with these contexts and
    /// secrets, carrying no capability or staging path: what a driver's
    /// unit test of [`NodeDriver::volume`] hands it (the service makes its
    /// own from each call).
    ///
    /// ```
    /// use std::collections::HashMap;
    /// use csi_proxy_client::csi::VolumeRequest;
    /// use csi_proxy_client::CsiNodeCall;
    ///
    /// let publish = HashMap::from([("lun".to_owned(), "3".to_owned())]);
    /// let none = HashMap::new();
    /// let request = VolumeRequest::new(CsiNodeCall::StageVolume, "pv-1", &none, &publish, &none);
    /// assert_eq!(request.publish_context["lun"], "3");
    /// ```
    pub fn new(
        call: CsiNodeCall,
        volume_id: &'a str,
        volume_context: &'a HashMap<String, String>,
        publish_context: &'a HashMap<String, String>,
        secrets: &'a HashMap<String, String>,
    ) -> Self {
        Self {
            call,
            volume_id,
            volume_context,
            publish_context,
            secrets,
            capability: None,
            staging_target_path: None,
        }
    }
}

impl fmt::Debug for VolumeRequest<'_> {
    /// The secrets' names only, never their values.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut secrets: Vec<&str> = self.secrets.keys().map(String::as_str).collect();
        secrets.sort_unstable();
        f.debug_struct("VolumeRequest")
            .field("call", &self.call)
            .field("volume_id", &self.volume_id)
            .field("volume_context", &self.volume_context)
            .field("publish_context", &self.publish_context)
            .field("secrets", &secrets)
            .field("capability", &self.capability)
            .field("staging_target_path", &self.staging_target_path)
            .finish()
    }
}

/// What `NodeGetInfo` answers ([`NodeDriver::node_info`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NodeInfo {
    /// The node's ID, as the driver's controller names it.
    pub node_id: String,
    /// How many volumes of the driver the node can hold; 0: no limit
    /// said (kubelet's default).
    pub max_volumes_per_node: i64,
    /// The node's topology segments (`topology.example.com/zone` =
    /// `zone-a`); empty: none.
    pub topology: HashMap<String, String>,
}

impl NodeInfo {
    /// `node_id`, with no limit and no topology.
    pub fn new(node_id: impl Into<String>) -> Self {
        Self {
            node_id: node_id.into(),
            max_volumes_per_node: 0,
            topology: HashMap::new(),
        }
    }

    /// With a limit of `max` volumes on the node.
    pub fn with_max_volumes(mut self, max: i64) -> Self {
        self.max_volumes_per_node = max;
        self
    }

    /// With the topology segment `key` = `value`.
    pub fn with_topology(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.topology.insert(key.into(), value.into());
        self
    }
}
