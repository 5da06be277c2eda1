//! Cases d and e: a fresh mounter's reconcile over a journal of about a
//! thousand records, and the cost of one journal change as the journal
//! grows.

use std::future::Future;
use std::path::Path;
use std::time::{Duration, Instant};

use csi_proxy_client::mount::Mounter;
use csi_proxy_client::Result;

use crate::setup::{
    disks, host_for, median, ms, smb_volumes, timed, verdict, Node, Runtimes, Scale, Volume,
    FILLERS, JOURNAL_ROUNDS, JOURNAL_TARGET, RECONCILE_TARGET,
};

/// What the reconcile measured.
pub struct Reconciled {
    pub lines: usize,
    pub took: Duration,
    pub rpcs: usize,
}

/// Case d: a fresh mounter's build and reconcile over a journal of
/// about a thousand records.
pub fn reconcile(runtimes: &Runtimes, scale: &Scale) -> Reconciled {
    let (staged, links, shared) = scale.reconcile;
    let volumes: Vec<Volume> = disks(staged).chain(smb_volumes(shared)).collect();
    println!(
        "d. reconcile of a fresh mounter: journal of {staged} disks staged, {links} links \
         published, {shared} SMB volumes staged"
    );
    let node = Node::start(runtimes, host_for(&volumes, true).build());
    let (built, took) = timed(runtimes, fill_for_reconcile(&node, &volumes, links));
    built.unwrap_or_else(|e| panic!("building the journal: {e}"));
    let (lines, bytes) = journal_size(node.state.path());
    println!(
        "   journal built (no latency) in {:.1} s: {lines} lines, {} KiB",
        took.as_secs_f64(),
        bytes / 1024
    );
    let proxy = runtimes.driver.block_on(node.connect());
    node.latencies_on();
    node.take_rpcs();
    let (report, took) = timed(runtimes, async {
        let mounter = Mounter::builder(proxy, node.state.path()).build()?;
        mounter.reconcile(|_| true).await
    });
    let report = report.unwrap_or_else(|e| panic!("reconcile: {e}"));
    let rpcs = node.take_rpcs();
    println!(
        "   build + reconcile       {:>9.0} ms  ({rpcs} RPCs, {} failed items)  \
         target < {:?}: {}",
        ms(took),
        report.failed.len(),
        RECONCILE_TARGET,
        verdict(took < RECONCILE_TARGET)
    );
    println!();
    Reconciled { lines, took, rpcs }
}

/// Stages `volumes` and publishes `links` links spread over the disk
/// volumes, a few at a time.
async fn fill_for_reconcile(node: &Node, volumes: &[Volume], links: usize) -> Result<()> {
    let mounter = node.mounter().await;
    in_batches(volumes, |volume| {
        let mounter = mounter.clone();
        async move { volume.stage(&mounter).await }
    })
    .await?;
    let disks: Vec<Volume> = (volumes.iter())
        .filter(|v| matches!(v, Volume::Disk(_)))
        .copied()
        .collect();
    let publishes: Vec<(Volume, usize)> = (0..links)
        .map(|i| (disks[i % disks.len()], i / disks.len()))
        .collect();
    in_batches(&publishes, |(volume, pod)| {
        let mounter = mounter.clone();
        async move { volume.publish(&mounter, pod).await }
    })
    .await
}

/// `work` for each of `items`, [`FILLERS`] at a time, a task each;
/// stops at the first failure.
async fn in_batches<T, F, W>(items: &[T], work: F) -> Result<()>
where
    T: Copy,
    F: Fn(T) -> W,
    W: Future<Output = Result<()>> + Send + 'static,
{
    for chunk in items.chunks(FILLERS) {
        let mut tasks = tokio::task::JoinSet::new();
        for &item in chunk {
            tasks.spawn(work(item));
        }
        for done in tasks.join_all().await {
            done?;
        }
    }
    Ok(())
}

/// Lines and bytes of the files in the journal folder.
fn journal_size(dir: &Path) -> (usize, u64) {
    let mut lines = 0;
    let mut bytes = 0;
    for entry in std::fs::read_dir(dir).expect("journal folder").flatten() {
        if let Ok(text) = std::fs::read_to_string(entry.path()) {
            lines += text.lines().count();
            bytes += text.len() as u64;
        }
    }
    (lines, bytes)
}

/// One size of case e.
pub struct JournalCost {
    pub records: usize,
    /// Lines of the journal's files then.
    lines: usize,
    build: Duration,
    pub change: Duration,
    /// The process's CPU time per change (the fake proxy's too), mean:
    /// what the disk's speed does not move.
    pub cpu: Duration,
}

/// A node whose journal holds a given number of records, for case e.
struct Journaled {
    node: Node,
    mounter: Mounter,
    records: usize,
    build: Duration,
}

/// The volume whose publishes fill the journals of case e.
const FILLED: Volume = Volume::Disk(0);

/// A node whose journal holds `records` records (at least 2): the
/// stage's two (the stage, the folder it made) and a link a publish.
fn journaled(runtimes: &Runtimes, records: usize) -> Journaled {
    let node = Node::start(runtimes, host_for(&[FILLED], true).build());
    let mounter = runtimes.driver.block_on(node.mounter());
    let pods: Vec<usize> = (1..=records - 2).collect();
    let (filled, build) = timed(runtimes, async {
        FILLED.stage(&mounter).await?;
        fill_links(&mounter, FILLED, &pods).await
    });
    filled.unwrap_or_else(|e| panic!("filling a journal of {records} records: {e}"));
    node.take_rpcs();
    Journaled {
        node,
        mounter,
        records,
        build,
    }
}

/// Case e: a change's cost as the journal grows, each size on a node
/// of its own, the sizes measured in turn round by round (the disk's
/// speed drifts on a shared machine).
pub fn journal_costs(runtimes: &Runtimes, scale: &Scale) -> Vec<JournalCost> {
    println!(
        "e. One journal change (a publish or an unpublish, no latency): median time and mean \
         CPU of {} in {JOURNAL_ROUNDS} rounds; ratios to the smallest journal",
        2 * scale.journal_pairs
    );
    let sizes: Vec<Journaled> = (scale.journal_sizes.iter())
        .map(|&records| journaled(runtimes, records))
        .collect();
    let mut times = vec![Vec::new(); sizes.len()];
    let mut cpu = vec![Duration::ZERO; sizes.len()];
    for _ in 0..JOURNAL_ROUNDS {
        for (index, size) in sizes.iter().enumerate() {
            let pairs = scale.journal_pairs / JOURNAL_ROUNDS;
            let before = cpu_time();
            times[index].extend(runtimes.driver.block_on(changes(&size.mounter, pairs)));
            cpu[index] += cpu_time() - before;
        }
    }
    let changes = u32::try_from(2 * scale.journal_pairs).expect("a count of changes");
    let costs: Vec<JournalCost> = (sizes.iter().zip(&mut times).zip(cpu))
        .map(|((size, times), cpu)| JournalCost {
            records: size.records,
            lines: journal_size(size.node.state.path()).0,
            build: size.build,
            change: median(times),
            cpu: cpu / changes,
        })
        .collect();
    for cost in &costs {
        print_journal_cost(cost, &costs[0]);
    }
    let (first, last) = (&costs[0], &costs[costs.len() - 1]);
    let (ratio, cpu_ratio) = journal_ratios(&costs);
    println!(
        "   at {} / at {}: time {ratio:.2}, target <= {JOURNAL_TARGET}: {} (cpu {cpu_ratio:.2})",
        last.records,
        first.records,
        verdict(ratio <= JOURNAL_TARGET)
    );
    println!();
    costs
}

/// The largest journal's change against the smallest's: (time, CPU).
pub fn journal_ratios(costs: &[JournalCost]) -> (f64, f64) {
    let (first, last) = (&costs[0], &costs[costs.len() - 1]);
    (
        last.change.as_secs_f64() / first.change.as_secs_f64(),
        last.cpu.as_secs_f64() / first.cpu.as_secs_f64(),
    )
}

/// Publishes `volume` for each of `pods`, a few at a time.
async fn fill_links(mounter: &Mounter, volume: Volume, pods: &[usize]) -> Result<()> {
    in_batches(pods, |pod| {
        let mounter = mounter.clone();
        async move { volume.publish(&mounter, pod).await }
    })
    .await
}

/// `pairs` publishes and unpublishes of one more target (pod 0's),
/// each timed.
async fn changes(mounter: &Mounter, pairs: usize) -> Vec<Duration> {
    let target = FILLED.target(0);
    let mut times = Vec::with_capacity(2 * pairs);
    for _ in 0..pairs {
        let started = Instant::now();
        (mounter.publish(&FILLED.staging(), &target))
            .await
            .expect("publish");
        times.push(started.elapsed());
        let started = Instant::now();
        mounter.unpublish(&target).await.expect("unpublish");
        times.push(started.elapsed());
    }
    times
}

fn print_journal_cost(cost: &JournalCost, first: &JournalCost) {
    let ratio = cost.change.as_secs_f64() / first.change.as_secs_f64();
    let cpu_ratio = cost.cpu.as_secs_f64() / first.cpu.as_secs_f64();
    println!(
        "   {:>6} records: change {:>7.2} ms ({ratio:>5.2}x), cpu {:>7.2} ms ({cpu_ratio:>5.2}x)  \
         built in {:>5.1} s ({} journal lines)",
        cost.records,
        ms(cost.change),
        ms(cost.cpu),
        cost.build.as_secs_f64(),
        cost.lines
    );
}

/// The CPU time this process has used, all threads.
fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let time = |t: libc::timeval| {
        Duration::new(t.tv_sec as u64, 0) + Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}
