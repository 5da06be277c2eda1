//! Benchmark: what a driver pays for the SDK, side by side with a raw
//! generated tonic client on tonic's own `Channel`, against a `FakeProxy`
//! with a trivial backend over Unix sockets.
//!
//! Run it with `cargo run --release --example bench`. It measures, in one
//! run:
//! 1. per-call latency (p50, p99), calls per second and client CPU time per
//!    call of `ListDiskIDs`, through the SDK's trait and through the raw
//!    client on the same server, on the current-thread and on the
//!    multi-thread runtime, with 1 and 16 concurrent callers in spawned
//!    tasks, and with one caller on the multi-thread runtime's `block_on`
//!    thread; every case and both clients alternate, round by round, and
//!    each figure is the median of the rounds;
//! 2. negotiation: time to a connected client for all six groups on a node
//!    that serves every version and on one that serves only the oldest
//!    (worst-case fallback), against connecting six known sockets
//!    directly; and cold start (new client and first call);
//! 3. recovery: time from the proxy's return after an outage to the first
//!    successful call of a caller that was waiting for it, median of 20;
//! 4. memory: resident memory of a process holding a client connected to
//!    all six groups, idle: a driver's build (`tests/shipped-client`,
//!    default features, given with `--shipped-client PATH`;
//!    `scripts/bench.sh` builds it in release mode and passes it), and this
//!    process (its `testing` build carries the fake proxy's code too); and
//!    this process's peak under load;
//! 5. round trips: the calls each CSI node call of the example plugin
//!    (`examples/node_plugin`, on the mounter) sends to CSI Proxy v1.3 and
//!    v0.2.2, first and repeated (also alone: `--round-trips`).
//!
//! The fake proxy of parts 1, 2 and 4 runs in a child process (this
//! program, started with `--serve`), so CPU time and memory measured here
//! are the client's own. The last line is machine-readable; its ratios are
//! SDK divided by raw tonic `Channel`.
//!
//! Its parts: `bench/proxy.rs` (the fake proxy's process, the clients),
//! `bench/process.rs` (CPU time, memory), `bench/per_call.rs` (part 1),
//! the `bench` module below (parts 2 to 4, the summary),
//! `bench/round_trips.rs` (part 5).

#[cfg(unix)]
#[path = "bench/per_call.rs"]
mod per_call;
#[cfg(unix)]
#[path = "bench/process.rs"]
mod process;
#[cfg(unix)]
#[path = "bench/proxy.rs"]
mod proxy;

/// Parts 2 to 4, and the summary.
#[cfg(unix)]
mod bench {
    use std::path::PathBuf;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use csi_proxy_client::testing::FakeProxy;
    use csi_proxy_client::{transport::Transport, ApiGroup, ApiVersion, CsiProxy};

    use crate::per_call::{cpu_ratio, find, p50_ratio, per_call, print_runs, ratios, Placement};
    use crate::process::{rss_mib, shipped_idle_rss};
    use crate::proxy::{connect_sdk, raw_channel, Node, TwoDisks};

    const NEGOTIATIONS: usize = 200;
    const RESTARTS: usize = 20;

    fn ms(d: Duration) -> f64 {
        d.as_secs_f64() * 1e3
    }

    /// The median of `runs` timings of `f`.
    async fn median_time<F, Fut>(runs: usize, f: F) -> Duration
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs {
            let t = Instant::now();
            f().await;
            times.push(t.elapsed());
        }
        times.sort();
        times[runs / 2]
    }

    /// Time from the proxy's return to the first successful call of a
    /// caller that waited through the outage; median of [`RESTARTS`].
    async fn recovery() -> Duration {
        let dir = tempfile::tempdir().unwrap();
        let transport = Transport::unix_sockets(dir.path()).unwrap();
        let mut backends = csi_proxy_client::testing::FakeHost::default().backends();
        backends.disk = Some(Arc::new(TwoDisks));
        let mut fake = FakeProxy::new(transport.clone(), backends);
        fake.serve(ApiGroup::Disk, ApiVersion::V1).await.unwrap();
        let proxy = CsiProxy::builder()
            .transport(transport)
            .groups([ApiGroup::Disk])
            .connect()
            .await
            .unwrap();
        let disk = proxy.disk().unwrap();
        let mut times = Vec::with_capacity(RESTARTS);
        for _ in 0..RESTARTS {
            disk.list_disk_ids().await.unwrap();
            fake.stop_all().await;
            let disk = disk.clone();
            let waiting = tokio::spawn(async move {
                disk.list_disk_ids().await.unwrap();
                Instant::now()
            });
            // An outage of a second, as a quick service restart.
            tokio::time::sleep(Duration::from_secs(1)).await;
            fake.serve(ApiGroup::Disk, ApiVersion::V1).await.unwrap();
            let back = Instant::now();
            let first_success = waiting.await.unwrap();
            times.push(first_success.saturating_duration_since(back));
        }
        times.sort();
        times[RESTARTS / 2]
    }

    /// Runs every part; the driver's build's memory only with its
    /// executable.
    pub fn run(shipped_client: Option<PathBuf>) {
        let current_thread = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let multi_thread = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        let all = Node::start("all");
        let shipped = shipped_client.map(|client| shipped_idle_rss(&client, &all));
        // Not measured without the executable: shown as such, never as 0.
        let (shipped_rss, shipped_anon) = match shipped {
            Some((rss, anon)) => (format!("{rss:.1}"), format!("{anon:.2}")),
            None => ("n/a".to_owned(), "n/a".to_owned()),
        };
        let idle_rss = multi_thread.block_on(async {
            let proxy = connect_sdk(&all).await;
            let (idle, _) = rss_mib();
            drop(proxy);
            idle
        });

        println!(
            "Per-call cost of ListDiskIDs (disk v1), SDK trait vs raw tonic Channel, same server"
        );
        println!(
            "{:>8} {:>7} {:>6} {:>10} {:>10} {:>12} {:>12}",
            "runtime", "callers", "client", "p50 µs", "p99 µs", "calls/s", "cpu µs/call"
        );
        let ct = per_call(&current_thread, &all);
        print_runs("current", &ct);
        let mt = per_call(&multi_thread, &all);
        print_runs("multi", &mt);
        let (_, peak_rss) = rss_mib();
        let (ct_p50, ct_cpu, ct_tput) = ratios(&ct);
        let (mt_p50, mt_cpu, mt_tput) = ratios(&mt);
        let (overhead_p50, overhead_cpu) = [&ct, &mt]
            .iter()
            .flat_map(|figures| figures.iter())
            .fold((0.0f64, 0.0f64), |(p, c), f| {
                (
                    p.max(p50_ratio(&f.sdk, &f.raw)),
                    c.max(cpu_ratio(&f.sdk, &f.raw)),
                )
            });
        // The caller on the multi-thread runtime's block_on thread: SDK /
        // raw there, and the SDK there / the SDK on a worker (one caller).
        let block_on = find(&mt, Placement::BlockOn, 1);
        let worker = find(&mt, Placement::Spawned, 1);
        let (bo_p50, bo_cpu) = (
            p50_ratio(&block_on.sdk, &block_on.raw),
            cpu_ratio(&block_on.sdk, &block_on.raw),
        );
        let (bo_vs_worker_p50, bo_vs_worker_cpu) = (
            p50_ratio(&block_on.sdk, &worker.sdk),
            cpu_ratio(&block_on.sdk, &worker.sdk),
        );

        multi_thread.block_on(async {
            println!("\nNegotiation of all six groups (median of {NEGOTIATIONS})");
            let negotiate_all = median_time(NEGOTIATIONS, || async {
                connect_sdk(&all).await;
            })
            .await;
            let oldest = Node::start("oldest");
            let negotiate_oldest = median_time(NEGOTIATIONS, || async {
                connect_sdk(&oldest).await;
            })
            .await;
            let direct = median_time(NEGOTIATIONS, || async {
                let sockets: Vec<String> = ApiGroup::ALL
                    .iter()
                    .map(|&g| oldest.socket(g, g.versions()[0]))
                    .collect();
                let mut connecting = tokio::task::JoinSet::new();
                for socket in sockets {
                    connecting.spawn(raw_channel(socket));
                }
                while connecting.join_next().await.is_some() {}
            })
            .await;
            let cold_start = median_time(NEGOTIATIONS, || async {
                connect_sdk(&all)
                    .await
                    .disk()
                    .unwrap()
                    .list_disk_ids()
                    .await
                    .unwrap();
            })
            .await;
            for (what, time) in [
                ("node serving all 23 versions", negotiate_all),
                ("node serving only the oldest (worst fallback)", negotiate_oldest),
                ("raw: six known sockets connected directly", direct),
                ("cold start: new client and first call", cold_start),
            ] {
                println!("{what:<48} {:>8.2} ms", ms(time));
            }

            println!("\nRecovery after a 1 s outage (median of {RESTARTS})");
            let recover = recovery().await;
            println!(
                "{:<48} {:>8.2} ms",
                "proxy back to first successful call",
                ms(recover)
            );

            println!("\nResident memory of a client connected to all six groups");
            for (what, mib) in [
                ("idle, driver's build (default features)", shipped_rss.clone()),
                ("  of which anonymous (heap, stacks)", shipped_anon.clone()),
                ("idle, this process (testing build)", format!("{idle_rss:.1}")),
                ("peak, this process under the 16-caller load", format!("{peak_rss:.1}")),
            ] {
                println!("{what:<48} {mib:>8} MiB");
            }

            crate::round_trips::print().await;

            println!(
                "\nSDK / raw tonic Channel: multi-thread p50 {mt_p50:.3}, cpu {mt_cpu:.3}, \
                 16-caller throughput {mt_tput:.3}; current-thread p50 {ct_p50:.3}, cpu {ct_cpu:.3}, \
                 16-caller throughput {ct_tput:.3}; block_on thread p50 {bo_p50:.3}, cpu {bo_cpu:.3}"
            );
            println!(
                "SDK on the block_on thread / SDK on a worker: p50 {bo_vs_worker_p50:.3}, cpu {bo_vs_worker_cpu:.3}"
            );
            println!(
                "bench: mt_p50_ratio={mt_p50:.3} mt_cpu_ratio={mt_cpu:.3} mt_tput16_ratio={mt_tput:.3} \
                 ct_p50_ratio={ct_p50:.3} ct_cpu_ratio={ct_cpu:.3} ct_tput16_ratio={ct_tput:.3} \
                 bo_p50_ratio={bo_p50:.3} bo_cpu_ratio={bo_cpu:.3} \
                 bo_vs_worker_p50={bo_vs_worker_p50:.3} bo_vs_worker_cpu={bo_vs_worker_cpu:.3} \
                 overhead_p50_ratio={overhead_p50:.3} overhead_cpu_ratio={overhead_cpu:.3} \
                 negotiate_all_ms={:.2} negotiate_oldest_ms={:.2} direct_connect_ms={:.2} \
                 cold_start_ms={:.2} recover_ms={:.1} rss_idle_mib={shipped_rss} \
                 rss_idle_anon_mib={shipped_anon} rss_idle_testing_mib={idle_rss:.1} rss_mib={peak_rss:.1}",
                ms(negotiate_all),
                ms(negotiate_oldest),
                ms(direct),
                ms(cold_start),
                ms(recover)
            );
        });
    }
}

/// Part 5: the calls each CSI node call sends, counted at the fake proxy.
#[cfg(unix)]
#[path = "../tests/it/node_plugin/node.rs"]
mod node;

#[cfg(unix)]
#[path = "bench/round_trips.rs"]
mod round_trips;

#[cfg(unix)]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runtime = || {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap()
    };
    match args.get(1).map(String::as_str) {
        Some("--serve") => {
            runtime().block_on(proxy::serve(std::path::Path::new(&args[2]), &args[3]))
        }
        // --profile sdk|raw [callers] [current|block_on]
        Some("--profile") => {
            let callers = args.get(3).map_or(1, |c| c.parse().unwrap());
            let placement = args.get(4).map(String::as_str);
            let runtime = match placement {
                Some("current") => tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap(),
                _ => runtime(),
            };
            let here = placement == Some("block_on");
            runtime.block_on(per_call::profile(args[2] == "sdk", callers, here))
        }
        Some("--shipped-client") => bench::run(Some(args[2].clone().into())),
        Some("--round-trips") => runtime().block_on(round_trips::print()),
        _ => bench::run(None),
    }
}

#[cfg(not(unix))]
fn main() {
    eprintln!("the benchmark serves its fake proxy over Unix sockets; run it on Linux or macOS");
}
