//! The node the cases run on: the fake host's latencies, the volumes and
//! the scale of a run, a node (fake proxy, host and journal folder) on
//! runtimes of its own, and the figures' arithmetic.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;

use csi_proxy_client::api::{Secret, SmbRemotePath, WindowsPath};
use csi_proxy_client::mount::{DiskSelector, Mounter, SmbCredentials};
use csi_proxy_client::testing::{
    FakeHost, FakeHostBuilder, FakeProxy, LocalEndpoints, ProxyRelease,
};
use csi_proxy_client::{CsiProxy, Operation as Op, Result};

/// Windows-like latency of each RPC the mounter sends, in ms: WMI and
/// PowerShell for the disk, volume and SMB groups, Go's own calls for
/// the filesystem group. Operations not listed wait nothing.
const LATENCIES_MS: &[(Op, u64)] = &[
    (Op::Rescan, 1_000),
    (Op::ListDiskIds, 150),
    (Op::ListDiskLocations, 150),
    (Op::GetDiskNumberByName, 150),
    (Op::FormatVolume, 800),
    (Op::NewSmbGlobalMapping, 500),
    (Op::RemoveSmbGlobalMapping, 300),
    (Op::PartitionDisk, 100),
    (Op::SetDiskState, 100),
    (Op::GetDiskState, 50),
    (Op::GetDiskStats, 50),
    (Op::ListVolumesOnDisk, 100),
    (Op::ListVolumesOnPartition, 100),
    (Op::IsVolumeFormatted, 100),
    (Op::MountVolume, 100),
    (Op::UnmountVolume, 100),
    (Op::ResizeVolume, 100),
    (Op::WriteVolumeCache, 100),
    (Op::GetVolumeStats, 50),
    (Op::GetDiskNumberFromVolumeId, 100),
    (Op::GetVolumeIdFromTargetPath, 100),
    (Op::GetClosestVolumeIdFromTargetPath, 100),
    (Op::PathExists, 20),
    (Op::Mkdir, 20),
    (Op::Rmdir, 20),
    (Op::RmdirContents, 20),
    (Op::CreateSymlink, 20),
    (Op::IsSymlink, 20),
];

/// The one share every SMB volume is a folder of, and its user.
const SHARE: &str = r"\\server\share";
const SMB_USER: &str = "storm";
const SMB_PASSWORD: &str = "storm-pw";
pub const DISK_BYTES: u64 = 10 << 30;
/// The portal and target whose login attaches the awaited disks.
pub const PORTAL: &str = "10.0.0.9";
pub const IQN: &str = "iqn.2024-01.example:storm";
/// When the awaited disks are attached, after their stages started:
/// within a poll interval, not at its edge.
pub const ATTACH_AFTER: Duration = Duration::from_millis(2_500);
/// The mounter's default poll interval, for the waiting stages.
pub const POLL: Duration = Duration::from_secs(1);
/// Publishes side by side while a journal is filled.
pub const FILLERS: usize = 8;
/// Rounds of case e, each size measured in turn in each.
pub const JOURNAL_ROUNDS: usize = 5;

/// The targets, printed beside the figures.
pub const STORM_TARGET: f64 = 1.5;
pub const RESCANS_TARGET: usize = 1;
pub const RECONCILE_TARGET: Duration = Duration::from_secs(2);
pub const JOURNAL_TARGET: f64 = 1.5;

/// How much of each case a run does.
pub struct Scale {
    pub chain_runs: usize,
    pub storm_disks: usize,
    pub storm_shares: usize,
    pub waiting: usize,
    /// Disks staged, links published (spread over them), SMB volumes
    /// staged for the reconcile's journal.
    pub reconcile: (usize, usize, usize),
    pub journal_sizes: &'static [usize],
    pub journal_pairs: usize,
}

pub const FULL: Scale = Scale {
    chain_runs: 3,
    storm_disks: 64,
    storm_shares: 256,
    waiting: 64,
    reconcile: (75, 375, 185),
    journal_sizes: &[10, 100, 1_000, 10_000],
    journal_pairs: 200,
};

pub const QUICK: Scale = Scale {
    chain_runs: 1,
    storm_disks: 16,
    storm_shares: 64,
    waiting: 16,
    reconcile: (15, 75, 37),
    journal_sizes: &[10, 100, 1_000],
    journal_pairs: 50,
};

/// The runtimes: the fake proxy's (its host's latencies sleep there)
/// and the driver's.
pub struct Runtimes {
    proxy: Runtime,
    pub driver: Runtime,
}

impl Runtimes {
    pub fn new() -> Self {
        let runtime = || {
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("a Tokio runtime")
        };
        Self {
            proxy: runtime(),
            driver: runtime(),
        }
    }
}

/// One volume of the benchmark: a disk's or an SMB share folder's.
#[derive(Clone, Copy, Debug)]
pub enum Volume {
    Disk(usize),
    Smb(usize),
}

impl Volume {
    /// Its CSI volume name.
    fn name(self) -> String {
        match self {
            Volume::Disk(n) => format!("pv-d{n}"),
            Volume::Smb(n) => format!("pv-s{n}"),
        }
    }

    pub fn page83(self) -> String {
        format!("Storm   {}", self.name())
    }

    fn share_folder(self) -> String {
        match self {
            Volume::Smb(n) => format!(r"{SHARE}\pvc-{n}"),
            Volume::Disk(_) => unreachable!("a disk volume has no share folder"),
        }
    }

    /// The staging folder's parent, which kubelet makes.
    fn staging_parent(self) -> String {
        format!(
            r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\storm\{}",
            self.name()
        )
    }

    pub fn staging(self) -> WindowsPath {
        let staging = format!(r"{}\globalmount", self.staging_parent());
        staging.parse().expect("a staging path")
    }

    /// Pod `pod`'s folder for the volume, which kubelet makes.
    fn target_parent(self, pod: usize) -> String {
        format!(
            r"C:\var\lib\kubelet\pods\pod-{pod}-{}\volumes\kubernetes.io~csi\{}",
            self.name(),
            self.name()
        )
    }

    pub fn target(self, pod: usize) -> WindowsPath {
        let target = format!(r"{}\mount", self.target_parent(pod));
        target.parse().expect("a target path")
    }

    /// The host with what the volume needs: its disk (unless it is
    /// attached later) or its share folder, and kubelet's folders.
    fn seed(self, host: FakeHostBuilder, with_disk: bool) -> FakeHostBuilder {
        let host = host.dir(&self.staging_parent()).dir(&self.target_parent(0));
        match self {
            Volume::Disk(n) if with_disk => host.disk(disk_number(n), &self.page83(), DISK_BYTES),
            Volume::Disk(_) => host,
            Volume::Smb(_) => host.share_folder(&self.share_folder()),
        }
    }

    /// `NodeStageVolume`.
    pub async fn stage(self, mounter: &Mounter) -> Result<()> {
        let staging = self.staging();
        match self {
            Volume::Disk(_) => {
                let disk = DiskSelector::page83(self.page83());
                mounter.stage_disk(&disk, &staging).await.map(drop)
            }
            Volume::Smb(_) => {
                let share = SmbRemotePath::new(self.share_folder())?;
                let credentials = SmbCredentials::new(SMB_USER, Secret::new(SMB_PASSWORD));
                (mounter.stage_smb(&self.name(), &share, &credentials, &staging))
                    .await
                    .map(drop)
            }
        }
    }

    /// `NodePublishVolume` for pod `pod`.
    pub async fn publish(self, mounter: &Mounter, pod: usize) -> Result<()> {
        (mounter.publish(&self.staging(), &self.target(pod)))
            .await
            .map(drop)
    }

    /// Stage and publish for pod 0, as kubelet calls them: how long
    /// both took.
    pub async fn chain(self, mounter: Mounter) -> Result<Duration> {
        let started = Instant::now();
        self.stage(&mounter).await?;
        self.publish(&mounter, 0).await?;
        Ok(started.elapsed())
    }
}

/// The host's number of disk volume `n` (0 is the node's OS disk).
fn disk_number(n: usize) -> u32 {
    u32::try_from(n + 1).expect("a disk number")
}

pub fn disks(count: usize) -> impl Iterator<Item = Volume> {
    (0..count).map(Volume::Disk)
}

pub fn smb_volumes(count: usize) -> impl Iterator<Item = Volume> {
    (0..count).map(Volume::Smb)
}

/// A host seeded for `volumes`, with their disks attached or not.
pub fn host_for(volumes: &[Volume], with_disks: bool) -> FakeHostBuilder {
    let host = FakeHost::builder().smb_share(SHARE, SMB_USER, SMB_PASSWORD);
    (volumes.iter()).fold(host, |host, volume| volume.seed(host, with_disks))
}

/// A node: the fake host behind a fake proxy at v1.3, and the mounter's
/// journal folder.
pub struct Node {
    pub host: FakeHost,
    fake: FakeProxy,
    endpoints: LocalEndpoints,
    pub state: tempfile::TempDir,
}

impl Node {
    /// `host` served on the proxy's runtime.
    pub fn start(runtimes: &Runtimes, host: FakeHost) -> Node {
        let endpoints = LocalEndpoints::new().expect("socket folder");
        let mut fake = FakeProxy::for_host(endpoints.transport(), &host);
        (runtimes
            .proxy
            .block_on(fake.serve_release(ProxyRelease::LATEST)))
        .expect("the fake proxy serves");
        let state = tempfile::tempdir().expect("journal folder");
        Node {
            host,
            fake,
            endpoints,
            state,
        }
    }

    /// A connected client, as a plugin's start makes.
    pub async fn connect(&self) -> CsiProxy {
        (CsiProxy::builder().transport(self.endpoints.transport()))
            .connect()
            .await
            .expect("connected")
    }

    /// A mounter with the default settings on a new client, over the
    /// node's journal.
    pub async fn mounter(&self) -> Mounter {
        Mounter::builder(self.connect().await, self.state.path())
            .build()
            .expect("mounter")
    }

    /// From now on, each call takes as long as [`LATENCIES_MS`] says.
    pub fn latencies_on(&self) {
        let table = LATENCIES_MS.iter();
        (self.host).set_latencies(table.map(|&(op, ms)| (op, Duration::from_millis(ms))));
    }

    /// RPCs the proxy received since the last call, forgotten.
    pub fn take_rpcs(&self) -> usize {
        let count = self.fake.calls().len();
        self.fake.clear_calls();
        count
    }
}

pub fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1_000.0
}

/// The `p`-th percentile (0 to 100) of `durations`, nearest rank.
pub fn percentile(durations: &mut [Duration], p: usize) -> Duration {
    durations.sort_unstable();
    let rank = (durations.len() * p).div_ceil(100).max(1);
    durations[rank - 1]
}

pub fn median(durations: &mut [Duration]) -> Duration {
    percentile(durations, 50)
}

pub fn verdict(met: bool) -> &'static str {
    match met {
        true => "met",
        false => "NOT met",
    }
}

/// How long `work` took on the driver's runtime, and its answer.
pub fn timed<T>(runtimes: &Runtimes, work: impl Future<Output = T>) -> (T, Duration) {
    let started = Instant::now();
    let answer = runtimes.driver.block_on(work);
    (answer, started.elapsed())
}

pub fn print_latencies() {
    println!("Latency per RPC at the fake host (FakeHost::set_latency); others: none");
    let mut by_ms: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
    for &(op, latency) in LATENCIES_MS {
        by_ms.entry(latency).or_default().push(op.name());
    }
    for (latency, ops) in by_ms.iter().rev() {
        println!("{latency:>6} ms  {}", ops.join(", "));
    }
    println!();
}
