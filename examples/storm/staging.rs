//! Cases a to c: volumes staged and published alone, all at once (the
//! storm), and stages waiting for disks attached after they started.

use std::collections::BTreeMap;
use std::time::Duration;

use csi_proxy_client::api::{IscsiApi, IscsiAuth, TargetPortal};
use csi_proxy_client::mount::Mounter;
use csi_proxy_client::testing::FakeHost;
use csi_proxy_client::{Operation as Op, Result};

use crate::setup::{
    disks, host_for, median, ms, percentile, smb_volumes, timed, verdict, Node, Runtimes, Scale,
    Volume, ATTACH_AFTER, DISK_BYTES, IQN, POLL, PORTAL, RESCANS_TARGET, STORM_TARGET,
};

/// Case a: one volume's stage and publish alone, on a node of its own,
/// median of `runs`.
fn one_chain(runtimes: &Runtimes, volume: Volume, runs: usize) -> (Duration, usize) {
    let mut times = Vec::with_capacity(runs);
    let mut rpcs = 0;
    for _ in 0..runs {
        let node = Node::start(runtimes, host_for(&[volume], true).build());
        let mounter = runtimes.driver.block_on(node.mounter());
        node.latencies_on();
        node.take_rpcs();
        let took = runtimes.driver.block_on(volume.chain(mounter));
        times.push(took.unwrap_or_else(|e| panic!("{volume:?}: {e}")));
        rpcs = node.take_rpcs();
    }
    (median(&mut times), rpcs)
}

pub struct Chains {
    pub disk: Duration,
    pub smb: Duration,
}

impl Chains {
    fn longer(&self) -> Duration {
        self.disk.max(self.smb)
    }
}

pub fn chains(runtimes: &Runtimes, scale: &Scale) -> Chains {
    println!(
        "a. One volume alone: stage + publish (median of {})",
        scale.chain_runs
    );
    let (disk, disk_rpcs) = one_chain(runtimes, Volume::Disk(0), scale.chain_runs);
    println!("   disk volume   {:>9.0} ms  ({disk_rpcs} RPCs)", ms(disk));
    let (smb, smb_rpcs) = one_chain(runtimes, Volume::Smb(0), scale.chain_runs);
    println!("   SMB volume    {:>9.0} ms  ({smb_rpcs} RPCs)", ms(smb));
    println!();
    Chains { disk, smb }
}

/// What the storm measured.
pub struct Storm {
    pub wall: Duration,
    pub ratio: f64,
    pub p50: Duration,
    pub p99: Duration,
}

/// Case b: every volume staged and published at once, a task each.
pub fn storm(runtimes: &Runtimes, scale: &Scale, chains: &Chains) -> Storm {
    let volumes: Vec<Volume> =
        (disks(scale.storm_disks).chain(smb_volumes(scale.storm_shares))).collect();
    println!(
        "b. The storm: {} disk and {} SMB volumes (one share) staged and published at once",
        scale.storm_disks, scale.storm_shares
    );
    let node = Node::start(runtimes, host_for(&volumes, true).build());
    let mounter = runtimes.driver.block_on(node.mounter());
    node.latencies_on();
    node.take_rpcs();
    let (times, wall) = timed(runtimes, all_at_once(mounter, volumes.clone()));
    let mut by_kind: BTreeMap<&str, Vec<Duration>> = BTreeMap::new();
    for (volume, took) in volumes.iter().zip(times) {
        let took = took.unwrap_or_else(|e| panic!("{volume:?}: {e}"));
        let kind = match volume {
            Volume::Disk(_) => "disk",
            Volume::Smb(_) => "SMB",
        };
        by_kind.entry(kind).or_default().push(took);
    }
    let mut all: Vec<Duration> = by_kind.values().flatten().copied().collect();
    let storm = Storm {
        wall,
        ratio: wall.as_secs_f64() / chains.longer().as_secs_f64(),
        p50: percentile(&mut all, 50),
        p99: percentile(&mut all, 99),
    };
    print_storm(&storm, &mut by_kind, node.take_rpcs());
    storm
}

/// Stage and publish of each of `volumes`, a task each, started
/// together: each one's time.
async fn all_at_once(mounter: Mounter, volumes: Vec<Volume>) -> Vec<Result<Duration>> {
    let tasks: Vec<_> = (volumes.into_iter())
        .map(|volume| tokio::spawn(volume.chain(mounter.clone())))
        .collect();
    let mut times = Vec::with_capacity(tasks.len());
    for task in tasks {
        times.push(task.await.expect("a volume's task"));
    }
    times
}

fn print_storm(storm: &Storm, by_kind: &mut BTreeMap<&str, Vec<Duration>>, rpcs: usize) {
    println!(
        "   all volumes done        {:>9.0} ms  ({rpcs} RPCs)",
        ms(storm.wall)
    );
    println!(
        "   / longer one chain      {:>9.2}     target <= {STORM_TARGET}: {}",
        storm.ratio,
        verdict(storm.ratio <= STORM_TARGET)
    );
    println!(
        "   per volume p50, p99     {:>9.0} ms, {:.0} ms",
        ms(storm.p50),
        ms(storm.p99)
    );
    for (kind, times) in by_kind.iter_mut() {
        println!(
            "   {kind:<4} volumes p50, p99  {:>9.0} ms, {:.0} ms",
            ms(percentile(times, 50)),
            ms(percentile(times, 99))
        );
    }
    println!();
}

/// Rescans and `ListDiskIDs` calls at the host in one poll interval.
#[derive(Clone, Copy, Default)]
pub struct Looks {
    pub rescans_sent: usize,
    rescans_done: usize,
    pub list_ids: usize,
}

impl Looks {
    fn now(host: &FakeHost) -> Self {
        Self {
            rescans_sent: host.calls_of(Op::Rescan),
            rescans_done: host.rescans(),
            list_ids: host.calls_of(Op::ListDiskIds),
        }
    }

    /// Whether the host was asked anything.
    fn any(self) -> bool {
        self.rescans_sent + self.rescans_done + self.list_ids > 0
    }

    fn since(self, before: Looks) -> Looks {
        Looks {
            rescans_sent: self.rescans_sent - before.rescans_sent,
            rescans_done: self.rescans_done - before.rescans_done,
            list_ids: self.list_ids - before.list_ids,
        }
    }
}

/// What the waiting stages cost the host.
pub struct Waiting {
    pub max_rescans: usize,
    pub total: Looks,
}

/// Case c: stages that wait for their disks, attached after
/// [`ATTACH_AFTER`].
pub fn waiting(runtimes: &Runtimes, scale: &Scale) -> Waiting {
    let volumes: Vec<Volume> = disks(scale.waiting).collect();
    println!(
        "c. {} stages waiting for their disks, attached {:?} after they start (poll {:?})",
        scale.waiting, ATTACH_AFTER, POLL
    );
    let iscsi: Vec<(String, u64)> = (volumes.iter()).map(|v| (v.page83(), DISK_BYTES)).collect();
    let iscsi: Vec<(&str, u64)> = iscsi.iter().map(|(p, s)| (p.as_str(), *s)).collect();
    let host = host_for(&volumes, false).iscsi_target(portal(), IQN, &iscsi, None, None);
    let node = Node::start(runtimes, host.build());
    let mounter = runtimes.driver.block_on(node.mounter());
    node.latencies_on();
    let (rows, took) = timed(runtimes, wait_and_watch(&node.host, &mounter, &volumes));
    print_waiting(&rows, took)
}

fn portal() -> TargetPortal {
    TargetPortal::new(PORTAL)
}

/// Stages `volumes` at once, logs in to their target after
/// [`ATTACH_AFTER`], and samples the host every poll interval until all
/// stages are done: each interval's looks.
async fn wait_and_watch(host: &FakeHost, mounter: &Mounter, volumes: &[Volume]) -> Vec<Looks> {
    let stages = tokio::spawn(all_at_once(mounter.clone(), volumes.to_vec()));
    let attach = tokio::spawn(attach_later(host.clone()));
    let mut rows = Vec::new();
    let mut before = Looks::now(host);
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + POLL, POLL);
    while !stages.is_finished() {
        ticks.tick().await;
        let now = Looks::now(host);
        rows.push(now.since(before));
        before = now;
    }
    attach.await.expect("the attach task");
    let finished = stages.await.expect("the stages' task");
    for (volume, outcome) in volumes.iter().zip(finished) {
        outcome.unwrap_or_else(|e| panic!("{volume:?}: {e}"));
    }
    rows
}

/// Logs in to the target after [`ATTACH_AFTER`], attaching its disks.
async fn attach_later(host: FakeHost) {
    tokio::time::sleep(ATTACH_AFTER).await;
    host.add_target_portal(&portal()).await.expect("portal");
    (host.connect_target(&portal(), IQN, &IscsiAuth::None))
        .await
        .expect("login");
}

/// What happened to the disks in interval `index`.
fn disks_in(index: usize) -> &'static str {
    let (start, end) = (POLL * index as u32, POLL * (index as u32 + 1));
    match (end <= ATTACH_AFTER, start < ATTACH_AFTER) {
        (true, _) => "  (no disks yet)",
        (false, true) => "  (attached)",
        (false, false) => "",
    }
}

/// The intervals with looks, the totals, and when the stages were
/// done (`took` after they started).
fn print_waiting(rows: &[Looks], took: Duration) -> Waiting {
    println!("   interval   rescans sent  rescans done  ListDiskIDs");
    let mut total = Looks::default();
    let looked = rows
        .iter()
        .rposition(|looks| looks.any())
        .map_or(0, |i| i + 1);
    for (index, looks) in rows[..looked].iter().enumerate() {
        let mark = disks_in(index);
        println!(
            "   {:>2}-{:<2} s   {:>12}  {:>12}  {:>11}{mark}",
            index,
            index + 1,
            looks.rescans_sent,
            looks.rescans_done,
            looks.list_ids
        );
        total.rescans_sent += looks.rescans_sent;
        total.rescans_done += looks.rescans_done;
        total.list_ids += looks.list_ids;
    }
    let max_rescans = rows.iter().map(|looks| looks.rescans_sent).max();
    let max_rescans = max_rescans.unwrap_or(0);
    println!(
        "   then no more looks; the stages were done {:.1} s after they started",
        took.as_secs_f64()
    );
    println!(
        "   total: {} rescans, {} ListDiskIDs; most rescans in one interval {max_rescans}, \
         target <= {RESCANS_TARGET}: {}",
        total.rescans_sent,
        total.list_ids,
        verdict(max_rescans <= RESCANS_TARGET)
    );
    println!();
    Waiting { max_rescans, total }
}
