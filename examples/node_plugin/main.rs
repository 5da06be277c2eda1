//! A CSI node plugin for Windows nodes on the library's node service
//! (feature `csi`): the driver's own rules (`driver.rs`) and this `main`;
//! docs/node-plugin.md.
//!
//! - `cargo run --example node_plugin`: a demonstration against embedded
//!   fake proxies of CSI Proxy v0.2.2 and v1.3, kubelet's calls through the
//!   plugin's Node service, printing the calls the proxy received.
//! - `cargo run --example node_plugin -- serve --endpoint unix:///csi/csi.sock [--kind disk,smb] ...`:
//!   the plugin, as kubelet runs it (`serve --help` lists the options; with
//!   `--controller`, the test controller for csi-sanity).
//! - `cargo run --example node_plugin -- manifests [--host-process] [--image ...] ...`:
//!   the deployment kit's YAML for `kubectl apply -f -` (`manifests --help`
//!   lists the options; with none, `deploy/`'s files).
//! - `cargo run --example node_plugin -- check-manifests FILE...`: the
//!   kit's checks of manifests an operator edited (`scripts/check-manifests.sh`
//!   adds Kubernetes' schemas).

mod demo;
mod driver;
mod kit;

use csi_proxy_client::csi::{NodePlugin, ServeError};
use driver::ExampleDriver;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.first().map(String::as_str) {
        None => demo::run().await,
        Some("serve") => serve(args.split_off(1)).await,
        Some("manifests") => kit::manifests_command(&args[1..])
            .map(|yaml| print!("{yaml}"))
            .map_err(Into::into),
        Some("check-manifests") => kit::check_manifests_command(&args[1..])
            .map(|checked| println!("{checked}"))
            .map_err(Into::into),
        Some(other) => Err(format!(
            "unknown command {other}: none, serve, manifests or check-manifests"
        )
        .into()),
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("node_plugin: {error}");
            std::process::ExitCode::from(2)
        }
    }
}

/// `serve [--kind KINDS] [the library's flags]`.
async fn serve(mut args: Vec<String>) -> Result<(), Box<dyn std::error::Error>> {
    // Its log (the library's: a span per CSI call) on stderr; RUST_LOG
    // tunes it.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
    let driver = ExampleDriver::from_args(&mut args)?;
    // Under csi-sanity (`--controller`), its volumes named as this
    // driver's controller names them.
    let plugin = NodePlugin::new(driver).test_volume_ids(driver::controller_ids);
    match plugin.args(args) {
        Err(ServeError::Help(usage)) => {
            println!("{usage}\n{}", driver::KIND_USAGE);
            Ok(())
        }
        plugin => Ok(plugin?.run().await?),
    }
}
