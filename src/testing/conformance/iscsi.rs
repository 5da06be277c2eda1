//! The iSCSI group's checks.

use super::{ensure, ensure_eq, is_host_error, IscsiFixture, Outcome, Steps};
use crate::api::{IscsiApi, IscsiAuth, Secret};
use crate::capability::Operation as O;

/// Checks `api` against the iSCSI rules on the portal `fixture` describes:
/// a portal is listed while it is registered; discovery finds both
/// targets; a wrong CHAP secret is refused; a login (mutual CHAP where the
/// backend can set the initiator's secret, one-way CHAP otherwise) may
/// repeat and attaches the target's one disk; logging out twice fails the
/// second time.
pub async fn iscsi(api: &dyn IscsiApi, fixture: &IscsiFixture) -> Outcome {
    let mut steps = Steps::default();
    let portal = &fixture.portal;
    let registered = |portals: &[crate::api::TargetPortal]| portals.contains(portal);

    if let Some(portals) = steps
        .ok(O::ListTargetPortals, api.list_target_portals())
        .await?
    {
        ensure(!registered(&portals), O::ListTargetPortals, || {
            format!("{portal:?} is not registered before AddTargetPortal: {portals:?}")
        })?;
    }
    steps
        .ok(O::AddTargetPortal, api.add_target_portal(portal))
        .await?;
    if let Some(portals) = steps
        .ok(O::ListTargetPortals, api.list_target_portals())
        .await?
    {
        ensure(registered(&portals), O::ListTargetPortals, || {
            format!("{portal:?} is registered after AddTargetPortal: {portals:?}")
        })?;
    }
    if let Some(iqns) = steps
        .ok(O::DiscoverTargetPortal, api.discover_target_portal(portal))
        .await?
    {
        for wanted in [&fixture.one_way.iqn, &fixture.mutual.iqn] {
            ensure(iqns.contains(wanted), O::DiscoverTargetPortal, || {
                format!("discovery finds {wanted}: {iqns:?}")
            })?;
        }
    }

    let one_way = |secret: &Secret| IscsiAuth::OneWayChap {
        username: fixture.one_way.chap_username.clone(),
        secret: secret.clone(),
    };
    let wrong = one_way(&Secret::new("conformance: a wrong secret"));
    steps
        .fails(
            O::ConnectTarget,
            api.connect_target(portal, &fixture.one_way.iqn, &wrong),
            is_host_error,
            "a wrong CHAP secret is refused",
        )
        .await?;
    let mutual = steps
        .ok(
            O::SetMutualChapSecret,
            api.set_mutual_chap_secret(&fixture.mutual_secret),
        )
        .await?;
    let (iqn, auth) = match mutual {
        Some(()) => (
            &fixture.mutual.iqn,
            IscsiAuth::MutualChap {
                username: fixture.mutual.chap_username.clone(),
                secret: fixture.mutual.chap_secret.clone(),
            },
        ),
        None => (&fixture.one_way.iqn, one_way(&fixture.one_way.chap_secret)),
    };
    steps
        .ok(O::ConnectTarget, api.connect_target(portal, iqn, &auth))
        .await?;
    steps
        .ok(O::ConnectTarget, api.connect_target(portal, iqn, &auth))
        .await?;
    if let Some(disks) = steps
        .ok(O::GetTargetDisks, api.get_target_disks(portal, iqn))
        .await?
    {
        ensure_eq(&disks.len(), &1, O::GetTargetDisks, "the target's disks")?;
        // IQNs are case-insensitive: the same target in capitals.
        let shouted = iqn.to_uppercase();
        if let Some(same) = steps
            .ok(O::GetTargetDisks, api.get_target_disks(portal, &shouted))
            .await?
        {
            ensure_eq(
                &same,
                &disks,
                O::GetTargetDisks,
                "the disks of the IQN in capitals",
            )?;
        }
    }
    steps
        .ok(O::DisconnectTarget, api.disconnect_target(portal, iqn))
        .await?;
    // Logged out (as after a node restart): no disks, and nothing to log
    // out of again, as CSI Proxy answers.
    if let Some(disks) = steps
        .ok(O::GetTargetDisks, api.get_target_disks(portal, iqn))
        .await?
    {
        ensure(disks.is_empty(), O::GetTargetDisks, || {
            format!("a target not logged in to has no disks, got {disks:?}")
        })?;
    }
    steps
        .ok(O::DisconnectTarget, api.disconnect_target(portal, iqn))
        .await?;
    steps
        .ok(O::RemoveTargetPortal, api.remove_target_portal(portal))
        .await?;
    if let Some(portals) = steps
        .ok(O::ListTargetPortals, api.list_target_portals())
        .await?
    {
        ensure(!registered(&portals), O::ListTargetPortals, || {
            format!("{portal:?} is gone after RemoveTargetPortal: {portals:?}")
        })?;
    }
    steps.finish()
}
