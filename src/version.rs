//! Kubernetes-style API version names (`v1`, `v1beta3`, `v2alpha1`, ...).

use std::cmp::Ordering;
use std::fmt;

/// How settled an API version is, from least to most.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stability {
    /// `vNalphaM`: may change or go away.
    Alpha,
    /// `vNbetaM`: feature complete, may still change.
    Beta,
    /// `vN`: stable.
    Stable,
}

/// A CSI Proxy wire version such as `v1`, `v1beta2` or `v2alpha1`.
///
/// # Ordering
///
/// Versions are ordered by release: a larger value is a newer version.
/// Within a major version, alphas come before betas and betas before the
/// stable release, so `v1alpha1 < v1alpha2 < v1beta1 < ... < v1beta3 < v1 <
/// v2alpha1`. This is the order in which CSI Proxy added them, and every
/// newer version of a group serves at least what the older ones served.
///
/// It differs from the Kubernetes *preference* order only for previews of a
/// next major version: Kubernetes would rank `v2alpha1` below every `v1*`
/// version because it is an alpha. The SDK keeps that caution in its
/// [`VersionPolicy`](crate::negotiate::VersionPolicy) instead: previews (see
/// [`ApiVersion::is_preview`]) are only negotiated when the caller opts in.
///
/// ```
/// use csi_proxy_client::ApiVersion;
///
/// let v: ApiVersion = "v1beta3".parse()?;
/// assert_eq!(v.to_string(), "v1beta3");
/// assert!(ApiVersion::V1 > v && v > ApiVersion::V1ALPHA1);
/// # Ok::<(), csi_proxy_client::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ApiVersion {
    major: u32,
    stability: Stability,
    /// 0 for stable versions; the `M` of `alphaM`/`betaM` otherwise.
    minor: u32,
}

impl ApiVersion {
    /// `v1alpha1`
    pub const V1ALPHA1: Self = Self::alpha(1, 1);
    /// `v1alpha2`
    pub const V1ALPHA2: Self = Self::alpha(1, 2);
    /// `v1beta1`
    pub const V1BETA1: Self = Self::beta(1, 1);
    /// `v1beta2`
    pub const V1BETA2: Self = Self::beta(1, 2);
    /// `v1beta3`
    pub const V1BETA3: Self = Self::beta(1, 3);
    /// `v1`
    pub const V1: Self = Self::stable(1);
    /// `v2alpha1`
    pub const V2ALPHA1: Self = Self::alpha(2, 1);

    /// The stable version `v<major>`.
    pub const fn stable(major: u32) -> Self {
        Self {
            major,
            stability: Stability::Stable,
            minor: 0,
        }
    }

    /// The beta version `v<major>beta<minor>`.
    pub const fn beta(major: u32, minor: u32) -> Self {
        Self {
            major,
            stability: Stability::Beta,
            minor,
        }
    }

    /// The alpha version `v<major>alpha<minor>`.
    pub const fn alpha(major: u32, minor: u32) -> Self {
        Self {
            major,
            stability: Stability::Alpha,
            minor,
        }
    }

    /// The major version: `1` for `v1beta2`.
    pub const fn major(self) -> u32 {
        self.major
    }

    /// Alpha, beta or stable.
    pub const fn stability(self) -> Stability {
        self.stability
    }

    /// The pre-release number: `2` for `v1beta2`, `0` for stable versions.
    pub const fn minor(self) -> u32 {
        self.minor
    }

    /// Whether this is a pre-release of a major version after `v1`, such as
    /// `v2alpha1`. Such versions are newer than `v1` but not stable, so
    /// negotiation only picks them when the caller opts in.
    pub const fn is_preview(self) -> bool {
        self.major > 1 && !matches!(self.stability, Stability::Stable)
    }

    /// `self < other`, for constant contexts.
    pub(crate) const fn is_older_than(self, other: Self) -> bool {
        let (a, b) = (self.rank(), other.rank());
        a.0 < b.0 || (a.0 == b.0 && (a.1 < b.1 || (a.1 == b.1 && a.2 < b.2)))
    }

    /// What versions are ordered by: major, stability, pre-release number.
    const fn rank(self) -> (u32, u8, u32) {
        (self.major, self.stability as u8, self.minor)
    }
}

impl Ord for ApiVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank().cmp(&other.rank())
    }
}

impl PartialOrd for ApiVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Through `pad`, so that width and alignment flags work in tables.
        let name = match self.stability {
            Stability::Stable => format!("v{}", self.major),
            Stability::Beta => format!("v{}beta{}", self.major, self.minor),
            Stability::Alpha => format!("v{}alpha{}", self.major, self.minor),
        };
        f.pad(&name)
    }
}

impl ApiVersion {
    /// [`FromStr`](std::str::FromStr) for constant contexts (the wire registry's rows): the
    /// version, or why the name is not one.
    pub(crate) const fn parse(s: &str) -> Result<Self, &'static str> {
        let b = s.as_bytes();
        if b.is_empty() || b[0] != b'v' {
            return Err("must start with 'v'");
        }
        let Some((major, mut at)) = parse_number(b, 1) else {
            return Err("bad major number");
        };
        if at == b.len() {
            return Ok(Self::stable(major));
        }
        let stability = if has_at(b, at, b"beta") {
            at += 4;
            Stability::Beta
        } else if has_at(b, at, b"alpha") {
            at += 5;
            Stability::Alpha
        } else {
            return Err("expected 'alpha' or 'beta' after the major number");
        };
        match parse_number(b, at) {
            Some((minor, end)) if end == b.len() => Ok(Self {
                major,
                stability,
                minor,
            }),
            _ => Err("bad pre-release number"),
        }
    }
}

/// Whether `b` has `word` at `at`.
pub(crate) const fn has_at(b: &[u8], at: usize, word: &[u8]) -> bool {
    if at + word.len() > b.len() {
        return false;
    }
    let mut i = 0;
    while i < word.len() {
        if b[at + i] != word[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The positive decimal number, without sign or leading zeros, that starts
/// at `at` in `b`, and where it ends.
const fn parse_number(b: &[u8], at: usize) -> Option<(u32, usize)> {
    if at >= b.len() || b[at] == b'0' {
        return None;
    }
    let (mut n, mut end) = (0u32, at);
    while end < b.len() && b[end].is_ascii_digit() {
        let digit = (b[end] - b'0') as u32;
        n = match n.checked_mul(10) {
            Some(n) => match n.checked_add(digit) {
                Some(n) => n,
                None => return None,
            },
            None => return None,
        };
        end += 1;
    }
    if end == at {
        None
    } else {
        Some((n, end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn parses_and_prints_every_shape() {
        for name in [
            "v1",
            "v2",
            "v1beta1",
            "v1beta3",
            "v1alpha1",
            "v2alpha1",
            "v10beta12",
        ] {
            let v: ApiVersion = name.parse().unwrap();
            assert_eq!(v.to_string(), name);
        }
        assert_eq!(format!("[{:<8}]", ApiVersion::V1), "[v1      ]");
    }

    #[test]
    fn rejects_malformed_names() {
        for bad in [
            "",
            "v",
            "1",
            "V1",
            "v0",
            "v01",
            "v1beta",
            "v1beta0",
            "v1gamma1",
            "v1beta1x",
            "v1 ",
            "v-1",
            "v1alpha01",
            "v99999999999",
        ] {
            let err = bad.parse::<ApiVersion>().unwrap_err();
            assert!(
                matches!(err, Error::InvalidArgument { .. }),
                "{bad:?}: {err}"
            );
        }
    }

    #[test]
    fn orders_by_release() {
        let mut all = [
            ApiVersion::V2ALPHA1,
            ApiVersion::V1,
            ApiVersion::V1ALPHA1,
            ApiVersion::V1BETA3,
            ApiVersion::V1BETA1,
            ApiVersion::V1ALPHA2,
            ApiVersion::V1BETA2,
        ];
        all.sort();
        let names: Vec<_> = all.iter().map(ToString::to_string).collect();
        assert_eq!(
            names,
            ["v1alpha1", "v1alpha2", "v1beta1", "v1beta2", "v1beta3", "v1", "v2alpha1"]
        );
    }

    #[test]
    fn only_next_major_prereleases_are_previews() {
        assert!(ApiVersion::V2ALPHA1.is_preview());
        assert!(!ApiVersion::V1ALPHA1.is_preview());
        assert!(!ApiVersion::V1.is_preview());
        assert!(!ApiVersion::stable(2).is_preview());
    }
}
