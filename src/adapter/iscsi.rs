//! The iSCSI adapter: v1alpha1 and v1alpha2 share every message;
//! v1alpha2 adds `SetMutualChapSecret`. The proxy dereferences the target
//! portal without checking it, so it is always set. A host error that
//! echoes a CHAP secret has it replaced by `***`.

#[cfg(feature = "testing")]
use tonic::Status;

use super::fields::{AnswerField, DecimalDisks, Iqn, Plain, RequestField};
use super::layout::wire_adapter;
use crate::api::{IscsiApi, IscsiAuth, Secret, TargetPortal};
use crate::capability::Operation;
use crate::error::{Error, Result};
use crate::redact::redact;
use crate::wire::iscsi::v1alpha2 as wire;

/// A target portal, as its message. The proxy dereferences it without a
/// check and crashes on a missing one, so the client always sets it, and
/// the fake proxy fails the call instead.
pub(crate) struct Portal;

impl RequestField for Portal {
    type Owned = TargetPortal;
    type Arg<'a> = &'a TargetPortal;
    type Wire = Option<wire::TargetPortal>;

    fn to_request(portal: &TargetPortal) -> Result<Self::Wire> {
        Ok(Some(wire::TargetPortal {
            target_address: portal.address.clone(),
            target_port: u32::from(portal.port),
        }))
    }

    #[cfg(feature = "testing")]
    fn from_request(wire: Self::Wire) -> Result<TargetPortal, Status> {
        use super::fields::refused;
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

    #[cfg(feature = "testing")]
    fn lend(owned: &TargetPortal) -> &TargetPortal {
        owned
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

    #[cfg(feature = "testing")]
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

/// The layout's table (see `super::layout`): v1alpha1 and v1alpha2 share
/// every message. The IQN comes before the portal: the fake proxy refuses
/// a bad IQN first, as it always has.
macro_rules! iscsi_layout {
    ($then:ident $($carry:tt)*) => {
        $then! { $($carry)* {
            /// v1alpha1, v1alpha2.
            Iscsi: IscsiApi in crate::wire::iscsi::v1alpha2;

            fn add_target_portal(portal: &TargetPortal) -> ()
                = AddTargetPortal: AddTargetPortalRequest { target_portal: portal as Portal }
                -> AddTargetPortalResponse {} => ();
            fn discover_target_portal(portal: &TargetPortal) -> Vec<String>
                = DiscoverTargetPortal: DiscoverTargetPortalRequest {
                    target_portal: portal as Portal
                }
                -> DiscoverTargetPortalResponse { iqns: Plain<Vec<String>> } => (iqns);
            fn remove_target_portal(portal: &TargetPortal) -> ()
                = RemoveTargetPortal: RemoveTargetPortalRequest { target_portal: portal as Portal }
                -> RemoveTargetPortalResponse {} => ();
            fn list_target_portals() -> Vec<TargetPortal>
                = ListTargetPortals: ListTargetPortalsRequest {}
                -> ListTargetPortalsResponse { target_portals: Portals } => (target_portals);
            fn connect_target(portal: &TargetPortal, iqn: &str, auth: &IscsiAuth) -> ()
                = by hand connect: ConnectTarget;
            fn disconnect_target(portal: &TargetPortal, iqn: &str) -> ()
                = DisconnectTarget: DisconnectTargetRequest {
                    iqn: iqn as Iqn,
                    target_portal: portal as Portal
                }
                -> DisconnectTargetResponse {} => ();
            fn get_target_disks(portal: &TargetPortal, iqn: &str) -> Vec<u32>
                = GetTargetDisks: GetTargetDisksRequest {
                    iqn: iqn as Iqn,
                    target_portal: portal as Portal
                }
                -> GetTargetDisksResponse { disk_i_ds: DecimalDisks } => (disk_i_ds);
            fn set_mutual_chap_secret(secret: &Secret) -> ()
                = by hand set_mutual_secret: SetMutualChapSecret;
        } }
    };
}
#[cfg(feature = "testing")] // for the fake proxy
pub(crate) use iscsi_layout;

iscsi_layout!(wire_adapter);

impl Iscsi {
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
