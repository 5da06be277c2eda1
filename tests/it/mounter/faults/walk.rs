//! One walk: a fresh node, a seeded generator (a seed replays the same
//! walk), and the operations kubelet could send next, each with the fault
//! for its first attempt.

use std::collections::BTreeSet;

use csi_proxy_client::testing::{FakeHost, ProxyRelease};

use super::driver::{Driver, Fault};
use super::figures::Run;
use super::model::Model;
use super::ops::{
    disk_number, page83, parent, smb_remote, smb_staging, smb_volume, staging, target, Op,
};
use super::{DISKS, SHARE, SMB_VOLUMES, STAGING_DRIVERS};
use crate::common::node::FakeNode;
use crate::mounter::GIB;

/// splitmix64: a small, fixed generator, so that a seed replays the same
/// walk.
pub(super) struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub(super) fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// One seed at one release: `ops` operations on a fresh node.
pub(super) async fn walk(release: ProxyRelease, seed: u64, ops: usize, run: &mut Run) {
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

pub(super) struct World<'r> {
    pub(super) release: ProxyRelease,
    pub(super) seed: u64,
    pub(super) rng: SplitMix64,
    pub(super) host: FakeHost,
    pub(super) node: FakeNode,
    pub(super) state: tempfile::TempDir,
    pub(super) driver: Driver,
    pub(super) model: Model,
    pub(super) run: &'r mut Run,
    /// The operation's number in the walk.
    pub(super) index: usize,
    /// The operation under way (kept through the reconcile of a driver
    /// killed under it).
    pub(super) current: Option<Op>,
    pub(super) fault: Option<Fault>,
    /// A failure was found: the rest of the walk would only repeat it.
    pub(super) stopped: bool,
    /// `MOUNTER_FAULT_TRACE`: print each operation and attempt.
    pub(super) trace: bool,
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
    pub(super) fn choose_fault(&mut self, op: &Op) -> Option<Fault> {
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

    pub(super) fn kind(&self, op: &Op) -> &'static str {
        let raw = (op.disk()).is_some_and(|disk| {
            !(self.host.disk(disk_number(disk))).is_some_and(|d| d.partitioned)
        });
        op.kind(raw)
    }

    /// The SMB volumes kubelet still has: staged, or being staged or
    /// unstaged.
    pub(super) fn live(&self) -> BTreeSet<String> {
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
    pub(super) fn context(&self) -> String {
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

    pub(super) fn invariant_break(&mut self, what: String) {
        let failure = format!("{}: INVARIANT: {what}", self.context());
        if self.trace {
            println!("    {failure}");
        }
        self.run.failures.push(failure);
        self.run.figures.invariant_breaks += 1;
        self.stopped = true;
    }
}
