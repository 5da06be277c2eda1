//! The volume group.

use super::define::group_trait;
use super::{VolumeId, WindowsPath};
use crate::capability::Operation;

/// Total and used bytes of a volume.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VolumeStats {
    /// The volume's size.
    pub total_bytes: u64,
    /// Bytes in use.
    pub used_bytes: u64,
}

// The group's trait, made of its RPC list (`src/rpcs/volume.rs`).
crate::rpcs::volume_rpcs!(group_trait);

/// What `list_volumes_on_disk` is: one partition's volumes for a partition
/// number other than 0 (which needs v1beta3), else the disk's, as on the
/// wire, where 0 means every partition.
pub(crate) fn list_volumes_operation(partition: Option<u32>) -> Operation {
    match partition {
        Some(p) if p != 0 => Operation::ListVolumesOnPartition,
        _ => Operation::ListVolumesOnDisk,
    }
}
