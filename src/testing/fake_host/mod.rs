//! An in-memory Windows host that implements every group trait with real
//! state and CSI Proxy's rules.

mod disk;
mod filesystem;
mod iscsi;
mod smb;
mod state;
mod system;
mod volume;

use std::sync::{Arc, Mutex, MutexGuard};

pub use state::{FakeDisk, FakeVolume, PathEntry};
use state::{HostState, IscsiTarget, SmbShare};

use crate::api::{
    DiskIds, DiskLocation, Secret, ServiceInfo, ServiceStatus, StartType, TargetPortal, VolumeId,
    WindowsPath,
};
use crate::capability::Operation;
use crate::client::{Backends, CsiProxy};
use crate::error::{Code, Error};

/// A fake Windows node: disks, partitions, volumes, a directory tree with
/// symlinks and mount points, SMB global mappings, an iSCSI initiator and
/// Windows services, behind all six group traits.
///
/// It follows CSI Proxy's rules (v1.x), so a test harness is no more
/// lenient than production: filesystem paths (and SMB local paths) must lie
/// under a working directory (default `C:\var\lib\kubelet`); `rmdir` of a
/// non-empty directory needs `force`; partitioning is idempotent (GPT);
/// mounting needs an existing empty folder and is idempotent for the same
/// volume; `resize_volume(_, 0)` grows to the maximum, and a target less
/// than 100 MiB above the current size (a smaller one included) is skipped;
/// an SMB mapping maps the share's root, is kept while usable and remapped
/// when it went bad; iSCSI logins check CHAP and attach the target's disks.
/// Failures are [`Error::Host`] with code `Unknown` and a message, as the
/// proxy reports them.
///
/// As on a real node, an SMB global mapping made by
/// `new_smb_global_mapping` stays when its `local_path` is refused
/// afterwards ([`FakeHost::smb_mappings`] shows it): a driver must clean up
/// after that. Every rule, and the upstream function it follows, is listed
/// in the crate's `docs/fake-host.md`.
///
/// Clones share the host. Seed it with [`FakeHost::builder`], use it as
/// the backend of a [`FakeProxy`](super::FakeProxy) or directly through
/// [`FakeHost::proxy`], and inspect it afterwards.
///
/// ```
/// use csi_proxy_client::testing::FakeHost;
/// use csi_proxy_client::api::{DiskApi, VolumeApi};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> csi_proxy_client::Result<()> {
/// let host = FakeHost::builder().disk(1, "pd-1", 10 << 30).build();
/// host.partition_disk(1).await?;
/// let volumes = host.list_volumes_on_disk(1, None).await?;
/// assert_eq!(volumes.len(), 1);
/// assert!(!host.is_volume_formatted(&volumes[0]).await?);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct FakeHost {
    state: Arc<Mutex<HostState>>,
}

impl std::fmt::Debug for FakeHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeHost").finish_non_exhaustive()
    }
}

impl Default for FakeHost {
    /// A host with nothing but the kubelet directory.
    fn default() -> Self {
        Self::builder().build()
    }
}

impl FakeHost {
    /// A host with no disks, the kubelet directory `C:\var\lib\kubelet` as
    /// its working directory, and nothing else; see [`FakeHostBuilder`].
    pub fn builder() -> FakeHostBuilder {
        FakeHostBuilder {
            state: HostState::new(),
        }
    }

    /// A [`CsiProxy`] whose six groups are this host, without any wire in
    /// between.
    pub fn proxy(&self) -> CsiProxy {
        CsiProxy::from_backends(self.backends())
    }

    /// This host as the backend of every group.
    pub fn backends(&self) -> Backends {
        Backends {
            disk: Some(Arc::new(self.clone())),
            filesystem: Some(Arc::new(self.clone())),
            smb: Some(Arc::new(self.clone())),
            volume: Some(Arc::new(self.clone())),
            iscsi: Some(Arc::new(self.clone())),
            system: Some(Arc::new(self.clone())),
        }
    }

    fn state(&self) -> MutexGuard<'_, HostState> {
        // A panic while holding the lock cannot leave the state half-changed
        // in a way later checks rely on; keep serving.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    // ---- inspection -------------------------------------------------------

    /// Disk `number`, if the host has it.
    pub fn disk(&self, number: u32) -> Option<FakeDisk> {
        self.state().disks.get(&number).cloned()
    }

    /// The numbers of all disks.
    pub fn disk_numbers(&self) -> Vec<u32> {
        self.state().disks.keys().copied().collect()
    }

    /// Volume `id`, if it exists.
    pub fn volume(&self, id: &VolumeId) -> Option<FakeVolume> {
        self.state().volumes.get(id).cloned()
    }

    /// Every volume, by ID.
    pub fn volumes(&self) -> std::collections::BTreeMap<VolumeId, FakeVolume> {
        self.state().volumes.clone()
    }

    /// What is at `path` (case-insensitive, as on Windows). The path is
    /// normalized as the SDK normalizes it ([`WindowsPath::new`]): kubelet's
    /// `\var\lib\kubelet\...` and `/var/lib/kubelet/...` are
    /// `C:\var\lib\kubelet\...`.
    ///
    /// # Panics
    ///
    /// When `path` is not one [`WindowsPath::new`] accepts: nothing could
    /// be there, and a test asserting its absence would pass by accident.
    pub fn entry(&self, path: &str) -> Option<PathEntry> {
        self.state().tree.get(&local_path(path))
    }

    /// The volume that holds `C:`, if the host has a system disk.
    pub fn system_volume(&self) -> Option<VolumeId> {
        self.state().system_volume.clone()
    }

    /// The roots (`\\server\share`, lower-cased) of the global SMB mappings.
    pub fn smb_mappings(&self) -> Vec<String> {
        self.state().smb_mappings.keys().cloned().collect()
    }

    /// Breaks the global mapping of `share_root` (as a dropped network
    /// connection would); the next `NewSmbGlobalMapping` remaps it.
    pub fn invalidate_smb_mapping(&self, share_root: &str) {
        if let Some(mapping) = self
            .state()
            .smb_mappings
            .get_mut(&share_root.to_lowercase())
        {
            mapping.valid = false;
        }
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

    /// The target portals registered with the initiator.
    pub fn registered_portals(&self) -> Vec<TargetPortal> {
        self.state().registered_portals.iter().cloned().collect()
    }

    /// The targets logged in to, as (portal, IQN).
    pub fn iscsi_sessions(&self) -> Vec<(TargetPortal, String)> {
        self.state().sessions.keys().cloned().collect()
    }

    /// Service `name`, if it exists.
    pub fn service(&self, name: &str) -> Option<ServiceInfo> {
        self.state().services.get(&name.to_lowercase()).cloned()
    }

    /// How many times the storage buses were rescanned.
    pub fn rescans(&self) -> usize {
        self.state().rescans
    }
}

/// Seeds a [`FakeHost`].
#[derive(Debug)]
pub struct FakeHostBuilder {
    state: HostState,
}

impl FakeHostBuilder {
    /// Adds an online, raw disk `number` of `size_bytes` with page83
    /// identifier `page83`, on adapter 0, target 0, LUN = `number`.
    pub fn disk(mut self, number: u32, page83: &str, size_bytes: u64) -> Self {
        let disk = FakeDisk::new(page83, size_bytes, lun_location(number));
        self.state.add_disk(number, disk);
        self
    }

    /// Adds an online disk `number` as [`DiskApi::partition_disk`] leaves
    /// it: a GPT with one data partition, holding an unformatted volume.
    ///
    /// [`DiskApi::partition_disk`]: crate::api::DiskApi::partition_disk
    pub fn partitioned_disk(mut self, number: u32, page83: &str, size_bytes: u64) -> Self {
        let disk = FakeDisk::new(page83, size_bytes, lun_location(number));
        self.state.add_disk(number, disk);
        self.state.add_data_partition(number);
        self
    }

    /// Adds disk `number` as the system disk: partitioned, with one
    /// formatted volume that holds drive `C:`. Without a system disk, a path
    /// under no mounted volume belongs to no volume; with one, it belongs to
    /// `C:`'s, as on a real node (`GetClosestVolumeIDFromTargetPath`,
    /// `GetVolumeIDFromTargetPath` of `C:\`).
    pub fn system_disk(mut self, number: u32, page83: &str, size_bytes: u64) -> Self {
        let disk = FakeDisk::new(page83, size_bytes, lun_location(number));
        self.state.add_system_disk(number, disk);
        self
    }

    /// Adds a disk with everything chosen by the caller.
    pub fn custom_disk(mut self, number: u32, disk: FakeDisk) -> Self {
        self.state.add_disk(number, disk);
        self
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
    /// When `path` is not one [`WindowsPath::new`] accepts.
    pub fn dir(mut self, path: &str) -> Self {
        self.state.mkdir_all(&local_path(path));
        self
    }

    /// Adds an SMB share that accepts `username` with `password`.
    pub fn smb_share(mut self, root: &str, username: &str, password: &str) -> Self {
        self.state.shares.insert(
            root.replace('/', "\\").to_lowercase(),
            SmbShare {
                username: username.to_owned(),
                password: Secret::new(password),
            },
        );
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

    /// The host.
    pub fn build(self) -> FakeHost {
        FakeHost {
            state: Arc::new(Mutex::new(self.state)),
        }
    }
}

/// Adapter 0, bus 0, target 0, LUN `number`: where the builder puts disks.
fn lun_location(number: u32) -> DiskLocation {
    DiskLocation {
        adapter: "0".into(),
        bus: "0".into(),
        target: "0".into(),
        lun_id: number.to_string(),
    }
}

/// `path` normalized as the SDK normalizes it, for the inspection and
/// seeding helpers; a path the SDK refuses is a mistake in the test.
fn local_path(path: &str) -> String {
    match WindowsPath::new(path) {
        Ok(path) => path.as_str().to_owned(),
        Err(error) => panic!("FakeHost: {error}"),
    }
}

/// A failure as the proxy reports it: code `Unknown` and a message.
pub(crate) fn host_error(operation: Operation, message: impl Into<String>) -> Error {
    Error::host(operation, Code::Unknown, message)
}

/// Identifiers of a disk, for `ListDiskIDs`.
fn disk_ids(disk: &FakeDisk) -> DiskIds {
    DiskIds {
        page83: disk.page83.clone(),
        serial_number: disk.serial_number.clone(),
    }
}
