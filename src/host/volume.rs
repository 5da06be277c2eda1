//! The volume group on the host: volumes and their partitions through
//! WMI's `MSFT_Volume` and `MSFT_Partition` (namespace
//! `Root\Microsoft\Windows\Storage`), and mount folders through the Win32
//! mount point APIs, as CSI Proxy's host layer does them.

mod link_paths;

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;

use self::link_paths::{link_target, parent_of, Followed};
use super::disk::{DISK, PARTITION};
use super::links::{Entry, Links};
use super::mounts::Mounts;
use super::on_host::io_error;
use super::wmi::{
    string, uint64, unsigned, wql_string, Requests, Wmi, WmiGroup, WmiObject, WmiValue, STORAGE,
};
use crate::api::{list_volumes_operation, VolumeApi, VolumeId, VolumeStats, WindowsPath};
use crate::capability::Operation as Op;
use crate::error::Result;
use crate::group::ApiGroup;

pub(super) const VOLUME: &str = "MSFT_Volume";
pub(super) const TO_VOLUME: &str = "MSFT_PartitionToVolume";
/// A resize that would grow the partition by less is skipped, a shrink
/// included: CSI Proxy never shrinks, and skips growth this small.
const MIN_GROWTH: u64 = 100 * 1024 * 1024;
/// How many links and parents the closest volume's search follows.
const MAX_STEPS: usize = 256;

/// The most links the volume of a target path is followed through:
/// Windows itself resolves at most 63 reparse points in one path.
const MAX_LINKS: usize = 63;

/// The volume group, served by the host.
pub(crate) struct HostVolume {
    wmi: WmiGroup,
    mounts: Arc<dyn Mounts>,
    links: Arc<dyn Links>,
}

impl HostVolume {
    /// The group over `wmi`, with mount folders through `mounts` and links
    /// (for the closest volume of a path) through `links`.
    pub fn new(wmi: Arc<dyn Wmi>, mounts: Arc<dyn Mounts>, links: Arc<dyn Links>) -> Self {
        Self {
            wmi: WmiGroup::new(wmi, ApiGroup::Volume, STORAGE),
            mounts,
            links,
        }
    }

    /// Runs `work` for `op` on `object` (a volume, a path, a disk) on a
    /// blocking thread.
    async fn run<T, F>(&self, op: Op, object: impl std::fmt::Display, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Volumes<'_>) -> Result<T> + Send + 'static,
    {
        let (mounts, links) = (self.mounts.clone(), self.links.clone());
        self.wmi
            .run(op, object, move |wmi| {
                work(&Volumes {
                    wmi,
                    mounts: &*mounts,
                    links: &*links,
                })
            })
            .await
    }
}

/// The host's volumes as one operation sees them.
struct Volumes<'a> {
    wmi: Requests<'a>,
    mounts: &'a dyn Mounts,
    links: &'a dyn Links,
}

impl Volumes<'_> {
    fn error(&self, message: impl Into<String>) -> crate::error::Error {
        self.wmi.error(message)
    }

    /// Volume `id`, with every property; not there is an error.
    fn volume(&self, id: &VolumeId) -> Result<WmiObject> {
        let query = format!(
            "SELECT * FROM {VOLUME} WHERE UniqueId = {}",
            wql_string(id.as_str())
        );
        self.wmi.one(&query, format_args!("volume {id}"))
    }

    /// The volumes of `partition`, by `UniqueId`.
    fn volumes_of(&self, partition: &WmiObject) -> Result<Vec<VolumeId>> {
        let volumes = self
            .wmi
            .associated(partition, TO_VOLUME, VOLUME, "Volume", "Partition")?;
        let ids = volumes.iter().map(|v| {
            let id = string(v, "UniqueId")
                .ok_or_else(|| self.error("WMI gave a volume without a UniqueId"))?;
            VolumeId::new(id)
        });
        ids.collect()
    }

    /// The (first) partition of volume `id`.
    fn partition_of(&self, id: &VolumeId) -> Result<WmiObject> {
        let volume = self.volume(id)?;
        let partitions =
            self.wmi
                .associated(&volume, TO_VOLUME, PARTITION, "Partition", "Volume")?;
        (partitions.into_iter().next())
            .ok_or_else(|| self.error(format!("volume {id}: no partition")))
    }

    /// A `uint64` property, which WMI may hand over as text.
    fn size(&self, object: &WmiObject, property: &str) -> Result<u64> {
        let size = object.get(property).and_then(uint64);
        size.ok_or_else(|| {
            self.error(format!(
                "{property} is not a size: {:?}",
                object.get(property)
            ))
        })
    }

    /// Flushes volume `id`'s cache to its disk.
    fn flush(&self, id: &VolumeId) -> Result<()> {
        let volume = self.volume(id)?;
        self.wmi
            .call(VOLUME, self.wmi.path_of(&volume)?, "Flush", Vec::new())
    }

    /// The volume mounted at `folder`, if any; a missing folder is an error.
    fn mounted_at(&self, folder: &str) -> Result<Option<VolumeId>> {
        let mounted = self.mounts.mounted_at(folder);
        match mounted.map_err(|e| io_error(self.wmi.op, folder, e))? {
            Some(id) => VolumeId::new(id).map(Some),
            None => Ok(None),
        }
    }

    /// The volume of drive `letter`'s partition.
    fn volume_of_drive(&self, letter: char) -> Result<VolumeId> {
        let query = format!(
            "SELECT * FROM {PARTITION} WHERE DriveLetter = {}",
            wql_string(&letter.to_string())
        );
        let partition = self.wmi.one(&query, format_args!("drive {letter}:"))?;
        let volumes = self.volumes_of(&partition)?;
        (volumes.into_iter().next())
            .ok_or_else(|| self.error(format!("drive {letter}: has no volume")))
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl VolumeApi for HostVolume {
    /// A disk the host does not have has no volumes.
    async fn list_volumes_on_disk(
        &self,
        disk: u32,
        partition: Option<u32>,
    ) -> Result<Vec<VolumeId>> {
        let op = list_volumes_operation(partition);
        self.run(op, format!("disk {disk}"), move |host| {
            let mut query = format!("SELECT * FROM {PARTITION} WHERE DiskNumber = {disk}");
            // 0 is every partition, as for the proxy.
            if let Some(partition) = partition.filter(|&p| p != 0) {
                query.push_str(&format!(" AND PartitionNumber = {partition}"));
            }
            let mut volumes = Vec::new();
            for partition in host.wmi.query(&query)? {
                volumes.extend(host.volumes_of(&partition)?);
            }
            Ok(volumes)
        })
        .await
    }

    /// The same volume mounted there already is no change; another one,
    /// or a folder that is not empty, is an error.
    async fn mount_volume(&self, volume: &VolumeId, target: &WindowsPath) -> Result<()> {
        let op = Op::MountVolume;
        let (volume, target) = (volume.clone(), target.clone());
        self.run(op, target.clone(), move |host| {
            // By the volume's unique name: it may be asked by another.
            let wanted =
                (host.mounts.unique_name(volume.as_str())).map_err(|e| io_error(op, &volume, e))?;
            match host.mounted_at(target.as_str())? {
                Some(mounted) if mounted.as_str().eq_ignore_ascii_case(&wanted) => Ok(()),
                Some(other) => {
                    Err(host.error(format!("{target} is already the mount point of {other}")))
                }
                None => (host.mounts.mount(target.as_str(), volume.as_str()))
                    .map_err(|e| io_error(op, format!("mounting {volume} at {target}"), e)),
            }
        })
        .await
    }

    /// Flushes `volume` first, then removes the mount point at `target`
    /// (whichever volume it leads to, as the proxy does).
    async fn unmount_volume(&self, volume: &VolumeId, target: &WindowsPath) -> Result<()> {
        let op = Op::UnmountVolume;
        let (volume, target) = (volume.clone(), target.clone());
        self.run(op, target.clone(), move |host| {
            host.flush(&volume)?;
            if host.mounted_at(target.as_str())?.is_none() {
                return Err(host.error(format!("{target} is not a volume mount point")));
            }
            (host.mounts.unmount(target.as_str()))
                .map_err(|e| io_error(op, format!("unmounting {target}"), e))
        })
        .await
    }

    /// Formatted: its `FileSystemType` is known (not 0), whatever it is.
    async fn is_volume_formatted(&self, volume: &VolumeId) -> Result<bool> {
        let volume = volume.clone();
        self.run(Op::IsVolumeFormatted, volume.clone(), move |host| {
            let found = host.volume(&volume)?;
            let kind = found.get("FileSystemType").and_then(unsigned);
            let kind = kind.ok_or_else(|| {
                host.error(format!("volume {volume}: FileSystemType is not a number"))
            })?;
            Ok(kind != 0)
        })
        .await
    }

    /// A quick NTFS format, forced.
    async fn format_volume(&self, volume: &VolumeId) -> Result<()> {
        let volume = volume.clone();
        self.run(Op::FormatVolume, volume.clone(), move |host| {
            let found = host.volume(&volume)?;
            let params = vec![
                ("FileSystem", WmiValue::String("NTFS".to_owned())),
                ("FileSystemLabel", WmiValue::String(String::new())),
                ("Full", WmiValue::Bool(false)),
                ("Force", WmiValue::Bool(true)),
            ];
            host.wmi
                .call(VOLUME, host.wmi.path_of(&found)?, "Format", params)
        })
        .await
    }

    /// `size_bytes` 0 grows the partition to the most it supports. Growth
    /// under 100 MiB, and any shrink, is skipped, as the proxy skips it.
    async fn resize_volume(&self, volume: &VolumeId, size_bytes: u64) -> Result<()> {
        let volume = volume.clone();
        self.run(Op::ResizeVolume, volume.clone(), move |host| {
            let partition = host.partition_of(&volume)?;
            let path = host.wmi.path_of(&partition)?;
            let wanted = match size_bytes {
                0 => {
                    let sizes =
                        host.wmi
                            .call_with(PARTITION, path, "GetSupportedSize", Vec::new(), &[])?;
                    host.size(&sizes, "SizeMax")?
                }
                wanted => wanted,
            };
            let current = host.size(&partition, "Size")?;
            if wanted < current.saturating_add(MIN_GROWTH) {
                return Ok(());
            }
            let size = vec![("Size", WmiValue::uint64(wanted))];
            host.wmi.call(PARTITION, path, "Resize", size)?;
            // The disk's own view of its partitions, fresh.
            let disk = partition.get("DiskNumber").and_then(unsigned);
            let disk = disk.ok_or_else(|| {
                host.error(format!("volume {volume}: its partition has no DiskNumber"))
            })?;
            let found = host.wmi.one(
                &format!("SELECT * FROM {DISK} WHERE Number = {disk}"),
                format_args!("disk {disk}"),
            )?;
            host.wmi
                .call(DISK, host.wmi.path_of(&found)?, "Refresh", Vec::new())
        })
        .await
    }

    /// Used: `Size` less `SizeRemaining`.
    async fn get_volume_stats(&self, volume: &VolumeId) -> Result<VolumeStats> {
        let volume = volume.clone();
        self.run(Op::GetVolumeStats, volume.clone(), move |host| {
            let found = host.volume(&volume)?;
            let (total, free) = (
                host.size(&found, "Size")?,
                host.size(&found, "SizeRemaining")?,
            );
            let used = total.checked_sub(free).ok_or_else(|| {
                host.error(format!("volume {volume}: {free} bytes free of {total}"))
            })?;
            Ok(VolumeStats {
                total_bytes: total,
                used_bytes: used,
            })
        })
        .await
    }

    async fn get_disk_number_from_volume_id(&self, volume: &VolumeId) -> Result<u32> {
        let volume = volume.clone();
        self.run(Op::GetDiskNumberFromVolumeId, volume.clone(), move |host| {
            let partition = host.partition_of(&volume)?;
            let disk = partition
                .get("DiskNumber")
                .and_then(unsigned)
                .and_then(|n| u32::try_from(n).ok());
            disk.ok_or_else(|| {
                host.error(format!("volume {volume}: its partition has no DiskNumber"))
            })
        })
        .await
    }

    /// The volume mounted at `target`, following links to it (a pod's
    /// published path is a link to the staging folder), as CSI Proxy
    /// does; a loop of links, or more than [`MAX_LINKS`] of them, is an
    /// error.
    async fn get_volume_id_from_target_path(&self, target: &WindowsPath) -> Result<VolumeId> {
        let op = Op::GetVolumeIdFromTargetPath;
        let target = target.clone();
        self.run(op, target.clone(), move |host| {
            let mut current = target.as_str().to_owned();
            let mut seen = std::collections::HashSet::new();
            while seen.insert(current.trim_end_matches('\\').to_lowercase()) {
                if seen.len() > MAX_LINKS + 1 {
                    let why = format!("{target}: more than {MAX_LINKS} links to follow");
                    return Err(host.error(why));
                }
                if let Some(id) = host.mounted_at(&current)? {
                    return Ok(id);
                }
                let entry = (host.links.entry(Path::new(&current)))
                    .map_err(|e| io_error(op, &current, e))?;
                let Entry::Link(to) = entry else {
                    return Err(host.error(format!("no volume is mounted at {target}")));
                };
                current = match link_target(&to.to_string_lossy(), parent_of(&current)) {
                    Followed::Volume(id) => return VolumeId::new(id),
                    Followed::Path(next) => next,
                };
            }
            Err(host.error(format!("{target}: its links make a loop at {current}")))
        })
        .await
    }

    async fn write_volume_cache(&self, volume: &VolumeId) -> Result<()> {
        let volume = volume.clone();
        self.run(Op::WriteVolumeCache, volume.clone(), move |host| {
            host.flush(&volume)
        })
        .await
    }

    /// From `path` up: the first mount folder's volume, following links;
    /// at the root, the volume of its drive letter.
    async fn get_closest_volume_id_from_target_path(&self, path: &WindowsPath) -> Result<VolumeId> {
        let op = Op::GetClosestVolumeIdFromTargetPath;
        let path = path.clone();
        self.run(op, path.clone(), move |host| {
            let mut current = path.as_str().to_owned();
            for _ in 0..MAX_STEPS {
                if let Some(id) = host.mounted_at(&current)? {
                    return Ok(id);
                }
                let entry = host
                    .links
                    .entry(Path::new(&current))
                    .map_err(|e| io_error(op, &current, e))?;
                current = match (entry, parent_of(&current)) {
                    (Entry::Link(target) | Entry::FileLink(target), parent) => {
                        match link_target(&target.to_string_lossy(), parent) {
                            Followed::Volume(id) => return VolumeId::new(id),
                            Followed::Path(next) => next,
                        }
                    }
                    (_, Some(parent)) => parent.to_owned(),
                    (_, None) => {
                        let letter = current.chars().next().filter(char::is_ascii_alphabetic);
                        let letter = letter.ok_or_else(|| {
                            host.error(format!("{path}: no drive letter at its root"))
                        })?;
                        return host.volume_of_drive(letter.to_ascii_uppercase());
                    }
                };
            }
            Err(host.error(format!("{path}: no volume found within {MAX_STEPS} steps")))
        })
        .await
    }
}
