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
    /// The volume an ID names, as the publish context says (what the
    /// controller's attach reported, as Azure drivers read a LUN), else the
    /// volume context, else the ID itself; a page 0x83 ID before a LUN,
    /// which may repeat across adapters. An ID this driver never made is
    /// `NotFound`: no such volume.
    pub fn of(
        volume_id: &str,
        publish_context: &HashMap<String, String>,
        volume_context: &HashMap<String, String>,
    ) -> Result<Self, Status> {
        for context in [publish_context, volume_context] {
            if let Some(page83) = context.get("page83") {
                return Ok(VolumeRef::Disk(DiskSelector::page83(page83)));
            }
            if let Some(lun) = context.get("lun") {
                return Ok(VolumeRef::Disk(DiskSelector::lun(lun)));
            }
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

    /// The ID of a disk found by `key` (`page83` or `lun`) `value`.
    pub fn disk_id(key: &str, value: &str) -> String {
        format!("disk:{key}:{value}")
    }

    /// The ID of a folder on a share.
    pub fn smb_id(share: &SmbRemotePath) -> String {
        format!("smb:{share}")
    }
}
