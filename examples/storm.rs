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
//!
//! Its parts: `storm/setup.rs` (the node, its volumes and latencies, a
//! run's scale), `storm/staging.rs` (cases a to c), `storm/journal.rs`
//! (cases d and e).

#[cfg(unix)]
#[path = "storm/journal.rs"]
mod journal;
#[cfg(unix)]
#[path = "storm/setup.rs"]
mod setup;
#[cfg(unix)]
#[path = "storm/staging.rs"]
mod staging;

#[cfg(unix)]
use journal::{journal_costs, journal_ratios, reconcile, JournalCost, Reconciled};
#[cfg(unix)]
use setup::{ms, print_latencies, Runtimes, FULL, QUICK};
#[cfg(unix)]
use staging::{chains, storm, waiting, Chains, Storm, Waiting};

#[cfg(unix)]
fn main() {
    let quick = std::env::args().any(|arg| arg == "--quick");
    let scale = if quick { &QUICK } else { &FULL };
    let runtimes = Runtimes::new();
    let started = std::time::Instant::now();
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
#[cfg(unix)]
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

#[cfg(not(unix))]
fn main() {
    eprintln!(
        "the storm benchmark serves its fake proxy over Unix sockets; run it on Linux or macOS"
    );
}
