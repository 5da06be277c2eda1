//! The parse of the names whose failure is an [`Error`]: a group's and a
//! version's. Here, above both names, so that neither needs to know the
//! error, which names them.

use std::str::FromStr;

use super::Error;
use crate::group::ApiGroup;
use crate::version::ApiVersion;

impl FromStr for ApiGroup {
    type Err = Error;

    /// Parses a group name as [`ApiGroup::as_str`] prints it.
    fn from_str(s: &str) -> Result<Self, Error> {
        ApiGroup::from_name(s).ok_or_else(|| {
            Error::invalid_argument(
                "group",
                format!("{s:?} is not one of disk, filesystem, smb, volume, iscsi, system"),
            )
        })
    }
}

impl FromStr for ApiVersion {
    type Err = Error;

    /// Parses `v<major>`, `v<major>beta<minor>` or `v<major>alpha<minor>`,
    /// with positive numbers written without leading zeros.
    fn from_str(s: &str) -> Result<Self, Error> {
        Self::parse(s).map_err(|why| Error::invalid_argument("version", format!("{s:?}: {why}")))
    }
}
