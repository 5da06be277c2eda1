//! The iSCSI group on the host: the initiator's portals, targets, sessions
//! and disks through WMI's `MSFT_iSCSI*` classes (namespace
//! `Root\Microsoft\Windows\Storage`), as CSI Proxy's host layer reaches
//! them since it left PowerShell.

use std::sync::Arc;

use async_trait::async_trait;

use super::disk::DISK;
use super::on_host::host_error;
use super::wmi::{
    string, unsigned, wql_string, Requests, Wmi, WmiGroup, WmiObject, WmiValue, STORAGE,
};
use crate::api::{IscsiApi, IscsiAuth, Secret, TargetPortal};
use crate::capability::Operation as Op;
use crate::error::Result;
use crate::group::ApiGroup;
use crate::redact::redact;

pub(super) const PORTAL: &str = "MSFT_iSCSITargetPortal";
pub(super) const TARGET: &str = "MSFT_iSCSITarget";
pub(super) const SESSION: &str = "MSFT_iSCSISession";
pub(super) const CONNECTION: &str = "MSFT_iSCSIConnection";
pub(super) const TO_PORTAL: &str = "MSFT_iSCSITargetToiSCSITargetPortal";
pub(super) const TO_SESSION: &str = "MSFT_iSCSITargetToiSCSISession";
pub(super) const TO_CONNECTION: &str = "MSFT_iSCSITargetToiSCSIConnection";
pub(super) const TO_DISK: &str = "MSFT_iSCSIConnectionToDisk";

/// The iSCSI group, served by the host.
pub(crate) struct HostIscsi {
    wmi: WmiGroup,
}

impl HostIscsi {
    /// The group over `wmi`.
    pub fn new(wmi: Arc<dyn Wmi>) -> Self {
        Self {
            wmi: WmiGroup::new(wmi, ApiGroup::Iscsi, STORAGE),
        }
    }

    /// Runs `work` for `op` on `object` (a portal, a target; empty for the
    /// whole initiator) on a blocking thread, with the initiator.
    async fn run<T, F>(&self, op: Op, object: String, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Initiator<'_>) -> Result<T> + Send + 'static,
    {
        self.wmi
            .run(op, object, |wmi| work(&Initiator { wmi }))
            .await
    }
}

/// The host's initiator as one operation sees it.
struct Initiator<'a> {
    wmi: Requests<'a>,
}

impl Initiator<'_> {
    fn error(&self, message: impl Into<String>) -> crate::error::Error {
        self.wmi.error(message)
    }

    /// The registered portal, if it is.
    fn portal(&self, portal: &TargetPortal) -> Result<Option<WmiObject>> {
        let found = self.wmi.query(&format!(
            "SELECT * FROM {PORTAL} WHERE TargetPortalAddress = {} AND TargetPortalPortNumber = {}",
            wql_string(&portal.address),
            portal.port
        ))?;
        Ok(found.into_iter().next())
    }

    /// The registered portal, or the error that it is not.
    fn registered(&self, portal: &TargetPortal) -> Result<WmiObject> {
        self.portal(portal)?.ok_or_else(|| {
            let TargetPortal { address, port } = portal;
            self.error(format!("target portal {address}:{port} is not registered"))
        })
    }

    /// The targets discovered through `portal`.
    fn targets(&self, portal: &WmiObject) -> Result<Vec<WmiObject>> {
        self.wmi.associated(
            portal,
            TO_PORTAL,
            TARGET,
            "iSCSITarget",
            "iSCSITargetPortal",
        )
    }

    /// Target `iqn` at the registered `portal`.
    fn target(&self, portal: &TargetPortal, iqn: &str) -> Result<WmiObject> {
        let targets = self.targets(&self.registered(portal)?)?;
        // IQNs are case-insensitive, as WQL compares them for CSI Proxy.
        let named =
            |t: &WmiObject| string(t, "NodeAddress").is_some_and(|a| a.eq_ignore_ascii_case(iqn));
        (targets.into_iter().find(named))
            .ok_or_else(|| self.error(format!("target {iqn} not found at {}", portal.address)))
    }

    /// `target`, if the initiator is logged in to it: as CSI Proxy, a
    /// target that is not (a node restarted since, and its sessions went)
    /// has nothing to log out of and no disks, which is no error.
    fn logged_in(target: WmiObject) -> Option<WmiObject> {
        (target.get("IsConnected") == Some(&WmiValue::Bool(true))).then_some(target)
    }
}

/// `TargetPortalAddress` and `TargetPortalPortNumber` of `portal`.
fn portal_params(portal: &TargetPortal) -> [(&'static str, WmiValue); 2] {
    [
        (
            "TargetPortalAddress",
            WmiValue::String(portal.address.clone()),
        ),
        ("TargetPortalPortNumber", WmiValue::UInt(portal.port.into())),
    ]
}

/// A registered portal as the API gives it.
fn portal_of(op: Op, object: &WmiObject) -> Result<TargetPortal> {
    let address = string(object, "TargetPortalAddress");
    let port = object.get("TargetPortalPortNumber").and_then(unsigned);
    match (address, port.and_then(|p| u16::try_from(p).ok())) {
        (Some(address), Some(port)) => Ok(TargetPortal::new(address).with_port(port)),
        _ => Err(host_error(
            op,
            format!("WMI gave a {PORTAL} without an address or a port: {object:?}"),
            None,
        )),
    }
}

/// `AuthenticationType`, `ChapUsername` and `ChapSecret` of `auth`.
fn auth_params(auth: &IscsiAuth) -> Vec<(&'static str, WmiValue)> {
    let (kind, chap) = match auth {
        IscsiAuth::OneWayChap { username, secret } => ("ONEWAYCHAP", Some((username, secret))),
        IscsiAuth::MutualChap { username, secret } => ("MUTUALCHAP", Some((username, secret))),
        _ => ("NONE", None),
    };
    let mut params = vec![("AuthenticationType", WmiValue::String(kind.to_owned()))];
    if let Some((username, secret)) = chap {
        params.push(("ChapUsername", WmiValue::String(username.clone())));
        params.push(("ChapSecret", WmiValue::String(secret.expose().to_owned())));
    }
    params
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl IscsiApi for HostIscsi {
    /// A portal already registered is left as it is.
    async fn add_target_portal(&self, portal: &TargetPortal) -> Result<()> {
        let portal = portal.clone();
        self.run(Op::AddTargetPortal, portal_name(&portal), move |host| {
            if host.portal(&portal)?.is_some() {
                return Ok(());
            }
            host.wmi
                .call(PORTAL, PORTAL, "New", portal_params(&portal).into())
        })
        .await
    }

    /// The targets the portal's registration discovered.
    async fn discover_target_portal(&self, portal: &TargetPortal) -> Result<Vec<String>> {
        let portal = portal.clone();
        self.run(
            Op::DiscoverTargetPortal,
            portal_name(&portal),
            move |host| {
                let targets = host.targets(&host.registered(&portal)?)?;
                let iqns = targets.iter().filter_map(|t| string(t, "NodeAddress"));
                Ok(iqns.map(str::to_owned).collect())
            },
        )
        .await
    }

    async fn remove_target_portal(&self, portal: &TargetPortal) -> Result<()> {
        let portal = portal.clone();
        self.run(Op::RemoveTargetPortal, portal_name(&portal), move |host| {
            let found = host.registered(&portal)?;
            let path = host.wmi.path_of(&found)?;
            host.wmi
                .call(PORTAL, path, "Remove", portal_params(&portal).into())
        })
        .await
    }

    async fn list_target_portals(&self) -> Result<Vec<TargetPortal>> {
        let op = Op::ListTargetPortals;
        self.run(op, String::new(), move |host| {
            let query = format!("SELECT TargetPortalAddress, TargetPortalPortNumber FROM {PORTAL}");
            let portals = host.wmi.query(&query)?;
            portals.iter().map(|p| portal_of(op, p)).collect()
        })
        .await
    }

    /// A target already logged in to is left as it is.
    async fn connect_target(
        &self,
        portal: &TargetPortal,
        iqn: &str,
        auth: &IscsiAuth,
    ) -> Result<()> {
        let (portal, iqn, auth) = (portal.clone(), iqn.to_owned(), auth.clone());
        // The provider's words join errors, and may echo the secret.
        let secret = match &auth {
            IscsiAuth::OneWayChap { secret, .. } | IscsiAuth::MutualChap { secret, .. } => {
                secret.clone()
            }
            _ => Secret::new(""),
        };
        self.run(Op::ConnectTarget, target_name(&portal, &iqn), move |host| {
            let target = host.target(&portal, &iqn)?;
            if target.get("IsConnected") == Some(&WmiValue::Bool(true)) {
                return Ok(());
            }
            let mut params = vec![("NodeAddress", WmiValue::String(iqn))];
            params.extend(portal_params(&portal));
            params.extend(auth_params(&auth));
            host.wmi.call(TARGET, TARGET, "Connect", params)
        })
        .await
        .map_err(|e| redact(e, &secret))
    }

    /// Ends every session with the target, persistent ones unregistered
    /// first so that they do not come back at boot.
    async fn disconnect_target(&self, portal: &TargetPortal, iqn: &str) -> Result<()> {
        let (portal, iqn) = (portal.clone(), iqn.to_owned());
        self.run(
            Op::DisconnectTarget,
            target_name(&portal, &iqn),
            move |host| {
                let Some(target) = Initiator::logged_in(host.target(&portal, &iqn)?) else {
                    return Ok(());
                };
                let sessions = host.wmi.associated(
                    &target,
                    TO_SESSION,
                    SESSION,
                    "iSCSISession",
                    "iSCSITarget",
                )?;
                if sessions.is_empty() {
                    return Err(host.error(format!("not logged in to {iqn}: no session")));
                }
                let target_path = host.wmi.path_of(&target)?;
                for session in &sessions {
                    if session.get("IsPersistent") == Some(&WmiValue::Bool(true)) {
                        host.wmi.call(
                            SESSION,
                            host.wmi.path_of(session)?,
                            "Unregister",
                            Vec::new(),
                        )?;
                    }
                    let id = string(session, "SessionIdentifier")
                        .ok_or_else(|| host.error("WMI gave a session without an identifier"))?;
                    let params = vec![("SessionIdentifier", WmiValue::String(id.to_owned()))];
                    host.wmi.call(TARGET, target_path, "Disconnect", params)?;
                }
                Ok(())
            },
        )
        .await
    }

    /// The disks of every connection of the session, each once.
    async fn get_target_disks(&self, portal: &TargetPortal, iqn: &str) -> Result<Vec<u32>> {
        let (portal, iqn) = (portal.clone(), iqn.to_owned());
        let op = Op::GetTargetDisks;
        self.run(op, target_name(&portal, &iqn), move |host| {
            let Some(target) = Initiator::logged_in(host.target(&portal, &iqn)?) else {
                return Ok(Vec::new());
            };
            let connections = host.wmi.associated(
                &target,
                TO_CONNECTION,
                CONNECTION,
                "iSCSIConnection",
                "iSCSITarget",
            )?;
            let mut numbers = Vec::new();
            for connection in &connections {
                for disk in
                    host.wmi
                        .associated(connection, TO_DISK, DISK, "Disk", "iSCSIConnection")?
                {
                    let number = disk.get("Number").and_then(unsigned);
                    let number = number.and_then(|n| u32::try_from(n).ok()).ok_or_else(|| {
                        host.error(format!("WMI gave a {DISK} without a number: {disk:?}"))
                    })?;
                    numbers.push(number);
                }
            }
            numbers.sort_unstable();
            numbers.dedup();
            Ok(numbers)
        })
        .await
    }

    async fn set_mutual_chap_secret(&self, secret: &Secret) -> Result<()> {
        let sent = secret.expose().to_owned();
        self.run(Op::SetMutualChapSecret, String::new(), move |host| {
            let params = vec![("ChapSecret", WmiValue::String(sent))];
            host.wmi.call(SESSION, SESSION, "SetCHAPSecret", params)
        })
        .await
        .map_err(|e| redact(e, secret))
    }
}
/// A portal, as the calls on it are told apart.
fn portal_name(portal: &TargetPortal) -> String {
    format!("portal {}:{}", portal.address, portal.port)
}

/// A target of a portal, as the calls on it are told apart: IQNs without
/// case, as they compare.
fn target_name(portal: &TargetPortal, iqn: &str) -> String {
    format!("target {} at {}", iqn.to_lowercase(), portal_name(portal))
}
