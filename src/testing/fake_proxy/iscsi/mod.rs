//! The fake proxy's server of the iSCSI layout (v1alpha1, v1alpha2),
//! generated from the catalogue (`alpha_iscsi.rs`), but for the login and
//! the mutual secret, written by hand here; and how it reads and writes
//! the group's own field kinds.

mod alpha_iscsi;

pub(super) use alpha_iscsi::AlphaIscsiServer;

use tonic::Status;

use super::codec::{decode, host, reply, Answer};
use super::fields::{refused, ReadRequest, WriteAnswer};
use crate::adapter::fields::Iqn;
use crate::adapter::iscsi::{Portal, Portals};
use crate::api::{IscsiAuth, Secret, TargetPortal};
use crate::capability::IscsiOperation as Op;
use crate::wire::iscsi::v1alpha2 as wire;

impl AlphaIscsiServer {
    async fn connect(&self, _: Op, body: &[u8]) -> Answer {
        let request: wire::ConnectTargetRequest = decode(body)?;
        let auth = auth(&request)?;
        let iqn = Iqn::from_request(request.iqn)?;
        let portal = Portal::from_request(request.target_portal)?;
        host!(self.api.connect_target(&portal, &iqn, &auth));
        reply(wire::ConnectTargetResponse {})
    }

    async fn set_mutual_secret(&self, _: Op, body: &[u8]) -> Answer {
        let request: wire::SetMutualChapSecretRequest = decode(body)?;
        host!(self
            .api
            .set_mutual_chap_secret(&Secret::new(request.mutual_chap_secret)));
        reply(wire::SetMutualChapSecretResponse {})
    }
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
        Err(_) => Err(refused(format!(
            "invalid authentication type {}",
            request.auth_type
        ))),
    }
}

/// The proxy dereferences the portal without a check and crashes on a
/// missing one; the fake proxy fails the call instead.
impl ReadRequest for Portal {
    type Owned = TargetPortal;
    type Wire = Option<wire::TargetPortal>;

    fn from_request(wire: Self::Wire) -> Result<TargetPortal, Status> {
        let portal = wire.ok_or_else(|| refused("target portal is missing"))?;
        let port = portal.target_port;
        let port = u16::try_from(port).map_err(|_| refused(format!("invalid port {port}")))?;
        let portal = TargetPortal {
            address: portal.target_address,
            port,
        };
        portal.validate().map_err(|e| refused(e.to_string()))?;
        Ok(portal)
    }
}

impl WriteAnswer for Portals {
    type Value = Vec<TargetPortal>;
    type Wire = Vec<wire::TargetPortal>;

    fn to_answer(value: Self::Value) -> Self::Wire {
        value
            .into_iter()
            .map(|p| wire::TargetPortal {
                target_address: p.address,
                target_port: u32::from(p.port),
            })
            .collect()
    }
}
