//! The run's settings, from the environment, and what it counts: the
//! figures it prints, the failures, and the fault points each kind of
//! operation has had (so that every one is hit in turn).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::{CI_OPS, CI_SEEDS};

pub(super) struct Settings {
    pub(super) seeds: Vec<u64>,
    pub(super) ops: usize,
    /// The variables that run this again: a walk's faults depend on the
    /// walks of the seeds before it (fault points are dealt in turn).
    pub(super) replay: String,
}

impl Settings {
    /// `MOUNTER_FAULT_SEED=S` (seed S alone), `MOUNTER_FAULT_SEEDS=N` (seeds
    /// 1 to N), `MOUNTER_FAULT_OPS=M` (M operations a seed).
    pub(super) fn from_env() -> Settings {
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
pub(super) struct Figures {
    pub(super) operations: usize,
    pub(super) attempts: usize,
    pub(super) host_calls: usize,
    pub(super) faults: usize,
    pub(super) proxy_restarts: usize,
    pub(super) driver_restarts: usize,
    /// Volumes an operator formatted by hand: the driver was killed while
    /// its partition was made, and the mounter could not show it is its.
    pub(super) operator_formats: usize,
    pub(super) converged: usize,
    pub(super) not_converged: usize,
    pub(super) invariant_breaks: usize,
}

impl Figures {
    pub(super) fn add(&mut self, other: &Figures) {
        self.operations += other.operations;
        self.attempts += other.attempts;
        self.host_calls += other.host_calls;
        self.faults += other.faults;
        self.proxy_restarts += other.proxy_restarts;
        self.driver_restarts += other.driver_restarts;
        self.operator_formats += other.operator_formats;
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
             {} driver restarts, {} volumes formatted by hand, {} converged, \
             {} not converged, {} invariant breaks",
            self.operations,
            self.attempts,
            self.host_calls,
            self.faults,
            self.proxy_restarts,
            self.driver_restarts,
            self.operator_formats,
            self.converged,
            self.not_converged,
            self.invariant_breaks
        )
    }
}

/// What the seeds of one release share: the figures, the failures, and
/// which fault points each kind of operation has had.
#[derive(Default)]
pub(super) struct Run {
    pub(super) figures: Figures,
    pub(super) failures: Vec<String>,
    /// Per kind of operation: the next fault point once every one was hit
    /// (before call 1, after call 1, before call 2, ...).
    pub(super) cursors: BTreeMap<&'static str, usize>,
    /// Per kind: the most host calls a first attempt without a fault made.
    pub(super) most_calls: BTreeMap<&'static str, usize>,
    /// Fault points whose host call came: kind, n, after its work.
    pub(super) hit: BTreeSet<(&'static str, usize, bool)>,
}

impl Run {
    /// Per kind: the fault points hit, of those its host calls offer.
    pub(super) fn coverage(&self) -> String {
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
    pub(super) fn unhit(&self, kind: &'static str) -> Vec<(usize, bool)> {
        let calls = self.most_calls.get(kind).copied().unwrap_or(0);
        (1..=calls)
            .flat_map(|n| [(n, false), (n, true)])
            .filter(|&(n, after)| !self.hit.contains(&(kind, n, after)))
            .collect()
    }
}
