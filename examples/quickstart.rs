//! Quickstart: version negotiation end to end, against an embedded stand-in
//! for CSI Proxy.
//!
//! It starts gRPC servers for the pipes a CSI Proxy v0.2.2 node serves (on
//! Unix sockets in a temporary directory, or on named pipes on Windows),
//! negotiates every group, then "upgrades" the node to what v1.3 serves and
//! negotiates again. On a real Windows node, use `Transport::named_pipes()`
//! and skip the stand-in.
//!
//! Run it with `cargo run --example quickstart`; set `RUST_LOG=debug` to see
//! every probe.

use csi_proxy_client::testing::StubProxy;
use csi_proxy_client::{ApiGroup, ApiVersion, Negotiator, Transport};
use ApiVersion as V;

/// The group-versions CSI Proxy v0.2.2 serves.
const PROXY_V0_2_2: [(ApiGroup, &[ApiVersion]); 6] = [
    (ApiGroup::Disk, &[V::V1ALPHA1, V::V1BETA1, V::V1BETA2]),
    (ApiGroup::Filesystem, &[V::V1ALPHA1, V::V1BETA1]),
    (ApiGroup::Smb, &[V::V1ALPHA1, V::V1BETA1]),
    (ApiGroup::Volume, &[V::V1ALPHA1, V::V1BETA1, V::V1BETA2]),
    (ApiGroup::Iscsi, &[V::V1ALPHA1]),
    (ApiGroup::System, &[V::V1ALPHA1]),
];

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .init();

    let (transport, _socket_dir) = local_transport()?;
    println!("Endpoints live at {transport:?}\n");

    let mut proxy = StubProxy::new(transport.clone());
    for (group, versions) in PROXY_V0_2_2 {
        for &version in versions {
            proxy.serve(group, version).await?;
        }
    }
    println!(
        "A node running CSI Proxy v0.2.2 ({} pipes):",
        proxy.served().len()
    );
    let negotiator = Negotiator::new(transport);
    let negotiated = negotiator.negotiate(&ApiGroup::ALL).await?;
    print!("{}", negotiated.report());

    // The operator upgrades CSI Proxy: every version of every group is served.
    for group in ApiGroup::ALL {
        for &version in group.versions() {
            if !proxy.served().contains(&(group, version)) {
                proxy.serve(group, version).await?;
            }
        }
    }
    println!(
        "\nThe same node after upgrading to CSI Proxy v1.3 ({} pipes):",
        proxy.served().len()
    );
    let negotiated = negotiator.negotiate(&ApiGroup::ALL).await?;
    print!("{}", negotiated.report());

    let disk = negotiated.connection(ApiGroup::Disk)?;
    println!(
        "\nThe disk group now speaks {} over {}.",
        disk.version(),
        disk.address()
    );
    proxy.shutdown().await;
    Ok(())
}

/// Unix sockets in a fresh temporary directory (kept alive by the returned
/// guard), or named pipes under a prefix of this process on Windows.
#[cfg(unix)]
fn local_transport() -> Result<(Transport, tempfile::TempDir), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    Ok((Transport::unix_sockets(dir.path())?, dir))
}

#[cfg(windows)]
fn local_transport() -> Result<(Transport, ()), Box<dyn std::error::Error>> {
    let prefix = format!(r"\\.\pipe\quickstart-{}-", std::process::id());
    Ok((Transport::named_pipes_with_prefix(&prefix)?, ()))
}
