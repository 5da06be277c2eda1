//! A staged volume's size: `expand` and `stats`.

use std::time::Duration;

use super::{DiskSelector, Inner, Mounter};
use crate::api::{VolumeId, WindowsPath};
use crate::error::{Error, Result};
use crate::host_cause::HostCause;

/// What [`Mounter::expand`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Expanded {
    /// The volume's size now, in bytes.
    pub total_bytes: u64,
    /// Whether it grew.
    pub grew: bool,
}

/// The size and use of a volume's file system: [`Mounter::stats`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FsStats {
    /// The volume's size.
    pub total_bytes: u64,
    /// Bytes in use.
    pub used_bytes: u64,
    /// Bytes free.
    pub available_bytes: u64,
}

impl FsStats {
    /// A reading of `total_bytes`, of which `used_bytes` are in use and
    /// `available_bytes` free to this node (a quota may leave less free
    /// than the rest): for a [`ShareSpace`](super::ShareSpace) of a
    /// driver's own.
    pub fn new(total_bytes: u64, used_bytes: u64, available_bytes: u64) -> Self {
        Self {
            total_bytes,
            used_bytes,
            available_bytes,
        }
    }
}

impl Mounter {
    /// `NodeExpandVolume` of the disk `disk` names, at `volume_path` (its
    /// staging path or a published link): rescans, checks the disk has at
    /// least `required_bytes` (else [`Error::InProgress`]: the controller's
    /// resize has not reached the node yet), and grows the volume to fill
    /// it. A volume with nothing to grow is success on every release
    /// (`grew: false`). Another disk's volume at the path, or none, is
    /// [`Error::NotFound`]: the request's volume is not there.
    pub async fn expand(
        &self,
        disk: &DiskSelector,
        volume_path: &WindowsPath,
        required_bytes: Option<u64>,
    ) -> Result<Expanded> {
        let volume = self.inner.staged_volume_under(disk, volume_path).await?;
        let request = format!("expand {required_bytes:?}");
        let key = volume.as_str().to_owned();
        self.in_flight(&key, request, |inner| async move {
            inner.expand(&volume, required_bytes).await
        })
        .await
    }

    /// `NodeGetVolumeStats` of the disk `disk` names, at `volume_path` (its
    /// staging path or a published link): total, used and available
    /// bytes, right on every proxy release (CSI Proxy v0.2.x sent the free
    /// space where later ones send the total). Another disk's volume at
    /// the path, or none, is [`Error::NotFound`]; a share this mounter
    /// staged has no volume, and is [`Error::InvalidArgument`] (its
    /// space is [`share_stats`](Self::share_stats)).
    pub async fn stats(&self, disk: &DiskSelector, volume_path: &WindowsPath) -> Result<FsStats> {
        if self.inner.paths.share_behind(volume_path).is_some() {
            return Err(Error::invalid_argument(
                "volume path",
                format!(
                    "{volume_path} is on an SMB share, which has no volume statistics through CSI Proxy"
                ),
            ));
        }
        let volume = self.inner.staged_volume_under(disk, volume_path).await?;
        let stats = self.inner.proxy.volume()?.get_volume_stats(&volume).await?;
        Ok(FsStats {
            total_bytes: stats.total_bytes,
            used_bytes: stats.used_bytes,
            available_bytes: stats.total_bytes.saturating_sub(stats.used_bytes),
        })
    }
}

impl Inner {
    /// The volume of the disk `selector` names at `path` (a staging path,
    /// or a pod's link to one), or [`Error::NotFound`]. A link this mounter
    /// made is followed through the journal to its staging path before the
    /// host is asked, so the answer is the staging folder's volume,
    /// whatever the host's own reading of the link. The stage recorded
    /// there for the same selector answers at once; otherwise the volume's
    /// disk must be the one the selector finds now.
    async fn staged_volume_under(
        &self,
        selector: &DiskSelector,
        path: &WindowsPath,
    ) -> Result<VolumeId> {
        let at = self.paths.through_recorded_links(path);
        let volume = (self.paths)
            .mounted_volume(&at)
            .await?
            .ok_or_else(|| Error::NotFound {
                what: format!("volume at {path}"),
            })?;
        let recorded = self.paths.recorded_stage(&at);
        if recorded
            .is_some_and(|stage| stage.volume == volume && stage.selector == selector.to_string())
        {
            return Ok(volume);
        }
        let disk = self.disks.find_disk(selector, Duration::ZERO).await?;
        let holder = match self.disks.disk_of(&volume).await {
            Ok(holder) => Some(holder),
            // No disk holds it (the volume of a drive no disk lists).
            Err(Error::Host { .. }) => None,
            Err(error) => return Err(error),
        };
        if holder == Some(disk) {
            return Ok(volume);
        }
        Err(Error::NotFound {
            what: format!(
                "the volume of the {selector} (disk {disk}) at {path}, where {volume} is"
            ),
        })
    }

    async fn expand(&self, volume: &VolumeId, required_bytes: Option<u64>) -> Result<Expanded> {
        let (disk_api, api) = (self.proxy.disk()?, self.proxy.volume()?);
        let disk = self.disks.disk_of(volume).await?;
        disk_api.rescan().await?;
        if let Some(required) = required_bytes {
            // Disk v1alpha1 cannot tell the size: the growth is not checked.
            let size = match disk_api.get_disk_stats(disk).await {
                Err(Error::Unsupported { .. }) => u64::MAX,
                other => other?,
            };
            if size < required {
                return Err(Error::disk_not_grown(disk, size, required));
            }
        }
        let before = api.get_volume_stats(volume).await?.total_bytes;
        match api.resize_volume(volume, 0).await {
            Err(error) if error.host_cause() != Some(HostCause::NothingToGrow) => {
                return Err(error)
            }
            _ => {}
        }
        let after = api.get_volume_stats(volume).await?.total_bytes;
        Ok(Expanded {
            total_bytes: after,
            grew: after > before,
        })
    }
}
