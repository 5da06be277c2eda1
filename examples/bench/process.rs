//! What the system tells of a process: this one's CPU time and resident
//! memory, and a driver's build's memory, idle, in a process of its own.

use std::path::Path;
use std::process::Command;

use crate::proxy::Node;

/// CPU time of this process so far (all threads), in nanoseconds.
pub fn cpu_ns() -> u64 {
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
pub fn shipped_idle_rss(client: &Path, node: &Node) -> (f64, f64) {
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
pub fn rss_mib() -> (f64, f64) {
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
