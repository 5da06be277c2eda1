//! The iscsi group's RPCs (see [the module](super)).

/// The iscsi group's RPCs, each defined once (see [the module](super)).
macro_rules! iscsi_rpcs {
    ($then:ident $($carry:tt)*) => {
        $then! {
            $($carry)*
            {
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
            trait IscsiApi: Iscsi => IscsiOperation;

            /// Registers `portal` with the initiator.
            fn add_target_portal(&self, portal: &TargetPortal) -> () = {
                /// Register a target portal.
                AddTargetPortal = "AddTargetPortal", Mutates,
                    [V1ALPHA1 => Native("AddTargetPortal")]
            }
            check { portal.validate() };

            /// The IQNs of the targets `portal` offers.
            fn discover_target_portal(&self, portal: &TargetPortal) -> Vec<String> = {
                /// The targets a portal offers.
                DiscoverTargetPortal = "DiscoverTargetPortal", Reads,
                    [V1ALPHA1 => Native("DiscoverTargetPortal")]
            }
            check { portal.validate() };

            /// Unregisters `portal`.
            fn remove_target_portal(&self, portal: &TargetPortal) -> () = {
                /// Unregister a target portal.
                RemoveTargetPortal = "RemoveTargetPortal", Mutates,
                    [V1ALPHA1 => Native("RemoveTargetPortal")]
            }
            check { portal.validate() };

            /// The registered portals.
            fn list_target_portals(&self) -> Vec<TargetPortal> = {
                /// The registered target portals.
                ListTargetPortals = "ListTargetPortals", Reads,
                    [V1ALPHA1 => Native("ListTargetPortals")]
            };

            /// Logs in to target `iqn` at `portal`.
            fn connect_target(&self, portal: &TargetPortal, iqn: &str, auth: &IscsiAuth) -> () = {
                /// Log in to a target.
                ConnectTarget = "ConnectTarget", Mutates, [V1ALPHA1 => Native("ConnectTarget")]
            }
            check { check_target(portal, iqn).and_then(|()| auth.validate()) };

            /// Logs out of target `iqn` at `portal`.
            fn disconnect_target(&self, portal: &TargetPortal, iqn: &str) -> () = {
                /// Log out of a target.
                DisconnectTarget = "DisconnectTarget", Mutates,
                    [V1ALPHA1 => Native("DisconnectTarget")]
            }
            check { check_target(portal, iqn) };

            /// The numbers of the disks behind target `iqn` at `portal`.
            fn get_target_disks(&self, portal: &TargetPortal, iqn: &str) -> Vec<u32> = {
                /// The disks behind a target.
                GetTargetDisks = "GetTargetDisks", Reads, [V1ALPHA1 => Native("GetTargetDisks")]
            }
            check { check_target(portal, iqn) };

            /// Sets the initiator's secret for mutual CHAP. Needs v1alpha2.
            fn set_mutual_chap_secret(&self, secret: &Secret) -> () = {
                /// Set the initiator's mutual CHAP secret.
                SetMutualChapSecret = "SetMutualChapSecret", Mutates,
                    [V1ALPHA1 => No, V1ALPHA2 => Native("SetMutualChapSecret")]
            };
            }
        }
    };
}
pub(crate) use iscsi_rpcs;
