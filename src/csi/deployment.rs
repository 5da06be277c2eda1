//! What a node plugin's pod needs from the node: the one rule for which
//! CSI Proxy pipes to mount ([`proxy_pipes`]).

use crate::transport::{endpoint_name, LOCAL_PIPE_PREFIX};
use crate::{ApiGroup, Error, Result};

use super::driver::VolumeKind;

/// The CSI Proxy pipes to mount into the container of a plugin that serves
/// `kinds`, on a fleet whose oldest CSI Proxy release is `oldest_release`
/// (major, minor, patch): for each group the kinds need, in
/// [`ApiGroup::ALL`] order, the pipe of the newest version that release
/// serves ([`ApiGroup::newest_served_by`]).
///
/// One pipe per group is enough and is what works: every later release
/// serves that version too, so the SDK finds it on every node; a pipe that
/// a node's proxy does not serve stops the pod's start (the container
/// runtime opens each mounted pipe when it makes the container), so no
/// newer version may be mounted; and an older one would never be chosen.
/// A fleet that upgrades its oldest proxy moves to the newer pipes with
/// the next rollout of the DaemonSet.
///
/// ```
/// use csi_proxy_client::csi::{proxy_pipes, VolumeKind};
///
/// let pipes = proxy_pipes(&[VolumeKind::Disk, VolumeKind::Smb], (1, 0, 0))?;
/// assert_eq!(pipes, [
///     r"\\.\pipe\csi-proxy-disk-v1",
///     r"\\.\pipe\csi-proxy-filesystem-v1",
///     r"\\.\pipe\csi-proxy-smb-v1",
///     r"\\.\pipe\csi-proxy-volume-v1",
/// ]);
/// // CSI Proxy v0.2.2: its newest versions.
/// let pipes = proxy_pipes(&[VolumeKind::Disk], (0, 2, 2))?;
/// assert_eq!(pipes, [
///     r"\\.\pipe\csi-proxy-disk-v1beta2",
///     r"\\.\pipe\csi-proxy-filesystem-v1beta1",
///     r"\\.\pipe\csi-proxy-volume-v1beta2",
/// ]);
/// # Ok::<(), csi_proxy_client::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::Configuration`] when `kinds` is empty, or when that release
/// serves no version of a group the kinds need (iSCSI before v0.2.2): such
/// a fleet cannot serve those volumes.
pub fn proxy_pipes(kinds: &[VolumeKind], oldest_release: (u32, u32, u32)) -> Result<Vec<String>> {
    let setting = || "the kinds and the fleet's oldest CSI Proxy release".to_owned();
    if kinds.is_empty() {
        return Err(Error::Configuration {
            setting: setting(),
            reason: "no kinds of volumes: a plugin serves at least one".into(),
        });
    }
    let (major, minor, patch) = oldest_release;
    ApiGroup::ALL
        .into_iter()
        .filter(|group| kinds.iter().any(|kind| kind.groups().contains(group)))
        .map(|group| match group.newest_served_by(oldest_release) {
            Some(version) => Ok(format!(
                "{LOCAL_PIPE_PREFIX}{}",
                endpoint_name(group, version)
            )),
            None => Err(Error::Configuration {
                setting: setting(),
                reason: format!(
                    "CSI Proxy v{major}.{minor}.{patch} serves no version of the {group} group"
                ),
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_the_release_lacks_is_an_error_that_names_it() {
        let error = proxy_pipes(&[VolumeKind::Iscsi], (0, 2, 1)).unwrap_err();
        assert!(error.to_string().contains("iscsi"), "{error}");
        assert!(proxy_pipes(&[], (1, 0, 0)).is_err());
        // Only the previews are newer than v1: never mounted.
        let pipes = proxy_pipes(&[VolumeKind::Iscsi], (1, 3, 0)).unwrap();
        assert!(pipes.iter().all(|pipe| !pipe.contains("v2alpha1")));
        assert!(pipes.contains(&r"\\.\pipe\csi-proxy-iscsi-v1alpha2".to_owned()));
    }
}
