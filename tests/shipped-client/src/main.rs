//! A client built the way a driver builds the crate (default features),
//! run by `tests/shipped_build.rs` against fake proxies in the test
//! process, and by the benchmark for the memory a driver's process holds.
//!
//! Usage:
//! - `shipped-client SOCKET_DIR CALL [ARG] [--deadline-ms N]` prints one
//!   line per outcome, in the format of `calls::describe`;
//! - `shipped-client SOCKET_DIR --memory` connects every group on the
//!   multi-thread runtime (what `#[tokio::main]` gives a driver) and prints
//!   `rss_kib=N anon_kib=N` of this process (Linux).

// Shared with the test that runs this client (`tests/shipped_build.rs`),
// outside this crate's folder so that the main crate's package has it.
#[path = "../../shipped/calls.rs"]
mod calls;

use calls::Call;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        [dir, "--memory"] => memory(dir),
        [dir, call @ ..] if Call::parse(call).is_some() => {
            let call = Call::parse(call).expect("parsed above");
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            println!("{}", runtime.block_on(calls::run(transport(dir), &call)));
        }
        _ => {
            eprintln!("usage: shipped-client SOCKET_DIR (CALL [ARG] [--deadline-ms N] | --memory)");
            std::process::exit(2);
        }
    }
}

fn transport(dir: &str) -> csi_proxy_client::transport::Transport {
    csi_proxy_client::transport::Transport::unix_sockets(dir).expect("socket directory")
}

/// Resident memory with all six groups connected and idle.
fn memory(dir: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let proxy = runtime.block_on(async {
        csi_proxy_client::CsiProxy::builder()
            .transport(transport(dir))
            .connect()
            .await
            .expect("connect every group")
    });
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib = |field: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.split_whitespace().next())
            .unwrap_or("0")
            .to_owned()
    };
    println!("rss_kib={} anon_kib={}", kib("VmRSS:"), kib("RssAnon:"));
    drop(proxy);
}
