//! Unstaging a disk: flush, unmount, remove the folder, offline; each step
//! recorded first, so that a retry or `reconcile` finishes it.

use std::sync::Arc;

use super::again::{idempotent, never};
use super::beside::beside;
use super::journal::{key, LinkTo, UnstageRecord};
use super::paths::conflict;
use super::{check_volume, Change, Inner, Mounter, PathState};
use crate::api::{VolumeId, WindowsPath};
use crate::error::{Error, Result};

/// What becomes of a disk once its volume is unstaged
/// ([`Mounter::unstage_disk`], [`Mounter::unstage`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DiskAfterUnstage {
    /// The disk stays online: a disk the node keeps, or a driver whose
    /// controller detaches disks without asking.
    KeepOnline,
    /// The disk is taken offline, as cloud drivers do before their
    /// controller detaches it (CSI Proxy's disk v1beta2 and newer; before,
    /// the disk stays online with a warning in the log).
    TakeOffline,
}

impl DiskAfterUnstage {
    pub(super) fn offline(self) -> bool {
        self == DiskAfterUnstage::TakeOffline
    }
}

impl Mounter {
    /// `NodeUnstageVolume` of a disk: flushes the volume at `staging`,
    /// unmounts it, removes the folder if it is empty (never forced), and
    /// with [`DiskAfterUnstage::TakeOffline`] takes its disk offline
    /// (where the proxy can: disk v1beta2 and newer; before, the disk is
    /// left online with a warning in the log).
    ///
    /// - Each step is recorded first, so a retry after a failure finishes
    ///   the remaining ones, the offline included, even once the folder is
    ///   gone. The disk is found from the volume each time: Windows numbers
    ///   disks anew after a reboot, and a number kept from before could
    ///   name another volume's disk.
    /// - Another volume at `staging` than the one this mounter staged
    ///   there: [`Error::Conflict`], nothing changed.
    /// - Nothing there and nothing left to do: [`Change::Unchanged`].
    /// - The same volume staged at another path too (a second
    ///   [`stage_disk`](Self::stage_disk) of it): its disk stays online
    ///   until the last of its stages is unstaged with `TakeOffline`.
    pub async fn unstage_disk(
        &self,
        staging: &WindowsPath,
        disk: DiskAfterUnstage,
    ) -> Result<Change> {
        self.unstage_disk_offline(staging, disk.offline()).await
    }

    /// `NodeUnstageVolume` of whatever this mounter staged at `staging`
    /// for `volume` (the CSI volume ID), for a driver whose volume IDs do
    /// not say: an iSCSI volume ([`unstage_iscsi`](Self::unstage_iscsi))
    /// when the volume holds a target's lease; a disk's volume
    /// ([`unstage_disk`](Self::unstage_disk), with `disk`) when the journal
    /// records a disk's stage there; else a share
    /// ([`unstage_smb`](Self::unstage_smb)) when it holds the volume's
    /// lease or a share's link at the path; else as a disk's, which also
    /// clears a folder or a link left there. Nothing there:
    /// [`Change::Unchanged`]. Another volume than `volume` staged there,
    /// as the journal records it: [`Error::Conflict`], nothing changed.
    pub async fn unstage(
        &self,
        volume: &str,
        staging: &WindowsPath,
        disk: DiskAfterUnstage,
    ) -> Result<Change> {
        check_volume(volume)?;
        let path_key = key(staging.as_str());
        let iscsi = (self.inner.journal).view(|records| records.target_leased_by(volume).is_some());
        if iscsi {
            return self.unstage_iscsi(volume, staging, disk).await;
        }
        let share = self.inner.journal.view(|records| {
            let disk_here =
                records.stages.contains_key(&path_key) || records.unstages.contains_key(&path_key);
            !disk_here
                && (matches!(records.links.get(&path_key), Some((_, LinkTo::Smb(_))))
                    || records.share_leased_by(volume).is_some())
        });
        match share {
            true => self.unstage_smb(volume, staging).await,
            false => (self.unstage_disk_checked(Some(volume), staging, disk.offline())).await,
        }
    }

    /// [`unstage_disk`](Self::unstage_disk) with the offline choice as
    /// the journal keeps it.
    pub(super) async fn unstage_disk_offline(
        &self,
        staging: &WindowsPath,
        offline: bool,
    ) -> Result<Change> {
        self.unstage_disk_checked(None, staging, offline).await
    }

    /// [`unstage_disk_offline`](Self::unstage_disk_offline), refused
    /// (inside the path's flight) when the journal records another CSI
    /// volume than `volume` staged there.
    async fn unstage_disk_checked(
        &self,
        volume: Option<&str>,
        staging: &WindowsPath,
        offline: bool,
    ) -> Result<Change> {
        let request = format!("unstage {volume:?} offline={offline}");
        let (volume, path) = (volume.map(str::to_owned), staging.clone());
        self.in_flight(staging.as_str(), request, |inner| async move {
            if let Some(volume) = &volume {
                inner.paths.check_staged_for(volume, &path)?;
            }
            inner.unstage_disk(&path, offline).await
        })
        .await
    }
}

impl Inner {
    pub(super) async fn unstage_disk(
        self: &Arc<Self>,
        staging: &WindowsPath,
        offline: bool,
    ) -> Result<Change> {
        let path_key = key(staging.as_str());
        // Read before this unstage records itself.
        let known = self.paths.recorded_path(staging);
        let (left, staged) = self.journal.view(|records| {
            let left = records.unstages.get(&path_key).cloned();
            let staged = records.stages.get(&path_key).map(|(_, s)| s.volume.clone());
            (left, staged)
        });
        let work = UnstageRecord {
            staging: staging.clone(),
            volume: left
                .as_ref()
                .and_then(|u| u.volume.clone())
                .or(staged.clone()),
            offline: offline || left.is_some_and(|u| u.offline),
        };
        // The disk to take offline is asked beside the look at the path.
        let offline_of = work.volume.clone().filter(|_| work.offline);
        let (found, disk) = match &offline_of {
            Some(volume) => {
                let look = self.look_to_unstage(staging, known);
                let (found, disk) = beside(look, self.disks.disk_of(volume)).await?;
                (found, Some(disk))
            }
            None => (self.look_to_unstage(staging, known).await?, None),
        };
        match (&found, &staged) {
            (PathState::VolumeMount { volume }, Some(staged)) if volume != staged => {
                return Err(conflict(
                    staging,
                    format!(
                        "volume {volume} is mounted there, not {staged}, which was staged there"
                    ),
                ));
            }
            (PathState::SmbLink { .. }, _) => {
                return Err(conflict(
                    staging,
                    "there is a link to an SMB share (unstage it with unstage_smb)",
                ))
            }
            _ => {}
        }
        if !known {
            return self.clear_unknown(staging, &found).await;
        }
        self.journal
            .update(|r| r.unstages.insert(path_key.clone(), work.clone()))
            .await?;
        let mut changed = false;
        match found {
            PathState::Absent | PathState::SmbLink { .. } => {}
            // Only the volume a stage or unstage record names: a volume
            // mounted since at a folder the mounter merely made (or
            // linked) is another's.
            PathState::VolumeMount { volume } if work.volume.as_ref() != Some(&volume) => {
                return Err(Error::NotOurs {
                    what: format!("volume {volume}, mounted at {staging}"),
                    why: "the journal records no stage of it there, so it is not unmounted, \
                          nor its disk taken offline"
                        .to_owned(),
                });
            }
            PathState::VolumeMount { volume } => {
                self.unmount(&volume, staging).await?;
                self.paths.remove_unforced(staging).await?;
                changed = true;
            }
            // No volume there, the host said: a folder, or a link, at a
            // path the journal records; only on proof that it holds
            // nothing.
            found @ (PathState::Directory | PathState::Link { .. }) => {
                changed = self.paths.remove_found(staging, &found).await?;
            }
        }
        if let (true, Some(volume)) = (work.offline, &work.volume) {
            let disk = match disk {
                Some(disk) => disk,
                None => self.disks.disk_of(volume).await,
            };
            changed |= self.take_offline(volume, disk, &path_key).await?;
        }
        self.journal
            .update(|records| {
                records.unstages.remove(&path_key);
                records.stages.remove(&path_key);
                records.links.remove(&path_key);
                records.made.remove(&path_key);
            })
            .await?;
        Ok(Change::of(changed))
    }

    /// [`Mounter::unstage_iscsi`]: the disk unstaged, then the lease
    /// taken for `staging` dropped.
    pub(super) async fn unstage_iscsi(
        self: &Arc<Self>,
        volume: &str,
        staging: &WindowsPath,
        offline: bool,
    ) -> Result<Change> {
        let mut changed = self.unstage_disk(staging, offline).await?.changed();
        // Only the lease taken for this path: the session stays under a
        // stage of the volume at another path.
        let path_key = key(staging.as_str());
        let leased = self.journal.view(|records| {
            let target_key = records.target_leased_at(volume, &path_key)?;
            let record = records.targets.get(target_key)?.clone();
            Some((target_key.to_owned(), record))
        });
        if let Some((target_key, record)) = leased {
            changed |= self
                .targets
                .release_target(&target_key, &record, volume)
                .await?;
        }
        Ok(Change::of(changed))
    }

    /// What an unstage finds at `staging`: the volume mounted there, else
    /// what is there. At a path the journal does not record (`known`
    /// false: most often a repeat, with nothing there), `IsSymlink` goes
    /// beside `GetVolumeIDFromTargetPath`.
    async fn look_to_unstage(&self, staging: &WindowsPath, known: bool) -> Result<PathState> {
        if known {
            return match self.paths.mounted_volume(staging).await? {
                Some(volume) => Ok(PathState::VolumeMount { volume }),
                None => self.paths.inspect(staging, false).await,
            };
        }
        let recorded = self.paths.recorded_link(staging);
        let (at, probed) = tokio::join!(self.paths.volume_at(staging), self.paths.probe(staging));
        match self.paths.mounted_volume_of(staging, at).await? {
            Some(volume) => Ok(PathState::VolumeMount { volume }),
            None => (self.paths.inspect_probed(staging, false, recorded, probed)).await,
        }
    }

    /// An unstage at a path the journal does not record: nothing of the
    /// mounter's is staged there. What is there goes only on proof that
    /// it holds nothing (kubelet's empty folder, a link that leads
    /// somewhere); a volume mounted there is another's, and stays, as does
    /// its disk.
    async fn clear_unknown(&self, staging: &WindowsPath, found: &PathState) -> Result<Change> {
        if let PathState::VolumeMount { volume } = found {
            return Err(Error::NotOurs {
                what: format!("volume {volume}, mounted at {staging}"),
                why: "the journal records no stage of the mounter's there, so it is not \
                      unmounted, nor its disk taken offline"
                    .to_owned(),
            });
        }
        Ok(Change::of(self.paths.remove_found(staging, found).await?))
    }

    /// Flushes `volume` and unmounts it from `staging`; a volume that is
    /// gone from there by the time the unmount fails is unmounted.
    async fn unmount(&self, volume: &VolumeId, staging: &WindowsPath) -> Result<()> {
        let api = self.proxy.volume()?;
        match idempotent(|| api.write_volume_cache(volume), never).await {
            Ok(()) | Err(Error::Unsupported { .. }) => {}
            Err(error) => return Err(error),
        }
        match api.unmount_volume(volume, staging).await {
            Ok(()) => Ok(()),
            Err(error) => match self.paths.mounted_volume(staging).await? {
                None => Ok(()),
                // Its answer was lost, and the volume is still there.
                Some(_) if error.may_have_run() => api.unmount_volume(volume, staging).await,
                Some(_) => Err(error),
            },
        }
    }

    /// Takes the disk that holds `volume` (`disk`, as the host answered
    /// during this unstage) offline, unless the volume is
    /// staged at another path than `unstaged` (a path key); whether it
    /// did. A volume the host no longer finds (its disk is offline
    /// already, or detached) leaves nothing to do; a proxy that cannot
    /// (disk v1alpha1, v1beta1) leaves the disk online, with a warning.
    async fn take_offline(
        &self,
        volume: &VolumeId,
        disk: Result<u32>,
        unstaged: &str,
    ) -> Result<bool> {
        let disk = match disk {
            Ok(disk) => disk,
            Err(error @ Error::Host { .. }) => {
                tracing::debug!(%volume, %error, "no disk holds the volume any more: nothing to take offline");
                return Ok(false);
            }
            Err(error) => return Err(error),
        };
        let _disk = self.flights.lock(&format!("disk {disk}")).await;
        // The same volume staged at another path stays online: its disk
        // goes offline with the last of its stages. Looked at under the
        // disk's lock, which a stage holds until it is recorded.
        let staged_elsewhere = self.journal.view(|records| {
            (records.stages.iter())
                .any(|(other, (_, stage))| other != unstaged && stage.volume == *volume)
        });
        if staged_elsewhere {
            tracing::info!(%volume, "the volume is staged at another path too: its disk stays online");
            return Ok(false);
        }
        // Every volume on the disk must be the mounter's: a disk that also
        // holds another's volume (the OS disk, a disk another tool
        // partitioned) stays online.
        let volumes = self
            .proxy
            .volume()?
            .list_volumes_on_disk(disk, None)
            .await?;
        let foreign: Vec<&VolumeId> = volumes
            .iter()
            .filter(|other| *other != volume && !self.paths.staged_anywhere(other))
            .collect();
        if !foreign.is_empty() {
            tracing::warn!(
                disk,
                %volume,
                others = ?foreign.iter().map(|v| v.as_str()).collect::<Vec<_>>(),
                "the disk holds volumes the mounter did not stage: it stays online"
            );
            return Ok(false);
        }
        let api = self.proxy.disk()?;
        match idempotent(|| api.set_disk_state(disk, false), never).await {
            Ok(()) => Ok(true),
            // An unstage that failed for this would fail forever.
            Err(Error::Unsupported { .. }) => {
                tracing::warn!(disk, "the proxy cannot take a disk offline; left online");
                Ok(false)
            }
            Err(error) => Err(error),
        }
    }
}
