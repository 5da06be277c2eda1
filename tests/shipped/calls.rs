//! The calls the shipped-build client makes and how their outcomes are
//! written down. The same file is compiled into the client built with
//! default features and into `tests/shipped_build.rs` (built with
//! `testing`), so the two builds can be compared line for line.

use std::time::Duration;

use csi_proxy_client::{
    api::{Secret, SmbMapping, SmbRemotePath, VolumeId, WindowsPath},
    transport::Transport,
    CsiProxy, Error, Operation,
};

/// The share and password of the `smb-map` call; the test checks that the
/// password never shows in an outcome.
pub const SMB_SHARE: &str = r"\\fileserver\data";

/// A call as given on the command line: `CALL [ARG] [--deadline-ms N]`.
pub struct Call<'a> {
    /// `list-disk-ids`, `rmdir`, `format-volume`, `get-volume-stats` or
    /// `smb-map`.
    pub name: &'a str,
    /// A path, volume ID or password, as the call needs.
    pub arg: Option<&'a str>,
    /// The deadline of the call's operation.
    pub deadline: Option<Duration>,
}

impl<'a> Call<'a> {
    /// Parses `CALL [ARG] [--deadline-ms N]`.
    pub fn parse(args: &[&'a str]) -> Option<Self> {
        let name = args.first()?;
        let arg = args.get(1).copied().filter(|a| !a.starts_with("--"));
        let deadline = match args.iter().position(|a| *a == "--deadline-ms") {
            Some(i) => Some(Duration::from_millis(args.get(i + 1)?.parse().ok()?)),
            None => None,
        };
        Some(Self {
            name,
            arg,
            deadline,
        })
    }
}

/// Connects on `transport` (every group, none required, no waiting) and
/// makes `call`. Returns the outcome as [`describe`] writes it.
pub async fn run(transport: Transport, call: &Call<'_>) -> String {
    let Call {
        name: call,
        arg,
        deadline,
    } = *call;
    let operation = match call {
        "list-disk-ids" => Operation::ListDiskIds,
        "rmdir" => Operation::Rmdir,
        "format-volume" => Operation::FormatVolume,
        "get-volume-stats" => Operation::GetVolumeStats,
        "smb-map" => Operation::NewSmbGlobalMapping,
        other => return format!("unknown call {other:?}"),
    };
    let mut builder = CsiProxy::builder().transport(transport);
    if let Some(deadline) = deadline {
        builder = builder.deadline(operation, deadline);
    }
    let proxy = match builder.connect().await {
        Ok(proxy) => proxy,
        Err(e) => return format!("connect: {}", describe(&Err(e))),
    };
    let arg = arg.unwrap_or_default();
    let outcome = async {
        match operation {
            Operation::ListDiskIds => proxy.disk()?.list_disk_ids().await.map(drop),
            Operation::Rmdir => {
                let path = WindowsPath::new(arg)?;
                proxy.filesystem()?.rmdir(&path, false).await
            }
            Operation::FormatVolume => proxy.volume()?.format_volume(&VolumeId::new(arg)?).await,
            Operation::GetVolumeStats => {
                let volume = VolumeId::new(arg)?;
                proxy.volume()?.get_volume_stats(&volume).await.map(drop)
            }
            _ => {
                let remote = SmbRemotePath::new(SMB_SHARE)?;
                let mapping = SmbMapping::new(remote, "csi", Secret::new(arg));
                proxy.smb()?.new_smb_global_mapping(&mapping).await
            }
        }
    };
    describe(&outcome.await)
}

/// One line: the facts a driver acts on (variant, operation, whether the
/// request may have been sent, code, deadline), then the error's text and
/// its `Debug` form, where a leaked secret would show.
pub fn describe(outcome: &Result<(), Error>) -> String {
    let error = match outcome {
        Ok(()) => return "ok".to_owned(),
        Err(error) => error,
    };
    let facts = match error {
        Error::Transport {
            operation,
            maybe_sent,
            ..
        } => format!("Transport operation={operation:?} maybe_sent={maybe_sent}"),
        Error::Host {
            operation, code, ..
        } => format!("Host operation={operation:?} code={code:?}"),
        Error::Timeout { operation, after } => {
            format!("Timeout operation={operation:?} after={after:?}")
        }
        Error::Unsupported {
            operation,
            served,
            needed,
        } => format!("Unsupported operation={operation:?} served={served} needed={needed}"),
        Error::NotServed { group, .. } => format!("NotServed group={group}"),
        Error::InvalidResponse { operation, .. } => {
            format!(
                "InvalidResponse operation={operation:?} csi_code={:?}",
                error.csi_code()
            )
        }
        Error::Configuration { .. } => {
            format!("Configuration csi_code={:?}", error.csi_code())
        }
        other => format!("Other {other:?}"),
    };
    format!("{facts} | {error} | {error:?}")
}
