//! The fake host's state and the rules shared by several groups.

use std::collections::{BTreeMap, BTreeSet};

use super::faults::Faults;
use crate::api::{DiskLocation, Secret, ServiceInfo, TargetPortal, VolumeId};
use crate::testing::ProxyRelease;
use crate::working_dirs::KUBELET_DIR;

/// Where a partition starts on a disk: the rest is usable.
pub(super) const PARTITION_OFFSET: u64 = 1 << 20;
/// The data partition `PartitionDisk` creates (after the GPT reserved one).
const DATA_PARTITION: u32 = 2;
/// The partition of the system disk that holds `C:` (after the EFI and
/// reserved partitions, as Windows lays it out).
const SYSTEM_PARTITION: u32 = 3;
/// The drive a system disk holds, as a path key.
pub(super) const SYSTEM_DRIVE: &str = "c:";

/// The page83 identifier and size of the OS disk every fake node has
/// (unless its test opts out with [`FakeHostBuilder::bare`]).
///
/// [`FakeHostBuilder::bare`]: super::FakeHostBuilder::bare
pub const NODE_OS_DISK: (&str, u64) = ("node-os-disk", 128 << 30);
/// The page83 identifier and size of the temporary disk every fake node
/// has (unless its test opts out with [`FakeHostBuilder::bare`]).
///
/// [`FakeHostBuilder::bare`]: super::FakeHostBuilder::bare
pub const NODE_TEMP_DISK: (&str, u64) = ("node-temp-disk", 16 << 30);

/// The name of the volume of the node's own disk `disk`: apart from the
/// volumes a test makes ([`HostState::new_volume_id`]).
fn node_volume_id(disk: u32) -> VolumeId {
    let id = format!("\\\\?\\Volume{{{disk:08x}-0000-4000-8000-00000000005e}}\\");
    VolumeId::new(id).expect("well-formed volume ID")
}

/// Bytes a fresh NTFS file system uses.
pub(super) const NTFS_OVERHEAD: u64 = 64 << 20;

/// A disk of a [`FakeHost`](super::FakeHost).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeDisk {
    /// The SCSI page 0x83 identifier.
    pub page83: String,
    /// The serial number (may be empty).
    pub serial_number: String,
    /// Where it sits on its adapter.
    pub location: DiskLocation,
    /// Its size.
    pub size_bytes: u64,
    /// Whether it is online. An offline disk lists no volumes, and its
    /// volumes cannot be used.
    pub online: bool,
    /// Its partition table: none on a raw disk.
    pub partition_style: PartitionStyle,
    /// Whether it holds a partition (in its partition table): what
    /// `PartitionDisk` leaves as it is.
    pub partitioned: bool,
    /// Whether it is read-only (`IsReadOnly`): what would write to it
    /// fails with Windows error 19, and `SetDiskState` does not clear it.
    pub read_only: bool,
}

impl FakeDisk {
    /// An online, writable, raw disk.
    pub fn new(page83: &str, size_bytes: u64, location: DiskLocation) -> Self {
        Self {
            page83: page83.to_owned(),
            serial_number: String::new(),
            location,
            size_bytes,
            online: true,
            partition_style: PartitionStyle::Raw,
            partitioned: false,
            read_only: false,
        }
    }
}

/// The partition table of a [`FakeDisk`], as `Get-Disk` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PartitionStyle {
    /// No partition table: a new data disk. `PartitionDisk` gives it a GPT.
    Raw,
    /// A GUID partition table: what `PartitionDisk` writes, and a node's
    /// OS disk.
    Gpt,
    /// A master boot record: an Azure node's temporary disk. `PartitionDisk`
    /// adds a partition to one that has none and keeps its style.
    Mbr,
}

/// A volume of a [`FakeHost`](super::FakeHost).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeVolume {
    /// The disk that holds it.
    pub disk: u32,
    /// Its partition on that disk.
    pub partition: u32,
    /// Its size.
    pub size_bytes: u64,
    /// Bytes in use.
    pub used_bytes: u64,
    /// Whether it has a file system (NTFS).
    pub formatted: bool,
    /// The folders it is mounted at.
    pub mounts: BTreeSet<String>,
}

/// What is at a path of a [`FakeHost`](super::FakeHost).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathEntry {
    /// A directory.
    Directory,
    /// A directory symlink to the given path.
    Symlink(String),
    /// A folder a volume is mounted at.
    MountPoint(VolumeId),
    /// A file (someone else's: the mounter makes none). The proxy's calls
    /// treat it as Go's do: `IsSymlink` is false, `Rmdir` removes it
    /// (`os.Remove` takes a file too), `Mkdir` of it or below it fails
    /// ("not a directory").
    File,
}

#[derive(Debug)]
pub(super) struct SmbShare {
    pub username: String,
    pub password: Secret,
    /// The folders on the share, as paths below its root (lower-cased, no
    /// leading or trailing backslash); the root always exists. A folder is
    /// there once seeded or made, as on a file server.
    pub folders: BTreeSet<String>,
    /// The share's size and the bytes in use on it, as its server reports
    /// them: [`FakeHostBuilder::share_size`](super::FakeHostBuilder::share_size).
    pub total_bytes: u64,
    pub used_bytes: u64,
}

/// The size of a share the test did not size: 1 TiB, none of it in use.
pub(super) const SHARE_SIZE: u64 = 1 << 40;

/// The status Windows reports for an SMB global mapping
/// (`Get-SmbGlobalMapping`'s `Status`), set with
/// [`FakeHost::set_smb_mapping_status`](super::FakeHost::set_smb_mapping_status).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SmbMappingStatus {
    /// Connected: CSI Proxy counts the share as mapped.
    #[default]
    Ok,
    /// The connection is lost (after a network failure, or on a node that
    /// came back with its mappings disconnected). CSI Proxy counts the share
    /// as not mapped and maps it again over the old mapping, which Windows
    /// refuses ("Generic failure"); `IsSymlink` through it fails (error
    /// 64).
    Disconnected,
}

#[derive(Debug)]
pub(super) struct SmbMappingState {
    /// Whether the share still answers through it (`Test-Path`): false
    /// after [`FakeHost::invalidate_smb_mapping`](super::FakeHost::invalidate_smb_mapping).
    pub valid: bool,
    pub status: SmbMappingStatus,
    pub username: String,
    /// What it was made with; kept as a real mapping keeps its credentials.
    #[allow(dead_code)]
    pub password: Secret,
}

impl SmbMappingState {
    /// A new, working mapping as `username`.
    pub fn new(username: &str, password: Secret) -> Self {
        Self {
            valid: true,
            status: SmbMappingStatus::Ok,
            username: username.to_owned(),
            password,
        }
    }

    /// Whether links through it lead somewhere.
    pub fn usable(&self) -> bool {
        self.valid && self.status == SmbMappingStatus::Ok
    }
}

#[derive(Debug)]
pub(super) struct IscsiTarget {
    pub iqn: String,
    pub disks: Vec<(String, u64)>,
    pub chap: Option<(String, Secret)>,
    pub mutual_secret: Option<Secret>,
}

#[derive(Debug)]
pub(super) struct HostState {
    pub disks: BTreeMap<u32, FakeDisk>,
    pub volumes: BTreeMap<VolumeId, FakeVolume>,
    pub volumes_made: u64,
    /// Lower-cased path without trailing backslash -> entry. Drive roots
    /// (`c:`) always exist and are not stored.
    pub tree: PathTree,
    pub working_dirs: Vec<String>,
    pub shares: BTreeMap<String, SmbShare>,
    pub smb_mappings: BTreeMap<String, SmbMappingState>,
    pub portals: BTreeMap<TargetPortal, Vec<IscsiTarget>>,
    pub registered_portals: BTreeSet<TargetPortal>,
    pub sessions: BTreeMap<(TargetPortal, String), Vec<u32>>,
    pub mutual_chap_secret: Option<Secret>,
    pub services: BTreeMap<String, ServiceInfo>,
    pub bios_serial: String,
    pub rescans: usize,
    /// The volume that holds drive `C:`, if the host was given a system disk.
    pub system_volume: Option<VolumeId>,
    /// The release whose rules the host follows.
    pub release: ProxyRelease,
    /// How v1.3's `GetVolumeIDFromTargetPath` reads a link.
    pub link_reading: super::LinkReading,
    /// Calls received, and the failures and delays planned.
    pub faults: Faults,
    /// Per disk: how many more listings hide the volumes `PartitionDisk`
    /// made on it.
    pub hidden_listings: BTreeMap<u32, usize>,
    /// The volumes `hidden_listings` hides: those `PartitionDisk` made, and
    /// those the builder made [listed late](super::FakeHostBuilder::listed_late).
    pub made_by_partition: BTreeSet<VolumeId>,
    /// Per volume: what was below its mount point when a reboot unmounted
    /// it (relative keys), shown again where it is mounted next.
    pub detached: BTreeMap<VolumeId, Vec<(String, PathEntry)>>,
}

impl HostState {
    pub fn new() -> Self {
        let mut state = Self {
            disks: BTreeMap::new(),
            volumes: BTreeMap::new(),
            volumes_made: 0,
            tree: PathTree::default(),
            working_dirs: Vec::new(),
            shares: BTreeMap::new(),
            smb_mappings: BTreeMap::new(),
            portals: BTreeMap::new(),
            registered_portals: BTreeSet::new(),
            sessions: BTreeMap::new(),
            mutual_chap_secret: None,
            services: BTreeMap::new(),
            bios_serial: "FAKE-BIOS-0001".to_owned(),
            rescans: 0,
            system_volume: None,
            release: ProxyRelease::LATEST,
            link_reading: super::LinkReading::default(),
            faults: Faults::default(),
            hidden_listings: BTreeMap::new(),
            made_by_partition: BTreeSet::new(),
            detached: BTreeMap::new(),
        };
        state.working_dirs.push(KUBELET_DIR.to_owned());
        state.mkdir_all(KUBELET_DIR);
        state
    }

    pub fn add_disk(&mut self, number: u32, disk: FakeDisk) {
        self.disks.insert(number, disk);
    }

    /// Adds disk `number`, partitioned, with one formatted volume that
    /// holds drive `C:`.
    pub fn add_system_disk(&mut self, number: u32, disk: FakeDisk) {
        let id = self.new_volume_id(number);
        self.add_system_disk_as(number, disk, id);
    }

    /// [`add_system_disk`](Self::add_system_disk), its volume named `id`.
    fn add_system_disk_as(&mut self, number: u32, mut disk: FakeDisk, id: VolumeId) {
        disk.partition_style = PartitionStyle::Gpt;
        disk.partitioned = true;
        let size_bytes = disk.size_bytes.saturating_sub(PARTITION_OFFSET);
        self.volumes.insert(
            id.clone(),
            FakeVolume {
                disk: number,
                partition: SYSTEM_PARTITION,
                size_bytes,
                used_bytes: NTFS_OVERHEAD.min(size_bytes),
                formatted: true,
                mounts: BTreeSet::new(),
            },
        );
        self.disks.insert(number, disk);
        self.system_volume = Some(id);
    }

    /// Gives disk `number` one data partition holding a new, unformatted
    /// volume, as `PartitionDisk` does (a raw disk gets a GPT first);
    /// returns the volume.
    pub fn add_data_partition(&mut self, number: u32) -> Option<VolumeId> {
        let id = self.new_volume_id(number);
        self.add_data_partition_as(number, id)
    }

    /// [`add_data_partition`](Self::add_data_partition), its volume named
    /// `id`.
    fn add_data_partition_as(&mut self, number: u32, id: VolumeId) -> Option<VolumeId> {
        let disk = self.disks.get_mut(&number)?;
        let partition = match disk.partition_style {
            PartitionStyle::Raw | PartitionStyle::Gpt => DATA_PARTITION,
            // No reserved partition before it.
            PartitionStyle::Mbr => 1,
        };
        if disk.partition_style == PartitionStyle::Raw {
            disk.partition_style = PartitionStyle::Gpt;
        }
        disk.partitioned = true;
        let size_bytes = disk.size_bytes.saturating_sub(PARTITION_OFFSET);
        self.volumes.insert(
            id.clone(),
            FakeVolume {
                disk: number,
                partition,
                size_bytes,
                used_bytes: 0,
                formatted: false,
                mounts: BTreeSet::new(),
            },
        );
        Some(id)
    }

    /// Gives raw disk `number` one partition holding a formatted volume,
    /// with some bytes in use; returns the volume.
    pub fn add_formatted_partition(&mut self, number: u32) -> Option<VolumeId> {
        let id = self.add_data_partition(number)?;
        self.format_new(&id);
        Some(id)
    }

    /// Formats new volume `id` with NTFS, some of it in use.
    fn format_new(&mut self, id: &VolumeId) {
        if let Some(volume) = self.volumes.get_mut(id) {
            volume.formatted = true;
            volume.used_bytes = NTFS_OVERHEAD.min(volume.size_bytes);
        }
    }

    /// Gives the host the disks every node has, where it lacks them: the
    /// OS disk ([`NODE_OS_DISK`]: adapter 0, LUN 0, a GPT, `C:`) and the
    /// temporary disk ([`NODE_TEMP_DISK`]: adapter 0, LUN 1, an MBR, one
    /// NTFS volume), each at the lowest disk number free. Their volumes
    /// are named apart from those a test makes, whose IDs stay as they
    /// were without them.
    pub fn add_node_disks(&mut self) {
        if self.system_volume.is_none() {
            let number = self.free_disk_number();
            let (page83, size_bytes) = NODE_OS_DISK;
            let disk = FakeDisk::new(page83, size_bytes, super::boot_location(0));
            self.add_system_disk_as(number, disk, node_volume_id(number));
        }
        let temp = super::boot_location(1);
        if !self.disks.values().any(|disk| disk.location == temp) {
            let number = self.free_disk_number();
            let (page83, size_bytes) = NODE_TEMP_DISK;
            let mut disk = FakeDisk::new(page83, size_bytes, temp);
            disk.partition_style = PartitionStyle::Mbr;
            self.disks.insert(number, disk);
            let id = self.add_data_partition_as(number, node_volume_id(number));
            if let Some(id) = id {
                self.format_new(&id);
            }
        }
    }

    fn free_disk_number(&self) -> u32 {
        (0..)
            .find(|n| !self.disks.contains_key(n))
            .unwrap_or(u32::MAX)
    }

    pub fn mkdir_all(&mut self, path: &str) {
        self.tree.mkdir_all(path);
    }

    /// A new volume ID, `\\?\Volume{GUID}\`.
    pub fn new_volume_id(&mut self, disk: u32) -> VolumeId {
        self.volumes_made += 1;
        let id = format!(
            "\\\\?\\Volume{{{disk:08x}-0000-4000-8000-{:012x}}}\\",
            self.volumes_made
        );
        VolumeId::new(id).expect("well-formed volume ID")
    }

    /// The first free disk number.
    pub fn next_disk_number(&self) -> u32 {
        (0..)
            .find(|n| !self.disks.contains_key(n))
            .unwrap_or(u32::MAX)
    }

    /// Removes a disk and everything on it.
    pub fn remove_disk(&mut self, number: u32) {
        self.disks.remove(&number);
        let gone: Vec<VolumeId> = self
            .volumes
            .iter()
            .filter(|(_, v)| v.disk == number)
            .map(|(id, _)| id.clone())
            .collect();
        for id in gone {
            if let Some(volume) = self.volumes.remove(&id) {
                for mount in volume.mounts {
                    self.tree.insert(&mount, PathEntry::Directory);
                }
            }
        }
    }
}

/// The directory tree, case-insensitive like NTFS.
#[derive(Debug, Default)]
pub(super) struct PathTree {
    entries: BTreeMap<String, PathEntry>,
}

/// The key of `path`: the folder Windows opens for it, whatever its case
/// and separators (as the mounter's records compare paths).
pub(super) fn key(path: &str) -> String {
    crate::api::same_object_key(path)
}

/// The parent of a key, `None` for a drive root.
pub(super) fn parent(key: &str) -> Option<&str> {
    key.rfind('\\').map(|i| &key[..i])
}

pub(super) fn is_drive_root(key: &str) -> bool {
    key.len() == 2 && key.ends_with(':')
}

impl PathTree {
    pub fn get(&self, path: &str) -> Option<PathEntry> {
        let key = key(path);
        if is_drive_root(&key) {
            return Some(PathEntry::Directory);
        }
        self.entries.get(&key).cloned()
    }

    pub fn exists(&self, path: &str) -> bool {
        self.get(path).is_some()
    }

    pub fn insert(&mut self, path: &str, entry: PathEntry) {
        self.entries.insert(key(path), entry);
    }

    pub fn mkdir_all(&mut self, path: &str) {
        let key = key(path);
        let mut at = 0;
        while let Some(i) = key[at..].find('\\').map(|i| i + at) {
            let prefix = &key[..i];
            if !is_drive_root(prefix) {
                self.entries
                    .entry(prefix.to_owned())
                    .or_insert(PathEntry::Directory);
            }
            at = i + 1;
        }
        if !is_drive_root(&key) {
            self.entries.entry(key).or_insert(PathEntry::Directory);
        }
    }

    /// Keys strictly below `path`.
    pub fn descendants(&self, path: &str) -> Vec<String> {
        let prefix = format!("{}\\", key(path));
        self.entries
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(k, _)| k.clone())
            .collect()
    }

    pub fn remove(&mut self, path: &str) {
        self.entries.remove(&key(path));
    }

    /// `path` with symlinks followed (bounded, so loops end).
    pub fn resolve(&self, path: &str) -> Option<String> {
        let mut current = key(path);
        for _ in 0..32 {
            match self.get(&current)? {
                PathEntry::Symlink(target) => current = key(&target),
                _ => return Some(current),
            }
        }
        None
    }
}
