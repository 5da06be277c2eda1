//! An in-memory Windows host that implements every group trait with real
//! state and CSI Proxy's rules.

mod builder;
mod control;
mod disk;
mod faults;
mod filesystem;
mod iscsi;
mod smb;
mod state;
mod system;
mod volume;

use std::sync::{Arc, Mutex, MutexGuard};

pub use builder::FakeHostBuilder;
pub use faults::WindowsError;
use state::HostState;
pub use state::{
    FakeDisk, FakeVolume, PartitionStyle, PathEntry, SmbMappingStatus, NODE_OS_DISK, NODE_TEMP_DISK,
};
pub use volume::LinkReading;

use crate::api::{DiskIds, DiskLocation, ServiceInfo, TargetPortal, VolumeId, WindowsPath};
use crate::capability::Operation;
use crate::client::{Backends, CsiProxy};
use crate::error::{Code, Error};

/// A fake Windows node: disks, partitions, volumes, a directory tree with
/// symlinks and mount points, SMB global mappings, an iSCSI initiator and
/// Windows services, behind all six group traits.
///
/// It follows CSI Proxy's rules, so a test harness is no more lenient
/// than production: filesystem paths (and SMB local paths) must lie under a
/// working directory (default `C:\var\lib\kubelet`); `rmdir` of a
/// non-empty directory needs `force`; partitioning is idempotent (GPT);
/// mounting needs an existing empty folder and is idempotent for the same
/// volume; `resize_volume(_, 0)` grows to the maximum, and a target less
/// than 100 MiB above the current size (a smaller one included) is skipped;
/// an SMB mapping maps the share's root, is kept while usable and remapped
/// when it went bad; a share holds only the folders seeded
/// ([`FakeHostBuilder::share_folder`]) or made through the proxy (`mkdir`
/// through a link to the mapped share), so a link to a folder that is not
/// there leads nowhere; iSCSI logins check CHAP and attach the target's disks.
/// Failures are [`Error::Host`] with code `Unknown` and a message, as the
/// proxy reports them; those Windows itself reports (a wrong password, a
/// read-only disk) carry the Windows text and code ([`WindowsError`]).
///
/// Those rules are CSI Proxy v1.3's. Where older releases differed (the SMB
/// mapping key, resize, mounting twice), [`FakeHost::behave_as`] (or
/// [`FakeHostBuilder::release`]) makes the host follow an older one.
///
/// As on a real node, an SMB global mapping made by
/// `new_smb_global_mapping` stays when its `local_path` is refused
/// afterwards ([`FakeHost::smb_mappings`] shows it): a driver must clean up
/// after that. Every rule, and the upstream function it follows, is listed
/// in the crate's `docs/fake-host.md`.
///
/// A test can also make the host misbehave as real nodes do: fail or delay
/// the n-th call of an operation ([`FakeHost::fail_call`],
/// [`FakeHost::delay_call`]), make every call of an operation take as long
/// as on Windows ([`FakeHost::set_latency`]), take disks offline or make
/// them read-only, hide a new partition's volume for a few listings, break
/// or disconnect SMB mappings, map shares behind the driver's back, rotate
/// a share's password, and [reboot](FakeHost::reboot) the node.
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
    /// A host with nothing but the node's own disks and the kubelet
    /// directory.
    fn default() -> Self {
        Self::builder().build()
    }
}

impl FakeHost {
    /// A host with the node's own disks (an OS disk holding `C:` and a
    /// temporary disk, added by [`FakeHostBuilder::build`] unless
    /// [`bare`](FakeHostBuilder::bare)), the kubelet directory
    /// `C:\var\lib\kubelet` as its working directory, and nothing else;
    /// see [`FakeHostBuilder`].
    pub fn builder() -> FakeHostBuilder {
        FakeHostBuilder::with_state(HostState::new())
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

    /// The number of the disk whose page83 identifier is `page83`, if the
    /// host has one.
    pub fn disk_number_of(&self, page83: &str) -> Option<u32> {
        (self.state().disks.iter())
            .find(|(_, disk)| disk.page83 == page83)
            .map(|(&number, _)| number)
    }

    /// The volumes on disk `number`, by ID (none when the host has no such
    /// disk): what a test seeded or the mounter made there, without the
    /// node's own volumes.
    pub fn volumes_on(&self, number: u32) -> Vec<VolumeId> {
        (self.state().volumes.iter())
            .filter(|(_, volume)| volume.disk == number)
            .map(|(id, _)| id.clone())
            .collect()
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

/// Where the builder puts data disks: adapter 1 (a SCSI controller of
/// their own, as on Azure), bus 0, target 0, LUN `lun`.
fn data_location(lun: u32) -> DiskLocation {
    location(1, lun)
}

/// Where the builder puts the node's own disks: adapter 0, the boot
/// controller, bus 0, target 0, LUN `lun` (0 for the OS disk, 1 for the
/// temporary disk).
fn boot_location(lun: u32) -> DiskLocation {
    location(0, lun)
}

fn location(adapter: u32, lun: u32) -> DiskLocation {
    DiskLocation {
        adapter: adapter.to_string(),
        bus: "0".into(),
        target: "0".into(),
        lun_id: lun.to_string(),
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
