//! The iSCSI adapter: v1alpha1 and v1alpha2 share every message;
//! v1alpha2 adds `SetMutualChapSecret`. The proxy dereferences the target
//! portal without checking it, so it is always set. A host error that
//! echoes a CHAP secret has it replaced by `***`.

use async_trait::async_trait;

use super::convert::disk_number;
use super::WireClient;
use crate::api::{IscsiApi, IscsiAuth, Secret, TargetPortal};
use crate::capability::Operation as Op;
use crate::error::{Error, Result};
use crate::redact::redact;
use crate::wire::iscsi::v1alpha2 as wire;

/// The portal as sent (the handle checked it).
fn portal(portal: &TargetPortal) -> Option<wire::TargetPortal> {
    Some(wire::TargetPortal {
        target_address: portal.address.clone(),
        target_port: u32::from(portal.port),
    })
}

pub(super) struct Iscsi {
    wire: WireClient,
}

impl Iscsi {
    pub fn new(wire: WireClient) -> Self {
        Self { wire }
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl IscsiApi for Iscsi {
    async fn add_target_portal(&self, target: &TargetPortal) -> Result<()> {
        let request = wire::AddTargetPortalRequest {
            target_portal: portal(target),
        };
        let _: wire::AddTargetPortalResponse = self.wire.call(Op::AddTargetPortal, request).await?;
        Ok(())
    }

    async fn discover_target_portal(&self, target: &TargetPortal) -> Result<Vec<String>> {
        let request = wire::DiscoverTargetPortalRequest {
            target_portal: portal(target),
        };
        let response: wire::DiscoverTargetPortalResponse =
            self.wire.call(Op::DiscoverTargetPortal, request).await?;
        Ok(response.iqns)
    }

    async fn remove_target_portal(&self, target: &TargetPortal) -> Result<()> {
        let request = wire::RemoveTargetPortalRequest {
            target_portal: portal(target),
        };
        let _: wire::RemoveTargetPortalResponse =
            self.wire.call(Op::RemoveTargetPortal, request).await?;
        Ok(())
    }

    async fn list_target_portals(&self) -> Result<Vec<TargetPortal>> {
        let response: wire::ListTargetPortalsResponse = self
            .wire
            .call(Op::ListTargetPortals, wire::ListTargetPortalsRequest {})
            .await?;
        response
            .target_portals
            .into_iter()
            .map(|p| {
                let port = u16::try_from(p.target_port).map_err(|_| {
                    Error::invalid_response(
                        Op::ListTargetPortals,
                        format!("port {} is not a TCP port", p.target_port),
                    )
                })?;
                Ok(TargetPortal {
                    address: p.target_address,
                    port,
                })
            })
            .collect()
    }

    async fn connect_target(
        &self,
        target: &TargetPortal,
        iqn: &str,
        auth: &IscsiAuth,
    ) -> Result<()> {
        let (auth_type, username, secret) = match auth {
            IscsiAuth::None => (wire::AuthenticationType::None, "", None),
            IscsiAuth::OneWayChap { username, secret } => (
                wire::AuthenticationType::OneWayChap,
                username.as_str(),
                Some(secret),
            ),
            IscsiAuth::MutualChap { username, secret } => (
                wire::AuthenticationType::MutualChap,
                username.as_str(),
                Some(secret),
            ),
        };
        let request = wire::ConnectTargetRequest {
            target_portal: portal(target),
            iqn: iqn.to_owned(),
            auth_type: auth_type as i32,
            chap_username: username.to_owned(),
            chap_secret: secret.map(|s| s.expose().to_owned()).unwrap_or_default(),
        };
        let sent: Result<wire::ConnectTargetResponse> =
            self.wire.call(Op::ConnectTarget, request).await;
        sent.map(drop).map_err(|e| match secret {
            Some(secret) => redact(e, secret),
            None => e,
        })
    }

    async fn disconnect_target(&self, target: &TargetPortal, iqn: &str) -> Result<()> {
        let request = wire::DisconnectTargetRequest {
            target_portal: portal(target),
            iqn: iqn.to_owned(),
        };
        let _: wire::DisconnectTargetResponse =
            self.wire.call(Op::DisconnectTarget, request).await?;
        Ok(())
    }

    async fn get_target_disks(&self, target: &TargetPortal, iqn: &str) -> Result<Vec<u32>> {
        let request = wire::GetTargetDisksRequest {
            target_portal: portal(target),
            iqn: iqn.to_owned(),
        };
        let response: wire::GetTargetDisksResponse =
            self.wire.call(Op::GetTargetDisks, request).await?;
        response
            .disk_i_ds
            .iter()
            .map(|id| disk_number(Op::GetTargetDisks, id))
            .collect()
    }

    async fn set_mutual_chap_secret(&self, secret: &Secret) -> Result<()> {
        let request = wire::SetMutualChapSecretRequest {
            mutual_chap_secret: secret.expose().to_owned(),
        };
        let sent: Result<wire::SetMutualChapSecretResponse> =
            self.wire.call(Op::SetMutualChapSecret, request).await;
        sent.map(drop).map_err(|e| redact(e, secret))
    }
}
