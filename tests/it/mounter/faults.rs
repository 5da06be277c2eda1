//! The mounter under faults (issue 43): random kubelet-style operations on
//! five disks and on three volumes of one SMB share, through `Mounter`
//! over a fake proxy on real endpoints, with the proxy stopped and started
//! again, or the driver killed, just before or just after the n-th host
//! call of an operation, for every n in turn; driver restarts followed by
//! `reconcile`; and kubelet's retries. Between every two host calls and
//! after every operation, the node is checked against what kubelet
//! believes. `docs/testing.md` says how to run it longer.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::{Duration, Instant};

use csi_proxy_client::api::{Secret, SmbRemotePath};
use csi_proxy_client::mount::{DiskAfterUnstage, DiskSelector, Mounter, SmbCredentials};
use csi_proxy_client::testing::{FakeHost, PathEntry, ProxyRelease};
use csi_proxy_client::{Error, Operation as HostOp};
use tokio::sync::oneshot;

use super::{path, GIB};
use crate::common::node::FakeNode;

/// The seeds CI runs (`MOUNTER_FAULT_SEEDS=N` runs 1 to N).
const CI_SEEDS: u64 = 5;
/// Operations a seed, at each release (`MOUNTER_FAULT_OPS`).
const CI_OPS: usize = 50;
/// kubelet's retries of a failed operation.
const RETRIES: u32 = 5;
/// The first wait before a retry; it doubles (50 ms to 800 ms: 1.55 s in
/// all, past the 1 s for which these mounters take a format whose answer
/// was lost to be still running: kubelet's retries and the mounter's format
/// deadline and grace, 3 and 1 minutes by default, scaled down alike).
const FIRST_BACKOFF: Duration = Duration::from_millis(50);

const DISKS: usize = 5;
const SMB_VOLUMES: usize = 3;
const SHARE: &str = r"\\files\share";
/// Where a disk is staged: its plugin's folder, and a second one (the same
/// disk staged for a second staging path, as after a migration).
const STAGING_DRIVERS: [&str; 2] = ["pd", "pd-migrated"];

#[tokio::test]
async fn random_operations_converge_and_keep_the_node_right_under_proxy_and_driver_restarts() {
    let settings = Settings::from_env();
    let started = Instant::now();
    let mut total = Figures::default();
    let mut failures = Vec::new();
    for release in [ProxyRelease::V0_2_2, ProxyRelease::LATEST] {
        let mut run = Run::default();
        for &seed in &settings.seeds {
            walk(release, seed, settings.ops, &mut run).await;
        }
        println!(
            "mounter faults, CSI Proxy {release}: {}\n  fault points hit: {}",
            run.figures,
            run.coverage()
        );
        total.add(&run.figures);
        failures.append(&mut run.failures);
    }
    let summary = format!(
        "mounter faults ({}), seeds {:?}, {} operations a seed, {:.1} s: {total}",
        std::env::consts::OS,
        settings.seeds,
        settings.ops,
        started.elapsed().as_secs_f64()
    );
    println!("{summary}");
    // For CI to show: libtest keeps a passing test's output to itself.
    let file = format!(
        "{}/mounter-faults-report-{}.txt",
        env!("CARGO_TARGET_TMPDIR"),
        std::env::consts::OS
    );
    if let Err(e) = std::fs::write(&file, format!("{summary}\n")) {
        eprintln!("mounter faults: could not write {file}: {e}");
    }
    for failure in &failures {
        println!("  {failure}");
    }
    if !failures.is_empty() {
        println!(
            "replay, each operation and attempt printed: {} \
             cargo test --test it mounter::faults -- --nocapture",
            settings.replay
        );
    }
    assert_eq!(total.not_converged, 0, "operations that did not converge");
    assert_eq!(total.invariant_breaks, 0, "invariant breaks");
}

// ---- settings and figures ----------------------------------------------------

struct Settings {
    seeds: Vec<u64>,
    ops: usize,
    /// The variables that run this again: a walk's faults depend on the
    /// walks of the seeds before it (fault points are dealt in turn).
    replay: String,
}

impl Settings {
    /// `MOUNTER_FAULT_SEED=S` (seed S alone), `MOUNTER_FAULT_SEEDS=N` (seeds
    /// 1 to N), `MOUNTER_FAULT_OPS=M` (M operations a seed).
    fn from_env() -> Settings {
        let number = |name: &str| {
            std::env::var(name).ok().map(|text| {
                text.trim()
                    .parse::<u64>()
                    .unwrap_or_else(|_| panic!("{name}={text} is not a number"))
            })
        };
        let ops = number("MOUNTER_FAULT_OPS").map_or(CI_OPS, |ops| ops as usize);
        let (seeds, replay) = match (number("MOUNTER_FAULT_SEED"), number("MOUNTER_FAULT_SEEDS")) {
            (Some(seed), _) => (vec![seed], format!("MOUNTER_FAULT_SEED={seed}")),
            (None, Some(seeds)) => (
                (1..=seeds).collect(),
                format!("MOUNTER_FAULT_SEEDS={seeds}"),
            ),
            (None, None) => (
                (1..=CI_SEEDS).collect(),
                format!("MOUNTER_FAULT_SEEDS={CI_SEEDS}"),
            ),
        };
        let replay = format!("{replay} MOUNTER_FAULT_OPS={ops} MOUNTER_FAULT_TRACE=1");
        Settings { seeds, ops, replay }
    }
}

#[derive(Debug, Default)]
struct Figures {
    operations: usize,
    attempts: usize,
    host_calls: usize,
    faults: usize,
    proxy_restarts: usize,
    driver_restarts: usize,
    converged: usize,
    not_converged: usize,
    invariant_breaks: usize,
}

impl Figures {
    fn add(&mut self, other: &Figures) {
        self.operations += other.operations;
        self.attempts += other.attempts;
        self.host_calls += other.host_calls;
        self.faults += other.faults;
        self.proxy_restarts += other.proxy_restarts;
        self.driver_restarts += other.driver_restarts;
        self.converged += other.converged;
        self.not_converged += other.not_converged;
        self.invariant_breaks += other.invariant_breaks;
    }
}

impl fmt::Display for Figures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} operations ({} attempts, {} host calls, {} faults), {} proxy restarts, \
             {} driver restarts, {} converged, {} not converged, {} invariant breaks",
            self.operations,
            self.attempts,
            self.host_calls,
            self.faults,
            self.proxy_restarts,
            self.driver_restarts,
            self.converged,
            self.not_converged,
            self.invariant_breaks
        )
    }
}

/// What the seeds of one release share: the figures, the failures, and
/// which fault points each kind of operation has had.
#[derive(Default)]
struct Run {
    figures: Figures,
    failures: Vec<String>,
    /// Per kind of operation: the next fault point once every one was hit
    /// (before call 1, after call 1, before call 2, ...).
    cursors: BTreeMap<&'static str, usize>,
    /// Per kind: the most host calls a first attempt without a fault made.
    most_calls: BTreeMap<&'static str, usize>,
    /// Fault points whose host call came: kind, n, after its work.
    hit: BTreeSet<(&'static str, usize, bool)>,
}

impl Run {
    /// Per kind: the fault points hit, of those its host calls offer.
    fn coverage(&self) -> String {
        let mut total = (0, 0);
        let mut kinds = Vec::new();
        for (&kind, &calls) in &self.most_calls {
            let hit = (self.hit.iter())
                .filter(|(k, n, _)| *k == kind && *n <= calls)
                .count();
            kinds.push(format!("{kind} {hit}/{}", 2 * calls));
            total = (total.0 + hit, total.1 + 2 * calls);
        }
        format!("{} of {} ({})", total.0, total.1, kinds.join(", "))
    }

    /// The fault points of `kind` not hit yet, in order.
    fn unhit(&self, kind: &'static str) -> Vec<(usize, bool)> {
        let calls = self.most_calls.get(kind).copied().unwrap_or(0);
        (1..=calls)
            .flat_map(|n| [(n, false), (n, true)])
            .filter(|&(n, after)| !self.hit.contains(&(kind, n, after)))
            .collect()
    }
}

// ---- the pseudo-random walk --------------------------------------------------

/// splitmix64: a small, fixed generator, so that a seed replays the same
/// walk.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

// ---- the node's names --------------------------------------------------------

fn disk_number(disk: usize) -> u32 {
    disk as u32 + 1
}

fn page83(disk: usize) -> String {
    format!("Google  pvc-d{disk}")
}

fn staging(disk: usize, at: usize) -> String {
    let driver = STAGING_DRIVERS[at];
    format!(r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\{driver}\pv-d{disk}\globalmount")
}

fn target(disk: usize) -> String {
    format!(r"C:\var\lib\kubelet\pods\pod-d{disk}\volumes\kubernetes.io~csi\pv-d{disk}\mount")
}

fn smb_volume(vol: usize) -> String {
    format!("pv-s{vol}")
}

fn smb_remote(vol: usize) -> String {
    format!(r"{SHARE}\pv-s{vol}")
}

fn smb_staging(vol: usize) -> String {
    format!(r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\smb\pv-s{vol}\globalmount")
}

fn parent(path: &str) -> &str {
    &path[..path.rfind('\\').expect("a path with a parent")]
}

// ---- operations --------------------------------------------------------------

/// A CSI node call, as kubelet makes it, or the `reconcile` of a driver
/// that restarted.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Op {
    StageDisk {
        disk: usize,
        at: usize,
    },
    UnstageDisk {
        disk: usize,
        at: usize,
        offline: bool,
    },
    Publish {
        disk: usize,
        at: usize,
    },
    Unpublish {
        disk: usize,
    },
    /// Through the staging path `at`, or (`None`) the pod's link.
    Stats {
        disk: usize,
        at: Option<usize>,
    },
    /// With the size the controller grew the disk to, if it did.
    Expand {
        disk: usize,
        at: usize,
        required: Option<u64>,
    },
    StageSmb {
        vol: usize,
    },
    UnstageSmb {
        vol: usize,
    },
    Reconcile,
}

impl Op {
    /// Its kind, for the fault points taken in turn: a disk's first stage
    /// (partition and format) is a kind of its own.
    fn kind(&self, raw_disk: bool) -> &'static str {
        match self {
            Op::StageDisk { .. } if raw_disk => "stage_disk (raw)",
            Op::StageDisk { .. } => "stage_disk",
            Op::UnstageDisk { offline: true, .. } => "unstage_disk (offline)",
            Op::UnstageDisk { .. } => "unstage_disk",
            Op::Publish { .. } => "publish",
            Op::Unpublish { .. } => "unpublish",
            Op::Stats { .. } => "stats",
            Op::Expand { .. } => "expand",
            Op::StageSmb { .. } => "stage_smb",
            Op::UnstageSmb { .. } => "unstage_smb",
            Op::Reconcile => "reconcile",
        }
    }

    /// The disk it works on.
    fn disk(&self) -> Option<usize> {
        match *self {
            Op::StageDisk { disk, .. }
            | Op::UnstageDisk { disk, .. }
            | Op::Publish { disk, .. }
            | Op::Unpublish { disk }
            | Op::Stats { disk, .. }
            | Op::Expand { disk, .. } => Some(disk),
            _ => None,
        }
    }

    /// The staging path whose mount it may change.
    fn staging_changed(&self) -> Option<(usize, usize)> {
        match *self {
            Op::StageDisk { disk, at } | Op::UnstageDisk { disk, at, .. } => Some((disk, at)),
            _ => None,
        }
    }

    /// The SMB volume whose stage it changes.
    fn smb_changed(&self) -> Option<usize> {
        match *self {
            Op::StageSmb { vol } | Op::UnstageSmb { vol } => Some(vol),
            _ => None,
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = |at: usize| STAGING_DRIVERS[at];
        match *self {
            Op::StageDisk { disk, at: a } => write!(f, "stage_disk(d{disk} at {})", at(a)),
            Op::UnstageDisk {
                disk,
                at: a,
                offline,
            } => write!(f, "unstage_disk(d{disk} at {}, offline={offline})", at(a)),
            Op::Publish { disk, at: a } => write!(f, "publish(d{disk} from {})", at(a)),
            Op::Unpublish { disk } => write!(f, "unpublish(d{disk})"),
            Op::Stats { disk, at: Some(a) } => write!(f, "stats(d{disk} at {})", at(a)),
            Op::Stats { disk, at: None } => write!(f, "stats(d{disk} through the pod's link)"),
            Op::Expand {
                disk,
                at: a,
                required,
            } => write!(f, "expand(d{disk} at {}, required {required:?})", at(a)),
            Op::StageSmb { vol } => write!(f, "stage_smb(pv-s{vol})"),
            Op::UnstageSmb { vol } => write!(f, "unstage_smb(pv-s{vol})"),
            Op::Reconcile => write!(f, "reconcile"),
        }
    }
}

/// What an operation answered that the test checks.
#[derive(Debug)]
enum Reply {
    Done,
    Stats { total: u64, used: u64 },
    Expanded { total: u64 },
    Reconciled { failed: Vec<String> },
}

/// Runs `op` with `mounter` (on the driver's runtime).
async fn perform(mounter: Mounter, op: Op, live: BTreeSet<String>) -> Result<Reply, Error> {
    let credentials = SmbCredentials::new("user", Secret::new("pw"));
    match op {
        Op::StageDisk { disk, at } => {
            let selector = DiskSelector::page83(page83(disk));
            (mounter
                .stage_disk(&selector, &path(&staging(disk, at)))
                .await)
                .map(|_| Reply::Done)
        }
        Op::UnstageDisk { disk, at, offline } => (mounter)
            .unstage_disk(
                &path(&staging(disk, at)),
                match offline {
                    true => DiskAfterUnstage::TakeOffline,
                    false => DiskAfterUnstage::KeepOnline,
                },
            )
            .await
            .map(|_| Reply::Done),
        Op::Publish { disk, at } => (mounter)
            .publish(&path(&staging(disk, at)), &path(&target(disk)))
            .await
            .map(|_| Reply::Done),
        Op::Unpublish { disk } => {
            (mounter.unpublish(&path(&target(disk))).await).map(|_| Reply::Done)
        }
        Op::Stats { disk, at } => {
            let at = at.map_or_else(|| target(disk), |at| staging(disk, at));
            let selector = DiskSelector::page83(page83(disk));
            let stats = mounter.stats(&selector, &path(&at)).await?;
            Ok(Reply::Stats {
                total: stats.total_bytes,
                used: stats.used_bytes,
            })
        }
        Op::Expand { disk, at, required } => {
            let (selector, at) = (DiskSelector::page83(page83(disk)), path(&staging(disk, at)));
            let expanded = mounter.expand(&selector, &at, required).await?;
            Ok(Reply::Expanded {
                total: expanded.total_bytes,
            })
        }
        Op::StageSmb { vol } => {
            let share = SmbRemotePath::new(smb_remote(vol)).unwrap();
            let at = path(&smb_staging(vol));
            (mounter
                .stage_smb(&smb_volume(vol), &share, &credentials, &at)
                .await)
                .map(|_| Reply::Done)
        }
        Op::UnstageSmb { vol } => (mounter)
            .unstage_smb(&smb_volume(vol), &path(&smb_staging(vol)))
            .await
            .map(|_| Reply::Done),
        Op::Reconcile => {
            let report = mounter
                .reconcile(move |volume| live.contains(volume))
                .await?;
            let failed = (report.failed.iter())
                .map(|(what, error)| format!("{what}: {error}"))
                .collect();
            Ok(Reply::Reconciled { failed })
        }
    }
}

// ---- faults ------------------------------------------------------------------

/// Where an operation's first attempt is cut: at its `n`-th host call,
/// before or after the host's work, by a proxy restart or by killing the
/// driver.
#[derive(Clone, Copy, Debug)]
struct Fault {
    n: usize,
    after_work: bool,
    kill_driver: bool,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kill_driver {
            true => "driver killed",
            false => "proxy restarted",
        };
        let when = match self.after_work {
            true => "after",
            false => "before",
        };
        write!(f, "{what} {when} host call {}", self.n)
    }
}

/// How an attempt ended.
enum Outcome {
    Done(Reply),
    Failed {
        error: String,
        retryable: bool,
    },
    /// The driver was killed under it.
    Killed,
}

fn outcome_text(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Done(reply) => format!("done: {reply:?}"),
        Outcome::Failed { error, retryable } => format!("failed (retryable: {retryable}): {error}"),
        Outcome::Killed => "the driver was killed".to_owned(),
    }
}

/// A driver process: its own runtime (killed with everything on it) and a
/// mounter on the same journal folder as the drivers before it.
struct Driver {
    runtime: Option<tokio::runtime::Runtime>,
    mounter: Mounter,
}

impl Driver {
    async fn start(node: &FakeNode, state: &std::path::Path) -> Driver {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (client, state) = (node.client_builder(), state.to_owned());
        let mounter = runtime.spawn(async move {
            let proxy = client.connect().await.unwrap();
            Mounter::builder(proxy, state)
                .poll_interval(Duration::from_millis(10))
                .disk_wait(Duration::from_millis(300))
                .volume_wait(Duration::from_secs(2))
                .format_deadline(Duration::from_secs(1))
                .format_grace(Duration::ZERO)
                .build()
                .unwrap()
        });
        let mounter = mounter.await.unwrap();
        Driver {
            runtime: Some(runtime),
            mounter,
        }
    }

    fn spawn(
        &self,
        op: Op,
        live: BTreeSet<String>,
    ) -> tokio::task::JoinHandle<Result<Reply, Error>> {
        let runtime = self.runtime.as_ref().expect("a driver that runs");
        runtime.spawn(perform(self.mounter.clone(), op, live))
    }

    /// The process dies: every task of its runtime is dropped where it
    /// stands.
    fn kill(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The next message of a hold, if one is armed.
async fn next_of<T>(hold: &mut Option<oneshot::Receiver<T>>) -> Option<T> {
    match hold {
        Some(receiver) => receiver.await.ok(),
        None => std::future::pending().await,
    }
}

// ---- what kubelet believes ---------------------------------------------------

#[derive(Default)]
struct Model {
    /// Per disk: the staging paths it is staged at.
    staged: [BTreeSet<usize>; DISKS],
    /// Per disk: the staging path its pod's link was published from.
    published: [Option<usize>; DISKS],
    smb_staged: BTreeSet<usize>,
    /// The SMB volumes staged since the share was last unused: before
    /// v1.1.2 each has its own mapping, kept until the share is unused.
    smb_mapped_since: BTreeSet<usize>,
    /// Per disk: the `FormatVolume` calls that went to work.
    formats: [usize; DISKS],
    /// Per disk: `PartitionDisk` answers lost, each of which allows one
    /// more `PartitionDisk` of a disk partitioned already (the mounter
    /// sends a lost partition once more: docs/mounting.md, rule 7).
    partition_resends: [usize; DISKS],
}

impl Model {
    fn apply(&mut self, op: &Op) {
        match *op {
            Op::StageDisk { disk, at } => {
                self.staged[disk].insert(at);
            }
            Op::UnstageDisk { disk, at, .. } => {
                self.staged[disk].remove(&at);
            }
            Op::Publish { disk, at } => self.published[disk] = Some(at),
            Op::Unpublish { disk } => self.published[disk] = None,
            Op::StageSmb { vol } => {
                self.smb_staged.insert(vol);
                self.smb_mapped_since.insert(vol);
            }
            Op::UnstageSmb { vol } => {
                self.smb_staged.remove(&vol);
                if self.smb_staged.is_empty() {
                    self.smb_mapped_since.clear();
                }
            }
            Op::Stats { .. } | Op::Expand { .. } | Op::Reconcile => {}
        }
    }
}

// ---- one walk ----------------------------------------------------------------

/// One seed at one release: `ops` operations on a fresh node.
async fn walk(release: ProxyRelease, seed: u64, ops: usize, run: &mut Run) {
    let mut builder = FakeHost::builder().smb_share(SHARE, "user", "pw");
    for disk in 0..DISKS {
        builder = builder
            .disk(disk_number(disk), &page83(disk), 10 * GIB)
            .dir(parent(&target(disk)));
        for at in 0..STAGING_DRIVERS.len() {
            builder = builder.dir(parent(&staging(disk, at)));
        }
    }
    for vol in 0..SMB_VOLUMES {
        builder = (builder.share_folder(&smb_remote(vol))).dir(parent(&smb_staging(vol)));
    }
    let host = builder.build();
    let node = FakeNode::at(release, &host).await;
    let state = tempfile::tempdir().unwrap();
    let driver = Driver::start(&node, state.path()).await;
    let mut world = World {
        release,
        seed,
        rng: SplitMix64(seed),
        host,
        node,
        state,
        driver,
        model: Model::default(),
        run,
        index: 0,
        current: None,
        fault: None,
        stopped: false,
        trace: std::env::var_os("MOUNTER_FAULT_TRACE").is_some(),
    };
    for index in 1..=ops {
        world.index = index;
        let op = world.choose();
        if op == Op::Reconcile {
            // The driver restarts (an upgrade, a node drain), then
            // reconciles before it serves kubelet.
            world.run.figures.driver_restarts += 1;
            world.driver.kill();
            world.driver = Driver::start(&world.node, world.state.path()).await;
        }
        world.run_op(op).await;
        if world.stopped {
            let at = format!("{release} seed {seed}");
            (world.run.failures).push(format!("{at}: walk stopped at operation {index}"));
            break;
        }
    }
    world.driver.kill();
    world.node.fake.shutdown().await;
}

struct World<'r> {
    release: ProxyRelease,
    seed: u64,
    rng: SplitMix64,
    host: FakeHost,
    node: FakeNode,
    state: tempfile::TempDir,
    driver: Driver,
    model: Model,
    run: &'r mut Run,
    /// The operation's number in the walk.
    index: usize,
    /// The operation under way (kept through the reconcile of a driver
    /// killed under it).
    current: Option<Op>,
    fault: Option<Fault>,
    /// A failure was found: the rest of the walk would only repeat it.
    stopped: bool,
    /// `MOUNTER_FAULT_TRACE`: print each operation and attempt.
    trace: bool,
}

impl World<'_> {
    /// The next operation, as kubelet could send it now (or a driver
    /// restart: `Reconcile`).
    fn choose(&mut self) -> Op {
        let mut choices: Vec<(u64, Op)> = vec![(3, Op::Reconcile)];
        for disk in 0..DISKS {
            let staged = self.model.staged[disk].clone();
            let published = self.model.published[disk];
            for at in 0..STAGING_DRIVERS.len() {
                if staged.contains(&at) {
                    let offline = self.rng.chance(70);
                    if published != Some(at) {
                        choices.push((4, Op::UnstageDisk { disk, at, offline }));
                    }
                    choices.push((1, Op::StageDisk { disk, at }));
                } else {
                    let weight = match (at, staged.is_empty()) {
                        (0, _) => 6,
                        (_, true) => 1,
                        (_, false) => 3,
                    };
                    choices.push((weight, Op::StageDisk { disk, at }));
                }
            }
            if let Some(&at) = staged.iter().next() {
                if published.is_none() {
                    choices.push((4, Op::Publish { disk, at }));
                }
                let stats = Op::Stats { disk, at: Some(at) };
                let required = None;
                choices.extend([(2, stats), (2, Op::Expand { disk, at, required })]);
            }
            if published.is_some() {
                choices.push((3, Op::Unpublish { disk }));
                choices.push((2, Op::Stats { disk, at: None }));
            }
        }
        for vol in 0..SMB_VOLUMES {
            if self.model.smb_staged.contains(&vol) {
                choices.push((4, Op::UnstageSmb { vol }));
                choices.push((1, Op::StageSmb { vol }));
            } else {
                choices.push((5, Op::StageSmb { vol }));
            }
        }
        let mut pick = self.rng.below(choices.iter().map(|(w, _)| w).sum());
        let mut op = Op::Reconcile;
        for (weight, choice) in choices {
            if pick < weight {
                op = choice;
                break;
            }
            pick -= weight;
        }
        if let Op::Expand { disk, required, .. } = &mut op {
            if self.rng.chance(50) {
                // The controller grew the disk first.
                let number = disk_number(*disk);
                let size = self.host.disk(number).unwrap().size_bytes + GIB;
                assert!(self.host.set_disk_size(number, size));
                *required = Some(size);
            }
        }
        op
    }

    /// The fault for `op`'s first attempt: the first point of its kind
    /// not hit yet (before or after host call n), or, once all were, the
    /// next in turn for two operations in three; the driver killed one
    /// time in five. The first operation of a kind runs without one, to
    /// count its host calls.
    fn choose_fault(&mut self, op: &Op) -> Option<Fault> {
        let kind = self.kind(op);
        let calls = self.run.most_calls.get(kind).copied().unwrap_or(0);
        if calls == 0 {
            return None;
        }
        let (n, after_work) = match self.run.unhit(kind).first() {
            Some(&point) => point,
            None if self.rng.chance(33) => return None,
            None => {
                let cursor = self.run.cursors.entry(kind).or_default();
                let point = *cursor % (2 * calls);
                *cursor += 1;
                (point / 2 + 1, point % 2 == 1)
            }
        };
        Some(Fault {
            n,
            after_work,
            kill_driver: self.rng.chance(20),
        })
    }

    fn kind(&self, op: &Op) -> &'static str {
        let raw = (op.disk()).is_some_and(|disk| {
            !(self.host.disk(disk_number(disk))).is_some_and(|d| d.partitioned)
        });
        op.kind(raw)
    }

    /// The SMB volumes kubelet still has: staged, or being staged or
    /// unstaged.
    fn live(&self) -> BTreeSet<String> {
        let mut live: BTreeSet<String> = self
            .model
            .smb_staged
            .iter()
            .map(|&v| smb_volume(v))
            .collect();
        if let Some(vol) = self.current.as_ref().and_then(Op::smb_changed) {
            live.insert(smb_volume(vol));
        }
        live
    }

    /// Where a failure happened, to replay it.
    fn context(&self) -> String {
        let op = self
            .current
            .as_ref()
            .map_or("-".to_owned(), ToString::to_string);
        let fault = self.fault.map_or("no fault".to_owned(), |f| f.to_string());
        format!(
            "{} seed {} op #{} {op} ({fault})",
            self.release, self.seed, self.index
        )
    }

    fn invariant_break(&mut self, what: String) {
        let failure = format!("{}: INVARIANT: {what}", self.context());
        if self.trace {
            println!("    {failure}");
        }
        self.run.failures.push(failure);
        self.run.figures.invariant_breaks += 1;
        self.stopped = true;
    }

    /// `op`, with its first attempt cut by a fault, retried as kubelet
    /// does until it succeeds (at most `RETRIES` times); then the node is
    /// checked.
    async fn run_op(&mut self, op: Op) {
        self.run.figures.operations += 1;
        let fault = self.choose_fault(&op);
        let kind = self.kind(&op);
        self.current = Some(op.clone());
        self.fault = fault;
        if self.trace {
            println!("{}", self.context());
        }
        let mut faulted = false;
        let mut last = String::new();
        for attempt in 0..=RETRIES {
            if attempt > 0 {
                tokio::time::sleep(FIRST_BACKOFF * 2u32.pow(attempt - 1)).await;
            }
            let cut = if attempt == 0 { fault } else { None };
            let (outcome, calls) = self.attempt(&op, cut, true).await;
            if attempt == 0 {
                match fault.filter(|f| f.n <= calls) {
                    Some(f) => {
                        self.run.hit.insert((kind, f.n, f.after_work));
                        faulted = true;
                    }
                    None => {
                        let most = self.run.most_calls.entry(kind).or_default();
                        *most = (*most).max(calls);
                    }
                }
            }
            if self.trace {
                println!(
                    "    attempt {attempt}: {calls} host calls, {}",
                    outcome_text(&outcome)
                );
            }
            match outcome {
                Outcome::Done(reply) => {
                    self.check_reply(&op, reply);
                    self.model.apply(&op);
                    self.check_node();
                    self.run.figures.converged += 1;
                    self.current = None;
                    return;
                }
                Outcome::Killed => {
                    last = "the driver was killed".to_owned();
                    if !self.restart_after_kill().await {
                        return;
                    }
                }
                Outcome::Failed { error, retryable } => {
                    let again = retryable || faulted;
                    last = error;
                    if !again {
                        break;
                    }
                }
            }
        }
        let failure = format!("{}: NOT CONVERGED: {last}", self.context());
        self.run.failures.push(failure);
        self.run.figures.not_converged += 1;
        self.stopped = true;
    }

    /// A new driver after one was killed, and its `reconcile` (retried as
    /// a driver's start is, with no fault). Whether it converged.
    async fn restart_after_kill(&mut self) -> bool {
        self.driver = Driver::start(&self.node, self.state.path()).await;
        let mut last = String::new();
        for attempt in 0..=RETRIES {
            if attempt > 0 {
                tokio::time::sleep(FIRST_BACKOFF * 2u32.pow(attempt - 1)).await;
            }
            let (outcome, calls) = self.attempt(&Op::Reconcile, None, false).await;
            if self.trace {
                let outcome = outcome_text(&outcome);
                println!("    the new driver's reconcile: {calls} host calls, {outcome}");
            }
            match outcome {
                Outcome::Done(reply) => {
                    self.check_reply(&Op::Reconcile, reply);
                    return true;
                }
                Outcome::Killed => unreachable!("no fault, no kill"),
                Outcome::Failed { error, .. } => last = error,
            }
        }
        let failure = format!(
            "{}: NOT CONVERGED: the reconcile after the driver was killed: {last}",
            self.context()
        );
        self.run.failures.push(failure);
        self.run.figures.not_converged += 1;
        self.stopped = true;
        false
    }

    /// One attempt of `op`, every host call of it held for a look at the
    /// node before it goes on, and the call `fault` names cut. How it
    /// ended, and how many host calls it made.
    async fn attempt(&mut self, op: &Op, fault: Option<Fault>, counted: bool) -> (Outcome, usize) {
        if counted {
            self.run.figures.attempts += 1;
        }
        let mut task = self.driver.spawn(op.clone(), self.live());
        let mut calls = 0;
        let mut before = Some(self.host.hold_call(1));
        let answer_of = |n: usize| fault.is_some_and(|f| f.after_work && f.n == n);
        let mut after = answer_of(1).then(|| self.host.hold_answer(1));
        enum Event<J> {
            Joined(J),
            Before(Option<(HostOp, oneshot::Sender<()>)>),
            After(Option<(HostOp, oneshot::Sender<()>)>),
        }
        let joined = loop {
            let event = tokio::select! {
                joined = &mut task => Event::Joined(joined),
                held = next_of(&mut before) => Event::Before(held),
                held = next_of(&mut after) => Event::After(held),
            };
            match event {
                Event::Joined(joined) => break joined,
                Event::Before(None) => before = None,
                Event::After(None) => after = None,
                Event::Before(Some((host_op, go))) => {
                    calls += 1;
                    self.run.figures.host_calls += 1;
                    // The next call's holds, before this one goes on.
                    before = Some(self.host.hold_call(1));
                    if answer_of(calls + 1) {
                        after = Some(self.host.hold_answer(1));
                    }
                    let cut = fault.filter(|f| f.n == calls && !f.after_work);
                    self.check_between(op, calls, host_op, cut.is_none());
                    match cut {
                        Some(fault) => self.cut(fault, host_op, go).await,
                        None => {
                            let _ = go.send(());
                        }
                    }
                }
                Event::After(Some((host_op, go))) => {
                    after = None;
                    if host_op == HostOp::PartitionDisk {
                        if let Some(disk) = op.disk() {
                            self.model.partition_resends[disk] += 1;
                        }
                    }
                    let fault = fault.expect("a hold after the work only for a fault");
                    self.cut(fault, host_op, go).await;
                }
            }
        };
        drop((before, after));
        let killed = fault.is_some_and(|f| f.kill_driver && f.n <= calls);
        let outcome = match joined {
            // It may have ended while its runtime was shutting down.
            _ if killed => Outcome::Killed,
            Ok(Ok(reply)) => Outcome::Done(reply),
            Ok(Err(error)) => Outcome::Failed {
                retryable: error.is_retryable(),
                error: error.to_string(),
            },
            Err(join) if join.is_cancelled() => Outcome::Killed,
            Err(join) => Outcome::Failed {
                error: format!("the operation panicked: {join}"),
                retryable: false,
            },
        };
        (outcome, calls)
    }

    /// The fault: the proxy stops (its connections break, the held call's
    /// answer is lost) and starts again, or the driver dies. A call held
    /// before its work is let go without it.
    async fn cut(&mut self, fault: Fault, host_op: HostOp, go: oneshot::Sender<()>) {
        self.run.figures.faults += 1;
        if self.trace {
            println!("    {fault}: {}", host_op.name());
        }
        if fault.kill_driver {
            self.run.figures.driver_restarts += 1;
            self.driver.kill();
        } else {
            self.run.figures.proxy_restarts += 1;
            self.node.fake.stop_all().await;
            let down = Duration::from_millis(self.rng.below(20));
            tokio::time::sleep(down).await;
            self.node.fake.restart(self.release.served()).await.unwrap();
        }
        drop(go);
    }

    // ---- the invariants ------------------------------------------------------

    /// The node between two host calls of `op` (before call `call`, a
    /// `host_op`, which goes to work when `works`): what `op` does not
    /// change stays as kubelet left it, and no volume is formatted or
    /// partitioned twice.
    fn check_between(&mut self, op: &Op, call: usize, host_op: HostOp, works: bool) {
        if self.stopped {
            return;
        }
        // Through the reconcile of a driver killed under an operation,
        // that operation is the one under way.
        let changing = self.current.clone().unwrap_or_else(|| op.clone());
        let at = format!("before host call {call} ({})", host_op.name());
        let mut breaks = Vec::new();
        if works && matches!(host_op, HostOp::FormatVolume | HostOp::PartitionDisk) {
            breaks.extend(self.check_format_or_partition(&changing, host_op));
        }
        for disk in 0..DISKS {
            for &staged_at in &self.model.staged[disk] {
                if changing.staging_changed() == Some((disk, staged_at)) {
                    continue;
                }
                breaks.extend(self.check_staged_disk(disk, staged_at));
            }
        }
        let changed = changing.smb_changed();
        for &vol in self
            .model
            .smb_staged
            .iter()
            .filter(|&&v| Some(v) != changed)
        {
            let key = self.mapping_key(vol);
            if self.host.smb_mapping_status(&key).is_none() {
                breaks.push(format!("the mapping {key} is gone while pv-s{vol} uses it"));
            }
        }
        for what in breaks {
            self.invariant_break(format!("{at}: {what}"));
        }
    }

    fn check_format_or_partition(&mut self, changing: &Op, host_op: HostOp) -> Option<String> {
        let Some(disk) = changing
            .disk()
            .filter(|_| matches!(changing, Op::StageDisk { .. }))
        else {
            return Some(format!("{} sent by {changing}", host_op.name()));
        };
        let number = disk_number(disk);
        if host_op == HostOp::FormatVolume {
            self.model.formats[disk] += 1;
            let formatted = self.volume_of(disk).is_some_and(|(_, v)| v.formatted);
            return (formatted || self.model.formats[disk] > 1).then(|| {
                let formats = self.model.formats[disk];
                format!("disk d{disk}'s volume formatted twice ({formats} formats sent)")
            });
        }
        if !self.host.disk(number).is_some_and(|d| d.partitioned) {
            return None;
        }
        if self.model.partition_resends[disk] > 0 {
            // The documented resend of a partition whose answer was lost.
            self.model.partition_resends[disk] -= 1;
            return None;
        }
        Some(format!("disk d{disk} partitioned twice"))
    }

    /// Disk `disk` staged at `at`: online, its volume mounted there.
    fn check_staged_disk(&self, disk: usize, at: usize) -> Vec<String> {
        let mut breaks = Vec::new();
        let number = disk_number(disk);
        if !self.host.disk(number).is_some_and(|d| d.online) {
            breaks.push(format!(
                "disk d{disk} is offline while staged at {}",
                STAGING_DRIVERS[at]
            ));
        }
        let volume = self.volume_of(disk).map(|(id, _)| id);
        let found = self.host.entry(&staging(disk, at));
        if !matches!((&found, &volume), (Some(PathEntry::MountPoint(there)), Some(v)) if there == v)
        {
            breaks.push(format!(
                "disk d{disk} staged at {} but {found:?} is there",
                STAGING_DRIVERS[at]
            ));
        }
        breaks
    }

    /// The key of SMB volume `vol`'s mapping, as the release keys it.
    fn mapping_key(&self, vol: usize) -> String {
        match self.release >= ProxyRelease::V1_1_2 {
            true => SHARE.to_lowercase(),
            false => smb_remote(vol).to_lowercase(),
        }
    }

    fn volume_of(
        &self,
        disk: usize,
    ) -> Option<(
        csi_proxy_client::api::VolumeId,
        csi_proxy_client::testing::FakeVolume,
    )> {
        (self.host.volumes().into_iter()).find(|(_, v)| v.disk == disk_number(disk))
    }

    /// What `op` answered is right.
    fn check_reply(&mut self, op: &Op, reply: Reply) {
        let volume = op.disk().and_then(|disk| self.volume_of(disk));
        let wrong = match (op, reply) {
            (Op::Stats { .. }, Reply::Stats { total, used }) => {
                let (_, v) = volume.expect("a staged disk has a volume");
                (total != v.size_bytes || used != v.used_bytes).then(|| {
                    format!(
                        "stats answered {total} total, {used} used; the volume has {} and {}",
                        v.size_bytes, v.used_bytes
                    )
                })
            }
            (Op::Expand { disk, required, .. }, Reply::Expanded { total }) => {
                let (_, v) = volume.expect("a staged disk has a volume");
                let disk_size = self.host.disk(disk_number(*disk)).unwrap().size_bytes;
                let full = disk_size - (1 << 20);
                if total != v.size_bytes {
                    Some(format!(
                        "expand answered {total}; the volume has {}",
                        v.size_bytes
                    ))
                } else if required.is_some() && v.size_bytes != full {
                    Some(format!(
                        "expand left the volume at {total} on a disk of {disk_size}"
                    ))
                } else {
                    None
                }
            }
            (Op::Reconcile, Reply::Reconciled { failed }) => {
                (!failed.is_empty()).then(|| format!("reconcile failed items: {failed:?}"))
            }
            (_, Reply::Done) => None,
            (op, reply) => Some(format!("{op} answered {reply:?}")),
        };
        if let Some(wrong) = wrong {
            self.invariant_break(wrong);
        }
    }

    /// The node after an operation converged: exactly what kubelet
    /// believes is staged and published.
    fn check_node(&mut self) {
        if self.stopped {
            return;
        }
        let mut breaks = Vec::new();
        // Mounts: exactly the staged disks' volumes at their staging paths.
        let mut expected = BTreeSet::new();
        for disk in 0..DISKS {
            for &at in &self.model.staged[disk] {
                expected.insert((disk_number(disk), staging(disk, at).to_lowercase()));
                breaks.extend(self.check_staged_disk(disk, at));
            }
        }
        let mounted: BTreeSet<(u32, String)> = (self.host.volumes().into_values())
            .flat_map(|v| {
                v.mounts
                    .into_iter()
                    .map(move |m| (v.disk, m.to_lowercase()))
            })
            .collect();
        if mounted != expected {
            breaks.push(format!("mounts {mounted:?}, staged {expected:?}"));
        }
        // SMB mappings: the shares of the staged volumes, keyed as the
        // release keys them. Before v1.1.2 each volume's path is mapped
        // and kept until the share is unused (docs/mounting.md).
        let mappings: BTreeSet<String> = self.host.smb_mappings().into_iter().collect();
        let needed: BTreeSet<String> = (self.model.smb_staged.iter())
            .map(|&v| self.mapping_key(v))
            .collect();
        let allowed: BTreeSet<String> = (self.model.smb_mapped_since.iter())
            .map(|&v| self.mapping_key(v))
            .collect();
        if !needed.is_subset(&mappings) || !mappings.is_subset(&allowed) {
            breaks.push(format!(
                "SMB mappings {mappings:?}, needed {needed:?}, allowed {allowed:?}"
            ));
        }
        for vol in 0..SMB_VOLUMES {
            let found = self.host.entry(&smb_staging(vol));
            let linked = matches!(&found, Some(PathEntry::Symlink(to)) if to.eq_ignore_ascii_case(&smb_remote(vol)));
            let staged = self.model.smb_staged.contains(&vol);
            if linked != staged {
                breaks.push(format!(
                    "pv-s{vol} staged: {staged}, its staging path: {found:?}"
                ));
            }
        }
        // Pods' links: to the staging path they were published from.
        for disk in 0..DISKS {
            let found = self.host.entry(&target(disk));
            let right = match self.model.published[disk] {
                Some(at) => {
                    matches!(&found, Some(PathEntry::Symlink(to)) if to.eq_ignore_ascii_case(&staging(disk, at)))
                }
                None => !matches!(found, Some(PathEntry::Symlink(_))),
            };
            if !right {
                let published = self.model.published[disk].map(|at| STAGING_DRIVERS[at]);
                breaks.push(format!(
                    "d{disk} published from {published:?}, its pod's target: {found:?}"
                ));
            }
        }
        for what in breaks {
            self.invariant_break(format!("after it converged: {what}"));
        }
    }
}
