//! What kubelet believes: the operations that converged, applied in
//! turn, which the checks hold the node to.

use std::collections::BTreeSet;

use super::ops::Op;
use super::DISKS;

#[derive(Default)]
pub(super) struct Model {
    /// Per disk: the staging paths it is staged at.
    pub(super) staged: [BTreeSet<usize>; DISKS],
    /// Per disk: the staging path its pod's link was published from.
    pub(super) published: [Option<usize>; DISKS],
    pub(super) smb_staged: BTreeSet<usize>,
    /// The SMB volumes staged since the share was last unused: before
    /// v1.1.2 each has its own mapping, kept until the share is unused.
    pub(super) smb_mapped_since: BTreeSet<usize>,
    /// Per disk: the `FormatVolume` calls that went to work.
    pub(super) formats: [usize; DISKS],
    /// Per disk: `PartitionDisk` answers lost, each of which allows one
    /// more `PartitionDisk` of a disk partitioned already (the mounter
    /// sends a lost partition once more: docs/mounting.md, rule 7).
    pub(super) partition_resends: [usize; DISKS],
    /// Per disk: a stage's `PartitionDisk` went to work and the driver was
    /// killed before the mounter could show the partition is its own (no
    /// answer came, or its volume may be listed only after the volume
    /// wait): a stage may refuse the volume (`NotOurs`) until an operator
    /// formats it by hand (docs/security.md, "What proves a partition
    /// ours").
    pub(super) unproven: [bool; DISKS],
    /// The SMB volumes a stage of which mapped the share, and lost the
    /// answer (or the driver was killed) before the mounter could show
    /// the mapping its own: that mapping may be left for good (a leaked
    /// mapping is allowed, a removed foreign one is not: docs/security.md).
    pub(super) smb_unproven: BTreeSet<usize>,
}

impl Model {
    pub(super) fn apply(&mut self, op: &Op) {
        match *op {
            Op::StageDisk { disk, at } => {
                self.staged[disk].insert(at);
                self.unproven[disk] = false;
            }
            Op::UnstageDisk { disk, at, .. } => {
                self.staged[disk].remove(&at);
            }
            Op::Publish { disk, at } => self.published[disk] = Some(at),
            Op::Unpublish { disk } => self.published[disk] = None,
            Op::StageSmb { vol } => {
                self.smb_staged.insert(vol);
                self.smb_mapped_since.insert(vol);
            }
            Op::UnstageSmb { vol } => {
                self.smb_staged.remove(&vol);
                if self.smb_staged.is_empty() {
                    self.smb_mapped_since.clear();
                }
            }
            Op::Stats { .. } | Op::Expand { .. } | Op::Reconcile => {}
        }
    }
}
