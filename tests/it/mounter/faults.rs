//! The mounter under faults (issue 43): random kubelet-style operations on
//! five disks and on three volumes of one SMB share, through `Mounter`
//! over a fake proxy on real endpoints, with the proxy stopped and started
//! again, or the driver killed, just before or just after the n-th host
//! call of an operation, for every n in turn; driver restarts followed by
//! `reconcile`; and kubelet's retries. Between every two host calls and
//! after every operation, the node is checked against what kubelet
//! believes. `docs/testing.md` says how to run it longer.

mod attempts;
mod checks;
mod driver;
mod figures;
mod model;
mod ops;
mod walk;

use std::time::{Duration, Instant};

use csi_proxy_client::testing::ProxyRelease;

use figures::{Figures, Run, Settings};
use walk::walk;

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
