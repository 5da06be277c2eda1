//! A CSI node plugin for Windows nodes on the SDK: the Identity and Node
//! services on the mounter (`csi_proxy_client::mount`), and a Controller
//! for tests only, so that the CSI community's conformance suite,
//! csi-sanity, can run a volume's whole life against it
//! (docs/node-plugin.md).
//!
//! - `cargo run --example node_plugin`: a demonstration against embedded
//!   fake proxies of CSI Proxy v0.2.2 and v1.3, printing each step and the
//!   calls the proxy received.
//! - `cargo run --example node_plugin -- serve --endpoint unix:///csi/csi.sock ...`:
//!   the plugin, as kubelet runs it (`serve --help` lists the options).

// kubelet's `unix://` endpoint on Windows, where tokio has no AF_UNIX.
#[cfg(windows)]
mod blocking_unix;
mod controller;
#[path = "csi_v1.rs"]
#[allow(clippy::all, missing_docs)]
#[rustfmt::skip]
mod csi;
mod demo;
mod node;
mod plugin;
mod serve;
mod volume_ref;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.first().map(String::as_str) {
        None => demo::run().await,
        Some("serve") => serve::run(&args[1..]).await,
        Some(other) => Err(format!("unknown command {other}: none or serve").into()),
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("node_plugin: {error}");
            std::process::ExitCode::from(2)
        }
    }
}
