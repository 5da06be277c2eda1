//! Part 1: the cost of one call, through the SDK's trait and through the
//! raw client, per runtime and placement of the callers; and the
//! profiling mode, one client only.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::runtime::{Runtime, RuntimeFlavor};

use csi_proxy_client::wire::disk::v1 as wire;
use csi_proxy_client::{api::DiskApi, ApiGroup, ApiVersion};
use tonic::transport::Channel;

use crate::process::cpu_ns;
use crate::proxy::{connect_sdk, raw_channel, Node};

/// Calls per caller per measured run.
const CALLS: usize = 2_000;
const CONCURRENCY: [usize; 2] = [1, 16];

/// Alternating rounds per runtime and concurrency.
const ROUNDS: usize = 5;

pub struct Run {
    p50: Duration,
    p99: Duration,
    per_second: f64,
    cpu_per_call: Duration,
}

/// Where the calling tasks run on the runtime.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Spawned tasks, on the runtime's workers (as a tonic handler runs).
    Spawned,
    /// The runtime's own `block_on` future (`#[tokio::main]`'s body,
    /// `Handle::block_on` from synchronous code): one caller.
    BlockOn,
}

/// One measured configuration of a runtime.
#[derive(Clone, Copy)]
struct Case {
    placement: Placement,
    callers: usize,
}

/// What each runtime measures: 1 and 16 spawned callers, and on the
/// multi-thread runtime also one caller on its `block_on` thread (on
/// the current-thread runtime the two placements are the same thread).
fn cases(multi_thread: bool) -> Vec<Case> {
    let mut cases: Vec<Case> = CONCURRENCY
        .iter()
        .map(|&callers| Case {
            placement: Placement::Spawned,
            callers,
        })
        .collect();
    if multi_thread {
        cases.push(Case {
            placement: Placement::BlockOn,
            callers: 1,
        });
    }
    cases
}

/// One run of `case` with `client`.
async fn measure_case(case: Case, client: impl Client) -> Run {
    match case.placement {
        Placement::Spawned => measure(case.callers, client).await,
        Placement::BlockOn => measure_here(client).await,
    }
}

/// `CALLS` calls of `call` made by the task that polls this future.
async fn measure_here(client: impl Client) -> Run {
    let (cpu_before, started) = (cpu_ns(), Instant::now());
    let latencies = calls(client).await;
    summarize(latencies, started.elapsed(), cpu_ns() - cpu_before)
}

/// `CALLS` sequential calls; the latency of each.
async fn calls(client: impl Client) -> Vec<Duration> {
    let mut latencies = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let t = Instant::now();
        client.call().await;
        latencies.push(t.elapsed());
    }
    latencies
}

/// `callers` tasks each making `CALLS` calls of `call`.
async fn measure(callers: usize, client: impl Client) -> Run {
    let (cpu_before, started) = (cpu_ns(), Instant::now());
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..callers {
        let client = client.clone();
        tasks.spawn(calls(client));
    }
    let mut all = Vec::with_capacity(callers * CALLS);
    while let Some(done) = tasks.join_next().await {
        all.extend(done.unwrap());
    }
    summarize(all, started.elapsed(), cpu_ns() - cpu_before)
}

/// The figures of one run: every call's latency, its wall time and the
/// process's CPU time in nanoseconds.
fn summarize(mut all: Vec<Duration>, elapsed: Duration, cpu: u64) -> Run {
    all.sort();
    let calls = all.len();
    Run {
        p50: all[calls / 2],
        p99: all[calls * 99 / 100],
        per_second: calls as f64 / elapsed.as_secs_f64(),
        cpu_per_call: Duration::from_nanos(cpu / calls as u64),
    }
}

/// The median of each figure over `runs`.
fn median_run(runs: Vec<Run>) -> Run {
    fn median<T: Copy + PartialOrd>(mut values: Vec<T>) -> T {
        values.sort_by(|a, b| a.partial_cmp(b).unwrap());
        values[values.len() / 2]
    }
    Run {
        p50: median(runs.iter().map(|r| r.p50).collect()),
        p99: median(runs.iter().map(|r| r.p99).collect()),
        per_second: median(runs.iter().map(|r| r.per_second).collect()),
        cpu_per_call: median(runs.iter().map(|r| r.cpu_per_call).collect()),
    }
}

pub fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Profiling mode, for `valgrind --tool=callgrind` or `strace -c -f`:
/// one measured run of `callers` callers through one client only.
/// One caller on the `block_on` thread when `here`, else `callers`
/// spawned tasks.
pub async fn profile(through_sdk: bool, callers: usize, here: bool) {
    let all = Node::start("all");
    let case = Case {
        placement: if here {
            Placement::BlockOn
        } else {
            Placement::Spawned
        },
        callers,
    };
    let run = if through_sdk {
        measure_case(case, sdk(&all).await).await
    } else {
        measure_case(case, raw(&all).await).await
    };
    println!(
        "{} callers: p50 {:.1} µs, {:.0} calls/s, cpu {:.1} µs/call",
        callers,
        us(run.p50),
        run.per_second,
        us(run.cpu_per_call)
    );
}

/// A client under measurement, and what one call through it is.
trait Client: Clone + Send + 'static {
    fn call(&self) -> impl std::future::Future<Output = ()> + Send;
}

/// `ListDiskIDs` through the SDK's trait.
#[derive(Clone)]
struct Sdk(Arc<dyn DiskApi>);

impl Client for Sdk {
    async fn call(&self) {
        self.0.list_disk_ids().await.unwrap();
    }
}

/// `ListDiskIDs` through the generated client on a tonic `Channel`.
#[derive(Clone)]
struct Raw(wire::disk_client::DiskClient<Channel>);

impl Client for Raw {
    async fn call(&self) {
        self.0
            .clone()
            .list_disk_i_ds(wire::ListDiskIDsRequest {})
            .await
            .unwrap();
    }
}

async fn sdk(node: &Node) -> Sdk {
    Sdk(connect_sdk(node).await.disk().unwrap())
}

async fn raw(node: &Node) -> Raw {
    let channel = raw_channel(node.socket(ApiGroup::Disk, ApiVersion::V1)).await;
    Raw(wire::disk_client::DiskClient::new(channel))
}

/// The SDK's and the raw client's figures for one case.
pub struct Figures {
    case: Case,
    pub sdk: Run,
    pub raw: Run,
}

/// Per-call figures of SDK and raw client on one runtime, per case.
/// Every round measures every case with both clients, alternating which
/// client goes first, so that the machine's load falls on all alike.
pub fn per_call(runtime: &Runtime, node: &Node) -> Vec<Figures> {
    let multi_thread = runtime.handle().runtime_flavor() != RuntimeFlavor::CurrentThread;
    let cases = cases(multi_thread);
    runtime.block_on(async {
        let (sdk, raw) = (sdk(node).await, raw(node).await);
        // Warm up both paths.
        measure(4, sdk.clone()).await;
        measure(4, raw.clone()).await;
        let mut runs: Vec<[Vec<Run>; 2]> = cases.iter().map(|_| [vec![], vec![]]).collect();
        for round in 0..ROUNDS {
            for (case, runs) in cases.iter().zip(&mut runs) {
                if round % 2 == 0 {
                    runs[0].push(measure_case(*case, sdk.clone()).await);
                    runs[1].push(measure_case(*case, raw.clone()).await);
                } else {
                    runs[1].push(measure_case(*case, raw.clone()).await);
                    runs[0].push(measure_case(*case, sdk.clone()).await);
                }
            }
        }
        cases
            .into_iter()
            .zip(runs)
            .map(|(case, runs)| {
                let [sdk, raw] = runs.map(median_run);
                Figures { case, sdk, raw }
            })
            .collect()
    })
}

pub fn print_runs(runtime: &str, figures: &[Figures]) {
    for Figures { case, sdk, raw } in figures {
        let runtime = match case.placement {
            Placement::Spawned => runtime,
            Placement::BlockOn => "block_on",
        };
        for (name, r) in [("sdk", sdk), ("raw", raw)] {
            println!(
                "{:>8} {:>7} {:>6} {:>10.1} {:>10.1} {:>12.0} {:>12.1}",
                runtime,
                case.callers,
                name,
                us(r.p50),
                us(r.p99),
                r.per_second,
                us(r.cpu_per_call)
            );
        }
    }
}

/// The figures of `placement` with `callers`.
pub fn find(figures: &[Figures], placement: Placement, callers: usize) -> &Figures {
    figures
        .iter()
        .find(|f| f.case.placement == placement && f.case.callers == callers)
        .expect("a measured case")
}

/// SDK / raw ratios of spawned callers: sequential p50 and CPU,
/// 16-caller throughput.
pub fn ratios(figures: &[Figures]) -> (f64, f64, f64) {
    let one = find(figures, Placement::Spawned, 1);
    let sixteen = find(figures, Placement::Spawned, 16);
    (
        p50_ratio(&one.sdk, &one.raw),
        cpu_ratio(&one.sdk, &one.raw),
        sixteen.sdk.per_second / sixteen.raw.per_second,
    )
}

pub fn p50_ratio(a: &Run, b: &Run) -> f64 {
    us(a.p50) / us(b.p50)
}

pub fn cpu_ratio(a: &Run, b: &Run) -> f64 {
    a.cpu_per_call.as_secs_f64() / b.cpu_per_call.as_secs_f64()
}
