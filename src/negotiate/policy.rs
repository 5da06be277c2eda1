//! Which versions of each group negotiation may pick, and in what order.

use crate::error::{Error, Result};
use crate::group::ApiGroup;
use crate::version::ApiVersion;

/// Rules for choosing a wire version per group.
///
/// By default every group tries its versions newest first, stable before
/// beta before alpha, and skips previews of the next major version
/// (`v2alpha1`): `v1 > v1beta3 > v1beta2 > v1beta1 > v1alpha2 > v1alpha1`.
///
/// ```
/// use csi_proxy_client::{negotiate::VersionPolicy, ApiGroup, ApiVersion};
///
/// let policy = VersionPolicy::default()
///     .allow_preview(true)                               // v2alpha1 first where it exists
///     .minimum(ApiGroup::Disk, ApiVersion::V1BETA1)      // never older than v1beta1
///     .pin(ApiGroup::Smb, ApiVersion::V1);               // exactly v1
/// assert_eq!(
///     policy.candidates(ApiGroup::Filesystem)?,
///     [ApiVersion::V2ALPHA1, ApiVersion::V1, ApiVersion::V1BETA2,
///      ApiVersion::V1BETA1, ApiVersion::V1ALPHA1]
/// );
/// assert_eq!(policy.candidates(ApiGroup::Smb)?, [ApiVersion::V1]);
/// # Ok::<(), csi_proxy_client::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionPolicy {
    allow_preview: bool,
    rules: [GroupRule; 6],
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct GroupRule {
    pinned: Option<ApiVersion>,
    minimum: Option<ApiVersion>,
    allowed: Option<Vec<ApiVersion>>,
}

impl VersionPolicy {
    /// Also negotiate previews of the next major version (`v2alpha1` of
    /// filesystem and volume), ahead of `v1`. Off by default: previews are
    /// alpha APIs.
    pub fn allow_preview(mut self, allow: bool) -> Self {
        self.allow_preview = allow;
        self
    }

    /// Use exactly `version` for `group`, or fail with
    /// [`Error::NotServed`] if the node does not serve it. Pinning a preview
    /// opts in to it.
    pub fn pin(mut self, group: ApiGroup, version: ApiVersion) -> Self {
        self.rules[group.index()].pinned = Some(version);
        self
    }

    /// Never pick a version of `group` older than `version`, which must be
    /// one the group has.
    pub fn minimum(mut self, group: ApiGroup, version: ApiVersion) -> Self {
        self.rules[group.index()].minimum = Some(version);
        self
    }

    /// Only pick `group` versions from `versions` (still newest first).
    pub fn allow_only(
        mut self,
        group: ApiGroup,
        versions: impl IntoIterator<Item = ApiVersion>,
    ) -> Self {
        self.rules[group.index()].allowed = Some(versions.into_iter().collect());
        self
    }

    /// The versions of `group` to try, in order. Fails with
    /// [`Error::InvalidArgument`] when a rule names a version the group never
    /// had, or when the rules leave nothing to try.
    pub fn candidates(&self, group: ApiGroup) -> Result<Vec<ApiVersion>> {
        let rule = &self.rules[group.index()];
        let invalid =
            |why: String| Error::invalid_argument("version policy", format!("{group}: {why}"));
        let known = |v: ApiVersion| {
            if group.has_version(v) {
                Ok(())
            } else {
                Err(invalid(format!("CSI Proxy has no {group} {v}")))
            }
        };
        for v in rule.pinned.into_iter().chain(rule.minimum) {
            known(v)?;
        }
        for &v in rule.allowed.iter().flatten() {
            known(v)?;
        }

        let candidates: Vec<ApiVersion> = group
            .versions()
            .iter()
            .rev()
            .copied()
            .filter(|v| match rule.pinned {
                Some(pinned) => *v == pinned,
                None => self.allow_preview || !v.is_preview(),
            })
            .filter(|v| rule.minimum.is_none_or(|min| *v >= min))
            .filter(|v| rule.allowed.as_ref().is_none_or(|a| a.contains(v)))
            .collect();
        if candidates.is_empty() {
            return Err(invalid("the policy leaves no version to try".into()));
        }
        Ok(candidates)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ApiVersion as V;

    #[test]
    fn default_order_is_stable_first_without_previews() {
        let p = VersionPolicy::default();
        assert_eq!(
            p.candidates(ApiGroup::Volume).unwrap(),
            [V::V1, V::V1BETA3, V::V1BETA2, V::V1BETA1, V::V1ALPHA1]
        );
        assert_eq!(
            p.candidates(ApiGroup::Iscsi).unwrap(),
            [V::V1ALPHA2, V::V1ALPHA1]
        );
        assert_eq!(p.candidates(ApiGroup::System).unwrap(), [V::V1ALPHA1]);
    }

    #[test]
    fn rules_narrow_the_order() {
        let p = VersionPolicy::default()
            .minimum(ApiGroup::Disk, V::V1BETA2)
            .allow_only(ApiGroup::Volume, [V::V1ALPHA1, V::V1BETA1])
            .pin(ApiGroup::Filesystem, V::V2ALPHA1);
        assert_eq!(
            p.candidates(ApiGroup::Disk).unwrap(),
            [V::V1, V::V1BETA3, V::V1BETA2]
        );
        assert_eq!(
            p.candidates(ApiGroup::Volume).unwrap(),
            [V::V1BETA1, V::V1ALPHA1]
        );
        assert_eq!(p.candidates(ApiGroup::Filesystem).unwrap(), [V::V2ALPHA1]);
    }

    #[test]
    fn impossible_rules_are_invalid_arguments() {
        let cases = [
            VersionPolicy::default().pin(ApiGroup::Disk, V::V2ALPHA1),
            VersionPolicy::default().pin(ApiGroup::System, V::V1),
            VersionPolicy::default().allow_only(ApiGroup::Iscsi, [V::V1]),
            VersionPolicy::default().minimum(ApiGroup::Iscsi, V::V1BETA1),
            // Disk never had v1alpha2, though newer versions would be left.
            VersionPolicy::default().minimum(ApiGroup::Disk, V::V1ALPHA2),
            VersionPolicy::default().allow_only(ApiGroup::Smb, []),
            VersionPolicy::default()
                .pin(ApiGroup::Disk, V::V1ALPHA1)
                .minimum(ApiGroup::Disk, V::V1),
        ];
        for policy in cases {
            let err = ApiGroup::ALL
                .iter()
                .find_map(|&g| policy.candidates(g).err())
                .expect("some group must be rejected");
            assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
        }
    }
}
