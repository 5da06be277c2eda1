//! csiproxyctl: ask a node's CSI Proxy what it serves, and try calls without
//! writing a driver. Built on the SDK's public API only.

mod cli;
mod disk;
mod failure;
#[cfg(feature = "testing")]
mod fake;
mod fs;
mod iscsi;
mod output;
mod probe;
mod smb;
mod system;
mod volume;

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use csi_proxy_client::{
    api::{VolumeId, WindowsPath},
    negotiate::VersionPolicy,
    transport::{ServerTrust, Transport},
    ApiGroup, ApiVersion, CsiProxy, Operation,
};
use serde_json::json;

use cli::{Cli, Command};
use failure::{Failure, Outcome};
use output::{emit, Records};

#[tokio::main]
async fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(usage) => return cli::refuse(usage),
    };
    let json = cli.json;
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            if json {
                emit(&failure.to_json().to_string());
            }
            eprintln!("csiproxyctl: {}", failure.line());
            ExitCode::from(failure.code)
        }
    }
}

async fn run(cli: Cli) -> Outcome {
    // The fake makes its socket folder before the transport is checked.
    #[cfg(feature = "testing")]
    if let Command::Fake(args) = &cli.command {
        return fake::run(&cli, args).await;
    }
    #[cfg(not(feature = "testing"))]
    if let Command::Fake { .. } = &cli.command {
        return Err(Failure::usage(cli::NO_FAKE));
    }
    let transport = transport(&cli)?;
    let policy = VersionPolicy::default().allow_preview(cli.preview);
    let wait = Duration::from_secs(cli.wait);
    let group = match &cli.command {
        Command::Probe { require } => {
            return probe::run(transport, policy, require, wait, cli.json).await
        }
        Command::Fake { .. } => unreachable!("answered above"),
        Command::Disk(_) => ApiGroup::Disk,
        Command::Volume(_) => ApiGroup::Volume,
        Command::Fs(_) => ApiGroup::Filesystem,
        Command::Smb(_) => ApiGroup::Smb,
        Command::System(_) => ApiGroup::System,
        Command::Iscsi(_) => ApiGroup::Iscsi,
    };
    let mut builder = CsiProxy::builder()
        .transport(transport)
        .policy(policy)
        .groups([group])
        .require(group)
        .wait_for_proxy(wait);
    // Only when asked: otherwise each operation keeps the SDK's own.
    if let Some(timeout) = cli.timeout.map(Duration::from_secs) {
        builder = builder
            .read_deadline(timeout)
            .mutation_deadline(timeout)
            .deadline(Operation::FormatVolume, timeout)
            .deadline(Operation::ResizeVolume, timeout);
    }
    let proxy = builder.connect().await?;
    let records = match &cli.command {
        Command::Disk(c) => disk::run(&proxy, c).await?,
        Command::Volume(c) => volume::run(&proxy, c).await?,
        Command::Fs(c) => fs::run(&proxy, c).await?,
        Command::Smb(c) => smb::run(&proxy, c).await?,
        Command::System(c) => system::run(&proxy, c).await?,
        Command::Iscsi(c) => iscsi::run(&proxy, c).await?,
        Command::Probe { .. } | Command::Fake { .. } => unreachable!("answered above"),
    };
    records.print(cli.json);
    Ok(())
}

/// The endpoints the options name: CSI Proxy's named pipes unless told
/// otherwise, served by the owners they trust.
fn transport(cli: &Cli) -> Outcome<Transport> {
    Ok(endpoints(cli)?.trusting(trust(cli)?))
}

/// Whom `--trust-owner` adds to the default trust.
fn trust(cli: &Cli) -> Outcome<ServerTrust> {
    let mut trust = ServerTrust::default();
    for owner in &cli.trust_owner {
        trust = match owner.as_str() {
            "me" => trust.trust_current_user()?,
            uid if uid.bytes().all(|b| b.is_ascii_digit()) => trust.trust_uid(
                uid.parse()
                    .map_err(|_| Failure::usage(format!("{uid:?} is no user id")))?,
            ),
            sid => trust.trust_sid(sid)?,
        };
    }
    Ok(trust)
}

fn endpoints(cli: &Cli) -> Outcome<Transport> {
    if let Some(prefix) = &cli.pipe_prefix {
        return Ok(Transport::named_pipes_with_prefix(prefix)?);
    }
    #[cfg(unix)]
    if let Some(dir) = &cli.socket_dir {
        return Ok(Transport::unix_sockets(dir)?);
    }
    #[cfg(not(unix))]
    if cli.socket_dir.is_some() {
        return Err(Failure::usage(
            "--socket-dir needs Unix sockets; use --pipe-prefix on Windows",
        ));
    }
    if !cfg!(windows) {
        return Err(Failure::usage(
            "named pipes (the default) exist only on Windows; give --socket-dir DIR",
        ));
    }
    Ok(Transport::named_pipes())
}

/// How the transport shows in JSON.
fn transport_json(transport: &Transport) -> serde_json::Value {
    #[cfg(unix)]
    if let Some(dir) = transport.socket_dir() {
        return json!({ "kind": "unix_sockets", "dir": dir.display().to_string() });
    }
    json!({ "kind": "named_pipes", "prefix": pipe_prefix(transport) })
}

/// Where the transport's endpoints are, in words (`fake`'s banner).
#[cfg(feature = "testing")]
fn transport_text(transport: &Transport) -> String {
    #[cfg(unix)]
    if let Some(dir) = transport.socket_dir() {
        return format!("on Unix sockets in {}", dir.display());
    }
    format!("on named pipes {}*", pipe_prefix(transport))
}

/// What comes before the endpoint names: `\\.\pipe\` for CSI Proxy's.
fn pipe_prefix(transport: &Transport) -> String {
    let pipe = transport.address(ApiGroup::Disk, ApiVersion::V1);
    let name = csi_proxy_client::transport::endpoint_name(ApiGroup::Disk, ApiVersion::V1);
    pipe.trim_end_matches(&name).to_owned()
}

/// What a change that succeeded prints: the one line alone, and with
/// `--json` the object `{"done": ...}`.
fn done(what: String) -> Records {
    Records::word(&["done"], &what)
}

fn path(raw: &str) -> Outcome<WindowsPath> {
    Ok(WindowsPath::new(raw)?)
}

fn volume_id(raw: &str) -> Outcome<VolumeId> {
    Ok(VolumeId::new(raw)?)
}
