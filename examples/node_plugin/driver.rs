//! The example driver's own rules, all a driver writes for its node
//! plugin: its name, the kinds of volumes it serves, and what a volume ID
//! and its contexts name on the node. A disk is found by its page 0x83 ID
//! or its LUN, from the publish context (what the controller's attach
//! reported, as Azure drivers read a LUN), else the volume context, else
//! the ID itself: `disk:page83:<id>`, `disk:lun:<lun>`; a folder on a
//! share is `smb:<\\server\share\folder>`, mapped with the node-stage
//! secrets `username` and `password`. A real driver's IDs name its
//! cloud's disks; the rest (checks, codes, the mounter's calls, serving)
//! is the library's.

use csi_proxy_client::api::SmbRemotePath;
use csi_proxy_client::csi::{NodeDriver, Volume, VolumeKind, VolumeRequest};
use csi_proxy_client::mount::DiskSelector;
use csi_proxy_client::Status;

/// The name this plugin registers with kubelet.
pub const DRIVER_NAME: &str = "node-plugin.example.csi-proxy-client.rs";

/// A disk driver or a share driver, as azuredisk and csi-driver-smb are.
pub struct ExampleDriver {
    kinds: [VolumeKind; 1],
}

impl ExampleDriver {
    /// The driver of `kind`: `disk` or `smb`.
    pub fn of_kind(kind: &str) -> Result<Self, String> {
        let kind = match kind {
            "disk" => VolumeKind::Disk,
            "smb" => VolumeKind::Smb,
            other => return Err(format!("--kind {other}: disk or smb")),
        };
        Ok(Self { kinds: [kind] })
    }
}

impl NodeDriver for ExampleDriver {
    fn name(&self) -> &str {
        DRIVER_NAME
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn kinds(&self) -> &[VolumeKind] {
        &self.kinds
    }

    fn volume(&self, request: &VolumeRequest<'_>) -> Result<Volume, Status> {
        // A page 0x83 ID before a LUN, which may repeat across adapters.
        for context in [request.publish_context, request.volume_context] {
            if let Some(page83) = context.get("page83") {
                return Ok(Volume::Disk(DiskSelector::page83(page83)));
            }
            if let Some(lun) = context.get("lun") {
                return Ok(Volume::Disk(DiskSelector::lun(lun)));
            }
        }
        let id = request.volume_id;
        // An ID this driver never made: no such volume.
        let unknown = || Status::not_found(format!("no volume {id:?} on this driver"));
        if let Some(page83) = id.strip_prefix("disk:page83:") {
            Ok(Volume::Disk(DiskSelector::page83(page83)))
        } else if let Some(lun) = id.strip_prefix("disk:lun:") {
            Ok(Volume::Disk(DiskSelector::lun(lun)))
        } else if let Some(share) = id.strip_prefix("smb:") {
            let share = SmbRemotePath::new(share).map_err(|_| unknown())?;
            // `None`: the node-stage secrets `username` and `password`.
            Ok(Volume::Smb(share, None))
        } else {
            Err(unknown())
        }
    }
}
