//! `csiproxyctl system ...`.

use clap::Subcommand;
use csi_proxy_client::CsiProxy;
use serde_json::json;

use crate::cli::Confirm;
use crate::done;
use crate::failure::{confirmed, Outcome};
use crate::output::Records;

#[derive(Subcommand)]
pub enum SystemCommand {
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

/// Runs `command` on the system group.
pub async fn run(proxy: &CsiProxy, command: &SystemCommand) -> Outcome<Records> {
    let system = proxy.system()?;
    Ok(match command {
        SystemCommand::BiosSerial => {
            let serial = system.get_bios_serial_number().await?;
            Records::one(&["serial_number"], vec![json!(serial)])
        }
        SystemCommand::Service { name } => {
            let s = system.get_service(name).await?;
            Records::one(
                &["name", "display_name", "start_type", "status"],
                vec![
                    json!(name),
                    json!(s.display_name),
                    json!(format!("{:?}", s.start_type)),
                    json!(format!("{:?}", s.status)),
                ],
            )
        }
        SystemCommand::Start { name, confirm } => {
            confirmed(confirm, "system start")?;
            system.start_service(name).await?;
            done(format!("service {name} started"))
        }
        SystemCommand::Stop {
            name,
            force,
            confirm,
        } => {
            confirmed(confirm, "system stop")?;
            system.stop_service(name, *force).await?;
            done(format!("service {name} stopped"))
        }
    })
}
