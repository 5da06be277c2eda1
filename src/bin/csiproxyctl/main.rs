//! csiproxyctl: ask a node's CSI Proxy what it serves, and try calls without
//! writing a driver. Built on the SDK's public API only.

mod table;

use std::io::BufRead;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use csi_proxy_client::testing::{FakeHost, FakeProxy, ProxyRelease};
use csi_proxy_client::{
    ApiGroup, ApiVersion, AttemptOutcome, CsiProxy, Error, Negotiator, Operation, Secret,
    ServiceStatus, SmbMapping, SmbRemotePath, StartType, Support, TargetPortal, Transport,
    VersionPolicy, VolumeId, WindowsPath,
};
use serde_json::json;
use table::{emit, Table};

/// What the exit codes mean, for scripts.
const EXIT_CODES: &str = "Exit codes:
  0  done (probe: every group asked for is served; with none asked, at least one)
  1  the call failed on the host, or the connection to CSI Proxy failed
  2  bad usage or input, or a setting that cannot work (nothing was sent)
  3  not served: a group is missing, or the node's version lacks the call
With --json, a failure is printed as JSON on standard output too:
  {\"error\": {\"kind\": ..., \"message\": ..., \"exit_code\": ...}}";

/// Talk to CSI Proxy on this node: what it serves, and single calls.
#[derive(Parser)]
#[command(name = "csiproxyctl", version, after_help = EXIT_CODES)]
struct Cli {
    /// Unix sockets in this directory instead of CSI Proxy's named pipes
    /// (for a fake proxy, or Linux development; `fake` serves there).
    #[arg(long, global = true, value_name = "DIR")]
    socket_dir: Option<std::path::PathBuf>,

    /// Named pipes under this prefix instead of `\\.\pipe\`.
    #[arg(
        long,
        global = true,
        value_name = "PREFIX",
        conflicts_with = "socket_dir"
    )]
    pipe_prefix: Option<String>,

    /// Also negotiate preview versions (v2alpha1).
    #[arg(long, global = true)]
    preview: bool,

    /// Print JSON instead of tables.
    #[arg(long, global = true)]
    json: bool,

    /// Seconds to wait for each call. Default: the SDK's deadline of the
    /// operation (30 s for reads, 2 min for changes, 10 min for formatting
    /// and resizing).
    #[arg(long, global = true, value_name = "SECONDS")]
    timeout: Option<u64>,

    /// Seconds to wait for CSI Proxy to serve what the command needs (a
    /// proxy that is starting or restarting); 0 looks once.
    #[arg(long, global = true, default_value_t = 0)]
    wait: u64,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Per group: every pipe tried, which answered, the version chosen, and
    /// the operations available at that version. Exits 3 when a group
    /// given is not served (with none given: when nothing is).
    Probe {
        /// Groups that must be served: disk, filesystem, smb, volume,
        /// iscsi, system.
        #[arg(value_name = "GROUP")]
        require: Vec<ApiGroup>,
    },
    /// The disk group.
    #[command(subcommand)]
    Disk(DiskCommand),
    /// The volume group.
    #[command(subcommand)]
    Volume(VolumeCommand),
    /// The filesystem group.
    #[command(subcommand)]
    Fs(FsCommand),
    /// The SMB group.
    #[command(subcommand)]
    Smb(SmbCommand),
    /// The system group.
    #[command(subcommand)]
    System(SystemCommand),
    /// The iSCSI group.
    #[command(subcommand)]
    Iscsi(IscsiCommand),
    /// Start a fake CSI Proxy serving the chosen versions on Unix sockets
    /// in --socket-dir (named pipes under --pipe-prefix on Windows), until
    /// interrupted. Its host has two disks,
    /// an iSCSI target, a service, and the SMB share `\\fileserver\data`
    /// for user `csi` with password `fake-password`.
    Fake(FakeArgs),
}

/// Mutations change the host: say so.
#[derive(Args)]
struct Confirm {
    /// Really change the host.
    #[arg(long)]
    yes: bool,
}

#[derive(Subcommand)]
enum DiskCommand {
    /// Disks with their location and identifiers.
    List,
    /// The size of a disk.
    Stats { disk: u32 },
    /// Whether a disk is online.
    State { disk: u32 },
    /// Bring a disk online.
    Online {
        disk: u32,
        #[command(flatten)]
        confirm: Confirm,
    },
    /// Take a disk offline.
    Offline {
        disk: u32,
        #[command(flatten)]
        confirm: Confirm,
    },
    /// Initialise a disk with one partition.
    Partition {
        disk: u32,
        #[command(flatten)]
        confirm: Confirm,
    },
}

#[derive(Subcommand)]
enum VolumeCommand {
    /// The volumes on a disk.
    List {
        #[arg(long)]
        disk: u32,
        #[arg(long)]
        partition: Option<u32>,
    },
    /// Size, use, format and disk of a volume.
    Stats { volume: String },
    /// Mount a volume at a folder.
    Mount {
        volume: String,
        path: String,
        #[command(flatten)]
        confirm: Confirm,
    },
    /// Remove a volume's mount at a folder.
    Unmount {
        volume: String,
        path: String,
        #[command(flatten)]
        confirm: Confirm,
    },
    /// Format a volume (NTFS).
    Format {
        volume: String,
        #[command(flatten)]
        confirm: Confirm,
    },
}

#[derive(Subcommand)]
enum FsCommand {
    /// Whether a path exists.
    Exists { path: String },
    /// Whether a path is a symlink or mount point.
    IsSymlink { path: String },
    /// Create a directory.
    Mkdir {
        path: String,
        #[command(flatten)]
        confirm: Confirm,
    },
}

/// Where `smb map` reads the password from when not told otherwise. Never
/// an argument: other users of the node can read a process's arguments.
const SMB_PASSWORD_VARIABLE: &str = "CSIPROXYCTL_SMB_PASSWORD";

#[derive(Subcommand)]
enum SmbCommand {
    /// Map a share for the whole node. The password comes from the
    /// CSIPROXYCTL_SMB_PASSWORD environment variable, or with
    /// --password-stdin from the first line of standard input.
    Map {
        /// The share, `\\server\share`.
        remote: String,
        /// The user to connect as.
        #[arg(long)]
        user: String,
        /// Also link this local path to the share.
        #[arg(long, value_name = "PATH")]
        link: Option<String>,
        /// Read the password from the first line of standard input.
        #[arg(long)]
        password_stdin: bool,
        #[command(flatten)]
        confirm: Confirm,
    },
    /// Remove a share's global mapping.
    Unmap {
        /// The share, `\\server\share`.
        remote: String,
        #[command(flatten)]
        confirm: Confirm,
    },
}

#[derive(Subcommand)]
enum SystemCommand {
    /// The BIOS serial number.
    BiosSerial,
    /// A Windows service.
    Service { name: String },
    /// Start a Windows service.
    Start {
        name: String,
        #[command(flatten)]
        confirm: Confirm,
    },
    /// Stop a Windows service.
    Stop {
        name: String,
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        confirm: Confirm,
    },
}

#[derive(Subcommand)]
enum IscsiCommand {
    /// The registered target portals.
    Portals,
}

#[derive(Args)]
struct FakeArgs {
    /// What to serve, as group=version pairs: `disk=v1beta2,volume=v1`.
    /// Default: every version of every group.
    #[arg(long, value_name = "LIST", conflicts_with = "release")]
    versions: Option<String>,
    /// Serve what this CSI Proxy release served: `v0.2.2`, `v1.1.0`, ...
    #[arg(long, value_name = "vX.Y.Z")]
    release: Option<String>,
}

/// A failure for the user: what kind, one line, and the exit code.
struct Failure {
    kind: &'static str,
    message: String,
    code: u8,
}

impl Failure {
    /// Bad usage or input: nothing was sent.
    fn usage(message: impl Into<String>) -> Self {
        Self {
            kind: "usage",
            message: message.into(),
            code: 2,
        }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        let code = match e {
            Error::InvalidArgument { .. } | Error::Configuration { .. } => 2,
            Error::NotServed { .. } | Error::Unsupported { .. } => 3,
            _ => 1,
        };
        let kind = match e {
            Error::NotServed { .. } => "not_served",
            Error::Unsupported { .. } => "unsupported",
            Error::InvalidArgument { .. } => "invalid_argument",
            Error::Configuration { .. } => "configuration",
            Error::Host { .. } => "host",
            Error::NotFound { .. } => "not_found",
            Error::Transport { .. } | Error::ConnectTimeout { .. } => "transport",
            Error::Timeout { .. } => "timeout",
            Error::PermissionDenied { .. } => "permission_denied",
            Error::InvalidResponse { .. } => "invalid_response",
            _ => "other",
        };
        Failure {
            kind,
            message: e.to_string(),
            code,
        }
    }
}

type Outcome = Result<(), Failure>;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let json = cli.json;
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure {
            kind,
            message,
            code,
        }) => {
            if json {
                let error =
                    json!({ "error": { "kind": kind, "message": message, "exit_code": code } });
                emit(&error.to_string());
            }
            eprintln!("csiproxyctl: {message}");
            ExitCode::from(code)
        }
    }
}

async fn run(cli: Cli) -> Outcome {
    let transport = transport(&cli)?;
    let policy = VersionPolicy::default().allow_preview(cli.preview);
    match &cli.command {
        Command::Probe { require } => probe(&cli, transport, policy, require).await,
        Command::Fake(args) => fake(&cli, args).await,
        command => {
            let group = match command {
                Command::Disk(_) => ApiGroup::Disk,
                Command::Volume(_) => ApiGroup::Volume,
                Command::Fs(_) => ApiGroup::Filesystem,
                Command::Smb(_) => ApiGroup::Smb,
                Command::System(_) => ApiGroup::System,
                _ => ApiGroup::Iscsi,
            };
            let mut builder = CsiProxy::builder()
                .transport(transport)
                .policy(policy)
                .groups([group])
                .require(group)
                .wait_for_proxy(Duration::from_secs(cli.wait));
            // Only when asked: otherwise each operation keeps the SDK's own.
            if let Some(timeout) = cli.timeout.map(Duration::from_secs) {
                builder = builder
                    .read_deadline(timeout)
                    .mutation_deadline(timeout)
                    .deadline(Operation::FormatVolume, timeout)
                    .deadline(Operation::ResizeVolume, timeout);
            }
            let proxy = builder.connect().await?;
            match command {
                Command::Disk(c) => disk(&cli, &proxy, c).await,
                Command::Volume(c) => volume(&cli, &proxy, c).await,
                Command::Fs(c) => fs(&cli, &proxy, c).await,
                Command::Smb(c) => smb(&cli, &proxy, c).await,
                Command::System(c) => system(&cli, &proxy, c).await,
                Command::Iscsi(c) => iscsi(&cli, &proxy, c).await,
                Command::Probe { .. } | Command::Fake(_) => unreachable!(),
            }
        }
    }
}

fn transport(cli: &Cli) -> Result<Transport, Failure> {
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
    let pipe = transport.address(ApiGroup::Disk, ApiVersion::V1);
    let prefix = pipe.trim_end_matches(&csi_proxy_client::endpoint_name(
        ApiGroup::Disk,
        ApiVersion::V1,
    ));
    json!({ "kind": "named_pipes", "prefix": prefix })
}

fn confirmed(confirm: &Confirm, what: &str) -> Outcome {
    if confirm.yes {
        Ok(())
    } else {
        Err(Failure::usage(format!(
            "{what} changes the host; add --yes to do it"
        )))
    }
}

/// Prints `value` as JSON, or `table` for people.
fn show(cli: &Cli, value: serde_json::Value, table: Table) {
    if cli.json {
        emit(&value.to_string());
    } else {
        table.print();
    }
}

fn path(raw: &str) -> Result<WindowsPath, Failure> {
    Ok(WindowsPath::new(raw)?)
}

fn volume_id(raw: &str) -> Result<VolumeId, Failure> {
    Ok(VolumeId::new(raw)?)
}

fn done(cli: &Cli, what: String) -> Outcome {
    show(cli, json!({ "ok": true, "done": what }), {
        let mut t = Table::new(&["DONE"]);
        t.row(vec![what]);
        t
    });
    Ok(())
}

async fn probe(
    cli: &Cli,
    transport: Transport,
    policy: VersionPolicy,
    require: &[ApiGroup],
) -> Outcome {
    let negotiator = Negotiator::new(transport.clone()).policy(policy);
    // With --wait, look again (every 250 ms) until some group is served.
    let waited = std::time::Instant::now();
    let negotiated = loop {
        let negotiated = negotiator.negotiate(&ApiGroup::ALL).await?;
        let served = negotiated
            .report()
            .groups()
            .iter()
            .any(|g| g.chosen.is_some());
        if served || waited.elapsed() >= Duration::from_secs(cli.wait) {
            break negotiated;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let mut groups = Vec::new();
    let mut pipes = Table::new(&["GROUP", "PIPE", "RESULT"]);
    let mut available = Table::new(&["GROUP", "VERSION", "OPERATIONS (* emulated)"]);
    for report in negotiated.report().groups() {
        let operations: Vec<(Operation, Support)> = match report.chosen {
            Some(v) => Operation::of_group(report.group)
                .map(|op| (op, op.support(v)))
                .filter(|(_, s)| s.is_available())
                .collect(),
            None => Vec::new(),
        };
        for attempt in &report.attempts {
            pipes.row(vec![
                report.group.to_string(),
                attempt.address.clone(),
                outcome(&attempt.outcome),
            ]);
        }
        available.row(vec![
            report.group.to_string(),
            report.chosen.map_or("not served".into(), |v| v.to_string()),
            operations
                .iter()
                .map(|(op, s)| {
                    if *s == Support::Emulated {
                        format!("{}*", op.name())
                    } else {
                        op.name().to_owned()
                    }
                })
                .collect::<Vec<_>>()
                .join(", "),
        ]);
        groups.push(json!({
            "group": report.group.as_str(),
            "chosen": report.chosen.map(|v| v.to_string()),
            "attempts": report.attempts.iter().map(|a| json!({
                "version": a.version.to_string(),
                "address": a.address,
                "outcome": outcome(&a.outcome),
            })).collect::<Vec<_>>(),
            "operations": operations.iter().map(|(op, s)| json!({
                "name": op.name(),
                "rpc": match s { Support::Native(rpc) => Some(*rpc), _ => None },
                "emulated": *s == Support::Emulated,
            })).collect::<Vec<_>>(),
        }));
    }
    if cli.json {
        emit(&json!({ "transport": transport_json(&transport), "groups": groups }).to_string());
    } else {
        pipes.print();
        emit("");
        available.print();
    }
    let report = negotiated.report();
    let missing: Vec<String> = require
        .iter()
        .filter(|&&g| report.chosen(g).is_none())
        .map(|g| g.to_string())
        .collect();
    let nothing = report.groups().iter().all(|g| g.chosen.is_none());
    if !missing.is_empty() || (require.is_empty() && nothing) {
        let what = if missing.is_empty() {
            "no group is served".to_owned()
        } else {
            format!("not served: {}", missing.join(", "))
        };
        return Err(Failure {
            kind: "not_served",
            message: what,
            code: 3,
        });
    }
    Ok(())
}

fn outcome(outcome: &AttemptOutcome) -> String {
    match outcome {
        AttemptOutcome::Connected => "connected".into(),
        AttemptOutcome::Absent => "absent".into(),
        AttemptOutcome::Failed(why) => format!("failed: {why}"),
        _ => "unknown".into(),
    }
}

async fn disk(cli: &Cli, proxy: &CsiProxy, command: &DiskCommand) -> Outcome {
    let disk = proxy.disk()?;
    match command {
        DiskCommand::List => {
            let locations = disk.list_disk_locations().await?;
            // Identifiers need v1beta1; without them, locations alone.
            let ids = match disk.list_disk_ids().await {
                Ok(ids) => ids,
                Err(Error::Unsupported { .. }) => Default::default(),
                Err(e) => return Err(e.into()),
            };
            let mut table = Table::new(&["DISK", "ADAPTER", "TARGET", "LUN", "PAGE83", "SERIAL"]);
            let mut rows = Vec::new();
            for (number, l) in &locations {
                let id = ids.get(number).cloned().unwrap_or_default();
                table.row(vec![
                    number.to_string(),
                    l.adapter.clone(),
                    l.target.clone(),
                    l.lun_id.clone(),
                    id.page83.clone(),
                    id.serial_number.clone(),
                ]);
                rows.push(
                    json!({ "disk": number, "adapter": l.adapter, "bus": l.bus, "target": l.target,
                    "lun": l.lun_id, "page83": id.page83, "serial_number": id.serial_number }),
                );
            }
            show(cli, json!(rows), table);
        }
        DiskCommand::Stats { disk: n } => {
            let size = disk.get_disk_stats(*n).await?;
            let mut t = Table::new(&["DISK", "BYTES"]);
            t.row(vec![n.to_string(), size.to_string()]);
            show(cli, json!({ "disk": n, "total_bytes": size }), t);
        }
        DiskCommand::State { disk: n } => {
            let online = disk.get_disk_state(*n).await?;
            let mut t = Table::new(&["DISK", "ONLINE"]);
            t.row(vec![n.to_string(), online.to_string()]);
            show(cli, json!({ "disk": n, "online": online }), t);
        }
        DiskCommand::Online { disk: n, confirm } | DiskCommand::Offline { disk: n, confirm } => {
            let online = matches!(command, DiskCommand::Online { .. });
            confirmed(
                confirm,
                if online {
                    "disk online"
                } else {
                    "disk offline"
                },
            )?;
            disk.set_disk_state(*n, online).await?;
            done(
                cli,
                format!("disk {n} {}", if online { "online" } else { "offline" }),
            )?;
        }
        DiskCommand::Partition { disk: n, confirm } => {
            confirmed(confirm, "disk partition")?;
            disk.partition_disk(*n).await?;
            done(cli, format!("disk {n} partitioned"))?;
        }
    }
    Ok(())
}

async fn volume(cli: &Cli, proxy: &CsiProxy, command: &VolumeCommand) -> Outcome {
    let volumes = proxy.volume()?;
    match command {
        VolumeCommand::List { disk, partition } => {
            let ids = volumes.list_volumes_on_disk(*disk, *partition).await?;
            let mut t = Table::new(&["VOLUME"]);
            for id in &ids {
                t.row(vec![id.to_string()]);
            }
            show(
                cli,
                json!(ids.iter().map(ToString::to_string).collect::<Vec<_>>()),
                t,
            );
        }
        VolumeCommand::Stats { volume } => {
            let id = volume_id(volume)?;
            let stats = volumes.get_volume_stats(&id).await?;
            let formatted = volumes.is_volume_formatted(&id).await?;
            let disk = volumes.get_disk_number_from_volume_id(&id).await?;
            let mut t = Table::new(&["VOLUME", "DISK", "FORMATTED", "TOTAL BYTES", "USED BYTES"]);
            t.row(vec![
                id.to_string(),
                disk.to_string(),
                formatted.to_string(),
                stats.total_bytes.to_string(),
                stats.used_bytes.to_string(),
            ]);
            show(
                cli,
                json!({ "volume": id.as_str(), "disk": disk, "formatted": formatted,
                "total_bytes": stats.total_bytes, "used_bytes": stats.used_bytes }),
                t,
            );
        }
        VolumeCommand::Mount {
            volume,
            path: p,
            confirm,
        } => {
            confirmed(confirm, "volume mount")?;
            volumes.mount_volume(&volume_id(volume)?, &path(p)?).await?;
            done(cli, format!("{volume} mounted at {p}"))?;
        }
        VolumeCommand::Unmount {
            volume,
            path: p,
            confirm,
        } => {
            confirmed(confirm, "volume unmount")?;
            volumes
                .unmount_volume(&volume_id(volume)?, &path(p)?)
                .await?;
            done(cli, format!("{volume} unmounted from {p}"))?;
        }
        VolumeCommand::Format { volume, confirm } => {
            confirmed(confirm, "volume format")?;
            volumes.format_volume(&volume_id(volume)?).await?;
            done(cli, format!("{volume} formatted"))?;
        }
    }
    Ok(())
}

async fn fs(cli: &Cli, proxy: &CsiProxy, command: &FsCommand) -> Outcome {
    let fs = proxy.filesystem()?;
    let (p, answer, key) = match command {
        FsCommand::Exists { path: p } => (p, fs.path_exists(&path(p)?).await?, "exists"),
        FsCommand::IsSymlink { path: p } => (p, fs.is_symlink(&path(p)?).await?, "is_symlink"),
        FsCommand::Mkdir { path: p, confirm } => {
            confirmed(confirm, "fs mkdir")?;
            fs.mkdir(&path(p)?).await?;
            return done(cli, format!("created {p}"));
        }
    };
    let mut t = Table::new(&["PATH", &key.to_uppercase()]);
    t.row(vec![p.clone(), answer.to_string()]);
    show(cli, json!({ "path": p, key: answer }), t);
    Ok(())
}

async fn smb(cli: &Cli, proxy: &CsiProxy, command: &SmbCommand) -> Outcome {
    let smb = proxy.smb()?;
    match command {
        SmbCommand::Map {
            remote,
            user,
            link,
            password_stdin,
            confirm,
        } => {
            confirmed(confirm, "smb map")?;
            let mut mapping = SmbMapping::new(
                SmbRemotePath::new(remote)?,
                user.as_str(),
                smb_password(*password_stdin)?,
            );
            if let Some(link) = link {
                mapping = mapping.with_local_path(path(link)?);
            }
            smb.new_smb_global_mapping(&mapping).await?;
            done(cli, format!("mapped {remote}"))
        }
        SmbCommand::Unmap { remote, confirm } => {
            confirmed(confirm, "smb unmap")?;
            smb.remove_smb_global_mapping(&SmbRemotePath::new(remote)?)
                .await?;
            done(cli, format!("unmapped {remote}"))
        }
    }
}

/// The SMB password, from standard input or the environment.
fn smb_password(from_stdin: bool) -> Result<Secret, Failure> {
    let password = if from_stdin {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).map_err(|e| {
            Failure::usage(format!("reading the password from standard input: {e}"))
        })?;
        line.trim_end_matches(['\r', '\n']).to_owned()
    } else {
        std::env::var(SMB_PASSWORD_VARIABLE).map_err(|_| {
            Failure::usage(format!(
                "smb map needs a password: set {SMB_PASSWORD_VARIABLE} or pass --password-stdin"
            ))
        })?
    };
    if password.is_empty() {
        return Err(Failure::usage("the SMB password is empty"));
    }
    Ok(Secret::new(password))
}

async fn system(cli: &Cli, proxy: &CsiProxy, command: &SystemCommand) -> Outcome {
    let system = proxy.system()?;
    match command {
        SystemCommand::BiosSerial => {
            let serial = system.get_bios_serial_number().await?;
            let mut t = Table::new(&["BIOS SERIAL"]);
            t.row(vec![serial.clone()]);
            show(cli, json!({ "serial_number": serial }), t);
        }
        SystemCommand::Service { name } => {
            let s = system.get_service(name).await?;
            let mut t = Table::new(&["SERVICE", "DISPLAY NAME", "START TYPE", "STATUS"]);
            t.row(vec![
                name.clone(),
                s.display_name.clone(),
                format!("{:?}", s.start_type),
                format!("{:?}", s.status),
            ]);
            show(
                cli,
                json!({ "name": name, "display_name": s.display_name,
                "start_type": format!("{:?}", s.start_type), "status": format!("{:?}", s.status) }),
                t,
            );
        }
        SystemCommand::Start { name, confirm } => {
            confirmed(confirm, "system start")?;
            system.start_service(name).await?;
            done(cli, format!("service {name} started"))?;
        }
        SystemCommand::Stop {
            name,
            force,
            confirm,
        } => {
            confirmed(confirm, "system stop")?;
            system.stop_service(name, *force).await?;
            done(cli, format!("service {name} stopped"))?;
        }
    }
    Ok(())
}

async fn iscsi(cli: &Cli, proxy: &CsiProxy, command: &IscsiCommand) -> Outcome {
    let IscsiCommand::Portals = command;
    let portals = proxy.iscsi()?.list_target_portals().await?;
    let mut t = Table::new(&["ADDRESS", "PORT"]);
    for p in &portals {
        t.row(vec![p.address.clone(), p.port.to_string()]);
    }
    show(
        cli,
        json!(portals
            .iter()
            .map(|p| json!({ "address": p.address, "port": p.port }))
            .collect::<Vec<_>>()),
        t,
    );
    Ok(())
}

/// Parses `disk=v1beta2,volume=v1`.
fn versions(list: &str) -> Result<Vec<(ApiGroup, ApiVersion)>, Failure> {
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

async fn fake(cli: &Cli, args: &FakeArgs) -> Outcome {
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
