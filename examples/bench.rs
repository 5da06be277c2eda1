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

#[cfg(unix)]
mod bench {
    use std::collections::BTreeMap;
    use std::io::{BufRead, BufReader};
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, Stdio};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use tokio::runtime::{Runtime, RuntimeFlavor};

    use csi_proxy_client::testing::FakeProxy;
    use csi_proxy_client::wire::disk::v1 as wire;
    use csi_proxy_client::{
        api::{DiskApi, DiskIds},
        async_trait,
        transport::Transport,
        ApiGroup, ApiVersion, CsiProxy, RetryPolicy,
    };
    use hyper_util::rt::TokioIo;
    use tonic::transport::{Channel, Endpoint, Uri};

    /// Calls per caller per measured run.
    const CALLS: usize = 2_000;
    const CONCURRENCY: [usize; 2] = [1, 16];
    /// Alternating rounds per runtime and concurrency.
    const ROUNDS: usize = 5;
    const NEGOTIATIONS: usize = 200;
    const RESTARTS: usize = 20;

    /// A trivial backend: two disks, no work.
    struct TwoDisks;

    #[async_trait]
    impl DiskApi for TwoDisks {
        async fn list_disk_ids(&self) -> csi_proxy_client::Result<BTreeMap<u32, DiskIds>> {
            let ids = |p: &str| DiskIds {
                page83: p.into(),
                serial_number: "sn".into(),
            };
            Ok(BTreeMap::from([(0, ids("disk-0")), (1, ids("disk-1"))]))
        }
    }

    /// Child mode: serve `set` ("all" or "oldest") in `dir` until killed.
    pub async fn serve(dir: &Path, set: &str) {
        let transport = Transport::unix_sockets(dir).unwrap();
        let host = csi_proxy_client::testing::FakeHost::default();
        let mut backends = host.backends();
        backends.disk = Some(Arc::new(TwoDisks));
        let mut fake = FakeProxy::new(transport, backends);
        match set {
            "all" => fake.serve_everything().await.unwrap(),
            _ => fake
                .serve_all(ApiGroup::ALL.iter().map(|&g| (g, g.versions()[0])))
                .await
                .unwrap(),
        }
        println!("ready");
        std::future::pending::<()>().await;
    }

    /// A fake proxy in a child process.
    struct Node {
        child: Child,
        dir: tempfile::TempDir,
    }

    impl Node {
        fn start(set: &str) -> Node {
            let dir = tempfile::tempdir().unwrap();
            let mut child = Command::new(std::env::current_exe().unwrap())
                .args(["--serve", dir.path().to_str().unwrap(), set])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let mut line = String::new();
            BufReader::new(child.stdout.take().unwrap())
                .read_line(&mut line)
                .unwrap();
            assert_eq!(line.trim(), "ready");
            Node { child, dir }
        }

        fn transport(&self) -> Transport {
            Transport::unix_sockets(self.dir.path()).unwrap()
        }

        fn socket(&self, group: ApiGroup, version: ApiVersion) -> String {
            self.transport().address(group, version)
        }
    }

    impl Drop for Node {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// A raw tonic channel to one socket, as a driver without the SDK would open it.
    async fn raw_channel(socket: String) -> Channel {
        Endpoint::from_static("http://raw")
            .connect_with_connector(tower::service_fn(move |_: Uri| {
                let socket = socket.clone();
                async move {
                    tokio::net::UnixStream::connect(socket)
                        .await
                        .map(TokioIo::new)
                }
            }))
            .await
            .unwrap()
    }

    /// CPU time of this process so far (all threads), in nanoseconds.
    fn cpu_ns() -> u64 {
        let mut total = 0;
        for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            if let Ok(stat) = std::fs::read_to_string(task.path().join("schedstat")) {
                total += stat
                    .split_whitespace()
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
        total
    }

    /// Resident and anonymous memory (MiB) of a driver's build of the
    /// client, idle with all six groups of `node` connected: the shipped
    /// client, built with default features, in a process of its own.
    fn shipped_idle_rss(client: &Path, node: &Node) -> (f64, f64) {
        let output = Command::new(client)
            .arg(node.dir.path())
            .arg("--memory")
            .output()
            .expect("run the shipped client");
        assert!(output.status.success(), "{output:?}");
        let line = String::from_utf8(output.stdout).unwrap();
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|f| f.strip_prefix(name))
                .and_then(|kib| kib.parse::<f64>().ok())
                .expect("rss_kib= and anon_kib=")
                / 1024.0
        };
        (field("rss_kib="), field("anon_kib="))
    }

    /// Current and peak resident memory in MiB.
    fn rss_mib() -> (f64, f64) {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let field = |name: &str| {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
                .unwrap_or(0.0)
                / 1024.0
        };
        (field("VmRSS:"), field("VmHWM:"))
    }

    struct Run {
        p50: Duration,
        p99: Duration,
        per_second: f64,
        cpu_per_call: Duration,
    }

    /// Where the calling tasks run on the runtime.
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Placement {
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

    fn us(d: Duration) -> f64 {
        d.as_secs_f64() * 1e6
    }

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

    async fn connect_sdk(node: &Node) -> CsiProxy {
        CsiProxy::builder()
            .transport(node.transport())
            .retry(RetryPolicy::none())
            .connect()
            .await
            .unwrap()
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
    struct Figures {
        case: Case,
        sdk: Run,
        raw: Run,
    }

    /// Per-call figures of SDK and raw client on one runtime, per case.
    /// Every round measures every case with both clients, alternating which
    /// client goes first, so that the machine's load falls on all alike.
    fn per_call(runtime: &Runtime, node: &Node) -> Vec<Figures> {
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

    fn print_runs(runtime: &str, figures: &[Figures]) {
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
    fn find(figures: &[Figures], placement: Placement, callers: usize) -> &Figures {
        figures
            .iter()
            .find(|f| f.case.placement == placement && f.case.callers == callers)
            .expect("a measured case")
    }

    /// SDK / raw ratios of spawned callers: sequential p50 and CPU,
    /// 16-caller throughput.
    fn ratios(figures: &[Figures]) -> (f64, f64, f64) {
        let one = find(figures, Placement::Spawned, 1);
        let sixteen = find(figures, Placement::Spawned, 16);
        (
            p50_ratio(&one.sdk, &one.raw),
            cpu_ratio(&one.sdk, &one.raw),
            sixteen.sdk.per_second / sixteen.raw.per_second,
        )
    }

    fn p50_ratio(a: &Run, b: &Run) -> f64 {
        us(a.p50) / us(b.p50)
    }

    fn cpu_ratio(a: &Run, b: &Run) -> f64 {
        a.cpu_per_call.as_secs_f64() / b.cpu_per_call.as_secs_f64()
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
mod round_trips {
    use crate::node;
    use csi_proxy_client::api::WindowsPath;
    use csi_proxy_client::mount::Mounter;
    use csi_proxy_client::testing::{FakeHost, FakeProxy, LocalEndpoints, ProxyRelease};
    use csi_proxy_client::CsiProxy;

    const GIB: u64 = 1 << 30;
    const PAGE83: &str = "Google  pvc-1";

    pub async fn print() {
        println!("\nRound trips per CSI node call (the example plugin on the mounter)");
        println!(
            "{:<16} {:>6} {:>8}  calls at v1.3.0 (v0.2.2 sends as many)",
            "", "v1.3.0", "v0.2.2"
        );
        let v1 = count(ProxyRelease::LATEST).await;
        let old = count(ProxyRelease::V0_2_2).await;
        for ((name, rpcs), (_, old_rpcs)) in v1.iter().zip(&old) {
            println!(
                "{name:<16} {:>6} {:>8}  {}",
                rpcs.len(),
                old_rpcs.len(),
                rpcs.join(" ")
            );
        }
    }

    async fn count(release: ProxyRelease) -> Vec<(&'static str, Vec<String>)> {
        let endpoints = LocalEndpoints::new().unwrap();
        let staging = WindowsPath::new(r"C:\var\lib\kubelet\plugins\pd\pv1\globalmount").unwrap();
        let target = WindowsPath::new(r"C:\var\lib\kubelet\pods\p1\volumes\pv1\mount").unwrap();
        let host = FakeHost::builder()
            .disk(1, PAGE83, 10 * GIB)
            .dir(staging.as_str())
            .dir(target.parent().unwrap().as_str())
            .build();
        let mut fake = FakeProxy::for_host(endpoints.transport(), &host);
        fake.serve_release(release).await.unwrap();
        let proxy = CsiProxy::builder()
            .transport(endpoints.transport())
            .connect()
            .await
            .unwrap();
        let state = tempfile::tempdir().unwrap();
        let m = &Mounter::builder(proxy, state.path()).build().unwrap();
        let mut steps = Vec::new();
        let mut step = |name| {
            steps.push((name, fake.calls().into_iter().map(|c| c.rpc).collect()));
            fake.clear_calls();
        };
        node::node_stage_volume(m, PAGE83, &staging).await.unwrap();
        step("stage");
        node::node_stage_volume(m, PAGE83, &staging).await.unwrap();
        step("stage again");
        node::node_publish_volume(m, &staging, &target)
            .await
            .unwrap();
        step("publish");
        node::node_publish_volume(m, &staging, &target)
            .await
            .unwrap();
        step("publish again");
        node::node_get_volume_stats(m, PAGE83, &target)
            .await
            .unwrap();
        step("stats");
        host.set_disk_size(1, 20 * GIB);
        node::node_expand_volume(m, PAGE83, &target, Some(20 * GIB))
            .await
            .unwrap();
        step("expand");
        node::node_unpublish_volume(m, &target).await.unwrap();
        step("unpublish");
        node::node_unpublish_volume(m, &target).await.unwrap();
        step("unpublish again");
        node::node_unstage_volume(m, &staging).await.unwrap();
        step("unstage");
        node::node_unstage_volume(m, &staging).await.unwrap();
        step("unstage again");
        steps
    }
}

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
            runtime().block_on(bench::serve(std::path::Path::new(&args[2]), &args[3]))
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
            runtime.block_on(bench::profile(args[2] == "sdk", callers, here))
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
