//! The iscsi group.

use super::define::group_trait;
use super::types::{check_name, Secret};
use crate::capability::Operation;
use crate::error::{Error, Result};

/// The port iSCSI portals listen on unless told otherwise.
pub const DEFAULT_ISCSI_PORT: u16 = 3260;

/// An iSCSI target portal: an address and a TCP port.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TargetPortal {
    /// Host name or IP address.
    pub address: String,
    /// TCP port.
    pub port: u16,
}

impl TargetPortal {
    /// A portal at `address` on the default port 3260.
    pub fn new(address: impl Into<String>) -> Self {
        Self {
            address: address.into(),
            port: DEFAULT_ISCSI_PORT,
        }
    }

    /// The same portal on another port.
    pub fn with_port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    pub(crate) fn validate(&self) -> Result<()> {
        check_name("target portal address", &self.address)?;
        if self.port == 0 {
            return Err(Error::invalid_argument(
                "target portal port",
                "must not be 0",
            ));
        }
        Ok(())
    }
}

/// How the initiator authenticates to a target. `Debug` hides secrets.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum IscsiAuth {
    /// No authentication.
    #[default]
    None,
    /// The target checks the initiator (one-way CHAP).
    OneWayChap {
        /// CHAP user name.
        username: String,
        /// CHAP secret.
        secret: Secret,
    },
    /// Both sides check each other; the initiator's own secret is set with
    /// [`IscsiApi::set_mutual_chap_secret`].
    MutualChap {
        /// CHAP user name.
        username: String,
        /// CHAP secret.
        secret: Secret,
    },
}

impl IscsiAuth {
    pub(crate) fn validate(&self) -> Result<()> {
        match self {
            IscsiAuth::None => Ok(()),
            IscsiAuth::OneWayChap { username, secret }
            | IscsiAuth::MutualChap { username, secret } => {
                check_name("CHAP user name", username)?;
                if secret.is_empty() {
                    return Err(Error::invalid_argument("CHAP secret", "is empty"));
                }
                Ok(())
            }
        }
    }
}

/// The iscsi group's RPCs, each defined once: its method, its arguments,
/// its answer, its [`Operation`] and the checks its arguments get before
/// anything is sent. `iscsi_rpcs!(m)` hands the list to the macro `m`:
/// [`group_trait`](super::define) makes the trait of it, and the client
/// its handle.
macro_rules! iscsi_rpcs {
    ($then:ident) => {
        $then! {
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
            trait IscsiApi;

            /// Registers `portal` with the initiator.
            fn add_target_portal(&self, portal: &TargetPortal) -> () = Operation::AddTargetPortal,
                check portal.validate();

            /// The IQNs of the targets `portal` offers.
            fn discover_target_portal(&self, portal: &TargetPortal) -> Vec<String>
                = Operation::DiscoverTargetPortal,
                check portal.validate();

            /// Unregisters `portal`.
            fn remove_target_portal(&self, portal: &TargetPortal) -> ()
                = Operation::RemoveTargetPortal,
                check portal.validate();

            /// The registered portals.
            fn list_target_portals(&self) -> Vec<TargetPortal> = Operation::ListTargetPortals;

            /// Logs in to target `iqn` at `portal`.
            fn connect_target(&self, portal: &TargetPortal, iqn: &str, auth: &IscsiAuth) -> ()
                = Operation::ConnectTarget,
                check crate::api::check_target(portal, iqn).and_then(|()| auth.validate());

            /// Logs out of target `iqn` at `portal`.
            fn disconnect_target(&self, portal: &TargetPortal, iqn: &str) -> ()
                = Operation::DisconnectTarget,
                check crate::api::check_target(portal, iqn);

            /// The numbers of the disks behind target `iqn` at `portal`.
            fn get_target_disks(&self, portal: &TargetPortal, iqn: &str) -> Vec<u32>
                = Operation::GetTargetDisks,
                check crate::api::check_target(portal, iqn);

            /// Sets the initiator's secret for mutual CHAP. Needs v1alpha2.
            fn set_mutual_chap_secret(&self, secret: &Secret) -> ()
                = Operation::SetMutualChapSecret;
        }
    };
}
pub(crate) use iscsi_rpcs;

iscsi_rpcs!(group_trait);

/// The checks of an RPC that names a target: the portal's and the IQN's.
pub(crate) fn check_target(portal: &TargetPortal, iqn: &str) -> Result<()> {
    portal.validate()?;
    check_name("IQN", iqn)
}
