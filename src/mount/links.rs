//! Publish and unpublish: a pod's target as a link to the staging path.

use std::sync::Arc;

use super::beside::beside;
use super::journal::{key, LinkTo};
use super::paths::conflict;
use super::{Change, Inner, Mounter, PathState};
use crate::api::{VolumeId, WindowsPath};
use crate::error::{Error, Result};

impl Mounter {
    /// `NodePublishVolume`: makes `target` a link to `staging`.
    ///
    /// - The link is there already: [`Change::Unchanged`].
    /// - An empty folder at `target` (kubelet makes one) is replaced; its
    ///   parent is made if missing.
    /// - A link to elsewhere, another volume, a folder with files in it:
    ///   [`Error::Conflict`], nothing changed.
    /// - `staging` holds no staged volume: [`Error::NotStaged`], nothing
    ///   changed (kubelet may publish after a failed unstage,
    ///   kubernetes #100182).
    pub async fn publish(&self, staging: &WindowsPath, target: &WindowsPath) -> Result<Change> {
        self.publish_checked(None, staging, target).await
    }

    /// [`publish`](Self::publish) of CSI volume `volume`: a staging path
    /// where the journal records another volume's stage is
    /// [`Error::Conflict`], and nothing is linked (a pod would get another
    /// volume's data).
    pub async fn publish_volume(
        &self,
        volume: &str,
        staging: &WindowsPath,
        target: &WindowsPath,
    ) -> Result<Change> {
        super::check_volume(volume)?;
        self.publish_checked(Some(volume), staging, target).await
    }

    async fn publish_checked(
        &self,
        volume: Option<&str>,
        staging: &WindowsPath,
        target: &WindowsPath,
    ) -> Result<Change> {
        let request = format!("publish {volume:?} {}", key(staging.as_str()));
        let (staging, path) = (staging.clone(), target.clone());
        let volume = volume.map(str::to_owned);
        self.in_flight(target.as_str(), request, |inner| async move {
            if let Some(volume) = &volume {
                inner.paths.check_staged_for(volume, &staging)?;
            }
            inner.publish(volume.as_deref(), &staging, &path).await
        })
        .await
    }

    /// `NodeUnpublishVolume`: removes the link (or the empty folder) at
    /// `target`, never what it leads to. Nothing there:
    /// [`Change::Unchanged`]. A folder with files in it is
    /// [`Error::Conflict`], and stays. What no record of the mounter's
    /// names is removed only on the host's proof that it is a link that
    /// leads somewhere, or an empty folder: a file, a mount point of
    /// another volume than one the mounter staged, or a path outside the
    /// kubelet folder is [`Error::NotOurs`], and stays.
    pub async fn unpublish(&self, target: &WindowsPath) -> Result<Change> {
        self.unpublish_checked(None, target).await
    }

    /// [`unpublish`](Self::unpublish) of CSI volume `volume`: a link this
    /// mounter made at `target` to the staging path of another volume
    /// (as the journal records the volume IDs of stages) is
    /// [`Error::Conflict`], and stays.
    pub async fn unpublish_volume(&self, volume: &str, target: &WindowsPath) -> Result<Change> {
        super::check_volume(volume)?;
        self.unpublish_checked(Some(volume), target).await
    }

    async fn unpublish_checked(
        &self,
        volume: Option<&str>,
        target: &WindowsPath,
    ) -> Result<Change> {
        let request = format!("unpublish {volume:?}");
        let (volume, path) = (volume.map(str::to_owned), target.clone());
        self.in_flight(target.as_str(), request, |inner| async move {
            if let Some(volume) = &volume {
                inner.paths.check_published_for(volume, &path)?;
            }
            inner.unpublish(&path).await
        })
        .await
    }
}

/// The first look at a staging path a publish checks, sent beside the
/// look at its target.
enum StagingLook {
    /// A share's link the journal records: whether it leads somewhere
    /// (`IsSymlink`).
    Share(Result<Option<bool>>),
    /// Anything else: the volume there (`GetVolumeIDFromTargetPath`; none,
    /// without a call, at a link of the mounter's).
    Volume(Result<Option<VolumeId>>),
}

impl Inner {
    async fn publish(
        self: &Arc<Self>,
        volume: Option<&str>,
        staging: &WindowsPath,
        target: &WindowsPath,
    ) -> Result<Change> {
        // The staging path's first look goes beside the target's.
        let (found, at_staging) = beside(
            self.paths.inspect(target, false),
            self.look_at_staging(staging),
        )
        .await?;
        let ours = |to: &WindowsPath| key(to.as_str()) == key(staging.as_str());
        match &found {
            PathState::Link {
                target: Some(to),
                reachable: true,
                ..
            } if ours(to) => {
                // The link is there; the staging path must still hold the
                // volume, or the pod would write to the node's own disk.
                self.check_staged(volume, staging, at_staging).await?;
                return Ok(Change::Unchanged);
            }
            PathState::Link {
                target: Some(to), ..
            } if !ours(to) => return Err(conflict(target, &found)),
            PathState::VolumeMount { volume }
            | PathState::Link {
                target: None,
                volume: Some(volume),
                ..
            } => {
                // A link this mounter did not record: the same volume as
                // the staging path's is the same publish.
                let staged = match at_staging {
                    StagingLook::Volume(at) => self.paths.mounted_volume_of(staging, at).await?,
                    StagingLook::Share(_) => None,
                };
                return match staged {
                    Some(staged) if staged == *volume => {
                        self.paths.record_link(target, staging).await?;
                        Ok(Change::Unchanged)
                    }
                    _ => Err(conflict(target, &found)),
                };
            }
            PathState::SmbLink { .. } => return Err(conflict(target, &found)),
            // A link no record names that leads to no volume of its own
            // (v1.3 cannot say where a link leads): a leftover, replaced.
            PathState::Absent | PathState::Directory | PathState::Link { .. } => {}
        }
        self.check_staged(volume, staging, at_staging).await?;
        // Kubelet's empty folder, or a leftover link: only on proof that
        // it is no one's data.
        self.paths.remove_found(target, &found).await?;
        // Recorded before it is made: a link whose answer is lost, or that
        // a crash leaves behind, is still known for what it is (from v1.3
        // the proxy reads a link as the volume that holds it).
        self.paths.record_link(target, staging).await?;
        match self.paths.make_link(staging, target).await {
            Ok(()) => Ok(Change::Changed),
            Err(error) => {
                if !error.may_have_run() {
                    self.journal
                        .update(|records| records.links.remove(&key(target.as_str())))
                        .await?;
                }
                Err(error)
            }
        }
    }

    /// The first call of [`check_staged`](Self::check_staged) of
    /// `staging`, a read sent beside the look at the target.
    async fn look_at_staging(&self, staging: &WindowsPath) -> StagingLook {
        match self.paths.recorded_link(staging) {
            Some(LinkTo::Smb(_)) => StagingLook::Share(self.paths.probe(staging).await),
            // No volume is mounted at a link of the mounter's.
            Some(LinkTo::Local(_)) => StagingLook::Volume(Ok(None)),
            None => StagingLook::Volume(self.paths.volume_at(staging).await),
        }
    }

    /// Fails unless `staging` holds a staged volume (one call, answered
    /// `look`) or a share that answers; and, for CSI volume `volume`,
    /// unless the volume the host answers there is that one's: a volume
    /// the journal staged for another CSI volume is another's data,
    /// whichever folder (an alias the records do not know, a second mount)
    /// leads to it.
    async fn check_staged(
        &self,
        volume: Option<&str>,
        staging: &WindowsPath,
        look: StagingLook,
    ) -> Result<()> {
        let recorded = self.paths.recorded_link(staging);
        let share = matches!(recorded, Some(LinkTo::Smb(_)));
        let staged = match look {
            StagingLook::Share(probed) => matches!(
                self.paths
                    .inspect_probed(staging, false, recorded, probed)
                    .await?,
                PathState::SmbLink {
                    reachable: true,
                    ..
                }
            ),
            StagingLook::Volume(at) => match self.paths.mounted_volume_of(staging, at).await? {
                Some(mounted) => {
                    if let Some(volume) = volume {
                        self.paths.check_volume_is(volume, &mounted, staging)?;
                    }
                    true
                }
                None => false,
            },
        };
        if staged {
            return Ok(());
        }
        Err(Error::NotStaged {
            path: staging.to_string(),
            found: match share {
                true => "the share linked there does not answer",
                false => "no volume is mounted there",
            }
            .to_owned(),
        })
    }

    async fn unpublish(self: &Arc<Self>, target: &WindowsPath) -> Result<Change> {
        // A link the journal records goes in one call (the look at a link
        // whose staging volume is gone would fail); anything else only on
        // the host's proof.
        let changed = match self.paths.recorded_link(target) {
            Some(_) => self.paths.remove_if_there(target).await?,
            None => match self.paths.inspect(target, false).await? {
                // Before v1.3 a link reads as the mount point of the volume
                // it leads to: one the mounter staged is its own link's.
                PathState::VolumeMount { volume } if self.paths.staged_anywhere(&volume) => {
                    self.paths.remove_if_there(target).await?
                }
                found => self.paths.remove_found(target, &found).await?,
            },
        };
        self.journal
            .update(|records| records.links.remove(&key(target.as_str())))
            .await?;
        Ok(Change::of(changed))
    }
}
