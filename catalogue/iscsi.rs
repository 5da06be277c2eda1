//! The iscsi group's RPCs, one method each (the form: `catalogue/README.md`).

use crate::adapter::fields::{DecimalDisks, Iqn};
use crate::adapter::iscsi::{Portal, Portals};
use crate::api::{check_target, IscsiAuth, Secret, TargetPortal};

/// The iSCSI group: the host initiator's portals and target sessions.
///
/// ```
/// use std::sync::Arc;
/// use csi_proxy_client::{api::{IscsiApi, TargetPortal}, async_trait, Result};
///
/// /// Every portal offers one target.
/// struct OneTarget;
///
/// #[async_trait]
/// impl IscsiApi for OneTarget {
///     async fn discover_target_portal(&self, _portal: &TargetPortal) -> Result<Vec<String>> {
///         Ok(vec!["iqn.2026-01.example:disk1".into()])
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<()> {
/// let iscsi: Arc<dyn IscsiApi> = Arc::new(OneTarget);
/// let iqns = iscsi.discover_target_portal(&TargetPortal::new("10.0.0.5")).await?;
/// assert_eq!(iqns.len(), 1);
/// # Ok(()) }
/// ```
#[group(Iscsi, operations = IscsiOperation)]
#[layout(AlphaIscsi, wire = crate::wire::iscsi::v1alpha2, doc = "v1alpha1, v1alpha2: the one iSCSI layout.")]
trait IscsiApi {
    /// Registers `portal` with the initiator.
    #[operation(
        AddTargetPortal,
        name = "AddTargetPortal",
        effect = Mutates,
        doc = "Register a target portal.",
        since(V1ALPHA1 = Native("AddTargetPortal"))
    )]
    #[check(portal.validate())]
    #[wire(
        AlphaIscsi,
        request = AddTargetPortalRequest { target_portal: Portal(portal) },
        response = AddTargetPortalResponse {}
    )]
    async fn add_target_portal(&self, portal: &TargetPortal) -> Result<()>;

    /// The IQNs of the targets `portal` offers.
    #[operation(
        DiscoverTargetPortal,
        name = "DiscoverTargetPortal",
        effect = Reads,
        doc = "The targets a portal offers.",
        since(V1ALPHA1 = Native("DiscoverTargetPortal"))
    )]
    #[check(portal.validate())]
    #[wire(
        AlphaIscsi,
        request = DiscoverTargetPortalRequest { target_portal: Portal(portal) },
        response = DiscoverTargetPortalResponse { iqns }
    )]
    async fn discover_target_portal(&self, portal: &TargetPortal) -> Result<Vec<String>>;

    /// Unregisters `portal`.
    #[operation(
        RemoveTargetPortal,
        name = "RemoveTargetPortal",
        effect = Mutates,
        doc = "Unregister a target portal.",
        since(V1ALPHA1 = Native("RemoveTargetPortal"))
    )]
    #[check(portal.validate())]
    #[wire(
        AlphaIscsi,
        request = RemoveTargetPortalRequest { target_portal: Portal(portal) },
        response = RemoveTargetPortalResponse {}
    )]
    async fn remove_target_portal(&self, portal: &TargetPortal) -> Result<()>;

    /// The registered portals.
    #[operation(
        ListTargetPortals,
        name = "ListTargetPortals",
        effect = Reads,
        doc = "The registered target portals.",
        since(V1ALPHA1 = Native("ListTargetPortals"))
    )]
    #[wire(
        AlphaIscsi,
        request = ListTargetPortalsRequest {},
        response = ListTargetPortalsResponse { target_portals: Portals(target_portals) }
    )]
    async fn list_target_portals(&self) -> Result<Vec<TargetPortal>>;

    /// Logs in to target `iqn` at `portal`.
    #[operation(
        ConnectTarget,
        name = "ConnectTarget",
        effect = Mutates,
        doc = "Log in to a target.",
        since(V1ALPHA1 = Native("ConnectTarget"))
    )]
    #[check(check_target(portal, iqn).and_then(|()| auth.validate()))]
    #[wire(AlphaIscsi, by_hand = connect)]
    async fn connect_target(
        &self,
        portal: &TargetPortal,
        iqn: &str,
        auth: &IscsiAuth,
    ) -> Result<()>;

    /// Logs out of target `iqn` at `portal`.
    #[operation(
        DisconnectTarget,
        name = "DisconnectTarget",
        effect = Mutates,
        doc = "Log out of a target.",
        since(V1ALPHA1 = Native("DisconnectTarget"))
    )]
    #[check(check_target(portal, iqn))]
    // The IQN before the portal, here and below: the fake proxy reads the
    // fields in this order, and so refuses a bad IQN first, as it always has.
    #[wire(
        AlphaIscsi,
        request = DisconnectTargetRequest { iqn: Iqn(iqn), target_portal: Portal(portal) },
        response = DisconnectTargetResponse {}
    )]
    async fn disconnect_target(&self, portal: &TargetPortal, iqn: &str) -> Result<()>;

    /// The numbers of the disks behind target `iqn` at `portal`.
    #[operation(
        GetTargetDisks,
        name = "GetTargetDisks",
        effect = Reads,
        doc = "The disks behind a target.",
        since(V1ALPHA1 = Native("GetTargetDisks"))
    )]
    #[check(check_target(portal, iqn))]
    #[wire(
        AlphaIscsi,
        request = GetTargetDisksRequest { iqn: Iqn(iqn), target_portal: Portal(portal) },
        response = GetTargetDisksResponse { disk_i_ds: DecimalDisks(disk_i_ds) }
    )]
    async fn get_target_disks(&self, portal: &TargetPortal, iqn: &str) -> Result<Vec<u32>>;

    /// Sets the initiator's secret for mutual CHAP. Needs v1alpha2.
    #[operation(
        SetMutualChapSecret,
        name = "SetMutualChapSecret",
        effect = Mutates,
        doc = "Set the initiator's mutual CHAP secret.",
        since(V1ALPHA1 = No, V1ALPHA2 = Native("SetMutualChapSecret"))
    )]
    #[wire(AlphaIscsi, by_hand = set_mutual_secret)]
    async fn set_mutual_chap_secret(&self, secret: &Secret) -> Result<()>;
}
