//! `csiproxyctl volume ...`.

use clap::Subcommand;
use csi_proxy_client::CsiProxy;
use serde_json::json;

use crate::cli::Confirm;
use crate::failure::{confirmed, Outcome};
use crate::output::Records;
use crate::{done, path, volume_id};

#[derive(Subcommand)]
pub enum VolumeCommand {
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

/// Runs `command` on the volume group.
pub async fn run(proxy: &CsiProxy, command: &VolumeCommand) -> Outcome<Records> {
    let volumes = proxy.volume()?;
    Ok(match command {
        VolumeCommand::List { disk, partition } => {
            let mut list = Records::many(&["volume"]);
            for id in volumes.list_volumes_on_disk(*disk, *partition).await? {
                list.push(vec![json!(id.as_str())]);
            }
            list
        }
        VolumeCommand::Stats { volume } => {
            let id = volume_id(volume)?;
            let stats = volumes.get_volume_stats(&id).await?;
            let formatted = volumes.is_volume_formatted(&id).await?;
            let disk = volumes.get_disk_number_from_volume_id(&id).await?;
            Records::one(
                &["volume", "disk", "formatted", "total_bytes", "used_bytes"],
                vec![
                    json!(id.as_str()),
                    json!(disk),
                    json!(formatted),
                    json!(stats.total_bytes),
                    json!(stats.used_bytes),
                ],
            )
        }
        VolumeCommand::Mount {
            volume,
            path: p,
            confirm,
        } => {
            confirmed(confirm, "volume mount")?;
            volumes.mount_volume(&volume_id(volume)?, &path(p)?).await?;
            done(format!("{volume} mounted at {p}"))
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
            done(format!("{volume} unmounted from {p}"))
        }
        VolumeCommand::Format { volume, confirm } => {
            confirmed(confirm, "volume format")?;
            volumes.format_volume(&volume_id(volume)?).await?;
            done(format!("{volume} formatted"))
        }
    })
}
