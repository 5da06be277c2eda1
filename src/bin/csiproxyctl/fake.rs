//! `csiproxyctl fake`: a fake CSI Proxy for trying the tool (and a driver)
//! without a Windows node. Only in builds with the `testing` feature: an
//! operator's csiproxyctl carries no fake proxy.

use clap::Args;
use csi_proxy_client::testing::{FakeHost, FakeProxy, ProxyRelease};
use csi_proxy_client::{ApiGroup, ApiVersion, ServiceStatus, StartType, TargetPortal};

use crate::cli::Cli;
use crate::failure::{Failure, Outcome};
use crate::output::emit;
use crate::{transport, transport_json};

#[derive(Args)]
pub struct FakeArgs {
    /// What to serve, as group=version pairs: `disk=v1beta2,volume=v1`.
    /// Default: every version of every group.
    #[arg(long, value_name = "LIST", conflicts_with = "release")]
    versions: Option<String>,
    /// Serve what this CSI Proxy release served: `v0.2.2`, `v1.1.0`, ...
    #[arg(long, value_name = "vX.Y.Z")]
    release: Option<String>,
}

/// Parses `disk=v1beta2,volume=v1`.
fn versions(list: &str) -> Outcome<Vec<(ApiGroup, ApiVersion)>> {
    list.split(',')
        .filter(|item| !item.trim().is_empty())
        .map(|item| {
            let (group, version) = item
                .split_once('=')
                .ok_or_else(|| Failure::usage(format!("{item:?} is not group=version")))?;
            let (group, version): (ApiGroup, ApiVersion) =
                (group.trim().parse()?, version.trim().parse()?);
            if !group.has_version(version) {
                return Err(Failure::usage(format!(
                    "CSI Proxy has no {group} {version}"
                )));
            }
            Ok((group, version))
        })
        .collect()
}

/// The fake host's SMB share: root, user and password.
const FAKE_SHARE: (&str, &str, &str) = (r"\\fileserver\data", "csi", "fake-password");

/// Serves the fake proxy until interrupted.
pub async fn run(cli: &Cli, args: &FakeArgs) -> Outcome {
    let served = match (&args.versions, &args.release) {
        (Some(list), _) => versions(list)?,
        (None, Some(release)) => release.parse::<ProxyRelease>()?.served(),
        (None, None) => ApiGroup::ALL
            .iter()
            .flat_map(|&g| g.versions().iter().map(move |&v| (g, v)))
            .collect(),
    };
    // The sockets' folder is made if missing: a fake's first start.
    if let Some(dir) = &cli.socket_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::usage(format!("{}: {e}", dir.display())))?;
    }
    let transport = transport(cli)?;
    let host = FakeHost::builder()
        .disk(1, "Google  pd-data", 10 << 30)
        .disk(2, "Google  pd-logs", 20 << 30)
        .iscsi_target(
            TargetPortal::new("10.0.0.5"),
            "iqn.2026-11.example:t1",
            &[("lun-0", 2 << 30)],
            None,
            None,
        )
        .service(
            "csiproxy",
            "CSI Proxy",
            StartType::Automatic,
            ServiceStatus::Running,
        )
        .smb_share(FAKE_SHARE.0, FAKE_SHARE.1, FAKE_SHARE.2)
        .build();
    let mut proxy = FakeProxy::for_host(transport.clone(), &host);
    proxy.serve_all(served.clone()).await?;
    let list: Vec<String> = served.iter().map(|(g, v)| format!("{g}={v}")).collect();
    emit(&format!(
        "serving {} at {}: {}",
        served.len(),
        transport_json(&transport),
        list.join(",")
    ));
    let _ = tokio::signal::ctrl_c().await;
    proxy.shutdown().await;
    Ok(())
}
