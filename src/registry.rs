//! The facts of the wire, written once: every group-version CSI Proxy has
//! served, the message layout it speaks, and the first release that served
//! it.
//!
//! What depends on which versions exist derives from these rows:
//! [`ApiGroup::versions`], [`Layout::of`] (and so the client adapters and
//! the fake proxy's servers), the releases the fake proxy can stand in
//! for, metric labels, the longest pipe name, and most of the tests'
//! lists. What needs a type per version (the stub proxy's services, the
//! tests' per-version clients) is generated with the wire code from
//! `proto/` instead. A new wire version is its `.proto`, the generated
//! code (`tests/generated_code.rs`), one row here, and a layout in the
//! group's catalogue only if its messages have a new layout: [`Layout`]
//! (`layout.rs`) is generated from the catalogue's layouts, as both
//! sides' code of each is (CONTRIBUTING.md has the steps).

use crate::group::ApiGroup;
use crate::version::ApiVersion;

mod layout;

pub(crate) use layout::Layout;

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
    pub first_release: (u32, u32, u32),
}

/// Every wire version CSI Proxy has served, one row each, grouped by group
/// in [`ApiGroup::ALL`] order and oldest first inside a group (checked at
/// compile time below): the group, the version, its message layout, and
/// the first CSI Proxy release that served it.
#[rustfmt::skip] // one row a line
pub(crate) const WIRE_VERSIONS: &[WireVersion] = &[
    wire_version(ApiGroup::Disk, "v1alpha1", Layout::StringIdDisk, (0, 1, 0)),
    wire_version(ApiGroup::Disk, "v1beta1", Layout::StringIdDisk, (0, 2, 0)),
    wire_version(ApiGroup::Disk, "v1beta2", Layout::StringIdDisk, (0, 2, 2)),
    wire_version(ApiGroup::Disk, "v1beta3", Layout::NumberedDisk, (1, 0, 0)),
    wire_version(ApiGroup::Disk, "v1", Layout::NumberedDisk, (1, 0, 0)),
    wire_version(ApiGroup::Filesystem, "v1alpha1", Layout::ContextFilesystem, (0, 1, 0)),
    wire_version(ApiGroup::Filesystem, "v1beta1", Layout::ContextFilesystem, (0, 2, 1)),
    wire_version(ApiGroup::Filesystem, "v1beta2", Layout::PlainFilesystem, (1, 0, 0)),
    wire_version(ApiGroup::Filesystem, "v1", Layout::PlainFilesystem, (1, 0, 0)),
    wire_version(ApiGroup::Filesystem, "v2alpha1", Layout::PlainFilesystem, (1, 1, 0)),
    wire_version(ApiGroup::Smb, "v1alpha1", Layout::ErrorFieldSmb, (0, 1, 0)),
    wire_version(ApiGroup::Smb, "v1beta1", Layout::ErrorFieldSmb, (0, 2, 1)),
    wire_version(ApiGroup::Smb, "v1beta2", Layout::PlainSmb, (1, 0, 0)),
    wire_version(ApiGroup::Smb, "v1", Layout::PlainSmb, (1, 0, 0)),
    wire_version(ApiGroup::Volume, "v1alpha1", Layout::StringIdVolume, (0, 1, 0)),
    wire_version(ApiGroup::Volume, "v1beta1", Layout::StringIdVolume, (0, 2, 0)),
    wire_version(ApiGroup::Volume, "v1beta2", Layout::StringIdVolume, (0, 2, 2)),
    wire_version(ApiGroup::Volume, "v1beta3", Layout::NumberedVolume, (1, 0, 0)),
    wire_version(ApiGroup::Volume, "v1", Layout::NumberedVolume, (1, 0, 0)),
    wire_version(ApiGroup::Volume, "v2alpha1", Layout::NumberedVolume, (1, 1, 0)),
    wire_version(ApiGroup::Iscsi, "v1alpha1", Layout::AlphaIscsi, (0, 2, 2)),
    wire_version(ApiGroup::Iscsi, "v1alpha2", Layout::AlphaIscsi, (1, 0, 0)),
    wire_version(ApiGroup::System, "v1alpha1", Layout::AlphaSystem, (0, 2, 2)),
];

/// One row of [`WIRE_VERSIONS`], its version checked at compile time.
const fn wire_version(
    group: ApiGroup,
    version: &'static str,
    layout: Layout,
    first_release: (u32, u32, u32),
) -> WireVersion {
    WireVersion {
        group,
        version: match ApiVersion::parse(version) {
            Ok(version) => version,
            Err(why) => panic!("{}", why),
        },
        #[cfg(feature = "metrics")]
        version_name: version,
        layout,
        first_release,
    }
}

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

// What the rows say of a group: here rather than in `group`, so that a
// group's name need not know the registry.
impl ApiGroup {
    /// Every wire version of this group, oldest first.
    pub fn versions(self) -> &'static [ApiVersion] {
        versions_of(self)
    }

    /// Whether CSI Proxy has ever served `version` of this group.
    pub fn has_version(self, version: ApiVersion) -> bool {
        self.versions().contains(&version)
    }

    /// The newest version of this group that CSI Proxy `release` (major,
    /// minor, patch) serves, previews (`v2alpha1`) left out as negotiation
    /// leaves them out by default; `None` when that release has no version
    /// of the group. Every later release serves it too: CSI Proxy has never
    /// stopped serving a version.
    ///
    /// ```
    /// use csi_proxy_client::{ApiGroup, ApiVersion};
    ///
    /// assert_eq!(ApiGroup::Disk.newest_served_by((0, 2, 2)), Some(ApiVersion::V1BETA2));
    /// assert_eq!(ApiGroup::Filesystem.newest_served_by((1, 3, 0)), Some(ApiVersion::V1));
    /// assert_eq!(ApiGroup::Iscsi.newest_served_by((0, 2, 1)), None);
    /// ```
    pub fn newest_served_by(self, release: (u32, u32, u32)) -> Option<ApiVersion> {
        WIRE_VERSIONS
            .iter()
            .filter(|row| row.group == self && row.first_release <= release)
            .map(|row| row.version)
            .rfind(|version| !version.is_preview())
    }
}

/// Every wire version of `group`, oldest first.
fn versions_of(group: ApiGroup) -> &'static [ApiVersion] {
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
                Layout::StringIdDisk,
                Layout::StringIdDisk,
                Layout::StringIdDisk,
                Layout::NumberedDisk,
                Layout::NumberedDisk
            ]
        );
        assert_eq!(
            Layout::of(ApiGroup::Filesystem, V::V1BETA1),
            Layout::ContextFilesystem
        );
        assert_eq!(
            Layout::of(ApiGroup::Filesystem, V::V1BETA2),
            Layout::PlainFilesystem
        );
        assert_eq!(Layout::of(ApiGroup::Smb, V::V1BETA2), Layout::PlainSmb);
        assert_eq!(
            Layout::of(ApiGroup::Volume, V::V2ALPHA1),
            Layout::NumberedVolume
        );
    }
}
