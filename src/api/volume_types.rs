//! The volume group's values (its trait is generated, in `volume.rs`).

use crate::capability::Operation;

/// Total and used bytes of a volume.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VolumeStats {
    /// The volume's size.
    pub total_bytes: u64,
    /// Bytes in use.
    pub used_bytes: u64,
}

/// What `list_volumes_on_disk` is: one partition's volumes for a partition
/// number other than 0 (which needs v1beta3), else the disk's, as on the
/// wire, where 0 means every partition.
pub(crate) fn list_volumes_operation(partition: Option<u32>) -> Operation {
    match partition {
        Some(p) if p != 0 => Operation::ListVolumesOnPartition,
        _ => Operation::ListVolumesOnDisk,
    }
}
