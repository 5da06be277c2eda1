//! What a volume ID names on the node: a disk, found by its LUN or its
//! page 0x83 ID, or a folder on an SMB share. The IDs are this driver's
//! own (its controller makes them): `disk:lun:<lun>`,
//! `disk:page83:<id>`, `smb:<\\server\share\folder>`. A real driver's IDs
//! name its cloud's disks; what the node does with them is the same.

use std::collections::HashMap;

use csi_proxy_client::api::SmbRemotePath;
use csi_proxy_client::mount::DiskSelector;
use tonic::Status;

/// A volume this driver knows how to find.
#[derive(Clone, Debug)]
pub enum VolumeRef {
    /// A disk of the node.
    Disk(DiskSelector),
    /// A folder on an SMB share.
    Smb(SmbRemotePath),
}

impl VolumeRef {
    /// The volume an ID names, the publish context's LUN first (what the
    /// controller's attach reported, as Azure drivers read it), then the
    /// volume context, then the ID itself. An ID this driver never made is
    /// `NotFound`: no such volume.
    pub fn of(
        volume_id: &str,
        publish_context: &HashMap<String, String>,
        volume_context: &HashMap<String, String>,
    ) -> Result<Self, Status> {
        let contexts = [publish_context, volume_context];
        if let Some(lun) = contexts.iter().find_map(|c| c.get("lun")) {
            return Ok(VolumeRef::Disk(DiskSelector::lun(lun)));
        }
        if let Some(page83) = contexts.iter().find_map(|c| c.get("page83")) {
            return Ok(VolumeRef::Disk(DiskSelector::page83(page83)));
        }
        Self::from_id(volume_id)
    }

    /// The volume the ID alone names.
    pub fn from_id(volume_id: &str) -> Result<Self, Status> {
        let unknown = || Status::not_found(format!("no volume {volume_id:?} on this driver"));
        if let Some(lun) = volume_id.strip_prefix("disk:lun:") {
            return Ok(VolumeRef::Disk(DiskSelector::lun(lun)));
        }
        if let Some(page83) = volume_id.strip_prefix("disk:page83:") {
            return Ok(VolumeRef::Disk(DiskSelector::page83(page83)));
        }
        if let Some(share) = volume_id.strip_prefix("smb:") {
            return SmbRemotePath::new(share)
                .map(VolumeRef::Smb)
                .map_err(|_| unknown());
        }
        Err(unknown())
    }

    /// The ID of a disk at `lun`.
    pub fn disk_id(lun: &str) -> String {
        format!("disk:lun:{lun}")
    }

    /// The ID of a folder on a share.
    pub fn smb_id(share: &SmbRemotePath) -> String {
        format!("smb:{share}")
    }
}
