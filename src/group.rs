//! The six CSI Proxy API groups. The wire versions each one has are the
//! registry's ([`ApiGroup::versions`], in `registry`), and its name's
//! parse, which fails with an [`Error`](crate::Error), is the error's
//! (`error::parse`): a group's name knows neither.

use std::fmt;

/// A CSI Proxy API group. The proxy serves each version of each group on its
/// own pipe, `\\.\pipe\csi-proxy-<group>-<version>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ApiGroup {
    /// Disks: locations, IDs, partitioning, online state.
    Disk,
    /// Directories and symlinks.
    Filesystem,
    /// SMB global mappings.
    Smb,
    /// Volumes: format, mount, resize, stats.
    Volume,
    /// iSCSI initiator: portals and targets.
    Iscsi,
    /// Host facts and Windows services.
    System,
}

impl ApiGroup {
    /// All six groups.
    pub const ALL: [ApiGroup; 6] = [
        ApiGroup::Disk,
        ApiGroup::Filesystem,
        ApiGroup::Smb,
        ApiGroup::Volume,
        ApiGroup::Iscsi,
        ApiGroup::System,
    ];

    /// The group's name as it appears in pipe names: `disk`, `filesystem`,
    /// `smb`, `volume`, `iscsi` or `system`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ApiGroup::Disk => "disk",
            ApiGroup::Filesystem => "filesystem",
            ApiGroup::Smb => "smb",
            ApiGroup::Volume => "volume",
            ApiGroup::Iscsi => "iscsi",
            ApiGroup::System => "system",
        }
    }

    /// Position in [`ApiGroup::ALL`], for per-group tables.
    pub(crate) const fn index(self) -> usize {
        self as usize
    }

    /// The group named `name` ([`ApiGroup::as_str`]), for constant contexts.
    pub(crate) const fn from_name(name: &str) -> Option<Self> {
        let mut i = 0;
        while i < Self::ALL.len() {
            if bytes_equal(Self::ALL[i].as_str().as_bytes(), name.as_bytes()) {
                return Some(Self::ALL[i]);
            }
            i += 1;
        }
        None
    }

    /// The name of the group's gRPC service in every version's package:
    /// `Disk`, `Filesystem`, `Smb`, `Volume`, `Iscsi` or `System`.
    pub(crate) const fn service_name(self) -> &'static str {
        match self {
            ApiGroup::Disk => "Disk",
            ApiGroup::Filesystem => "Filesystem",
            ApiGroup::Smb => "Smb",
            ApiGroup::Volume => "Volume",
            ApiGroup::Iscsi => "Iscsi",
            ApiGroup::System => "System",
        }
    }
}

/// `a == b`, for constant contexts.
const fn bytes_equal(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && crate::version::has_at(a, 0, b)
}

impl fmt::Display for ApiGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn groups_are_indexed_in_order() {
        for (i, group) in ApiGroup::ALL.into_iter().enumerate() {
            assert_eq!(group.index(), i);
        }
    }

    #[test]
    fn group_names_round_trip() {
        for group in ApiGroup::ALL {
            assert_eq!(group.as_str().parse::<ApiGroup>().unwrap(), group);
        }
        assert!(matches!(
            "Disk".parse::<ApiGroup>(),
            Err(Error::InvalidArgument { .. })
        ));
        assert!("block".parse::<ApiGroup>().is_err());
    }
}
