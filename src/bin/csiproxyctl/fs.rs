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
    /// Create a directory.
    Mkdir {
        path: String,
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
        FsCommand::Mkdir { path: p, confirm } => {
            confirmed(confirm, "fs mkdir")?;
            fs.mkdir(&path(p)?).await?;
            done(format!("created {p}"))
        }
    })
}
