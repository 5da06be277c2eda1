//! A client built the way a driver builds the crate (default features),
//! run by `tests/shipped_build.rs` against fake proxies in the test
//! process.
//!
//! Usage: `shipped-client SOCKET_DIR CALL [ARG] [--deadline-ms N]`.
//! Prints one line per outcome, in the format of `calls::describe`.

mod calls;

use calls::Call;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (Some(dir), Some(call)) = (args.first(), Call::parse(args.get(1..).unwrap_or_default()))
    else {
        eprintln!("usage: shipped-client SOCKET_DIR CALL [ARG] [--deadline-ms N]");
        std::process::exit(2);
    };
    let transport = csi_proxy_client::Transport::unix_sockets(dir).expect("socket directory");
    println!("{}", calls::run(transport, &call).await);
}
