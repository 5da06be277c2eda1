//! The six CSI Proxy API groups and the wire versions each one has.

use std::fmt;
use std::str::FromStr;

use crate::error::Error;
use crate::version::ApiVersion;

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

use ApiVersion as V;

/// Every wire version CSI Proxy has, per group, oldest first. This table is
/// the one place that says which versions exist; the generated wire modules
/// are checked against it by the crate's tests.
const VERSIONS: [(ApiGroup, &[ApiVersion]); 6] = [
    (
        ApiGroup::Disk,
        &[V::V1ALPHA1, V::V1BETA1, V::V1BETA2, V::V1BETA3, V::V1],
    ),
    (
        ApiGroup::Filesystem,
        &[V::V1ALPHA1, V::V1BETA1, V::V1BETA2, V::V1, V::V2ALPHA1],
    ),
    (ApiGroup::Smb, &[V::V1ALPHA1, V::V1BETA1, V::V1BETA2, V::V1]),
    (
        ApiGroup::Volume,
        &[
            V::V1ALPHA1,
            V::V1BETA1,
            V::V1BETA2,
            V::V1BETA3,
            V::V1,
            V::V2ALPHA1,
        ],
    ),
    (ApiGroup::Iscsi, &[V::V1ALPHA1, V::V1ALPHA2]),
    (ApiGroup::System, &[V::V1ALPHA1]),
];

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

    /// Every wire version of this group, oldest first.
    pub fn versions(self) -> &'static [ApiVersion] {
        VERSIONS[self.index()].1
    }

    /// Whether CSI Proxy has ever served `version` of this group.
    pub fn has_version(self, version: ApiVersion) -> bool {
        self.versions().contains(&version)
    }

    /// Position in [`ApiGroup::ALL`], for per-group tables.
    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for ApiGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for ApiGroup {
    type Err = Error;

    /// Parses a group name as [`ApiGroup::as_str`] prints it.
    fn from_str(s: &str) -> Result<Self, Error> {
        ApiGroup::ALL
            .into_iter()
            .find(|g| g.as_str() == s)
            .ok_or_else(|| {
                Error::invalid_argument(
                    "group",
                    format!("{s:?} is not one of disk, filesystem, smb, volume, iscsi, system"),
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_indexed_by_group() {
        for (i, group) in ApiGroup::ALL.into_iter().enumerate() {
            assert_eq!(VERSIONS[i].0, group);
            assert_eq!(group.index(), i);
        }
    }

    #[test]
    fn there_are_23_wire_versions_oldest_first() {
        let total: usize = ApiGroup::ALL.iter().map(|g| g.versions().len()).sum();
        assert_eq!(total, 23);
        for group in ApiGroup::ALL {
            assert!(group.versions().windows(2).all(|w| w[0] < w[1]), "{group}");
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
