//! The iscsi group's values (its trait is generated, in `iscsi.rs`).

use super::types::{check_name, Secret};
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
    /// [`IscsiApi::set_mutual_chap_secret`](super::IscsiApi::set_mutual_chap_secret).
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

/// The checks of an RPC that names a target: the portal's and the IQN's.
pub(crate) fn check_target(portal: &TargetPortal, iqn: &str) -> Result<()> {
    portal.validate()?;
    check_name("IQN", iqn)
}
