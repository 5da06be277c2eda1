//! The node side of a volume's life, once: what every Windows CSI driver
//! writes by hand in its `safe_mounter_windows.go`, built on the group
//! traits so that it runs on CSI Proxy v0.2 to v1.3 (on v0.1, which cannot
//! say which volume is at a path, it trusts its own records) and on the
//! host backend.
//!
//! A [`Mounter`] turns kubelet's node calls into host work that converges:
//!
//! | call | CSI node call | what it guarantees |
//! |---|---|---|
//! | [`inspect`](Mounter::inspect) | any | what is at a path, in one answer; "not a mount point" is a state, not an error |
//! | [`find_disk`](Mounter::find_disk) | stage | one disk by LUN, page 0x83 ID, serial number or predicate, waited for with at most one rescan a poll; none is `NotFound`, several is `Ambiguous` |
//! | [`stage_disk`](Mounter::stage_disk) | `NodeStageVolume` | online, partition only a raw disk, wait for its volume, format only a volume without a file system, mount; a kubelet retry joins a stage still running |
//! | [`unstage_disk`](Mounter::unstage_disk) | `NodeUnstageVolume` | flush, unmount, remove the empty folder, optionally offline ([`DiskAfterUnstage`]); a retry after a partial failure finishes the remaining steps |
//! | [`unstage`](Mounter::unstage) | `NodeUnstageVolume` | a disk's or a share's unstage, as the journal says which is staged there |
//! | [`publish`](Mounter::publish) / [`unpublish`](Mounter::unpublish) | `NodePublishVolume` / `NodeUnpublishVolume` | a link from the pod's target to the staging path, replacing only an empty folder; a link elsewhere is a conflict |
//! | [`expand`](Mounter::expand) | `NodeExpandVolume` | rescan and grow; "nothing to grow" is success |
//! | [`stats`](Mounter::stats) | `NodeGetVolumeStats` | total, used, available: right on every release |
//! | [`share_stats`](Mounter::share_stats) | `NodeGetVolumeStats` of a share | the share's size and use as the node sees it ([`ShareSpace`]), where it can tell |
//! | [`stage_smb`](Mounter::stage_smb) / [`unstage_smb`](Mounter::unstage_smb) | stage / unstage of a share | one mapping per share, leased by each volume, removed when the last one goes and only if this mounter made it |
//! | [`rotate_smb_credentials`](Mounter::rotate_smb_credentials) | | maps a share again with new credentials |
//! | [`stage_iscsi`](Mounter::stage_iscsi) / [`unstage_iscsi`](Mounter::unstage_iscsi) | stage / unstage of an iSCSI volume | portal, login (CHAP), the target's disk staged as `stage_disk` does; the session leased by each volume, logged out of with the last one and only if this mounter logged in |
//! | [`reconcile`](Mounter::reconcile) | plugin start | finishes or undoes half-done work, removes dangling links, drops the leases of volumes that are gone |
//!
//! Every call is idempotent and says whether it changed anything
//! ([`Change`]). Something unexpected at a path is [`Error::Conflict`](crate::Error::Conflict) and
//! is left as it is; no volume with a file system is formatted, and no
//! folder is force-removed, nor removed while the host does not say that
//! no volume is mounted at it. Calls on the same staging path or target run
//! one at a time, and a repeat while one runs waits for its answer.
//! What CSI Proxy cannot tell (where a link leads, which mappings exist and
//! who made them, which steps of an unstage are done) is kept in a small
//! journal in a folder of the driver's ([`MounterBuilder`]), which outlives
//! driver restarts and node reboots. `docs/mounting.md` has each rule, its
//! test, and the Go drivers' bugs it avoids.
//!
//! ```
//! use csi_proxy_client::api::WindowsPath;
//! use csi_proxy_client::mount::{DiskSelector, Mounter};
//! use csi_proxy_client::CsiProxy;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # use csi_proxy_client::testing::{FakeHost, FakeProxy, LocalEndpoints, ProxyRelease};
//! # let endpoints = LocalEndpoints::new()?;
//! # let host = FakeHost::builder().disk(1, "Google  pvc-1", 10 << 30)
//! #     .dir(r"C:\var\lib\kubelet\pods\p1\volumes").build();
//! # let mut fake = FakeProxy::for_host(endpoints.transport(), &host);
//! # fake.serve_release(ProxyRelease::V0_2_2).await?;
//! # let state = tempfile::tempdir()?;
//! let proxy = CsiProxy::builder()
//! #   .transport(endpoints.transport())
//!     .connect()
//!     .await?;
//! // A folder on the node that outlives the driver: the mounter's journal.
//! let mounter = Mounter::builder(proxy, state.path()).build()?;
//!
//! let staging = WindowsPath::new(r"C:\var\lib\kubelet\plugins\pd\pvc-1\globalmount")?;
//! let target = WindowsPath::new(r"C:\var\lib\kubelet\pods\p1\volumes\pvc-1")?;
//! let staged = mounter.stage_disk(&DiskSelector::page83("Google  pvc-1"), &staging).await?;
//! assert!(staged.formatted, "a raw disk was partitioned and formatted");
//! mounter.publish(&staging, &target).await?;
//! let stats = mounter.stats(&DiskSelector::page83("Google  pvc-1"), &target).await?;
//! assert!(stats.total_bytes > stats.used_bytes);
//! // kubelet repeats calls: nothing changes the second time.
//! assert!(!mounter.stage_disk(&DiskSelector::page83("Google  pvc-1"), &staging).await?.change.changed());
//! # Ok(()) }
//! ```

mod again;
mod beside;
mod disks;
mod fan_out;
mod fingerprint;
mod flight;
mod iscsi;
mod journal;
mod links;
mod paths;
mod prepare;
mod reconcile;
mod share_space;
mod smb;
mod stage;
mod unstage;
mod usage;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[cfg(all(feature = "csi", feature = "testing"))]
pub(crate) use disks::on_boot_adapter;
pub use disks::{DiskCandidate, DiskSelector};
pub use iscsi::IscsiVolume;
pub use paths::PathState;
pub use reconcile::ReconcileReport;
pub use share_space::{NodeShareSpace, ShareSpace};
pub use smb::{Rotated, SmbCredentials, SmbMappingRemoval};
pub use stage::{Formatting, Staged};
pub use unstage::DiskAfterUnstage;
pub use usage::{Expanded, FsStats};

use crate::client::CsiProxy;
use crate::error::Result;
use flight::Flights;
/// The plugin takes the state folder before it binds its socket.
#[cfg(feature = "csi")]
pub(crate) use journal::hold_state_folder;
use journal::Journal;
use paths::Paths;

/// Whether a call changed the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Change {
    /// It did what was asked.
    Changed,
    /// It was already so: nothing was changed.
    Unchanged,
}

impl Change {
    /// Whether anything changed.
    pub fn changed(self) -> bool {
        self == Change::Changed
    }

    /// `Changed` if `changed`.
    pub(crate) fn of(changed: bool) -> Self {
        if changed {
            Change::Changed
        } else {
            Change::Unchanged
        }
    }
}

/// A CSI volume ID a lease is kept under: it must not be empty.
fn check_volume(volume: &str) -> Result<()> {
    match volume.is_empty() {
        true => Err(crate::error::Error::invalid_argument(
            "volume ID",
            "it is empty",
        )),
        false => Ok(()),
    }
}

/// The node's volume operations on one [`CsiProxy`]; see the [module
/// docs](self). Cheap to clone; clones share their locks and journal.
#[derive(Clone)]
pub struct Mounter {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Mounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mounter")
            .field("settings", &self.inner.settings)
            .finish_non_exhaustive()
    }
}

/// What the operations share: the proxy, the journal, the keys in use.
pub(crate) struct Inner {
    proxy: CsiProxy,
    journal: Arc<Journal>,
    flights: Arc<Flights>,
    /// What is at a path, and what the mounter may make and remove there.
    paths: Arc<Paths>,
    /// Disks found by selector or volume.
    disks: disks::DiskFinder,
    /// A disk made ready: online, partitioned, formatted.
    prep: prepare::DiskPrep,
    /// The iSCSI targets' sessions and leases.
    targets: iscsi::Targets,
    /// The SMB shares: gates, mappings, leases, their space measured.
    shares: smb::Shares,
    settings: Arc<Settings>,
}

/// The timings and policies of a [`Mounter`].
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    disk_wait: Duration,
    poll_interval: Duration,
    volume_wait: Duration,
    format_deadline: Duration,
    format_grace: Duration,
    smb_removal: SmbMappingRemoval,
    foreign_shares: Vec<String>,
    kubelet_dir: crate::api::WindowsPath,
}

impl Settings {
    /// How long after it was sent, in milliseconds, a format whose outcome
    /// is unknown is taken to be possibly still running: its deadline and
    /// the grace after it.
    fn format_wait_millis(&self) -> u64 {
        let wait = self.format_deadline.saturating_add(self.format_grace);
        u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)
    }
}

/// Sets up a [`Mounter`]: [`Mounter::builder`].
pub struct MounterBuilder {
    proxy: CsiProxy,
    state_dir: PathBuf,
    settings: Settings,
    share_space: Option<Arc<dyn ShareSpace>>,
}

impl std::fmt::Debug for MounterBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MounterBuilder")
            .field("state_dir", &self.state_dir)
            .field("settings", &self.settings)
            .field("share_space", &self.share_space.is_some())
            .finish_non_exhaustive()
    }
}

impl Mounter {
    /// A mounter on `proxy` that keeps its journal in `state_dir`: a folder
    /// of the driver's that outlives the driver's restarts and the node's
    /// reboots, such as a folder under the plugin's host directory
    /// (`C:\var\lib\kubelet\plugins\<driver>\mounter`) seen from the
    /// driver's container. One folder per driver: two mounters must not
    /// share one.
    pub fn builder(proxy: CsiProxy, state_dir: impl Into<PathBuf>) -> MounterBuilder {
        MounterBuilder {
            proxy,
            state_dir: state_dir.into(),
            settings: Settings {
                disk_wait: Duration::from_secs(120),
                poll_interval: Duration::from_secs(1),
                volume_wait: Duration::from_secs(30),
                format_deadline: Duration::from_secs(180),
                format_grace: Duration::from_secs(60),
                smb_removal: SmbMappingRemoval::WhenUnused,
                foreign_shares: Vec::new(),
                kubelet_dir: crate::api::WindowsPath::new(crate::working_dirs::KUBELET_DIR)
                    .expect("the kubelet folder is a Windows path"),
            },
            share_space: None,
        }
    }

    /// The proxy it works through.
    pub fn proxy(&self) -> &CsiProxy {
        &self.inner.proxy
    }

    /// Runs `work` on the mounter's shared state under `key` in a task of
    /// its own, where a repeat of the same `request` joins it (see
    /// [`Flights::run`]): every call's preamble, once.
    async fn in_flight<T, F, Fut>(&self, key: &str, request: String, work: F) -> Result<T>
    where
        T: Clone + Send + Sync + 'static,
        F: FnOnce(Arc<Inner>) -> Fut,
        Fut: Future<Output = Result<T>> + Send + 'static,
    {
        let work = work(Arc::clone(&self.inner));
        self.inner.flights.run(key, request, work).await
    }
}

impl MounterBuilder {
    /// How long [`Mounter::stage_disk`] waits for its disk to appear
    /// (default 2 minutes, as azuredisk waits for a LUN).
    pub fn disk_wait(mut self, wait: Duration) -> Self {
        self.settings.disk_wait = wait;
        self
    }

    /// How often a wait looks again (default 1 s): for a disk (with at most
    /// one rescan a poll interval, shared by every stage that waits), and
    /// for a new partition's volume.
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.settings.poll_interval = interval;
        self
    }

    /// How long a stage waits for the volume of a partition it just made
    /// to be listed (default 30 s).
    pub fn volume_wait(mut self, wait: Duration) -> Self {
        self.settings.volume_wait = wait;
        self
    }

    /// The deadline of the mounter's `FormatVolume` calls (default 3
    /// minutes; a quick NTFS format takes seconds, PowerShell's start on
    /// old proxies some more), in place of the client's.
    pub fn format_deadline(mut self, deadline: Duration) -> Self {
        self.settings.format_deadline = deadline;
        self
    }

    /// How long after its deadline a format whose outcome is unknown (its
    /// call timed out, or the proxy restarted while it ran) may still be
    /// running on the host (default 1 minute). Until the deadline and this
    /// grace have passed since it was sent, a stage that finds the volume
    /// still without a file system answers [`Error::InProgress`], which
    /// says when it goes ahead, instead of formatting again; after them,
    /// it formats.
    ///
    /// [`Error::InProgress`]: crate::Error::InProgress
    pub fn format_grace(mut self, grace: Duration) -> Self {
        self.settings.format_grace = grace;
        self
    }

    /// When a share's global mapping that this mounter made is removed
    /// (default [`SmbMappingRemoval::WhenUnused`]).
    pub fn smb_mapping_removal(mut self, removal: SmbMappingRemoval) -> Self {
        self.settings.smb_removal = removal;
        self
    }

    /// The kubelet folder as the node sees it (default
    /// `C:\var\lib\kubelet`, kubelet's `--root-dir` on Windows): the
    /// mounter removes nothing outside it. Every path kubelet hands a node
    /// plugin (staging and target paths) lies below it; a removal
    /// elsewhere is [`Error::NotOurs`](crate::Error::NotOurs), and nothing
    /// is changed.
    pub fn kubelet_dir(mut self, dir: &crate::api::WindowsPath) -> Self {
        self.settings.kubelet_dir = dir.clone();
        self
    }

    /// A share whose mapping someone else makes and owns (an administrator,
    /// another driver): this mounter uses it and never removes it, nor
    /// makes it again. Naming a share is rarely needed: before it first
    /// maps a share, the mounter asks `IsSymlink` of the share's root, and
    /// takes the mapping as its own only when Windows refused the share
    /// then and its own mapping succeeded; a share that answered, or a
    /// look that told nothing, leaves the mapping someone else's (see
    /// [`Mounter::stage_smb`] and `docs/security.md`). Naming it also
    /// covers a mapping its owner makes only after this mounter's first
    /// look.
    pub fn foreign_smb_share(mut self, share: &crate::api::SmbRemotePath) -> Self {
        if let Some(root) = smb::share_key(share) {
            self.settings.foreign_shares.push(root);
        }
        self
    }

    /// How [`Mounter::share_stats`] measures a share (default
    /// [`NodeShareSpace`]: Windows' own reading, nothing elsewhere). A test
    /// on a [`FakeHost`](crate::testing::FakeHost) passes the host, which
    /// keeps each share's size and use.
    pub fn share_space(mut self, space: impl ShareSpace) -> Self {
        self.share_space = Some(Arc::new(space));
        self
    }

    /// The mounter, with the journal read from the state folder (made if
    /// missing).
    ///
    /// # Errors
    ///
    /// [`Error::Configuration`](crate::Error::Configuration) when the
    /// folder cannot be made or read, or holds a journal this version
    /// cannot read.
    pub fn build(self) -> Result<Mounter> {
        let journal = Arc::new(Journal::open(&self.state_dir)?);
        let (proxy, settings) = (self.proxy, Arc::new(self.settings));
        let flights = Arc::<Flights>::default();
        let kubelet_dir = settings.kubelet_dir.clone();
        let paths = Arc::new(Paths::new(proxy.clone(), journal.clone(), kubelet_dir));
        let disks = disks::DiskFinder::new(proxy.clone(), settings.poll_interval);
        let prep = prepare::DiskPrep::new(proxy.clone(), journal.clone(), settings.clone());
        let targets = iscsi::Targets::new(
            proxy.clone(),
            journal.clone(),
            flights.clone(),
            settings.clone(),
        );
        let space = self.share_space.unwrap_or_else(|| Arc::new(NodeShareSpace));
        let shares = smb::Shares::new(
            proxy.clone(),
            journal.clone(),
            paths.clone(),
            settings.clone(),
            space,
            share_space::MEASURES_AT_ONCE,
        );
        Ok(Mounter {
            inner: Arc::new(Inner {
                proxy,
                journal,
                flights,
                paths,
                disks,
                prep,
                targets,
                shares,
                settings,
            }),
        })
    }
}
