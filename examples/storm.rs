//! Benchmark: the mounter at a node's scale (issue 44, "a node's reboot
//! storm"), over a `FakeProxy` at CSI Proxy v1.3 on Unix sockets whose
//! fake host takes as long per call as a Windows node does
//! (`FakeHost::set_latency`; the table is printed first).
//!
//! Run it with `cargo run --release --features testing --example storm`
//! (`-- --quick` for fewer volumes and records). It measures:
//! 1. the one-volume chain: one disk volume staged and published alone,
//!    and one SMB volume alone (median of 3 runs);
//! 2. the storm: 64 raw disks and 256 SMB volumes (each its own folder of
//!    one share), all staged and published at once, one task per volume as
//!    kubelet calls, against the longer one-volume chain; p50 and p99 of a
//!    volume's time;
//! 3. 64 stages waiting for disks that are attached (an iSCSI login)
//!    2.5 s after they start: rescans and `ListDiskIDs` calls per poll
//!    interval (the mounter's default, 1 s);
//! 4. `reconcile` of a fresh mounter over a journal of about 1,000 records
//!    (75 disks staged, 375 links published, 185 SMB volumes staged, made
//!    with no latency), and the RPCs it sends;
//! 5. the cost of one journal change (a publish or an unpublish, no
//!    latency) at 10, 100, 1,000 and 10,000 records, against 10: its
//!    median time and the process's mean CPU time for it, the sizes
//!    measured in turn over 5 rounds (the disk's speed drifts on a shared
//!    machine; the CPU time does not wait for it).
//!
//! Each figure is printed beside its target; the last line is
//! machine-readable. The fake proxy runs on a Tokio runtime of its own
//! (as CSI Proxy runs in a process of its own), the mounter on another;
//! the mounter's journal is in a temporary folder.

#[cfg(unix)]
mod storm {
    use std::collections::BTreeMap;
    use std::future::Future;
    use std::path::Path;
    use std::time::{Duration, Instant};

    use tokio::runtime::Runtime;

    use csi_proxy_client::api::{
        IscsiApi, IscsiAuth, Secret, SmbRemotePath, TargetPortal, WindowsPath,
    };
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
    const DISK_BYTES: u64 = 10 << 30;
    /// The portal and target whose login attaches the awaited disks.
    const PORTAL: &str = "10.0.0.9";
    const IQN: &str = "iqn.2024-01.example:storm";
    /// When the awaited disks are attached, after their stages started:
    /// within a poll interval, not at its edge.
    const ATTACH_AFTER: Duration = Duration::from_millis(2_500);
    /// The mounter's default poll interval, for the waiting stages.
    const POLL: Duration = Duration::from_secs(1);
    /// Publishes side by side while a journal is filled.
    const FILLERS: usize = 8;
    /// Rounds of case e, each size measured in turn in each.
    const JOURNAL_ROUNDS: usize = 5;

    /// The targets, printed beside the figures.
    const STORM_TARGET: f64 = 1.5;
    const RESCANS_TARGET: usize = 1;
    const RECONCILE_TARGET: Duration = Duration::from_secs(2);
    const JOURNAL_TARGET: f64 = 1.5;

    /// How much of each case a run does.
    struct Scale {
        chain_runs: usize,
        storm_disks: usize,
        storm_shares: usize,
        waiting: usize,
        /// Disks staged, links published (spread over them), SMB volumes
        /// staged for the reconcile's journal.
        reconcile: (usize, usize, usize),
        journal_sizes: &'static [usize],
        journal_pairs: usize,
    }

    const FULL: Scale = Scale {
        chain_runs: 3,
        storm_disks: 64,
        storm_shares: 256,
        waiting: 64,
        reconcile: (75, 375, 185),
        journal_sizes: &[10, 100, 1_000, 10_000],
        journal_pairs: 200,
    };

    const QUICK: Scale = Scale {
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
    struct Runtimes {
        proxy: Runtime,
        driver: Runtime,
    }

    impl Runtimes {
        fn new() -> Self {
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
    enum Volume {
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

        fn page83(self) -> String {
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

        fn staging(self) -> WindowsPath {
            path(&format!(r"{}\globalmount", self.staging_parent()))
        }

        /// Pod `pod`'s folder for the volume, which kubelet makes.
        fn target_parent(self, pod: usize) -> String {
            format!(
                r"C:\var\lib\kubelet\pods\pod-{pod}-{}\volumes\kubernetes.io~csi\{}",
                self.name(),
                self.name()
            )
        }

        fn target(self, pod: usize) -> WindowsPath {
            path(&format!(r"{}\mount", self.target_parent(pod)))
        }

        /// The host with what the volume needs: its disk (unless it is
        /// attached later) or its share folder, and kubelet's folders.
        fn seed(self, host: FakeHostBuilder, with_disk: bool) -> FakeHostBuilder {
            let host = host.dir(&self.staging_parent()).dir(&self.target_parent(0));
            match self {
                Volume::Disk(n) if with_disk => {
                    host.disk(disk_number(n), &self.page83(), DISK_BYTES)
                }
                Volume::Disk(_) => host,
                Volume::Smb(_) => host.share_folder(&self.share_folder()),
            }
        }

        /// `NodeStageVolume`.
        async fn stage(self, mounter: &Mounter) -> Result<()> {
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
        async fn publish(self, mounter: &Mounter, pod: usize) -> Result<()> {
            (mounter.publish(&self.staging(), &self.target(pod)))
                .await
                .map(drop)
        }

        /// Stage and publish for pod 0, as kubelet calls them: how long
        /// both took.
        async fn chain(self, mounter: Mounter) -> Result<Duration> {
            let started = Instant::now();
            self.stage(&mounter).await?;
            self.publish(&mounter, 0).await?;
            Ok(started.elapsed())
        }
    }

    /// The host's number of disk volume `n` (0 is left for a boot disk).
    fn disk_number(n: usize) -> u32 {
        u32::try_from(n + 1).expect("a disk number")
    }

    fn path(text: &str) -> WindowsPath {
        WindowsPath::new(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn disks(count: usize) -> impl Iterator<Item = Volume> {
        (0..count).map(Volume::Disk)
    }

    fn smb_volumes(count: usize) -> impl Iterator<Item = Volume> {
        (0..count).map(Volume::Smb)
    }

    /// A host seeded for `volumes`, with their disks attached or not.
    fn host_for(volumes: &[Volume], with_disks: bool) -> FakeHostBuilder {
        let host = FakeHost::builder().smb_share(SHARE, SMB_USER, SMB_PASSWORD);
        (volumes.iter()).fold(host, |host, volume| volume.seed(host, with_disks))
    }

    /// A node: the fake host behind a fake proxy at v1.3, and the mounter's
    /// journal folder.
    struct Node {
        host: FakeHost,
        fake: FakeProxy,
        endpoints: LocalEndpoints,
        state: tempfile::TempDir,
    }

    impl Node {
        /// `host` served on the proxy's runtime.
        fn start(runtimes: &Runtimes, host: FakeHost) -> Node {
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
        async fn connect(&self) -> CsiProxy {
            (CsiProxy::builder().transport(self.endpoints.transport()))
                .connect()
                .await
                .expect("connected")
        }

        /// A mounter with the default settings on a new client, over the
        /// node's journal.
        async fn mounter(&self) -> Mounter {
            Mounter::builder(self.connect().await, self.state.path())
                .build()
                .expect("mounter")
        }

        /// From now on, each call takes as long as [`LATENCIES_MS`] says.
        fn latencies_on(&self) {
            let table = LATENCIES_MS.iter();
            (self.host).set_latencies(table.map(|&(op, ms)| (op, Duration::from_millis(ms))));
        }

        /// RPCs the proxy received since the last call, forgotten.
        fn take_rpcs(&self) -> usize {
            let count = self.fake.calls().len();
            self.fake.clear_calls();
            count
        }
    }

    fn ms(duration: Duration) -> f64 {
        duration.as_secs_f64() * 1_000.0
    }

    /// The `p`-th percentile (0 to 100) of `durations`, nearest rank.
    fn percentile(durations: &mut [Duration], p: usize) -> Duration {
        durations.sort_unstable();
        let rank = (durations.len() * p).div_ceil(100).max(1);
        durations[rank - 1]
    }

    fn median(durations: &mut [Duration]) -> Duration {
        percentile(durations, 50)
    }

    fn verdict(met: bool) -> &'static str {
        match met {
            true => "met",
            false => "NOT met",
        }
    }

    /// How long `work` took on the driver's runtime, and its answer.
    fn timed<T>(runtimes: &Runtimes, work: impl Future<Output = T>) -> (T, Duration) {
        let started = Instant::now();
        let answer = runtimes.driver.block_on(work);
        (answer, started.elapsed())
    }

    // ---- the cases ------------------------------------------------------

    fn print_latencies() {
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

    struct Chains {
        disk: Duration,
        smb: Duration,
    }

    impl Chains {
        fn longer(&self) -> Duration {
            self.disk.max(self.smb)
        }
    }

    fn chains(runtimes: &Runtimes, scale: &Scale) -> Chains {
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
    struct Storm {
        wall: Duration,
        ratio: f64,
        p50: Duration,
        p99: Duration,
    }

    /// Case b: every volume staged and published at once, a task each.
    fn storm(runtimes: &Runtimes, scale: &Scale, chains: &Chains) -> Storm {
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
    struct Looks {
        rescans_sent: usize,
        rescans_done: usize,
        list_ids: usize,
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
    struct Waiting {
        max_rescans: usize,
        total: Looks,
    }

    /// Case c: stages that wait for their disks, attached after
    /// [`ATTACH_AFTER`].
    fn waiting(runtimes: &Runtimes, scale: &Scale) -> Waiting {
        let volumes: Vec<Volume> = disks(scale.waiting).collect();
        println!(
            "c. {} stages waiting for their disks, attached {:?} after they start (poll {:?})",
            scale.waiting, ATTACH_AFTER, POLL
        );
        let iscsi: Vec<(String, u64)> =
            (volumes.iter()).map(|v| (v.page83(), DISK_BYTES)).collect();
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

    /// What the reconcile measured.
    struct Reconciled {
        lines: usize,
        took: Duration,
        rpcs: usize,
    }

    /// Case d: a fresh mounter's build and reconcile over a journal of
    /// about a thousand records.
    fn reconcile(runtimes: &Runtimes, scale: &Scale) -> Reconciled {
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
    struct JournalCost {
        records: usize,
        /// Lines of the journal's files then.
        lines: usize,
        build: Duration,
        change: Duration,
        /// The process's CPU time per change (the fake proxy's too), mean:
        /// what the disk's speed does not move.
        cpu: Duration,
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
    fn journal_costs(runtimes: &Runtimes, scale: &Scale) -> Vec<JournalCost> {
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
    fn journal_ratios(costs: &[JournalCost]) -> (f64, f64) {
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

    pub fn main() {
        let quick = std::env::args().any(|arg| arg == "--quick");
        let scale = if quick { &QUICK } else { &FULL };
        let runtimes = Runtimes::new();
        let started = Instant::now();
        print_latencies();
        let chains = chains(&runtimes, scale);
        let storm = storm(&runtimes, scale, &chains);
        let waiting = waiting(&runtimes, scale);
        let reconciled = reconcile(&runtimes, scale);
        let journal = journal_costs(&runtimes, scale);
        println!("whole run: {:.0} s", started.elapsed().as_secs_f64());
        print_summary(&chains, &storm, &waiting, &reconciled, &journal, quick);
    }

    /// The machine-readable line.
    fn print_summary(
        chains: &Chains,
        storm: &Storm,
        waiting: &Waiting,
        reconciled: &Reconciled,
        journal: &[JournalCost],
        quick: bool,
    ) {
        let (journal_ratio, journal_cpu_ratio) = journal_ratios(journal);
        let per_size: Vec<String> = (journal.iter())
            .map(|cost| {
                format!(
                    "journal_change_ms_{n}={:.3} journal_cpu_ms_{n}={:.3}",
                    ms(cost.change),
                    ms(cost.cpu),
                    n = cost.records
                )
            })
            .collect();
        println!(
            "storm: quick={quick} chain_disk_ms={:.0} chain_smb_ms={:.0} storm_ms={:.0} \
             storm_ratio={:.2} storm_p50_ms={:.0} storm_p99_ms={:.0} wait_max_rescans={} \
             wait_rescans={} wait_list_ids={} reconcile_lines={} reconcile_ms={:.0} \
             reconcile_rpcs={} {} journal_ratio={journal_ratio:.2} \
             journal_cpu_ratio={journal_cpu_ratio:.2}",
            ms(chains.disk),
            ms(chains.smb),
            ms(storm.wall),
            storm.ratio,
            ms(storm.p50),
            ms(storm.p99),
            waiting.max_rescans,
            waiting.total.rescans_sent,
            waiting.total.list_ids,
            reconciled.lines,
            ms(reconciled.took),
            reconciled.rpcs,
            per_size.join(" ")
        );
    }
}

#[cfg(unix)]
fn main() {
    storm::main();
}

#[cfg(not(unix))]
fn main() {
    eprintln!(
        "the storm benchmark serves its fake proxy over Unix sockets; run it on Linux or macOS"
    );
}
