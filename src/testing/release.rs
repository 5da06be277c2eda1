//! Which group-versions each CSI Proxy release serves, so that a fake
//! proxy can stand in for a node on a given release.

use std::fmt;
use std::str::FromStr;

use crate::error::Error;
use crate::group::ApiGroup;
use crate::registry::{LATEST_KNOWN_RELEASE as LATEST_KNOWN, WIRE_VERSIONS};
use crate::version::ApiVersion;

/// A CSI Proxy release (`v0.2.2`, `v1.1.3`, ...), for
/// [`FakeProxy::serve_release`](super::FakeProxy::serve_release) and
/// [`FakeHost::behave_as`](super::FakeHost::behave_as).
///
/// A release serves every group-version that existed when it was made: no
/// version was ever removed from the server. Some behaviours changed within
/// a version, between releases; the fake host and proxy follow them (see
/// `docs/fake-host.md`).
///
/// ```
/// use csi_proxy_client::testing::ProxyRelease;
/// use csi_proxy_client::{ApiGroup, ApiVersion};
///
/// let served = ProxyRelease::V0_2_2.served();
/// assert!(served.contains(&(ApiGroup::Disk, ApiVersion::V1BETA2)));
/// assert!(!served.contains(&(ApiGroup::Disk, ApiVersion::V1)));
/// assert_eq!(ProxyRelease::new(1, 1, 0)?.served().len(), 23);
/// assert_eq!(ProxyRelease::LATEST, ProxyRelease::V1_3_0);
/// // A release that never was is refused, as its text is.
/// assert!(ProxyRelease::new(0, 0, 1).is_err());
/// # Ok::<(), csi_proxy_client::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProxyRelease {
    major: u32,
    minor: u32,
    patch: u32,
}

impl ProxyRelease {
    /// v0.1.0: the first release, alpha versions of four groups.
    pub const V0_1_0: Self = Self::at(0, 1, 0);
    /// v0.2.2: the last v0 release, still found on older nodes.
    pub const V0_2_2: Self = Self::at(0, 2, 2);
    /// v1.0.0: the stable `v1` versions.
    pub const V1_0_0: Self = Self::at(1, 0, 0);
    /// v1.1.0: the `v2alpha1` previews of filesystem and volume.
    pub const V1_1_0: Self = Self::at(1, 1, 0);
    /// v1.1.1: the last release whose `NewSmbGlobalMapping` maps the remote
    /// path itself rather than its share's root.
    pub const V1_1_1: Self = Self::at(1, 1, 1);
    /// v1.1.2: SMB global mappings of the share's root (`\\server\share`).
    pub const V1_1_2: Self = Self::at(1, 1, 2);
    /// v1.2.0: `ResizeVolume` skips growth of less than 100 MiB.
    pub const V1_2_0: Self = Self::at(1, 2, 0);
    /// v1.3.0: the newest release this crate knows; `MountVolume` accepts
    /// the same volume mounted at the same folder again.
    pub const V1_3_0: Self = Self::at(1, 3, 0);
    /// The newest release this crate knows (today [`V1_3_0`](Self::V1_3_0)):
    /// it serves every group-version.
    pub const LATEST: Self = Self::at(LATEST_KNOWN.0, LATEST_KNOWN.1, 0);

    /// The release `v<major>.<minor>.<patch>`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a release before v0.1.0 or after the
    /// newest this crate knows ([`LATEST`](Self::LATEST)): which versions it
    /// serves is not known, so it is refused rather than guessed, as its
    /// text is by [`str::parse`].
    pub fn new(major: u32, minor: u32, patch: u32) -> Result<Self, Error> {
        let release = Self::at(major, minor, patch);
        if release < Self::V0_1_0 || (major, minor) > LATEST_KNOWN {
            return Err(Error::invalid_argument(
                "CSI Proxy release",
                format!(
                    "{release} is not a CSI Proxy release this crate knows (v0.1.0 to v{}.{}.x)",
                    LATEST_KNOWN.0, LATEST_KNOWN.1
                ),
            ));
        }
        Ok(release)
    }

    /// A release known to be in range (the constants, and the registry's
    /// rows).
    const fn at(major: u32, minor: u32, patch: u32) -> Self {
        Self {
            major,
            minor,
            patch,
        }
    }

    /// The group-versions this release serves, oldest first per group.
    pub fn served(self) -> Vec<(ApiGroup, ApiVersion)> {
        WIRE_VERSIONS
            .iter()
            .filter(|row| {
                let (major, minor, patch) = row.first_release;
                Self::at(major, minor, patch) <= self
            })
            .map(|row| (row.group, row.version))
            .collect()
    }
}

impl fmt::Display for ProxyRelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// Parses `v1.1.3` or `1.1.3`; a missing patch number is 0 (`v1.1`).
impl FromStr for ProxyRelease {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        let invalid = || {
            Error::invalid_argument(
                "CSI Proxy release",
                format!("{text:?} is not a release such as v1.1.3"),
            )
        };
        let numbers = text.strip_prefix('v').unwrap_or(text);
        let mut parts = numbers.split('.').map(|n| {
            // Digits only: `parse` would also take a sign.
            match n.bytes().all(|b| b.is_ascii_digit()) {
                true => n.parse::<u32>().map_err(|_| invalid()),
                false => Err(invalid()),
            }
        });
        let major = parts.next().ok_or_else(invalid)??;
        let minor = parts.next().ok_or_else(invalid)??;
        let patch = parts.next().transpose()?.unwrap_or(0);
        if parts.next().is_some() {
            return Err(invalid());
        }
        Self::new(major, minor, patch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_serve_what_existed_when_they_were_made() {
        assert_eq!(ProxyRelease::V0_1_0.served().len(), 4);
        let v0_2_2 = ProxyRelease::V0_2_2.served();
        assert_eq!(v0_2_2.len(), 12);
        assert!(v0_2_2.contains(&(ApiGroup::System, ApiVersion::V1ALPHA1)));
        assert!(!v0_2_2.contains(&(ApiGroup::Filesystem, ApiVersion::V1BETA2)));
        assert_eq!(ProxyRelease::V1_0_0.served().len(), 21);
        assert_eq!(ProxyRelease::LATEST.served().len(), WIRE_VERSIONS.len());
        assert_eq!(ProxyRelease::new(1, 1, 3).unwrap().to_string(), "v1.1.3");
    }

    #[test]
    fn releases_parse_with_or_without_v_and_patch() {
        assert_eq!(
            "v0.2.2".parse::<ProxyRelease>().unwrap(),
            ProxyRelease::V0_2_2
        );
        assert_eq!("1.1".parse::<ProxyRelease>().unwrap(), ProxyRelease::V1_1_0);
        for bad in [
            "", "v", "v1", "1.x", "v1.1.1.1", "v1.-1", "v1.+1", "1..2", "v9.9.9", "v0.0.1", "v1.4",
        ] {
            let error = bad.parse::<ProxyRelease>().unwrap_err();
            assert!(
                matches!(error, Error::InvalidArgument { .. }),
                "{bad:?}: {error}"
            );
        }
    }

    #[test]
    fn new_refuses_what_parsing_refuses() {
        for (major, minor, patch) in [(0, 0, 1), (1, 4, 0), (9, 9, 9)] {
            let error = ProxyRelease::new(major, minor, patch).unwrap_err();
            assert!(
                error.to_string().contains("not a CSI Proxy release"),
                "{error}"
            );
            assert!(format!("v{major}.{minor}.{patch}")
                .parse::<ProxyRelease>()
                .is_err());
        }
        assert_eq!(
            ProxyRelease::new(1, 3, 1).unwrap(),
            "v1.3.1".parse().unwrap()
        );
        assert_eq!(ProxyRelease::new(0, 1, 0).unwrap(), ProxyRelease::V0_1_0);
    }
}
