//! The iSCSI adapter: v1alpha1 and v1alpha2 share every message;
//! v1alpha2 adds `SetMutualChapSecret`. The proxy dereferences the target
//! portal without checking it, so it is always set. A host error that
//! echoes a CHAP secret has it replaced by `***`.

mod alpha_iscsi;

pub(crate) use alpha_iscsi::AlphaIscsi;

use super::fields::{AnswerField, Iqn, RequestField};
use crate::api::{IscsiAuth, Secret, TargetPortal};
use crate::capability::Operation;
use crate::error::{Error, Result};
use crate::redact::redact;
use crate::wire::iscsi::v1alpha2 as wire;

/// A target portal, as its message. The proxy dereferences it without a
/// check and crashes on a missing one, so the client always sets it.
pub(crate) struct Portal;

impl RequestField for Portal {
    type Arg<'a> = &'a TargetPortal;
    type Wire = Option<wire::TargetPortal>;

    fn to_request(portal: &TargetPortal) -> Result<Self::Wire> {
        Ok(Some(wire::TargetPortal {
            target_address: portal.address.clone(),
            target_port: u32::from(portal.port),
        }))
    }
}

/// The registered portals, as their messages.
pub(crate) struct Portals;

impl AnswerField for Portals {
    type Value = Vec<TargetPortal>;
    type Wire = Vec<wire::TargetPortal>;

    fn from_answer(operation: Operation, _: &'static str, wire: Self::Wire) -> Result<Self::Value> {
        wire.into_iter()
            .map(|p| {
                let port = u16::try_from(p.target_port).map_err(|_| {
                    Error::invalid_response(
                        operation,
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
}

impl AlphaIscsi {
    /// Three fields of one argument; a CHAP secret never shows in an error.
    async fn connect(&self, portal: &TargetPortal, iqn: &str, auth: &IscsiAuth) -> Result<()> {
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
            target_portal: Portal::to_request(portal)?,
            iqn: Iqn::to_request(iqn)?,
            auth_type: auth_type as i32,
            chap_username: username.to_owned(),
            chap_secret: secret.map(|s| s.expose().to_owned()).unwrap_or_default(),
        };
        let sent: Result<wire::ConnectTargetResponse> =
            self.wire.call(Operation::ConnectTarget, request).await;
        sent.map(drop).map_err(|e| match secret {
            Some(secret) => redact(e, secret),
            None => e,
        })
    }

    /// The secret never shows in an error.
    async fn set_mutual_secret(&self, secret: &Secret) -> Result<()> {
        let request = wire::SetMutualChapSecretRequest {
            mutual_chap_secret: secret.expose().to_owned(),
        };
        let sent: Result<wire::SetMutualChapSecretResponse> = self
            .wire
            .call(Operation::SetMutualChapSecret, request)
            .await;
        sent.map(drop).map_err(|e| redact(e, secret))
    }
}
