//! Small value types shared by the group APIs.

use std::fmt;

use crate::error::{Error, Result};

/// A secret (SMB password, CHAP secret): never shown by `Debug`, never
/// logged, never part of an error message. Read it with
/// [`Secret::expose`] where it must go on the wire.
///
/// ```
/// use csi_proxy_client::api::Secret;
///
/// let s = Secret::new("hunter2");
/// assert_eq!(format!("{s:?}"), "Secret(***)");
/// assert_eq!(s.expose(), "hunter2");
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(secret: impl Into<String>) -> Self {
        Self(secret.into())
    }

    /// The secret itself.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl From<&str> for Secret {
    fn from(s: &str) -> Self {
        Self::new(s)
    }
}

impl From<String> for Secret {
    fn from(s: String) -> Self {
        Self(s)
    }
}

/// A volume ID as CSI Proxy reports it, such as
/// `\\?\Volume{0b4c4b5e-1d4e-4f0e-9a4e-6d2f1c3b5a7e}\`: take it from
/// [`VolumeApi::list_volumes_on_disk`](crate::api::VolumeApi::list_volumes_on_disk)
/// or [`VolumeApi::get_volume_id_from_target_path`](crate::api::VolumeApi::get_volume_id_from_target_path)
/// and pass it back unchanged.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VolumeId(String);

impl VolumeId {
    /// Checks that `id` is not empty and holds no NUL or line break.
    pub fn new(id: impl Into<String>) -> Result<Self> {
        let id = id.into();
        if id.trim().is_empty() {
            return Err(Error::invalid_argument("volume ID", "is empty"));
        }
        if id.contains(['\0', '\n', '\r']) {
            return Err(Error::invalid_argument(
                "volume ID",
                format!("{} contains a control character", super::quoted(&id)),
            ));
        }
        Ok(Self(id))
    }

    /// The ID.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for VolumeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for VolumeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.0)
    }
}

impl std::str::FromStr for VolumeId {
    type Err = Error;

    fn from_str(id: &str) -> Result<Self> {
        Self::new(id)
    }
}

/// Checks a name that goes on the wire as is (service names, IQNs, SMB
/// user names): not blank, no control characters.
pub(crate) fn check_name(what: &'static str, name: &str) -> Result<()> {
    if name.trim().is_empty() {
        return Err(Error::invalid_argument(what, "is empty"));
    }
    if name.chars().any(char::is_control) {
        return Err(Error::invalid_argument(
            what,
            format!("{} contains a control character", super::quoted(name)),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volume_ids_must_be_plain_text() {
        assert!(VolumeId::new(r"\\?\Volume{1}\").is_ok());
        for bad in ["", "  ", "a\0b", "a\nb"] {
            assert!(VolumeId::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn secrets_do_not_show() {
        let s = Secret::new("p@ss");
        assert!(!format!("{s:?}").contains("p@ss"));
        assert!(!format!("{:?}", Some(s)).contains("p@ss"));
    }
}
