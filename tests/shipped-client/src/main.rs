//! A client built the way a driver builds the crate (default features),
//! run by `tests/shipped_build.rs` against fake proxies in the test
//! process.
//!
//! Usage: `shipped-client SOCKET_DIR CALL [ARG] [--deadline-ms N]`.
//! Prints one line per outcome, in the format of `calls::describe`.

mod calls;

use std::time::Duration;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(dir), Some(call)) = (args.first(), args.get(1)) else {
        eprintln!("usage: shipped-client SOCKET_DIR CALL [ARG] [--deadline-ms N]");
        std::process::exit(2);
    };
    let arg = args
        .get(2)
        .filter(|a| !a.starts_with("--"))
        .map(String::as_str);
    let deadline = args
        .iter()
        .position(|a| a == "--deadline-ms")
        .and_then(|i| args.get(i + 1))
        .map(|ms| Duration::from_millis(ms.parse().expect("--deadline-ms N")));
    let transport = csi_proxy_client::Transport::unix_sockets(dir).expect("socket directory");
    println!("{}", calls::run(transport, call, arg, deadline).await);
}
