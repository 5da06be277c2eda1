//! Server side of the iSCSI layout (v1alpha1, v1alpha2), made of the
//! adapter's table (`src/adapter/iscsi.rs`).

use std::sync::Arc;

use tonic::Status;

use super::codec::{decode, host, reply, Answer};
use super::layout::wire_server;
use crate::adapter::fields::*;
use crate::adapter::iscsi::{iscsi_layout, Portal, Portals};
use crate::api::{IscsiApi, IscsiAuth, Secret};
use crate::capability::IscsiOperation as Op;
use crate::wire::iscsi::v1alpha2 as wire;

pub(super) struct Iscsi {
    pub api: Arc<dyn IscsiApi>,
}

iscsi_layout!(wire_server Iscsi: IscsiOperation);

impl Iscsi {
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
