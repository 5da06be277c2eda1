//! The volume group of the fake host.

use async_trait::async_trait;

use super::faults::{windows_error, WindowsError};
use super::state::{
    key, parent, HostState, PathEntry, NTFS_OVERHEAD, PARTITION_OFFSET, SYSTEM_DRIVE,
};
use super::{host_error, FakeHost, FakeVolume};
use crate::api::{list_volumes_operation, VolumeApi, VolumeId, VolumeStats, WindowsPath};
use crate::capability::Operation as Op;
use crate::error::Result;
use crate::testing::ProxyRelease;

/// Growth below this is skipped (and shrinking too), as the proxy does since
/// v1.2.
const MIN_GROWTH: u64 = 100 << 20;
/// Before v1.2, `Resize-Partition` refused growth below this.
const MIN_EXTENT: u64 = 1 << 20;
/// What `Add-PartitionAccessPath` (CSI Proxy before v1.3) says about a
/// folder that is already a mount point.
pub(super) const ACCESS_PATH_IN_USE: &str = "The requested access path is already in use.";

/// How [`FakeHost`] answers CSI Proxy v1.3's `GetVolumeIDFromTargetPath`
/// for a directory symlink. v1.3 asks Windows whether the path is a mount
/// point by testing its reparse tag against the mount point's bits, which a
/// symlink's tag passes too, and then asks for the volume that holds the
/// path: which volume Windows names for a link was never observed for this
/// crate, so tests run under each reading. Releases before v1.3 followed
/// links (PowerShell's `Target`) whatever this says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LinkReading {
    /// The volume that holds the link itself (`C:`'s for a kubelet path):
    /// the reading of v1.3's code, and the default.
    #[default]
    Holder,
    /// The volume mounted where the link leads, as before v1.3.
    Target,
}

/// The ID the host gives drive `C:`'s volume when it was given no system
/// disk: a volume no disk lists.
const UNLISTED_SYSTEM_VOLUME: &str = "\\\\?\\Volume{00000000-0000-4000-8000-0000000000c0}\\";

impl FakeHost {
    /// Makes the host answer v1.3's `GetVolumeIDFromTargetPath` for a link
    /// as `reading` says (default [`LinkReading::Holder`]).
    pub fn set_link_reading(&self, reading: LinkReading) {
        self.state().link_reading = reading;
    }
}

impl HostState {
    /// `GetVolumeIDFromTargetPath`: before v1.3, links followed to the
    /// volume mounted where they lead; from v1.3, a folder that is no
    /// reparse point is "not a mounted folder", and a link answers as
    /// [`LinkReading`] says.
    fn volume_id_at(&self, target: &WindowsPath) -> Result<VolumeId> {
        let op = Op::GetVolumeIdFromTargetPath;
        let none = || host_error(op, format!("no volume is mounted at {target}"));
        if self.release < ProxyRelease::V1_3_0 {
            return self.mounted_at(target.as_str()).ok_or_else(none);
        }
        match self.tree.get(target.as_str()) {
            None => Err(none()),
            Some(PathEntry::MountPoint(volume)) => Ok(volume),
            Some(PathEntry::Directory | PathEntry::File) => {
                Err(host_error(op, "not a mounted folder"))
            }
            Some(PathEntry::Symlink(_)) if self.link_reading == LinkReading::Target => self
                .mounted_at(target.as_str())
                .ok_or_else(|| host_error(op, "not a mounted folder")),
            Some(PathEntry::Symlink(_)) => Ok(self.holder_of(target.as_str())),
        }
    }

    /// The volume that holds `path` itself (not what it leads to): the
    /// nearest mount point above it, else its drive's volume.
    fn holder_of(&self, path: &str) -> VolumeId {
        let mut current = parent(&key(path)).and_then(|up| self.tree.resolve(up));
        while let Some(at) = current {
            if let Some(PathEntry::MountPoint(volume)) = self.tree.get(&at) {
                return volume;
            }
            current = parent(&at).map(str::to_owned);
        }
        self.system_volume.clone().unwrap_or_else(|| {
            VolumeId::new(UNLISTED_SYSTEM_VOLUME).expect("well-formed volume ID")
        })
    }

    /// Volume `id`, if it exists and its disk is online: the volumes of an
    /// offline disk are gone from Windows' view.
    fn volume_mut(&mut self, op: Op, id: &VolumeId) -> Result<&mut FakeVolume> {
        let disks = &self.disks;
        self.volumes
            .get_mut(id)
            .filter(|v| disks.get(&v.disk).is_none_or(|d| d.online))
            .ok_or_else(|| host_error(op, format!("volume {id} not found")))
    }

    /// Whether the disk that holds `id` is read-only.
    fn on_read_only_disk(&self, id: &VolumeId) -> bool {
        let disk = self.volumes.get(id).map(|v| v.disk);
        disk.and_then(|d| self.disks.get(&d))
            .is_some_and(|d| d.read_only)
    }

    /// The volume mounted at `path`, after following symlinks.
    fn mounted_at(&self, path: &str) -> Option<VolumeId> {
        let key = self.tree.resolve(path)?;
        match self.tree.get(&key) {
            Some(PathEntry::MountPoint(id)) => Some(id),
            _ if key == SYSTEM_DRIVE => self.system_volume.clone(),
            _ => None,
        }
    }

    fn list_volumes(&mut self, disk: u32, partition: Option<u32>) -> Vec<VolumeId> {
        // The proxy queries the partitions of the disk: a disk that is not
        // there (or offline) has none, which is no error.
        if self.disks.get(&disk).is_some_and(|d| !d.online) {
            return Vec::new();
        }
        let wanted = partition.filter(|&p| p != 0);
        let mut listed: Vec<VolumeId> = (self.volumes.iter())
            .filter(|(_, v)| v.disk == disk && wanted.is_none_or(|p| v.partition == p))
            .map(|(id, _)| id.clone())
            .collect();
        let hiding = self.hidden_listings.get(&disk).copied().unwrap_or(0);
        let made = &self.made_by_partition;
        if hiding > 0 && listed.iter().any(|id| made.contains(id)) {
            listed.retain(|id| !made.contains(id));
            self.hidden_listings.insert(disk, hiding - 1);
        }
        listed
    }

    fn mount_volume(&mut self, volume: &VolumeId, target: &WindowsPath) -> Result<()> {
        let op = Op::MountVolume;
        self.volume_mut(op, volume)?;
        match self.tree.get(target.as_str()) {
            // Before v1.3, `Add-PartitionAccessPath` refuses a path in use,
            // even by the same volume.
            Some(PathEntry::MountPoint(_)) if self.release < ProxyRelease::V1_3_0 => {
                return Err(host_error(op, ACCESS_PATH_IN_USE))
            }
            Some(PathEntry::MountPoint(mounted)) if &mounted == volume => return Ok(()),
            Some(PathEntry::MountPoint(other)) => {
                return Err(host_error(
                    op,
                    format!("{target} is already the mount point of {other}"),
                ))
            }
            Some(PathEntry::Directory) if self.tree.descendants(target.as_str()).is_empty() => {}
            Some(PathEntry::Directory) => {
                return Err(host_error(
                    op,
                    format!("{target}: the directory is not empty"),
                ))
            }
            Some(PathEntry::Symlink(_)) | None => {
                return Err(host_error(
                    op,
                    format!("{target}: the system cannot find the path specified"),
                ))
            }
            Some(PathEntry::File) => {
                return Err(host_error(
                    op,
                    format!("{target}: the directory name is invalid"),
                ))
            }
        }
        let at = key(target.as_str());
        self.tree.insert(&at, PathEntry::MountPoint(volume.clone()));
        for (below, entry) in self.detached.remove(volume).unwrap_or_default() {
            self.tree.insert(&format!("{at}\\{below}"), entry);
        }
        self.volume_mut(op, volume)?.mounts.insert(at);
        Ok(())
    }

    fn unmount_volume(&mut self, volume: &VolumeId, target: &WindowsPath) -> Result<()> {
        let op = Op::UnmountVolume;
        // The proxy flushes `volume`'s cache, then removes the mount point
        // at `target`, whichever volume it belongs to.
        self.volume_mut(op, volume)?;
        let Some(PathEntry::MountPoint(mounted)) = self.tree.get(target.as_str()) else {
            return Err(host_error(
                op,
                format!("{target} is not a volume mount point"),
            ));
        };
        self.tree.insert(target.as_str(), PathEntry::Directory);
        if let Some(v) = self.volumes.get_mut(&mounted) {
            v.mounts.remove(&key(target.as_str()));
        }
        Ok(())
    }

    fn format_volume(&mut self, volume: &VolumeId) -> Result<()> {
        let op = Op::FormatVolume;
        self.volume_mut(op, volume)?;
        if self.on_read_only_disk(volume) {
            return Err(windows_error(op, WindowsError::WRITE_PROTECT));
        }
        let found = self.volume_mut(op, volume)?;
        found.formatted = true;
        found.used_bytes = NTFS_OVERHEAD.min(found.size_bytes);
        Ok(())
    }

    fn resize_volume(&mut self, volume: &VolumeId, size_bytes: u64) -> Result<()> {
        let op = Op::ResizeVolume;
        let (disk, current) = {
            let found = self.volume_mut(op, volume)?;
            (found.disk, found.size_bytes)
        };
        let max =
            (self.disks.get(&disk)).map_or(0, |d| d.size_bytes.saturating_sub(PARTITION_OFFSET));
        let wanted = if size_bytes == 0 { max } else { size_bytes };
        if self.release >= ProxyRelease::V1_2_0 {
            // Any target less than 100 MiB above the current size is
            // skipped, a smaller one included: the proxy never shrinks.
            if wanted < current.saturating_add(MIN_GROWTH) {
                return Ok(());
            }
        } else if wanted <= current {
            // Before v1.2: only a target not above the current size is
            // skipped.
            return Ok(());
        }
        if wanted > max {
            return Err(host_error(
                op,
                format!("Size Not Supported: {wanted} bytes, at most {max}"),
            ));
        }
        if wanted - current < MIN_EXTENT {
            return Err(host_error(
                op,
                "Size Not Supported: the extent is less than the minimum of 1MB",
            ));
        }
        if self.on_read_only_disk(volume) {
            return Err(windows_error(op, WindowsError::WRITE_PROTECT));
        }
        self.volume_mut(op, volume)?.size_bytes = wanted;
        Ok(())
    }

    fn closest_volume(&self, path: &WindowsPath) -> Result<VolumeId> {
        let op = Op::GetClosestVolumeIdFromTargetPath;
        let mut current = self.tree.resolve(path.as_str()).ok_or_else(|| {
            host_error(
                op,
                format!("{path}: the system cannot find the path specified"),
            )
        })?;
        loop {
            if let Some(id) = self.mounted_at(&current) {
                return Ok(id);
            }
            match parent(&current) {
                Some(up) => current = up.to_owned(),
                None => return Err(host_error(op, format!("no volume holds {path}"))),
            }
        }
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl VolumeApi for FakeHost {
    async fn list_volumes_on_disk(
        &self,
        disk: u32,
        partition: Option<u32>,
    ) -> Result<Vec<VolumeId>> {
        self.host_call(list_volumes_operation(partition), move |state| {
            Ok(state.list_volumes(disk, partition))
        })
        .await
    }

    async fn mount_volume(&self, volume: &VolumeId, target: &WindowsPath) -> Result<()> {
        let (volume, target) = (volume.clone(), target.clone());
        self.host_call(Op::MountVolume, move |state| {
            state.mount_volume(&volume, &target)
        })
        .await
    }

    async fn unmount_volume(&self, volume: &VolumeId, target: &WindowsPath) -> Result<()> {
        let (volume, target) = (volume.clone(), target.clone());
        self.host_call(Op::UnmountVolume, move |state| {
            state.unmount_volume(&volume, &target)
        })
        .await
    }

    async fn is_volume_formatted(&self, volume: &VolumeId) -> Result<bool> {
        let volume = volume.clone();
        self.host_call(Op::IsVolumeFormatted, move |state| {
            Ok(state.volume_mut(Op::IsVolumeFormatted, &volume)?.formatted)
        })
        .await
    }

    async fn format_volume(&self, volume: &VolumeId) -> Result<()> {
        let volume = volume.clone();
        self.host_call(Op::FormatVolume, move |state| state.format_volume(&volume))
            .await
    }

    async fn resize_volume(&self, volume: &VolumeId, size_bytes: u64) -> Result<()> {
        let volume = volume.clone();
        self.host_call(Op::ResizeVolume, move |state| {
            state.resize_volume(&volume, size_bytes)
        })
        .await
    }

    async fn get_volume_stats(&self, volume: &VolumeId) -> Result<VolumeStats> {
        let volume = volume.clone();
        self.host_call(Op::GetVolumeStats, move |state| {
            let found = state.volume_mut(Op::GetVolumeStats, &volume)?;
            Ok(VolumeStats {
                total_bytes: found.size_bytes,
                used_bytes: found.used_bytes,
            })
        })
        .await
    }

    async fn get_disk_number_from_volume_id(&self, volume: &VolumeId) -> Result<u32> {
        let (op, volume) = (Op::GetDiskNumberFromVolumeId, volume.clone());
        self.host_call(op, move |state| Ok(state.volume_mut(op, &volume)?.disk))
            .await
    }

    async fn get_volume_id_from_target_path(&self, target: &WindowsPath) -> Result<VolumeId> {
        let (op, target) = (Op::GetVolumeIdFromTargetPath, target.clone());
        self.host_call(op, move |state| state.volume_id_at(&target))
            .await
    }

    async fn write_volume_cache(&self, volume: &VolumeId) -> Result<()> {
        let (op, volume) = (Op::WriteVolumeCache, volume.clone());
        self.host_call(op, move |state| state.volume_mut(op, &volume).map(drop))
            .await
    }

    async fn get_closest_volume_id_from_target_path(&self, path: &WindowsPath) -> Result<VolumeId> {
        let path = path.clone();
        self.host_call(Op::GetClosestVolumeIdFromTargetPath, move |state| {
            state.closest_volume(&path)
        })
        .await
    }
}
