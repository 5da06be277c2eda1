//! What a test does to the host behind the driver's back: the release it
//! follows, disks that go offline or read-only, SMB mappings that break or
//! were made by someone else, and reboots.

use super::smb::normalized;
use super::state::{key, PathEntry, SmbMappingState, SmbMappingStatus};
use super::{FakeDisk, FakeHost};
use crate::api::{Secret, VolumeId};
use crate::testing::ProxyRelease;

impl FakeHost {
    // ---- the release ------------------------------------------------------

    /// From now on, the host follows the rules of CSI Proxy `release` where
    /// they changed between releases (`docs/fake-host.md` lists them):
    ///
    /// - before v1.1.2, `NewSmbGlobalMapping` maps the remote path itself,
    ///   not its share's root, and `RemoveSmbGlobalMapping` removes the
    ///   mapping of exactly that path;
    /// - before v1.2.0, `ResizeVolume` skips only a target not above the
    ///   current size, and fails a growth of less than 1 MiB;
    /// - before v1.3.0, `MountVolume` at a folder that is already a mount
    ///   point fails, even for the same volume.
    ///
    /// Mappings already made keep their keys.
    /// [`FakeProxy::serve_release`](crate::testing::FakeProxy::serve_release)
    /// calls it for a proxy made with `for_host`.
    pub fn behave_as(&self, release: ProxyRelease) {
        self.state().release = release;
    }

    /// The release whose rules the host follows (default
    /// [`ProxyRelease::LATEST`]).
    pub fn release(&self) -> ProxyRelease {
        self.state().release
    }

    // ---- disks ------------------------------------------------------------

    /// Swaps the numbers of disks `a` and `b` (their volumes follow them),
    /// as Windows numbers disks anew after a reboot or an attach: a number
    /// kept from before names another disk now.
    ///
    /// # Panics
    ///
    /// When the host lacks either disk.
    pub fn swap_disk_numbers(&self, a: u32, b: u32) {
        let mut state = self.state();
        let (Some(disk_a), Some(disk_b)) = (state.disks.remove(&a), state.disks.remove(&b)) else {
            panic!("FakeHost::swap_disk_numbers: the host lacks disk {a} or {b}");
        };
        state.disks.insert(b, disk_a);
        state.disks.insert(a, disk_b);
        for volume in state.volumes.values_mut() {
            volume.disk = match volume.disk {
                n if n == a => b,
                n if n == b => a,
                n => n,
            };
        }
        for disks in state.sessions.values_mut() {
            for n in disks.iter_mut() {
                *n = if *n == a {
                    b
                } else if *n == b {
                    a
                } else {
                    *n
                };
            }
        }
    }

    /// Attaches a raw data disk `number` at adapter 1, target 0, LUN `lun`
    /// now, as a cloud provider's attach that reaches the node after the
    /// stage began does (the builder's [`disk`](super::FakeHostBuilder::disk)
    /// places one at LUN = number up front). An existing disk `number` is
    /// replaced.
    pub fn attach_disk(&self, number: u32, page83: &str, size_bytes: u64, lun: u32) {
        let disk = FakeDisk::new(page83, size_bytes, super::data_location(lun));
        self.state().add_disk(number, disk);
    }

    /// Adds a volume to disk `number` on a partition of its own, as
    /// another tool (an administrator's `New-Partition`) would: formatted
    /// or not. Returns the volume, or `None` when there is no such disk.
    pub fn add_volume(&self, number: u32, formatted: bool) -> Option<VolumeId> {
        let mut state = self.state();
        let last = (state.volumes.values())
            .filter(|volume| volume.disk == number)
            .map(|volume| volume.partition)
            .max();
        let id = state.add_data_partition(number)?;
        let volume = state.volumes.get_mut(&id)?;
        volume.partition = last.map_or(volume.partition, |last| last + 1);
        volume.formatted = formatted;
        Some(id)
    }

    /// Gives disk `number` a new size, as a cloud provider's resize of an
    /// attached disk (`ControllerExpandVolume`) does; its volume keeps its
    /// size until `resize_volume` grows it. Returns whether the disk exists.
    pub fn set_disk_size(&self, number: u32, size_bytes: u64) -> bool {
        let mut state = self.state();
        let Some(disk) = state.disks.get_mut(&number) else {
            return false;
        };
        disk.size_bytes = size_bytes;
        true
    }

    /// Takes disk `number` offline or brings it online, as an attach that
    /// left it offline (or an admin) does. Offline, it lists no volumes,
    /// `PartitionDisk` fails, and its volumes cannot be used (format,
    /// mount, stats: not found) until it is online again.
    ///
    /// # Panics
    ///
    /// When the host has no disk `number`.
    pub fn set_disk_online(&self, number: u32, online: bool) {
        self.with_disk("set_disk_online", number, |disk| disk.online = online);
    }

    /// Makes disk `number` read-only or writable (the `IsReadOnly`
    /// attribute, which CSI Proxy's API cannot change). Read-only,
    /// `PartitionDisk` of a raw disk, `FormatVolume`, and a `ResizeVolume`
    /// that would grow fail with Windows error 19; what writes nothing
    /// (listing, mounting, a resize with nothing to grow) works.
    ///
    /// # Panics
    ///
    /// When the host has no disk `number`.
    pub fn set_disk_read_only(&self, number: u32, read_only: bool) {
        self.with_disk("set_disk_read_only", number, |disk| {
            disk.read_only = read_only;
        });
    }

    /// The next `listings` listings of disk `number`'s volumes
    /// (`ListVolumesOnDisk`) do not show the volumes `PartitionDisk` made on
    /// it, as Windows may take a moment to show a new partition's volume:
    /// such a volume appears on the (`listings` + 1)-th listing. Only
    /// listings that would show such a volume count (a listing before the
    /// partition exists does not).
    ///
    /// # Panics
    ///
    /// When the host has no disk `number`.
    pub fn hide_new_volumes(&self, number: u32, listings: usize) {
        self.with_disk("hide_new_volumes", number, |_| ());
        self.state().hidden_listings.insert(number, listings);
    }

    fn with_disk(&self, caller: &str, number: u32, change: impl FnOnce(&mut FakeDisk)) {
        match self.state().disks.get_mut(&number) {
            Some(disk) => change(disk),
            None => panic!("FakeHost::{caller}: the host has no disk {number}"),
        }
    }

    // ---- SMB --------------------------------------------------------------

    /// The keys of the global SMB mappings, lower-cased: share roots
    /// (`\\server\share`) from CSI Proxy v1.1.2 on, the remote paths
    /// mapped before (see [`behave_as`](Self::behave_as)).
    pub fn smb_mappings(&self) -> Vec<String> {
        self.state().smb_mappings.keys().cloned().collect()
    }

    /// Breaks the global mapping `key` (any case) as a share that stopped
    /// answering does: its status stays OK, but links to it lead nowhere,
    /// and the next `NewSmbGlobalMapping` removes and makes it again.
    /// Nothing happens when there is no such mapping.
    pub fn invalidate_smb_mapping(&self, key: &str) {
        if let Some(mapping) = self.state().smb_mappings.get_mut(&normalized(key)) {
            mapping.valid = false;
        }
    }

    /// Sets the status of the global mapping `key` (any case). A
    /// [`Disconnected`](SmbMappingStatus::Disconnected) mapping leads
    /// nowhere; CSI Proxy counts it as not mapped and maps over it, which
    /// the SMB provider refuses ("Generic failure"); `IsSymlink` through it
    /// fails with error 64; `RemoveSmbGlobalMapping` removes it.
    ///
    /// # Panics
    ///
    /// When there is no such mapping.
    pub fn set_smb_mapping_status(&self, key: &str, status: SmbMappingStatus) {
        let mut state = self.state();
        let known: Vec<String> = state.smb_mappings.keys().cloned().collect();
        match state.smb_mappings.get_mut(&normalized(key)) {
            Some(mapping) => mapping.status = status,
            None => {
                panic!("FakeHost::set_smb_mapping_status: no mapping {key} (there are {known:?})")
            }
        }
    }

    /// The status of the global mapping `key` (any case), if it exists.
    pub fn smb_mapping_status(&self, key: &str) -> Option<SmbMappingStatus> {
        let state = self.state();
        state.smb_mappings.get(&normalized(key)).map(|m| m.status)
    }

    /// The user the global mapping `key` (any case) was made as, if it
    /// exists.
    pub fn smb_mapping_user(&self, key: &str) -> Option<String> {
        let state = self.state();
        (state.smb_mappings.get(&normalized(key))).map(|m| m.username.clone())
    }

    /// Maps `remote` as someone else (an admin, another driver) would,
    /// outside the proxy: keyed by the rule of the release the host
    /// follows, status OK, as `user`. Its credentials are not checked;
    /// an existing mapping of that key is replaced.
    ///
    /// # Panics
    ///
    /// When `remote` is not under a share of the host.
    pub fn map_smb_outside(&self, remote: &str, user: &str, password: &str) {
        let mut state = self.state();
        let root = crate::api::share_root(&normalized(remote));
        let (Some(root), Some(key)) = (root, state.mapping_key(&normalized(remote))) else {
            panic!("FakeHost::map_smb_outside: {remote} is not a share path");
        };
        if !state.shares.contains_key(&root) {
            panic!("FakeHost::map_smb_outside: the host has no share {root}");
        }
        let mapping = SmbMappingState::new(user, Secret::new(password));
        state.smb_mappings.insert(key, mapping);
    }

    /// Changes the password share `root` accepts, as a rotated storage key
    /// does. Existing mappings keep working (until
    /// [invalidated](Self::invalidate_smb_mapping)); new ones need it.
    ///
    /// # Panics
    ///
    /// When the host has no share `root`.
    pub fn set_smb_share_password(&self, root: &str, password: &str) {
        match self.state().shares.get_mut(&normalized(root)) {
            Some(share) => share.password = Secret::new(password),
            None => panic!("FakeHost::set_smb_share_password: the host has no share {root}"),
        }
    }

    /// Makes folder `path` (`\\server\share\folder`; the folders above it
    /// too) on its share, as someone on the file server does (see
    /// [`FakeHostBuilder::share_folder`](super::FakeHostBuilder::share_folder)).
    ///
    /// # Panics
    ///
    /// When `path` is on no share of the host.
    pub fn add_share_folder(&self, path: &str) {
        if !self.state().add_share_folder(path) {
            panic!("FakeHost::add_share_folder: {path} is on no share of the host");
        }
    }

    /// Removes folder `path` and everything below it from its share, as
    /// someone deleting it on the file server does: links to it lead
    /// nowhere from now on. Returns whether it was there; a share's root is
    /// never removed.
    pub fn remove_share_folder(&self, path: &str) -> bool {
        self.state().remove_share_folder(path)
    }

    /// Whether folder `path` (`\\server\share` or a folder in it, any
    /// case) is on its share: a share's root always is, a folder once
    /// seeded or made (through the proxy: `Mkdir` through a link to the
    /// mapped share). Mappings do not matter: this is the file server's
    /// view.
    pub fn share_folder_exists(&self, path: &str) -> bool {
        self.state().share_folder_exists(path)
    }

    /// Puts a file at `path` (its folders made as needed), in place of
    /// whatever was there: someone else's file, which the mounter must
    /// never remove (as [`FakeHostBuilder::file`](super::FakeHostBuilder::file)
    /// seeds one).
    pub fn put_file(&self, path: &str) {
        let at = super::local_path(path);
        let mut state = self.state();
        if let Some((up, _)) = at.rsplit_once('\\') {
            state.mkdir_all(up);
        }
        state.tree.insert(&at, PathEntry::File);
    }

    // ---- reboot -----------------------------------------------------------

    /// Restarts the node: every SMB global mapping is gone; every volume
    /// mount point becomes an empty directory (the volumes are unmounted;
    /// what was below a mount point shows again where its volume is
    /// mounted next); iSCSI sessions are gone, and the disks they brought
    /// with them; directories and symlinks stay, so links to SMB shares or
    /// to unmounted folders now lead nowhere (the shares' folders are on
    /// their file servers, and stay). The other disks stay as they
    /// were (online or not, read-only or not, partitions and file systems),
    /// as do registered iSCSI portals, services, the release, and planned
    /// faults.
    pub fn reboot(&self) {
        let mut state = self.state();
        state.smb_mappings.clear();
        // The deepest mount points first, so that a mount point below
        // another one is emptied before its parent.
        let mut mounts: Vec<(String, crate::api::VolumeId)> = (state.volumes.iter())
            .flat_map(|(id, v)| v.mounts.iter().map(move |m| (m.clone(), id.clone())))
            .collect();
        mounts.sort_by_key(|(at, _)| std::cmp::Reverse(at.len()));
        for (at, volume) in mounts {
            let prefix = format!("{}\\", key(&at));
            let mut content = Vec::new();
            for below in state.tree.descendants(&at) {
                if let Some(entry) = state.tree.get(&below) {
                    let entry = match entry {
                        PathEntry::MountPoint(_) => PathEntry::Directory,
                        other => other,
                    };
                    let relative = below[prefix.len()..].to_owned();
                    content.push((relative, entry));
                }
                state.tree.remove(&below);
            }
            state.detached.entry(volume.clone()).or_insert(content);
            state.tree.insert(&at, PathEntry::Directory);
            if let Some(v) = state.volumes.get_mut(&volume) {
                v.mounts.clear();
            }
        }
        let sessions = std::mem::take(&mut state.sessions);
        for disk in sessions.into_values().flatten() {
            state.remove_disk(disk);
        }
    }
}
