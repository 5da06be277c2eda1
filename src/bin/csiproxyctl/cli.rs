//! The command line: global options and the commands, each group's
//! subcommands being declared with the code that runs them.

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{Args, Parser, Subcommand};
use csi_proxy_client::ApiGroup;

use crate::failure::Failure;
use crate::output::emit;

/// What the exit codes mean, for scripts.
const EXIT_CODES: &str = "Exit codes:
  0  done (probe: every group asked for is served; with none asked, at least one)
  1  the call failed on the host (kind not_found: what it names does not
     exist), or the connection to CSI Proxy failed
  2  bad usage or input, or a setting that cannot work (nothing was sent)
  3  not served: a group is missing, or the node's version lacks the call
With --json, standard output is one JSON document; a failure is
  {\"error\": {\"kind\": ..., \"message\": ..., \"exit_code\": ...}}
with \"cause\" too when Windows' reason is known (\"logon_failure\", ...)
(probe: its report, with the failure in the same \"error\" field).";

/// Talk to CSI Proxy on this node: what it serves, and single calls.
#[derive(Parser)]
#[command(name = "csiproxyctl", version, after_help = EXIT_CODES)]
pub struct Cli {
    /// Unix sockets in this directory instead of CSI Proxy's named pipes
    /// (for a fake proxy, or Linux development; `fake` serves there).
    #[arg(long, global = true, value_name = "DIR")]
    pub socket_dir: Option<std::path::PathBuf>,

    /// Named pipes under this prefix instead of `\\.\pipe\`.
    #[arg(
        long,
        global = true,
        value_name = "PREFIX",
        conflicts_with = "socket_dir"
    )]
    pub pipe_prefix: Option<String>,

    /// Also trust this owner to serve the endpoints, besides SYSTEM and
    /// Administrators (pipes) or root and you (sockets): a SID, a Unix
    /// user id, or `me` for the user running the tool (a fake proxy you
    /// started). Repeatable.
    #[arg(long, global = true, value_name = "SID|UID|me")]
    pub trust_owner: Vec<String>,

    /// Also negotiate preview versions (v2alpha1).
    #[arg(long, global = true)]
    pub preview: bool,

    /// Print JSON instead of tables.
    #[arg(long, global = true)]
    pub json: bool,

    /// Seconds to wait for each call. Default: the SDK's deadline of the
    /// operation (30 s for reads, 2 min for changes, 10 min for formatting
    /// and resizing).
    #[arg(long, global = true, value_name = "SECONDS")]
    pub timeout: Option<u64>,

    /// Seconds to wait for CSI Proxy to serve what the command needs (a
    /// proxy that is starting or restarting); 0 looks once.
    #[arg(long, global = true, default_value_t = 0)]
    pub wait: u64,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Per group: every endpoint tried (named pipe, or Unix socket with
    /// --socket-dir), which answered, the version chosen, and the
    /// operations available at that version. Exits 3 when a group
    /// given is not served (with none given: when nothing is).
    Probe {
        /// Groups that must be served: disk, filesystem, smb, volume,
        /// iscsi, system.
        #[arg(value_name = "GROUP")]
        require: Vec<ApiGroup>,
    },
    /// The disk group.
    #[command(subcommand)]
    Disk(crate::disk::DiskCommand),
    /// The volume group.
    #[command(subcommand)]
    Volume(crate::volume::VolumeCommand),
    /// The filesystem group.
    #[command(subcommand)]
    Fs(crate::fs::FsCommand),
    /// The SMB group.
    #[command(subcommand)]
    Smb(crate::smb::SmbCommand),
    /// The system group.
    #[command(subcommand)]
    System(crate::system::SystemCommand),
    /// The iSCSI group.
    #[command(subcommand)]
    Iscsi(crate::iscsi::IscsiCommand),
    /// Start a fake CSI Proxy serving the chosen versions on Unix sockets
    /// in --socket-dir (named pipes under --pipe-prefix on Windows), until
    /// interrupted. Its host has two disks,
    /// an iSCSI target, a service, and the SMB share `\\fileserver\data`
    /// for user `csi` with password `fake-password`.
    #[cfg(feature = "testing")]
    Fake(crate::fake::FakeArgs),
    /// In a build without the fake proxy: takes anything, to say so.
    #[cfg(not(feature = "testing"))]
    #[command(hide = true)]
    Fake {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
        _ignored: Vec<String>,
    },
}

/// What `fake` says in a build without it.
#[cfg(not(feature = "testing"))]
pub const NO_FAKE: &str = "this csiproxyctl has no fake proxy: an operator's build leaves it out; \
     build one with `--features cli,testing` to get `csiproxyctl fake`";

/// Ends the program on a command line clap refused: help and version asked
/// for, as clap prints them; a usage error (a command without its
/// subcommand included) on standard error and, with `--json` anywhere on
/// the line, as the JSON error document, exit 2.
pub fn refuse(usage: clap::Error) -> ExitCode {
    if matches!(
        usage.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    ) {
        usage.exit();
    }
    let rendered = usage.render().to_string();
    let message = match usage.kind() {
        // clap shows the command's help: say what is missing.
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            "a subcommand or argument is missing (see --help)".to_owned()
        }
        // clap's first line, without its `error: `: the rest is the usage.
        _ => rendered
            .lines()
            .next()
            .unwrap_or_default()
            .trim_start_matches("error: ")
            .to_owned(),
    };
    // `args_os`: an argument that is no Unicode is a usage error too.
    if std::env::args_os().any(|arg| arg == "--json") {
        emit(&Failure::usage(message.clone()).to_json().to_string());
    }
    eprint!("{rendered}");
    ExitCode::from(2)
}

/// Mutations change the host: say so.
#[derive(Args)]
pub struct Confirm {
    /// Really change the host.
    #[arg(long)]
    pub yes: bool,
}
