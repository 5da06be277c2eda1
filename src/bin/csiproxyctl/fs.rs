//! `csiproxyctl fs ...`.

use clap::Subcommand;
use csi_proxy_client::CsiProxy;
use serde_json::json;

use crate::cli::Confirm;
use crate::failure::{confirmed, Outcome};
use crate::output::Records;
use crate::{done, path};

#[derive(Subcommand)]
pub enum FsCommand {
    /// Whether a path exists.
    Exists { path: String },
    /// Whether a path is a symlink or mount point.
    IsSymlink { path: String },
    /// What is at a path, in one word: `directory`, `not_found`, or
    /// `other` (a link or a mount point): what csi-sanity's
    /// `--csi.checkpathcmd` prints.
    Kind { path: String },
    /// Create a directory (and its parents).
    Mkdir {
        path: String,
        #[command(flatten)]
        confirm: Confirm,
    },
    /// Remove a directory or a link; with `--force`, what is below it too
    /// (a path already gone is then no error).
    Rmdir {
        path: String,
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        confirm: Confirm,
    },
}

/// Runs `command` on the filesystem group.
pub async fn run(proxy: &CsiProxy, command: &FsCommand) -> Outcome<Records> {
    let fs = proxy.filesystem()?;
    Ok(match command {
        FsCommand::Exists { path: p } => {
            let exists = fs.path_exists(&path(p)?).await?;
            Records::one(&["path", "exists"], vec![json!(p), json!(exists)])
        }
        FsCommand::IsSymlink { path: p } => {
            let is_symlink = fs.is_symlink(&path(p)?).await?;
            Records::one(&["path", "is_symlink"], vec![json!(p), json!(is_symlink)])
        }
        FsCommand::Kind { path: p } => {
            let at = path(p)?;
            let kind = match fs.path_exists(&at).await? {
                false => "not_found",
                true if fs.is_symlink(&at).await? => "other",
                true => "directory",
            };
            Records::word(&["kind"], kind)
        }
        FsCommand::Mkdir { path: p, confirm } => {
            confirmed(confirm, "fs mkdir")?;
            fs.mkdir(&path(p)?).await?;
            done(format!("created {p}"))
        }
        FsCommand::Rmdir {
            path: p,
            force,
            confirm,
        } => {
            confirmed(confirm, "fs rmdir")?;
            fs.rmdir(&path(p)?, *force).await?;
            done(format!("removed {p}"))
        }
    })
}
