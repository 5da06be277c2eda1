//! The iSCSI group of the fake host.

use async_trait::async_trait;

use super::state::{FakeDisk, HostState};
use super::{host_error, FakeHost};
use crate::api::{DiskLocation, IscsiApi, IscsiAuth, Secret, TargetPortal};
use crate::capability::Operation as Op;
use crate::error::Result;

impl HostState {
    fn check_registered(&self, op: Op, portal: &TargetPortal) -> Result<()> {
        if self.registered_portals.contains(portal) {
            Ok(())
        } else {
            Err(host_error(
                op,
                format!(
                    "target portal {}:{} is not registered",
                    portal.address, portal.port
                ),
            ))
        }
    }

    fn connect_target(&mut self, portal: &TargetPortal, iqn: &str, auth: &IscsiAuth) -> Result<()> {
        let op = Op::ConnectTarget;
        self.check_registered(op, portal)?;
        let target_iqn = target_iqn(self, op, portal, iqn)?;
        let session = (portal.clone(), target_iqn.clone());
        if self.sessions.contains_key(&session) {
            return Ok(());
        }
        let Some(target) =
            (self.portals.get(portal).into_iter().flatten()).find(|t| t.iqn == target_iqn)
        else {
            return Err(host_error(op, format!("target {iqn} not found")));
        };
        let authenticated = match (auth, &target.chap) {
            (IscsiAuth::None, None) => true,
            (IscsiAuth::OneWayChap { username, secret }, Some((user, expected))) => {
                username == user && secret == expected && target.mutual_secret.is_none()
            }
            (IscsiAuth::MutualChap { username, secret }, Some((user, expected))) => {
                username == user
                    && secret == expected
                    && target.mutual_secret.is_some()
                    && target.mutual_secret == self.mutual_chap_secret
            }
            _ => false,
        };
        if !authenticated {
            return Err(host_error(
                op,
                format!("login to {iqn} failed: authentication failure"),
            ));
        }
        let disks = target.disks.clone();
        let mut numbers = Vec::with_capacity(disks.len());
        for (lun, (page83, size)) in disks.into_iter().enumerate() {
            let number = self.next_disk_number();
            let location = DiskLocation {
                adapter: "iscsi".into(),
                bus: "0".into(),
                target: iqn.to_owned(),
                lun_id: lun.to_string(),
            };
            self.add_disk(number, FakeDisk::new(&page83, size, location));
            numbers.push(number);
        }
        self.sessions.insert(session, numbers);
        Ok(())
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl IscsiApi for FakeHost {
    async fn add_target_portal(&self, portal: &TargetPortal) -> Result<()> {
        let portal = portal.clone();
        self.host_call(Op::AddTargetPortal, move |state| {
            if !state.portals.contains_key(&portal) {
                return Err(host_error(
                    Op::AddTargetPortal,
                    format!(
                        "target portal {}:{} did not respond",
                        portal.address, portal.port
                    ),
                ));
            }
            state.registered_portals.insert(portal);
            Ok(())
        })
        .await
    }

    async fn discover_target_portal(&self, portal: &TargetPortal) -> Result<Vec<String>> {
        let (op, portal) = (Op::DiscoverTargetPortal, portal.clone());
        self.host_call(op, move |state| {
            state.check_registered(op, &portal)?;
            let targets = state.portals.get(&portal).into_iter().flatten();
            Ok(targets.map(|t| t.iqn.clone()).collect())
        })
        .await
    }

    async fn remove_target_portal(&self, portal: &TargetPortal) -> Result<()> {
        let (op, portal) = (Op::RemoveTargetPortal, portal.clone());
        self.host_call(op, move |state| {
            state.check_registered(op, &portal)?;
            state.registered_portals.remove(&portal);
            Ok(())
        })
        .await
    }

    async fn list_target_portals(&self) -> Result<Vec<TargetPortal>> {
        self.host_call(Op::ListTargetPortals, |state| {
            Ok(state.registered_portals.iter().cloned().collect())
        })
        .await
    }

    async fn connect_target(
        &self,
        portal: &TargetPortal,
        iqn: &str,
        auth: &IscsiAuth,
    ) -> Result<()> {
        let (portal, iqn, auth) = (portal.clone(), iqn.to_owned(), auth.clone());
        self.host_call(Op::ConnectTarget, move |state| {
            state.connect_target(&portal, &iqn, &auth)
        })
        .await
    }

    /// A target the initiator is not logged in to (a node restarted
    /// since) has nothing to log out of, as CSI Proxy answers.
    async fn disconnect_target(&self, portal: &TargetPortal, iqn: &str) -> Result<()> {
        let (op, portal, iqn) = (Op::DisconnectTarget, portal.clone(), iqn.to_owned());
        self.host_call(op, move |state| {
            let iqn = target_iqn(state, op, &portal, &iqn)?;
            let Some(disks) = state.sessions.remove(&(portal, iqn)) else {
                return Ok(());
            };
            for disk in disks {
                state.remove_disk(disk);
            }
            Ok(())
        })
        .await
    }

    /// None for a target the initiator is not logged in to, as CSI Proxy
    /// answers.
    async fn get_target_disks(&self, portal: &TargetPortal, iqn: &str) -> Result<Vec<u32>> {
        let (op, portal, iqn) = (Op::GetTargetDisks, portal.clone(), iqn.to_owned());
        self.host_call(op, move |state| {
            let iqn = target_iqn(state, op, &portal, &iqn)?;
            let session = state.sessions.get(&(portal, iqn));
            Ok(session.cloned().unwrap_or_default())
        })
        .await
    }

    async fn set_mutual_chap_secret(&self, secret: &Secret) -> Result<()> {
        let secret = secret.clone();
        self.host_call(Op::SetMutualChapSecret, move |state| {
            state.mutual_chap_secret = Some(secret).filter(|s| !s.is_empty());
            Ok(())
        })
        .await
    }
}

/// The IQN of the target `portal` offers as `iqn`, in any case (IQNs are
/// case-insensitive, and CSI Proxy's WMI query compares them so); fails as
/// CSI Proxy does when there is none: it looks the target up first.
fn target_iqn(state: &HostState, op: Op, portal: &TargetPortal, iqn: &str) -> Result<String> {
    let targets = state.portals.get(portal).into_iter().flatten();
    let mut found = targets.filter(|t| t.iqn.eq_ignore_ascii_case(iqn));
    match found.next() {
        Some(target) => Ok(target.iqn.clone()),
        None => Err(host_error(
            op,
            format!("target {iqn} not found at {}", portal.address),
        )),
    }
}
