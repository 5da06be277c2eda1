//! The volume group of the fake host.

use async_trait::async_trait;

use super::state::{
    key, parent, HostState, PathEntry, NTFS_OVERHEAD, PARTITION_OFFSET, SYSTEM_DRIVE,
};
use super::{host_error, FakeHost};
use crate::api::{VolumeApi, VolumeId, VolumeStats, WindowsPath};
use crate::capability::Operation as Op;
use crate::error::Result;

/// Growth below this is skipped (and shrinking too), as the proxy does since
/// v1.2.
const MIN_GROWTH: u64 = 100 << 20;

impl HostState {
    fn volume_mut(&mut self, op: Op, id: &VolumeId) -> Result<&mut super::FakeVolume> {
        self.volumes
            .get_mut(id)
            .ok_or_else(|| host_error(op, format!("volume {id} not found")))
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
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl VolumeApi for FakeHost {
    async fn list_volumes_on_disk(
        &self,
        disk: u32,
        partition: Option<u32>,
    ) -> Result<Vec<VolumeId>> {
        // The proxy queries the partitions of the disk: a disk that is not
        // there has none, which is no error.
        let state = self.state();
        let wanted = partition.filter(|&p| p != 0);
        Ok(state
            .volumes
            .iter()
            .filter(|(_, v)| v.disk == disk && wanted.is_none_or(|p| v.partition == p))
            .map(|(id, _)| id.clone())
            .collect())
    }

    async fn mount_volume(&self, volume: &VolumeId, target: &WindowsPath) -> Result<()> {
        let op = Op::MountVolume;
        let mut state = self.state();
        state.volume_mut(op, volume)?;
        match state.tree.get(target.as_str()) {
            Some(PathEntry::MountPoint(mounted)) if &mounted == volume => return Ok(()),
            Some(PathEntry::MountPoint(other)) => {
                return Err(host_error(
                    op,
                    format!("{target} is already the mount point of {other}"),
                ))
            }
            Some(PathEntry::Directory) if state.tree.descendants(target.as_str()).is_empty() => {}
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
        }
        state
            .tree
            .insert(target.as_str(), PathEntry::MountPoint(volume.clone()));
        state
            .volume_mut(op, volume)?
            .mounts
            .insert(key(target.as_str()));
        Ok(())
    }

    async fn unmount_volume(&self, volume: &VolumeId, target: &WindowsPath) -> Result<()> {
        let op = Op::UnmountVolume;
        let mut state = self.state();
        // The proxy flushes `volume`'s cache, then removes the mount point
        // at `target`, whichever volume it belongs to.
        state.volume_mut(op, volume)?;
        let Some(PathEntry::MountPoint(mounted)) = state.tree.get(target.as_str()) else {
            return Err(host_error(
                op,
                format!("{target} is not a volume mount point"),
            ));
        };
        state.tree.insert(target.as_str(), PathEntry::Directory);
        state
            .volume_mut(op, &mounted)?
            .mounts
            .remove(&key(target.as_str()));
        Ok(())
    }

    async fn is_volume_formatted(&self, volume: &VolumeId) -> Result<bool> {
        Ok(self
            .state()
            .volume_mut(Op::IsVolumeFormatted, volume)?
            .formatted)
    }

    async fn format_volume(&self, volume: &VolumeId) -> Result<()> {
        let mut state = self.state();
        let found = state.volume_mut(Op::FormatVolume, volume)?;
        found.formatted = true;
        found.used_bytes = NTFS_OVERHEAD.min(found.size_bytes);
        Ok(())
    }

    async fn resize_volume(&self, volume: &VolumeId, size_bytes: u64) -> Result<()> {
        let op = Op::ResizeVolume;
        let mut state = self.state();
        let disk = state.volume_mut(op, volume)?.disk;
        let max = state
            .disks
            .get(&disk)
            .map_or(0, |d| d.size_bytes.saturating_sub(PARTITION_OFFSET));
        let found = state.volume_mut(op, volume)?;
        let wanted = if size_bytes == 0 { max } else { size_bytes };
        // Any target less than 100 MiB above the current size is skipped,
        // a smaller one included: the proxy never shrinks.
        if wanted < found.size_bytes.saturating_add(MIN_GROWTH) {
            return Ok(());
        }
        if wanted > max {
            return Err(host_error(
                op,
                format!("Size Not Supported: {wanted} bytes, at most {max}"),
            ));
        }
        found.size_bytes = wanted;
        Ok(())
    }

    async fn get_volume_stats(&self, volume: &VolumeId) -> Result<VolumeStats> {
        let mut state = self.state();
        let found = state.volume_mut(Op::GetVolumeStats, volume)?;
        Ok(VolumeStats {
            total_bytes: found.size_bytes,
            used_bytes: found.used_bytes,
        })
    }

    async fn get_disk_number_from_volume_id(&self, volume: &VolumeId) -> Result<u32> {
        Ok(self
            .state()
            .volume_mut(Op::GetDiskNumberFromVolumeId, volume)?
            .disk)
    }

    async fn get_volume_id_from_target_path(&self, target: &WindowsPath) -> Result<VolumeId> {
        self.state().mounted_at(target.as_str()).ok_or_else(|| {
            host_error(
                Op::GetVolumeIdFromTargetPath,
                format!("no volume is mounted at {target}"),
            )
        })
    }

    async fn write_volume_cache(&self, volume: &VolumeId) -> Result<()> {
        self.state()
            .volume_mut(Op::WriteVolumeCache, volume)
            .map(drop)
    }

    async fn get_closest_volume_id_from_target_path(&self, path: &WindowsPath) -> Result<VolumeId> {
        let op = Op::GetClosestVolumeIdFromTargetPath;
        let state = self.state();
        let mut current = state.tree.resolve(path.as_str()).ok_or_else(|| {
            host_error(
                op,
                format!("{path}: the system cannot find the path specified"),
            )
        })?;
        loop {
            if let Some(id) = state.mounted_at(&current) {
                return Ok(id);
            }
            match parent(&current) {
                Some(up) => current = up.to_owned(),
                None => return Err(host_error(op, format!("no volume holds {path}"))),
            }
        }
    }
}
