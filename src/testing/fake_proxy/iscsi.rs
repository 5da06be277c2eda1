//! Server side of the iSCSI layout (v1alpha1, v1alpha2).

use std::sync::Arc;

use async_trait::async_trait;
use tonic::Status;

use super::codec::{decode, host, name, portal, reply, Answer};
use super::routing::WireServer;
use crate::api::{IscsiApi, IscsiAuth, Secret, TargetPortal};
use crate::capability::IscsiOperation as Op;
use crate::wire::iscsi::v1alpha2 as wire;

/// CSI Proxy dereferences the portal without a check and crashes on a
/// missing one; the fake fails the call instead.
fn required_portal(portal_field: Option<wire::TargetPortal>) -> Result<TargetPortal, Status> {
    let p = portal_field.ok_or_else(|| Status::unknown("target portal is missing"))?;
    portal(p.target_address, p.target_port)
}

fn auth(request: &wire::ConnectTargetRequest) -> Result<IscsiAuth, Status> {
    let (username, secret) = (
        request.chap_username.clone(),
        Secret::new(request.chap_secret.clone()),
    );
    match wire::AuthenticationType::try_from(request.auth_type) {
        Ok(wire::AuthenticationType::None) => Ok(IscsiAuth::None),
        Ok(wire::AuthenticationType::OneWayChap) => Ok(IscsiAuth::OneWayChap { username, secret }),
        Ok(wire::AuthenticationType::MutualChap) => Ok(IscsiAuth::MutualChap { username, secret }),
        Err(_) => Err(Status::unknown(format!(
            "invalid authentication type {}",
            request.auth_type
        ))),
    }
}

pub(super) struct Iscsi(pub Arc<dyn IscsiApi>);

#[async_trait]
impl WireServer<Op> for Iscsi {
    async fn handle(&self, op: Op, body: &[u8]) -> Answer {
        let api = &self.0;
        match op {
            Op::AddTargetPortal => {
                let request: wire::AddTargetPortalRequest = decode(body)?;
                host!(api.add_target_portal(&required_portal(request.target_portal)?));
                reply(wire::AddTargetPortalResponse {})
            }
            Op::DiscoverTargetPortal => {
                let request: wire::DiscoverTargetPortalRequest = decode(body)?;
                let iqns =
                    host!(api.discover_target_portal(&required_portal(request.target_portal)?));
                reply(wire::DiscoverTargetPortalResponse { iqns })
            }
            Op::RemoveTargetPortal => {
                let request: wire::RemoveTargetPortalRequest = decode(body)?;
                host!(api.remove_target_portal(&required_portal(request.target_portal)?));
                reply(wire::RemoveTargetPortalResponse {})
            }
            Op::ListTargetPortals => {
                let portals = host!(api.list_target_portals());
                reply(wire::ListTargetPortalsResponse {
                    target_portals: portals
                        .into_iter()
                        .map(|p| wire::TargetPortal {
                            target_address: p.address,
                            target_port: u32::from(p.port),
                        })
                        .collect(),
                })
            }
            Op::ConnectTarget => {
                let request: wire::ConnectTargetRequest = decode(body)?;
                let auth = auth(&request)?;
                name("IQN", &request.iqn)?;
                host!(api.connect_target(
                    &required_portal(request.target_portal)?,
                    &request.iqn,
                    &auth
                ));
                reply(wire::ConnectTargetResponse {})
            }
            Op::DisconnectTarget => {
                let request: wire::DisconnectTargetRequest = decode(body)?;
                name("IQN", &request.iqn)?;
                host!(api.disconnect_target(&required_portal(request.target_portal)?, &request.iqn));
                reply(wire::DisconnectTargetResponse {})
            }
            Op::GetTargetDisks => {
                let request: wire::GetTargetDisksRequest = decode(body)?;
                name("IQN", &request.iqn)?;
                let disks =
                    host!(api
                        .get_target_disks(&required_portal(request.target_portal)?, &request.iqn));
                reply(wire::GetTargetDisksResponse {
                    disk_i_ds: disks.iter().map(ToString::to_string).collect(),
                })
            }
            Op::SetMutualChapSecret => {
                let request: wire::SetMutualChapSecretRequest = decode(body)?;
                host!(api.set_mutual_chap_secret(&Secret::new(request.mutual_chap_secret)));
                reply(wire::SetMutualChapSecretResponse {})
            }
        }
    }
}
