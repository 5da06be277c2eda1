//! The facts of the wire, written once: every group-version CSI Proxy has
//! served, the message layout it speaks, and the first release that served
//! it.
//!
//! What depends on which versions exist derives from these rows:
//! [`ApiGroup::versions`], [`Layout::of`] (and so the client adapters and
//! the fake proxy's server adapters), the releases the fake proxy can
//! stand in for, the stub proxy's services, metric labels, the longest pipe
//! name, and the tests' lists and counts. A new wire version is its
//! `.proto`, the generated code (`tests/generated_code.rs`), one row here,
//! and an adapter only if its messages have a new layout.

use crate::group::ApiGroup;
use crate::version::ApiVersion;

/// Calls `$callback!` with one row per wire version, grouped by group in
/// [`ApiGroup::ALL`] order and oldest first inside a group:
/// `group version Layout (major, minor, patch);`, the last being the first
/// CSI Proxy release that served it.
///
/// It is a macro so that code which needs a type per version (the
/// generated servers and clients of `wire::<group>::<version>`) derives
/// from the same rows as the tables. Not part of the public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __csi_proxy_wire_versions {
    ($callback:ident) => {
        $callback! {
            disk v1alpha1 DiskStringId (0, 1, 0);
            disk v1beta1 DiskStringId (0, 2, 0);
            disk v1beta2 DiskStringId (0, 2, 2);
            disk v1beta3 DiskNumbered (1, 0, 0);
            disk v1 DiskNumbered (1, 0, 0);
            filesystem v1alpha1 FilesystemContext (0, 1, 0);
            filesystem v1beta1 FilesystemContext (0, 2, 1);
            filesystem v1beta2 FilesystemPlain (1, 0, 0);
            filesystem v1 FilesystemPlain (1, 0, 0);
            filesystem v2alpha1 FilesystemPlain (1, 1, 0);
            smb v1alpha1 SmbErrorField (0, 1, 0);
            smb v1beta1 SmbErrorField (0, 2, 1);
            smb v1beta2 SmbPlain (1, 0, 0);
            smb v1 SmbPlain (1, 0, 0);
            volume v1alpha1 VolumeStringId (0, 1, 0);
            volume v1beta1 VolumeStringId (0, 2, 0);
            volume v1beta2 VolumeStringId (0, 2, 2);
            volume v1beta3 VolumeNumbered (1, 0, 0);
            volume v1 VolumeNumbered (1, 0, 0);
            volume v2alpha1 VolumeNumbered (1, 1, 0);
            iscsi v1alpha1 Iscsi (0, 2, 2);
            iscsi v1alpha2 Iscsi (1, 0, 0);
            system v1alpha1 System (0, 2, 2);
        }
    };
}

/// The message layouts: versions of a group whose messages are identical on
/// the wire share one. Client adapters and the fake proxy's server adapters
/// are both chosen by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Disk numbers as decimal strings, identifiers as a map.
    DiskStringId,
    /// `uint32` disk numbers, typed identifiers.
    DiskNumbered,
    /// Requests with a `PathContext`, responses with an `error` field.
    FilesystemContext,
    /// Neither.
    FilesystemPlain,
    /// Responses with an `error` field.
    SmbErrorField,
    /// Without it.
    SmbPlain,
    /// Disk numbers as decimal strings, old field names.
    VolumeStringId,
    /// `uint32` disk numbers and a partition filter.
    VolumeNumbered,
    /// The one iSCSI layout.
    Iscsi,
    /// The one system layout.
    System,
}

/// The newest CSI Proxy release (major, minor) whose served versions this
/// crate knows: v1.2 and v1.3 added none.
#[cfg(feature = "testing")]
pub(crate) const LATEST_KNOWN_RELEASE: (u32, u32) = (1, 3);

/// One row of the registry.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WireVersion {
    pub group: ApiGroup,
    pub version: ApiVersion,
    /// `version` as written, for labels that must not allocate.
    #[cfg(feature = "metrics")]
    pub version_name: &'static str,
    pub layout: Layout,
    /// The first CSI Proxy release (major, minor, patch) that served it.
    #[cfg(feature = "testing")]
    pub first_release: (u32, u32, u32),
}

macro_rules! table {
    ($($group:ident $version:ident $layout:ident ($a:literal, $b:literal, $c:literal);)+) => {
        /// Every wire version, in the macro's order.
        pub(crate) const WIRE_VERSIONS: &[WireVersion] = &[$(
            WireVersion {
                group: match ApiGroup::from_name(stringify!($group)) {
                    Some(group) => group,
                    None => panic!(concat!("no group ", stringify!($group))),
                },
                version: match ApiVersion::parse(stringify!($version)) {
                    Ok(version) => version,
                    Err(why) => panic!("{}", why),
                },
                #[cfg(feature = "metrics")]
                version_name: stringify!($version),
                layout: Layout::$layout,
                #[cfg(feature = "testing")]
                first_release: ($a, $b, $c),
            },
        )+];
    };
}
__csi_proxy_wire_versions!(table);

/// The rows' versions in one array, each group's a contiguous run; checked
/// at compile time to be grouped in [`ApiGroup::ALL`] order and oldest
/// first, which `versions_of` relies on.
static VERSIONS: [ApiVersion; WIRE_VERSIONS.len()] = {
    let mut versions = [ApiVersion::V1; WIRE_VERSIONS.len()];
    let mut i = 0;
    while i < WIRE_VERSIONS.len() {
        let row = WIRE_VERSIONS[i];
        if i > 0 {
            let before = WIRE_VERSIONS[i - 1];
            let (g0, g1) = (before.group.index(), row.group.index());
            assert!(
                g0 < g1 || (g0 == g1 && before.version.is_older_than(row.version)),
                "the registry's rows must be grouped and oldest first"
            );
        }
        versions[i] = row.version;
        i += 1;
    }
    versions
};

/// Where each group's run starts and ends in [`VERSIONS`].
const RUNS: [(usize, usize); ApiGroup::ALL.len()] = {
    let mut runs = [(0, 0); ApiGroup::ALL.len()];
    let mut i = 0;
    while i < WIRE_VERSIONS.len() {
        let g = WIRE_VERSIONS[i].group.index();
        if runs[g].1 == 0 {
            runs[g].0 = i;
        }
        runs[g].1 = i + 1;
        i += 1;
    }
    runs
};

/// Every wire version of `group`, oldest first.
pub(crate) fn versions_of(group: ApiGroup) -> &'static [ApiVersion] {
    let (start, end) = RUNS[group.index()];
    &VERSIONS[start..end]
}

/// The name of a version some group has, as a `'static` string.
#[cfg(feature = "metrics")]
pub(crate) fn version_name(version: ApiVersion) -> Option<&'static str> {
    WIRE_VERSIONS
        .iter()
        .find(|row| row.version == version)
        .map(|row| row.version_name)
}

/// The row of `group` `version`, if CSI Proxy ever served it.
pub(crate) fn row(group: ApiGroup, version: ApiVersion) -> Option<&'static WireVersion> {
    WIRE_VERSIONS
        .iter()
        .find(|row| row.group == group && row.version == version)
}

impl Layout {
    /// The layout of `group` `version`.
    ///
    /// # Panics
    ///
    /// If CSI Proxy never served that version; callers have checked it
    /// against [`ApiGroup::versions`].
    pub fn of(group: ApiGroup, version: ApiVersion) -> Self {
        match row(group, version) {
            Some(row) => row.layout,
            None => panic!("CSI Proxy has no {group} {version}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_group_has_versions_oldest_first() {
        for group in ApiGroup::ALL {
            let versions = group.versions();
            assert!(!versions.is_empty(), "{group}");
            assert!(versions.windows(2).all(|w| w[0] < w[1]), "{group}");
            for &version in versions {
                assert_eq!(row(group, version).unwrap().group, group);
            }
        }
        let total: usize = ApiGroup::ALL.iter().map(|g| g.versions().len()).sum();
        assert_eq!(total, WIRE_VERSIONS.len());
    }

    #[test]
    fn layouts_split_where_the_messages_change() {
        use ApiVersion as V;
        let disk: Vec<_> = ApiGroup::Disk
            .versions()
            .iter()
            .map(|&v| Layout::of(ApiGroup::Disk, v))
            .collect();
        assert_eq!(
            disk,
            [
                Layout::DiskStringId,
                Layout::DiskStringId,
                Layout::DiskStringId,
                Layout::DiskNumbered,
                Layout::DiskNumbered
            ]
        );
        assert_eq!(
            Layout::of(ApiGroup::Filesystem, V::V1BETA1),
            Layout::FilesystemContext
        );
        assert_eq!(
            Layout::of(ApiGroup::Filesystem, V::V1BETA2),
            Layout::FilesystemPlain
        );
        assert_eq!(Layout::of(ApiGroup::Smb, V::V1BETA2), Layout::SmbPlain);
        assert_eq!(
            Layout::of(ApiGroup::Volume, V::V2ALPHA1),
            Layout::VolumeNumbered
        );
    }
}
