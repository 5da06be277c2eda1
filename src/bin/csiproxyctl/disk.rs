//! `csiproxyctl disk ...`.

use clap::Subcommand;
use csi_proxy_client::{CsiProxy, Error};
use serde_json::{json, Value};

use crate::cli::Confirm;
use crate::done;
use crate::failure::{confirmed, Outcome};
use crate::output::Records;

#[derive(Subcommand)]
pub enum DiskCommand {
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

/// Runs `command` on the disk group.
pub async fn run(proxy: &CsiProxy, command: &DiskCommand) -> Outcome<Records> {
    let disk = proxy.disk()?;
    Ok(match command {
        DiskCommand::List => {
            let locations = disk.list_disk_locations().await?;
            // Identifiers need v1beta1; without them, locations alone.
            let ids = match disk.list_disk_ids().await {
                Ok(ids) => ids,
                Err(Error::Unsupported { .. }) => Default::default(),
                Err(e) => return Err(e.into()),
            };
            let mut disks = Records::many(&[
                "disk",
                "adapter",
                "bus",
                "target",
                "lun",
                "page83",
                "serial_number",
            ]);
            for (number, l) in &locations {
                let id = ids.get(number).cloned().unwrap_or_default();
                disks.push(vec![
                    json!(number),
                    location_part(&l.adapter),
                    location_part(&l.bus),
                    location_part(&l.target),
                    location_part(&l.lun_id),
                    json!(id.page83),
                    json!(id.serial_number),
                ]);
            }
            disks
        }
        DiskCommand::Stats { disk: n } => {
            let size = disk.get_disk_stats(*n).await?;
            Records::one(&["disk", "total_bytes"], vec![json!(n), json!(size)])
        }
        DiskCommand::State { disk: n } => {
            let online = disk.get_disk_state(*n).await?;
            Records::one(&["disk", "online"], vec![json!(n), json!(online)])
        }
        DiskCommand::Online { disk: n, confirm } | DiskCommand::Offline { disk: n, confirm } => {
            let online = matches!(command, DiskCommand::Online { .. });
            let state = if online { "online" } else { "offline" };
            confirmed(confirm, &format!("disk {state}"))?;
            disk.set_disk_state(*n, online).await?;
            done(format!("disk {n} {state}"))
        }
        DiskCommand::Partition { disk: n, confirm } => {
            confirmed(confirm, "disk partition")?;
            disk.partition_disk(*n).await?;
            done(format!("disk {n} partitioned"))
        }
    })
}

/// A part of a disk's location as JSON: a number where the proxy wrote
/// one (`"1"` becomes `1`), else the proxy's text as it is (an iSCSI
/// disk's adapter `iscsi`, the empty bus of servers before v1.0, a number
/// written with leading zeros), so that nothing is lost.
fn location_part(text: &str) -> Value {
    match text.parse::<u64>() {
        Ok(n) if n.to_string() == text => json!(n),
        _ => json!(text),
    }
}
