//! `csiproxyctl iscsi ...`.

use clap::Subcommand;
use csi_proxy_client::CsiProxy;
use serde_json::json;

use crate::failure::Outcome;
use crate::output::Records;

#[derive(Subcommand)]
pub enum IscsiCommand {
    /// The registered target portals.
    Portals,
}

/// Runs `command` on the iSCSI group.
pub async fn run(proxy: &CsiProxy, command: &IscsiCommand) -> Outcome<Records> {
    let IscsiCommand::Portals = command;
    let mut portals = Records::many(&["address", "port"]);
    for p in proxy.iscsi()?.list_target_portals().await? {
        portals.push(vec![json!(p.address), json!(p.port)]);
    }
    Ok(portals)
}
