//! Seeding a fake host.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use super::state::{HostState, IscsiTarget, PartitionStyle, PathEntry, SmbShare};
use super::{boot_location, data_location, local_path, FakeDisk, FakeHost};
use crate::api::{Secret, ServiceInfo, ServiceStatus, StartType, TargetPortal};
use crate::testing::ProxyRelease;

/// Seeds a [`FakeHost`].
#[derive(Debug)]
pub struct FakeHostBuilder {
    state: HostState,
    /// Whether [`build`](Self::build) leaves out the node's own disks.
    bare: bool,
}

impl FakeHostBuilder {
    /// Adds an online, raw data disk `number` of `size_bytes` with page83
    /// identifier `page83`, on adapter 1, target 0, LUN = `number`: where
    /// Azure attaches data disks, so [`DiskSelector::lun`] finds it.
    ///
    /// The node's own disks sit on adapter 0:
    /// [`system_disk`](Self::system_disk) at LUN 0 and
    /// [`temp_disk`](Self::temp_disk) at LUN 1.
    ///
    /// [`DiskSelector::lun`]: crate::mount::DiskSelector::lun
    pub fn disk(mut self, number: u32, page83: &str, size_bytes: u64) -> Self {
        let disk = FakeDisk::new(page83, size_bytes, data_location(number));
        self.state.add_disk(number, disk);
        self
    }

    /// Adds an online data disk `number` (placed as [`disk`](Self::disk)
    /// places it) as [`DiskApi::partition_disk`] leaves it: a GPT with one
    /// data partition, holding a volume `IsVolumeFormatted` reads as
    /// unformatted. It is also how a partition whose file system Windows
    /// does not know (ext4, say) reads through CSI Proxy: the mounter
    /// formats it only on proof that it is the plugin's.
    ///
    /// [`DiskApi::partition_disk`]: crate::api::DiskApi::partition_disk
    pub fn partitioned_disk(mut self, number: u32, page83: &str, size_bytes: u64) -> Self {
        let disk = FakeDisk::new(page83, size_bytes, data_location(number));
        self.state.add_disk(number, disk);
        self.state.add_data_partition(number);
        self
    }

    /// Adds disk `number` as the system disk, in place of the one
    /// [`build`](Self::build) adds: partitioned (GPT), with one formatted
    /// volume that holds drive `C:`. A path under no mounted volume
    /// belongs to `C:`'s, as on a real node
    /// (`GetClosestVolumeIDFromTargetPath`, `GetVolumeIDFromTargetPath` of
    /// `C:\`); on a [`bare`](Self::bare) host without one, to no volume.
    /// It sits where Azure puts the OS disk: adapter 0, target 0, LUN 0.
    pub fn system_disk(mut self, number: u32, page83: &str, size_bytes: u64) -> Self {
        let disk = FakeDisk::new(page83, size_bytes, boot_location(0));
        self.state.add_system_disk(number, disk);
        self
    }

    /// Adds disk `number` as an Azure node's temporary disk, in place of
    /// the one [`build`](Self::build) adds: an MBR disk with one formatted
    /// volume (drive `D:` on a real node), on adapter 0,
    /// target 0, LUN 1, beside the OS disk. No data disk selector of the
    /// mounter may take it for a data disk.
    pub fn temp_disk(mut self, number: u32, page83: &str, size_bytes: u64) -> Self {
        let mut disk = FakeDisk::new(page83, size_bytes, boot_location(1));
        disk.partition_style = PartitionStyle::Mbr;
        self.state.add_disk(number, disk);
        self.state.add_formatted_partition(number);
        self
    }

    /// Adds a disk with everything chosen by the caller.
    pub fn custom_disk(mut self, number: u32, disk: FakeDisk) -> Self {
        self.state.add_disk(number, disk);
        self
    }

    /// Takes disk `number` (added before) offline, as a disk left offline
    /// by a former unstage, or by the SAN policy, comes: it lists no
    /// volumes, and format, mount and the `PartitionDisk` of a raw disk
    /// fail until `SetDiskState` brings it online (`PartitionDisk` of a
    /// disk with a partition succeeds and does nothing, online or not).
    ///
    /// # Panics
    ///
    /// When the builder has no disk `number` yet.
    pub fn offline(mut self, number: u32) -> Self {
        self.disk_mut("offline", number).online = false;
        self
    }

    /// Makes the volumes disk `number` (added before) has now show only on
    /// the (`listings` + 1)-th listing of its volumes (`ListVolumesOnDisk`)
    /// made while it is online, as Windows lists the volume of a
    /// partition some time after the partition's disk comes online: an
    /// existing partition the first looks take for a blank disk. Listings
    /// of the disk while it is offline (which show nothing) do not count.
    ///
    /// ```
    /// use csi_proxy_client::api::{DiskApi, VolumeApi};
    /// use csi_proxy_client::testing::FakeHost;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let host = FakeHost::builder()
    ///     .partitioned_disk(1, "pd-1", 10 << 30)
    ///     .offline(1)
    ///     .listed_late(1, 2)
    ///     .build();
    /// host.set_disk_state(1, true).await.unwrap();
    /// assert!(host.list_volumes_on_disk(1, None).await.unwrap().is_empty());
    /// // The proxy leaves a disk with a partition as it is, and succeeds.
    /// host.partition_disk(1).await.unwrap();
    /// assert!(host.list_volumes_on_disk(1, None).await.unwrap().is_empty());
    /// assert_eq!(host.list_volumes_on_disk(1, None).await.unwrap().len(), 1);
    /// assert_eq!(host.volumes_on(1).len(), 1, "no partition was made");
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// When the builder has no disk `number` yet.
    pub fn listed_late(mut self, number: u32, listings: usize) -> Self {
        self.disk_mut("listed_late", number);
        let state = &mut self.state;
        let own: Vec<_> = (state.volumes.iter())
            .filter(|(_, volume)| volume.disk == number)
            .map(|(id, _)| id.clone())
            .collect();
        state.made_by_partition.extend(own);
        state.hidden_listings.insert(number, listings);
        self
    }

    /// Makes disk `number` (added before) read-only, as a re-attached disk
    /// may come back: what would write to it fails with Windows error 19,
    /// and `SetDiskState` does not clear it.
    ///
    /// # Panics
    ///
    /// When the builder has no disk `number` yet.
    pub fn read_only(mut self, number: u32) -> Self {
        self.disk_mut("read_only", number).read_only = true;
        self
    }

    /// Adds a file at `path` (its folders made as needed): something that is
    /// not the mounter's, which it must never remove.
    pub fn file(mut self, path: &str) -> Self {
        let at = local_path(path);
        if let Some((up, _)) = at.rsplit_once('\\') {
            self.state.mkdir_all(up);
        }
        self.state.tree.insert(&at, PathEntry::File);
        self
    }

    /// The host follows the rules of CSI Proxy `release` (default
    /// [`ProxyRelease::LATEST`]); see [`FakeHost::behave_as`].
    pub fn release(mut self, release: ProxyRelease) -> Self {
        self.state.release = release;
        self
    }

    fn disk_mut(&mut self, caller: &str, number: u32) -> &mut FakeDisk {
        match self.state.disks.get_mut(&number) {
            Some(disk) => disk,
            None => panic!("FakeHostBuilder::{caller}: no disk {number}; add it first"),
        }
    }

    /// Adds a working directory; filesystem paths must lie under one.
    pub fn working_dir(mut self, dir: &str) -> Self {
        self.state.working_dirs.push(dir.to_owned());
        self
    }

    /// Creates directory `path` (and its parents) up front, normalized as
    /// [`FakeHost::entry`] normalizes it.
    ///
    /// # Panics
    ///
    /// When `path` is not one [`WindowsPath::new`](crate::api::WindowsPath::new) accepts.
    pub fn dir(mut self, path: &str) -> Self {
        self.state.mkdir_all(&local_path(path));
        self
    }

    /// Adds an SMB share that accepts `username` with `password`. `root`
    /// is `\\server\share`; a server is known to the host when it has a
    /// share. The share holds no folders but its root: seed them with
    /// [`share_folder`](Self::share_folder), or make them through the proxy
    /// (`Mkdir` through a link to the mapped share). Adding a share again
    /// changes its credentials and keeps its folders.
    pub fn smb_share(mut self, root: &str, username: &str, password: &str) -> Self {
        let share = (self.state.shares)
            .entry(super::smb::normalized(root))
            .or_insert_with(|| SmbShare {
                username: String::new(),
                password: Secret::new(""),
                folders: BTreeSet::new(),
                total_bytes: super::state::SHARE_SIZE,
                used_bytes: 0,
            });
        share.username = username.to_owned();
        share.password = Secret::new(password);
        self
    }

    /// Sets the size of share `root` (added before with
    /// [`smb_share`](Self::smb_share); 1 TiB, none used, until set) and
    /// the bytes in use on it: what a node that reaches the share measures
    /// ([`ShareSpace`](crate::mount::ShareSpace), as the host implements
    /// it). Only a folder that is there, through a usable mapping, is
    /// measured, as Windows reaches a share.
    ///
    /// ```
    /// use csi_proxy_client::api::SmbRemotePath;
    /// use csi_proxy_client::mount::ShareSpace;
    /// use csi_proxy_client::testing::{FakeHost, SmbMappingStatus};
    ///
    /// let host = FakeHost::builder()
    ///     .smb_share(r"\\files\data", "user", "pw")
    ///     .share_size(r"\\files\data", 100 << 30, 30 << 30)
    ///     .share_folder(r"\\files\data\pv-1")
    ///     .build();
    /// let folder = SmbRemotePath::new(r"\\files\data\pv-1")?;
    /// assert_eq!(host.measure(&folder), None, "not mapped");
    /// host.map_smb_outside(r"\\files\data", "user", "pw");
    /// let stats = host.measure(&folder).expect("mapped");
    /// assert_eq!((stats.total_bytes, stats.available_bytes), (100 << 30, 70 << 30));
    /// host.set_smb_mapping_status(r"\\files\data", SmbMappingStatus::Disconnected);
    /// assert_eq!(host.measure(&folder), None, "the mapping is broken");
    /// # Ok::<(), csi_proxy_client::Error>(())
    /// ```
    ///
    /// # Panics
    ///
    /// When the builder has no share `root`, or `used_bytes` is more than
    /// `total_bytes`.
    pub fn share_size(mut self, root: &str, total_bytes: u64, used_bytes: u64) -> Self {
        assert!(
            used_bytes <= total_bytes,
            "FakeHostBuilder::share_size: more used than the share holds"
        );
        match self.state.shares.get_mut(&super::smb::normalized(root)) {
            Some(share) => (share.total_bytes, share.used_bytes) = (total_bytes, used_bytes),
            None => panic!("FakeHostBuilder::share_size: no share {root}; add the share first"),
        }
        self
    }

    /// Makes folder `path` (`\\server\share\folder`, any depth; the folders
    /// above it too) on a share added before with
    /// [`smb_share`](Self::smb_share), as a file server holds it: a link to
    /// a folder of a share leads somewhere only once the folder is there.
    /// A share's root is always there.
    ///
    /// ```
    /// use csi_proxy_client::testing::FakeHost;
    ///
    /// let host = FakeHost::builder()
    ///     .smb_share(r"\\files\share", "user", "pw")
    ///     .share_folder(r"\\files\share\pv-2")
    ///     .build();
    /// assert!(host.share_folder_exists(r"\\files\share\pv-2"));
    /// assert!(!host.share_folder_exists(r"\\files\share\pv-3"));
    /// ```
    ///
    /// # Panics
    ///
    /// When `path` is on no share of the builder (add the share first).
    pub fn share_folder(mut self, path: &str) -> Self {
        if !self.state.add_share_folder(path) {
            panic!("FakeHostBuilder::share_folder: {path} is on no share; add the share first");
        }
        self
    }

    /// Adds an iSCSI target `iqn` at `portal` with disks of the given page83
    /// IDs and sizes; with `chap`, logins must authenticate as that user and
    /// secret; with `mutual_secret`, the target also expects the initiator's
    /// mutual CHAP secret to equal it.
    pub fn iscsi_target(
        mut self,
        portal: TargetPortal,
        iqn: &str,
        disks: &[(&str, u64)],
        chap: Option<(&str, &str)>,
        mutual_secret: Option<&str>,
    ) -> Self {
        let target = IscsiTarget {
            iqn: iqn.to_owned(),
            disks: disks.iter().map(|&(p, s)| (p.to_owned(), s)).collect(),
            chap: chap.map(|(u, s)| (u.to_owned(), Secret::new(s))),
            mutual_secret: mutual_secret.map(Secret::new),
        };
        self.state.portals.entry(portal).or_default().push(target);
        self
    }

    /// Adds a Windows service.
    pub fn service(
        mut self,
        name: &str,
        display_name: &str,
        start_type: StartType,
        status: ServiceStatus,
    ) -> Self {
        let info = ServiceInfo {
            display_name: display_name.to_owned(),
            start_type,
            status,
        };
        self.state.services.insert(name.to_lowercase(), info);
        self
    }

    /// Sets the BIOS serial number.
    pub fn bios_serial_number(mut self, serial: &str) -> Self {
        self.state.bios_serial = serial.to_owned();
        self
    }

    /// Leaves out the disks every node has, which [`build`](Self::build)
    /// adds by default: the host has only the disks the test adds. For a
    /// test about disk numbering or listings, where the node's own disks
    /// would be noise; a mounter's test keeps them, since a real node
    /// always has them and the mounter must never take them.
    ///
    /// ```
    /// use csi_proxy_client::testing::FakeHost;
    ///
    /// let host = FakeHost::builder().disk(1, "pd-1", 10 << 30).bare().build();
    /// assert_eq!(host.disk_numbers(), [1]);
    /// assert_eq!(host.system_volume(), None);
    /// ```
    pub fn bare(mut self) -> Self {
        self.bare = true;
        self
    }

    /// The host. Unless [`bare`](Self::bare), it has a node's own disks
    /// beside those added, each at the lowest disk number free: the OS
    /// disk (adapter 0, LUN 0, GPT, holding `C:`; see
    /// [`system_disk`](Self::system_disk)) and the temporary disk
    /// (adapter 0, LUN 1, MBR, one NTFS volume; see
    /// [`temp_disk`](Self::temp_disk)), where the builder has none there.
    ///
    /// ```
    /// use csi_proxy_client::testing::{FakeHost, PartitionStyle};
    ///
    /// let host = FakeHost::builder().disk(1, "pd-1", 10 << 30).build();
    /// // The OS disk took number 0, the temporary disk number 2.
    /// assert_eq!(host.disk_numbers(), [0, 1, 2]);
    /// let styles: Vec<_> = (host.disk_numbers().into_iter())
    ///     .map(|n| host.disk(n).unwrap().partition_style)
    ///     .collect();
    /// assert_eq!(styles, [PartitionStyle::Gpt, PartitionStyle::Raw, PartitionStyle::Mbr]);
    /// assert!(host.system_volume().is_some());
    /// ```
    pub fn build(mut self) -> FakeHost {
        if !self.bare {
            self.state.add_node_disks();
        }
        FakeHost {
            state: Arc::new(Mutex::new(self.state)),
        }
    }

    /// A builder for a host with `state`.
    pub(super) fn with_state(state: HostState) -> Self {
        Self { state, bare: false }
    }
}
