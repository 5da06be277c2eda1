//! The invariants: between two host calls, what the operation does not
//! change stays as kubelet left it and nothing is formatted or
//! partitioned twice; an answer is right; and once an operation
//! converged, the node is exactly what kubelet believes.

use std::collections::BTreeSet;

use csi_proxy_client::testing::{PathEntry, ProxyRelease};
use csi_proxy_client::Operation as HostOp;

use super::ops::{disk_number, smb_remote, smb_staging, staging, target, Op, Reply};
use super::walk::World;
use super::{DISKS, SHARE, SMB_VOLUMES, STAGING_DRIVERS};

impl World<'_> {
    /// The node between two host calls of `op` (before call `call`, a
    /// `host_op`, which goes to work when `works`): what `op` does not
    /// change stays as kubelet left it, and no volume is formatted or
    /// partitioned twice.
    pub(super) fn check_between(&mut self, op: &Op, call: usize, host_op: HostOp, works: bool) {
        if self.stopped {
            return;
        }
        // Through the reconcile of a driver killed under an operation,
        // that operation is the one under way.
        let changing = self.current.clone().unwrap_or_else(|| op.clone());
        let at = format!("before host call {call} ({})", host_op.name());
        let mut breaks = Vec::new();
        if works && matches!(host_op, HostOp::FormatVolume | HostOp::PartitionDisk) {
            breaks.extend(self.check_format_or_partition(&changing, host_op));
        }
        for disk in 0..DISKS {
            for &staged_at in &self.model.staged[disk] {
                if changing.staging_changed() == Some((disk, staged_at)) {
                    continue;
                }
                breaks.extend(self.check_staged_disk(disk, staged_at));
            }
        }
        let changed = changing.smb_changed();
        for &vol in self
            .model
            .smb_staged
            .iter()
            .filter(|&&v| Some(v) != changed)
        {
            let key = self.mapping_key(vol);
            if self.host.smb_mapping_status(&key).is_none() {
                breaks.push(format!("the mapping {key} is gone while pv-s{vol} uses it"));
            }
        }
        for what in breaks {
            self.invariant_break(format!("{at}: {what}"));
        }
    }

    fn check_format_or_partition(&mut self, changing: &Op, host_op: HostOp) -> Option<String> {
        let Some(disk) = changing
            .disk()
            .filter(|_| matches!(changing, Op::StageDisk { .. }))
        else {
            return Some(format!("{} sent by {changing}", host_op.name()));
        };
        let number = disk_number(disk);
        if host_op == HostOp::FormatVolume {
            self.model.formats[disk] += 1;
            let formatted = self.volume_of(disk).is_some_and(|(_, v)| v.formatted);
            return (formatted || self.model.formats[disk] > 1).then(|| {
                let formats = self.model.formats[disk];
                format!("disk d{disk}'s volume formatted twice ({formats} formats sent)")
            });
        }
        if !self.host.disk(number).is_some_and(|d| d.partitioned) {
            return None;
        }
        if self.model.partition_resends[disk] > 0 {
            // The documented resend of a partition whose answer was lost.
            self.model.partition_resends[disk] -= 1;
            return None;
        }
        Some(format!("disk d{disk} partitioned twice"))
    }

    /// Disk `disk` staged at `at`: online, its volume mounted there.
    fn check_staged_disk(&self, disk: usize, at: usize) -> Vec<String> {
        let mut breaks = Vec::new();
        let number = disk_number(disk);
        if !self.host.disk(number).is_some_and(|d| d.online) {
            breaks.push(format!(
                "disk d{disk} is offline while staged at {}",
                STAGING_DRIVERS[at]
            ));
        }
        let volume = self.volume_of(disk).map(|(id, _)| id);
        let found = self.host.entry(&staging(disk, at));
        if !matches!((&found, &volume), (Some(PathEntry::MountPoint(there)), Some(v)) if there == v)
        {
            breaks.push(format!(
                "disk d{disk} staged at {} but {found:?} is there",
                STAGING_DRIVERS[at]
            ));
        }
        breaks
    }

    /// The key of SMB volume `vol`'s mapping, as the release keys it.
    fn mapping_key(&self, vol: usize) -> String {
        match self.release >= ProxyRelease::V1_1_2 {
            true => SHARE.to_lowercase(),
            false => smb_remote(vol).to_lowercase(),
        }
    }

    fn volume_of(
        &self,
        disk: usize,
    ) -> Option<(
        csi_proxy_client::api::VolumeId,
        csi_proxy_client::testing::FakeVolume,
    )> {
        (self.host.volumes().into_iter()).find(|(_, v)| v.disk == disk_number(disk))
    }

    /// What `op` answered is right.
    pub(super) fn check_reply(&mut self, op: &Op, reply: Reply) {
        let volume = op.disk().and_then(|disk| self.volume_of(disk));
        let wrong = match (op, reply) {
            (Op::Stats { .. }, Reply::Stats { total, used }) => {
                let (_, v) = volume.expect("a staged disk has a volume");
                (total != v.size_bytes || used != v.used_bytes).then(|| {
                    format!(
                        "stats answered {total} total, {used} used; the volume has {} and {}",
                        v.size_bytes, v.used_bytes
                    )
                })
            }
            (Op::Expand { disk, required, .. }, Reply::Expanded { total }) => {
                let (_, v) = volume.expect("a staged disk has a volume");
                let disk_size = self.host.disk(disk_number(*disk)).unwrap().size_bytes;
                let full = disk_size - (1 << 20);
                if total != v.size_bytes {
                    Some(format!(
                        "expand answered {total}; the volume has {}",
                        v.size_bytes
                    ))
                } else if required.is_some() && v.size_bytes != full {
                    Some(format!(
                        "expand left the volume at {total} on a disk of {disk_size}"
                    ))
                } else {
                    None
                }
            }
            (Op::Reconcile, Reply::Reconciled { failed }) => {
                (!failed.is_empty()).then(|| format!("reconcile failed items: {failed:?}"))
            }
            (_, Reply::Done) => None,
            (op, reply) => Some(format!("{op} answered {reply:?}")),
        };
        if let Some(wrong) = wrong {
            self.invariant_break(wrong);
        }
    }

    /// The node after an operation converged: exactly what kubelet
    /// believes is staged and published.
    pub(super) fn check_node(&mut self) {
        if self.stopped {
            return;
        }
        let mut breaks = Vec::new();
        // Mounts: exactly the staged disks' volumes at their staging paths.
        let mut expected = BTreeSet::new();
        for disk in 0..DISKS {
            for &at in &self.model.staged[disk] {
                expected.insert((disk_number(disk), staging(disk, at).to_lowercase()));
                breaks.extend(self.check_staged_disk(disk, at));
            }
        }
        let mounted: BTreeSet<(u32, String)> = (self.host.volumes().into_values())
            .flat_map(|v| {
                v.mounts
                    .into_iter()
                    .map(move |m| (v.disk, m.to_lowercase()))
            })
            .collect();
        if mounted != expected {
            breaks.push(format!("mounts {mounted:?}, staged {expected:?}"));
        }
        // SMB mappings: the shares of the staged volumes, keyed as the
        // release keys them. Before v1.1.2 each volume's path is mapped
        // and kept until the share is unused (docs/mounting.md).
        let mappings: BTreeSet<String> = self.host.smb_mappings().into_iter().collect();
        let needed: BTreeSet<String> = (self.model.smb_staged.iter())
            .map(|&v| self.mapping_key(v))
            .collect();
        let allowed: BTreeSet<String> = (self.model.smb_mapped_since.iter())
            .chain(&self.model.smb_unproven)
            .map(|&v| self.mapping_key(v))
            .collect();
        if !needed.is_subset(&mappings) || !mappings.is_subset(&allowed) {
            breaks.push(format!(
                "SMB mappings {mappings:?}, needed {needed:?}, allowed {allowed:?}"
            ));
        }
        for vol in 0..SMB_VOLUMES {
            let found = self.host.entry(&smb_staging(vol));
            let linked = matches!(&found, Some(PathEntry::Symlink(to)) if to.eq_ignore_ascii_case(&smb_remote(vol)));
            let staged = self.model.smb_staged.contains(&vol);
            if linked != staged {
                breaks.push(format!(
                    "pv-s{vol} staged: {staged}, its staging path: {found:?}"
                ));
            }
        }
        // Pods' links: to the staging path they were published from.
        for disk in 0..DISKS {
            let found = self.host.entry(&target(disk));
            let right = match self.model.published[disk] {
                Some(at) => {
                    matches!(&found, Some(PathEntry::Symlink(to)) if to.eq_ignore_ascii_case(&staging(disk, at)))
                }
                None => !matches!(found, Some(PathEntry::Symlink(_))),
            };
            if !right {
                let published = self.model.published[disk].map(|at| STAGING_DRIVERS[at]);
                breaks.push(format!(
                    "d{disk} published from {published:?}, its pod's target: {found:?}"
                ));
            }
        }
        for what in breaks {
            self.invariant_break(format!("after it converged: {what}"));
        }
    }
}
