//! `csiproxyctl fake`: a fake CSI Proxy for trying the tool (and a driver)
//! without a Windows node. Only in builds with the `testing` feature: an
//! operator's csiproxyctl carries no fake proxy.

use std::time::Duration;

use clap::{Args, ValueEnum};
use csi_proxy_client::testing::{FakeHost, FakeProxy, ProxyRelease, StartOrder, Startup};
use csi_proxy_client::{
    api::{ServiceStatus, StartType, TargetPortal},
    ApiGroup, ApiVersion,
};
use serde_json::json;

use crate::cli::Cli;
use crate::failure::{Failure, Outcome};
use crate::output::emit;
use crate::{transport, transport_json, transport_text};

#[derive(Args)]
pub struct FakeArgs {
    /// What to serve, as group=version pairs: `disk=v1beta2,volume=v1`.
    /// Default: every version of every group.
    #[arg(long, value_name = "LIST", conflicts_with = "release")]
    versions: Option<String>,
    /// Serve what this CSI Proxy release served: `v0.2.2`, `v1.1.0`, ...
    #[arg(long, value_name = "vX.Y.Z")]
    release: Option<String>,
    /// The order in which the endpoints are created at start, as a real
    /// proxy creates its pipes one after the other.
    #[arg(long, value_enum, default_value_t = Order::AsGiven)]
    start_order: Order,
    /// The wait between creating one endpoint and the next, in ms.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    start_gap: u64,
    /// The seed of `--start-order random` (default: drawn from the clock,
    /// and printed).
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Add N raw disks of `--disk-size` bytes (disks 10, 11, ...; LUN as
    /// the number), for a test controller that claims a disk per volume.
    #[arg(long, value_name = "N", default_value_t = 0)]
    disks: u32,
    /// The size of the disks of `--disks`.
    #[arg(long, value_name = "BYTES", default_value_t = 2 << 30)]
    disk_size: u64,
    /// Restart every MS milliseconds (stop every endpoint, serve again),
    /// keeping the host: a proxy that restarts under a driver.
    #[arg(long, value_name = "MS")]
    restart_every: Option<u64>,
    /// With `--restart-every`, every other restart serves (and answers as)
    /// this release instead: an upgrade and a downgrade, again and again.
    #[arg(long, value_name = "vX.Y.Z", requires = "restart_every")]
    alternate_release: Option<String>,
}

/// The first disk number of `--disks`.
const SPARE_DISKS_FROM: u32 = 10;

/// `--start-order`.
#[derive(Clone, Copy, ValueEnum)]
enum Order {
    /// Oldest group-versions first: groups by their version list, as given.
    AsGiven,
    /// Every group's oldest version first, the newest last.
    OldestFirst,
    /// The newest versions first.
    NewestFirst,
    /// A shuffle (see `--seed`).
    Random,
}

impl FakeArgs {
    /// How the endpoints are created.
    fn startup(&self) -> Startup {
        let order = match self.start_order {
            Order::AsGiven => StartOrder::AsGiven,
            Order::OldestFirst => StartOrder::OldestFirst,
            Order::NewestFirst => StartOrder::NewestFirst,
            Order::Random => StartOrder::Shuffled {
                seed: self.seed.unwrap_or_else(|| {
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_nanos() as u64)
                }),
            },
        };
        Startup::staged(order, Duration::from_millis(self.start_gap))
    }
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
/// A folder on the share, as a file server holds one per volume (other
/// folders are made through a link to the share with `fs mkdir`).
const FAKE_SHARE_FOLDER: &str = "pv-1";

/// Serves the fake proxy until interrupted.
pub async fn run(cli: &Cli, args: &FakeArgs) -> Outcome {
    let release = args
        .release
        .as_deref()
        .map(str::parse::<ProxyRelease>)
        .transpose()?;
    let served = match (&args.versions, release) {
        (Some(list), _) => versions(list)?,
        (None, Some(release)) => release.served(),
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
    let mut host = FakeHost::builder()
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
        .share_folder(&format!(r"{}\{FAKE_SHARE_FOLDER}", FAKE_SHARE.0));
    for n in SPARE_DISKS_FROM..SPARE_DISKS_FROM.saturating_add(args.disks) {
        host = host.disk(n, &format!("Fake  spare-{n}"), args.disk_size);
    }
    let host = host.build();
    let alternate = args
        .alternate_release
        .as_deref()
        .map(str::parse::<ProxyRelease>)
        .transpose()?;
    let mut proxy = FakeProxy::for_host(transport.clone(), &host);
    let startup = args.startup();
    if let StartOrder::Shuffled { seed } = startup.order {
        eprintln!("csiproxyctl fake: endpoints in a random order, --seed {seed}");
    }
    proxy.set_startup(startup);
    // A release's answers too, where they differ under one version.
    if let Some(release) = release {
        proxy.behave_as(release);
    }
    proxy.serve_all(served.clone()).await?;
    // One line, once every endpoint is up: a script waits for it.
    let list: Vec<String> = served.iter().map(|(g, v)| format!("{g}={v}")).collect();
    if cli.json {
        emit(&json!({ "serving": list, "transport": transport_json(&transport) }).to_string());
    } else {
        emit(&format!(
            "serving {} group-versions {}: {}",
            served.len(),
            transport_text(&transport),
            list.join(",")
        ));
    }
    match args.restart_every {
        None => {
            let _ = tokio::signal::ctrl_c().await;
        }
        Some(ms) => {
            let interrupted = tokio::signal::ctrl_c();
            tokio::pin!(interrupted);
            let mut ticks = tokio::time::interval(Duration::from_millis(ms.max(1)));
            ticks.tick().await;
            for turn in 1u64.. {
                tokio::select! {
                    _ = &mut interrupted => break,
                    _ = ticks.tick() => {}
                }
                // Odd turns serve the alternate release, if there is one.
                let now = match (alternate, turn % 2) {
                    (Some(other), 1) => Some(other),
                    _ => release,
                };
                let set = now.map_or_else(|| served.clone(), ProxyRelease::served);
                proxy.behave_as(now.unwrap_or(ProxyRelease::LATEST));
                proxy.restart(set).await?;
                eprintln!(
                    "csiproxyctl fake: restarted ({})",
                    now.map_or("the same versions".to_owned(), |r| r.to_string())
                );
            }
        }
    }
    proxy.shutdown().await;
    Ok(())
}
