//! Block volumes: stage, unstage, expand, stats.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use super::disks::DiskSelector;
use super::journal::{key, LinkTo, StageRecord, UnstageRecord};
use super::path_state::conflict;
use super::{Change, Inner, Mounter, PathState};
use crate::api::{VolumeId, WindowsPath};
use crate::error::{Error, Result};
use crate::host_cause::HostCause;

/// What [`Mounter::stage_disk`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Staged {
    /// The disk's number.
    pub disk: u32,
    /// Its volume, now mounted at the staging path.
    pub volume: VolumeId,
    /// Whether anything changed (`Unchanged`: it was staged already).
    pub change: Change,
    /// Whether the disk was brought online.
    pub onlined: bool,
    /// Whether `PartitionDisk` was sent (the disk listed no volume; the
    /// proxy partitions only a raw disk).
    pub partitioned: bool,
    /// Whether the volume was formatted (it had no file system).
    pub formatted: bool,
}

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

impl Mounter {
    /// `NodeStageVolume` of a disk: brings the disk `selector` names online
    /// (where the proxy can: disk v1beta2 and newer), partitions it if it
    /// lists no volume (the proxy leaves a disk with partitions as it is),
    /// waits for its volume to be listed, formats the volume only if it has
    /// no file system, and mounts it at `staging` (made if missing).
    ///
    /// - The volume already mounted there: [`Change::Unchanged`], with no
    ///   partition, format or mount sent.
    /// - Another volume there, a link to elsewhere, a folder with files in
    ///   it: [`Error::Conflict`], nothing changed.
    /// - A link that leads nowhere (left by a reboot): replaced.
    /// - A retry while the same stage runs (its format outlived kubelet's
    ///   deadline) waits for it and gets its answer.
    /// - A format whose outcome is unknown (its call timed out, the proxy
    ///   restarted) is not sent again while its
    ///   [`format_grace`](super::MounterBuilder::format_grace) runs:
    ///   [`Error::InProgress`] until the volume shows a file system.
    /// - A read-only disk fails at its first write with an [`Error::Host`]
    ///   whose [`HostCause`] is `WriteProtected`: no CSI Proxy API clears
    ///   the attribute.
    pub async fn stage_disk(
        &self,
        selector: &DiskSelector,
        staging: &WindowsPath,
    ) -> Result<Staged> {
        let (inner, selector2, staging2) = (self.inner.clone(), selector.clone(), staging.clone());
        self.inner
            .flights
            .run(staging.as_str(), format!("stage {selector}"), async move {
                inner.stage_disk(&selector2, &staging2).await
            })
            .await
    }

    /// `NodeUnstageVolume` of a disk: flushes the volume at `staging`,
    /// unmounts it, removes the folder if it is empty (never forced), and
    /// with `offline` takes the disk offline (where the proxy can: disk
    /// v1beta2 and newer; before, the disk is left online with a warning
    /// in the log). Each step is recorded first,
    /// so a retry after a failure finishes the remaining ones, the offline
    /// included, even once the folder is gone. Nothing there and nothing
    /// left to do: [`Change::Unchanged`].
    pub async fn unstage_disk(&self, staging: &WindowsPath, offline: bool) -> Result<Change> {
        let (inner, staging2) = (self.inner.clone(), staging.clone());
        self.inner
            .flights
            .run(
                staging.as_str(),
                format!("unstage offline={offline}"),
                async move { inner.unstage_disk(&staging2, offline).await },
            )
            .await
    }

    /// `NodeExpandVolume`: rescans, checks the disk under `volume_path`
    /// (the staging path or a published link) has at least
    /// `required_bytes` (else [`Error::InProgress`]: the controller's
    /// resize has not reached the node yet), and grows the volume to fill
    /// it. A volume with nothing to grow is success on every release
    /// (`grew: false`).
    pub async fn expand(
        &self,
        volume_path: &WindowsPath,
        required_bytes: Option<u64>,
    ) -> Result<Expanded> {
        let volume = self.inner.volume_under(volume_path).await?;
        let (inner, volume2) = (self.inner.clone(), volume.clone());
        self.inner
            .flights
            .run(
                volume.as_str(),
                format!("expand {required_bytes:?}"),
                async move { inner.expand(&volume2, required_bytes).await },
            )
            .await
    }

    /// `NodeGetVolumeStats` of a block volume at `volume_path` (the staging
    /// path or a published link): total, used and available bytes, right
    /// on every proxy release (CSI Proxy v0.2.x sent the free space where
    /// later ones send the total). A path with no volume is
    /// [`Error::NotFound`]; an SMB share has no volume, and is
    /// [`Error::InvalidArgument`].
    pub async fn stats(&self, volume_path: &WindowsPath) -> Result<FsStats> {
        if self.inner.is_smb_path(volume_path) {
            return Err(Error::invalid_argument(
                "volume path",
                format!("{volume_path} is on an SMB share, which has no volume statistics through CSI Proxy"),
            ));
        }
        let volume = self.inner.volume_under(volume_path).await?;
        let stats = self.inner.proxy.volume()?.get_volume_stats(&volume).await?;
        Ok(FsStats {
            total_bytes: stats.total_bytes,
            used_bytes: stats.used_bytes,
            available_bytes: stats.total_bytes.saturating_sub(stats.used_bytes),
        })
    }
}

impl Inner {
    async fn stage_disk(
        self: &Arc<Self>,
        selector: &DiskSelector,
        staging: &WindowsPath,
    ) -> Result<Staged> {
        let found = self.inspect(staging, true).await?;
        // A repeat: the volume this mounter staged there for this selector
        // is still there.
        let recorded = self
            .journal
            .read()
            .stages
            .get(&key(staging.as_str()))
            .cloned();
        if let (Some(volume), Some((_, stage))) = (found.volume(), recorded) {
            if stage.volume == *volume && stage.selector == selector.to_string() {
                return Ok(Staged {
                    disk: stage.disk,
                    volume: volume.clone(),
                    change: Change::Unchanged,
                    onlined: false,
                    partitioned: false,
                    formatted: false,
                });
            }
        }
        let mounted = match &found {
            PathState::VolumeMount { volume } => Some(volume.clone()),
            PathState::Absent | PathState::Directory => None,
            PathState::Link {
                reachable: false, ..
            } => None,
            other => return Err(conflict(staging, other)),
        };
        let disk = self.find_disk(selector, self.settings.disk_wait).await?;
        let _disk = self.flights.hold(&format!("disk {disk}")).await;
        if let Some(volume) = mounted {
            let holder = self.disk_of(staging, &volume).await?;
            if holder != disk {
                return Err(conflict(
                    staging,
                    format!("volume {volume} of disk {holder} is mounted there, not the {selector} (disk {disk})"),
                ));
            }
            self.record_stage(staging, disk, &volume, selector)?;
            return Ok(Staged {
                disk,
                volume,
                change: Change::Unchanged,
                onlined: false,
                partitioned: false,
                formatted: false,
            });
        }
        let onlined = self.bring_online(disk).await?;
        let (volume, partitioned) = self.volume_of(disk).await?;
        let formatted = self.format_once(&volume).await?;
        self.mount(&volume, staging, &found).await?;
        self.record_stage(staging, disk, &volume, selector)?;
        Ok(Staged {
            disk,
            volume,
            change: Change::Changed,
            onlined,
            partitioned,
            formatted,
        })
    }

    /// The disk that holds `volume`, from the journal when it staged it.
    async fn disk_of(&self, staging: &WindowsPath, volume: &VolumeId) -> Result<u32> {
        let recorded = self
            .journal
            .read()
            .stages
            .get(&key(staging.as_str()))
            .cloned();
        match recorded {
            Some((_, stage)) if stage.volume == *volume => Ok(stage.disk),
            _ => {
                self.proxy
                    .volume()?
                    .get_disk_number_from_volume_id(volume)
                    .await
            }
        }
    }

    fn record_stage(
        &self,
        staging: &WindowsPath,
        disk: u32,
        volume: &VolumeId,
        selector: &DiskSelector,
    ) -> Result<()> {
        let stage = StageRecord {
            disk,
            volume: volume.clone(),
            selector: selector.to_string(),
        };
        self.journal.update(|records| {
            records.links.remove(&key(staging.as_str()));
            records
                .stages
                .insert(key(staging.as_str()), (staging.clone(), stage));
        })
    }

    /// Brings `disk` online if it is not; whether it did. Versions before
    /// disk v1beta2 can neither tell nor change it.
    async fn bring_online(&self, disk: u32) -> Result<bool> {
        let api = self.proxy.disk()?;
        match api.get_disk_state(disk).await {
            Ok(true) | Err(Error::Unsupported { .. }) => Ok(false),
            Ok(false) => api.set_disk_state(disk, true).await.map(|()| true),
            Err(error) => Err(error),
        }
    }

    /// The volume of `disk`, partitioning the disk first if it lists none
    /// and waiting for the new partition's volume to be listed.
    async fn volume_of(&self, disk: u32) -> Result<(VolumeId, bool)> {
        let volumes = self.proxy.volume()?;
        let mut listed = volumes.list_volumes_on_disk(disk, None).await?;
        let mut partitioned = false;
        if listed.is_empty() {
            self.proxy.disk()?.partition_disk(disk).await?;
            partitioned = true;
            let deadline = tokio::time::Instant::now() + self.settings.volume_wait;
            loop {
                listed = volumes.list_volumes_on_disk(disk, None).await?;
                if !listed.is_empty() || tokio::time::Instant::now() >= deadline {
                    break;
                }
                tokio::time::sleep(self.settings.poll_interval).await;
            }
        }
        match listed.len() {
            0 => Err(Error::NotFound {
                what: format!(
                    "volume on disk {disk} after partitioning it (waited {:?})",
                    self.settings.volume_wait
                ),
            }),
            1 => Ok((listed.remove(0), partitioned)),
            _ => Err(Error::Ambiguous {
                what: format!("volume on disk {disk}"),
                candidates: listed.iter().map(ToString::to_string).collect(),
            }),
        }
    }

    /// Formats `volume` if it has no file system; whether it did. A format
    /// whose outcome is unknown is recorded, and not sent again within the
    /// grace while the volume still shows no file system.
    async fn format_once(&self, volume: &VolumeId) -> Result<bool> {
        let api = self.proxy.volume()?;
        let id = volume.as_str().to_owned();
        if api.is_volume_formatted(volume).await? {
            self.journal.update(|records| records.formats.remove(&id))?;
            return Ok(false);
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        if let Some(&sent) = self.journal.read().formats.get(&id) {
            if now.saturating_sub(sent) < self.settings.format_grace.as_secs() {
                return Err(Error::InProgress {
                    what: format!("the format of {volume}, whose outcome is unknown"),
                });
            }
        }
        self.journal
            .update(|records| records.formats.insert(id.clone(), now))?;
        match api.format_volume(volume).await {
            Ok(()) => {
                self.journal.update(|records| records.formats.remove(&id))?;
                Ok(true)
            }
            Err(error) if outcome_unknown(&error) => Err(error),
            Err(error) => {
                self.journal.update(|records| records.formats.remove(&id))?;
                Err(error)
            }
        }
    }

    /// Mounts `volume` at `staging`, whose state was `found`, making the
    /// folder first. A mount that fails while the volume is there after
    /// all (older proxies refuse to mount a volume where it is; a mount
    /// may outlive its call) is success.
    async fn mount(
        &self,
        volume: &VolumeId,
        staging: &WindowsPath,
        found: &PathState,
    ) -> Result<()> {
        match found {
            PathState::Absent => self.make_folder(staging).await?,
            PathState::Link { .. } => self.replace_with_folder(staging).await?,
            _ => {}
        }
        let api = self.proxy.volume()?;
        let Err(error) = api.mount_volume(volume, staging).await else {
            return Ok(());
        };
        match self.volume_at(staging).await? {
            Some(there) if there == *volume => Ok(()),
            Some(other) => Err(conflict(
                staging,
                format!("volume {other} is mounted there"),
            )),
            // A folder that was a link leading nowhere, which the proxy
            // could not tell from one: replaced, then mounted.
            None if error.host_cause() == Some(HostCause::PathNotFound) => {
                self.replace_with_folder(staging).await?;
                api.mount_volume(volume, staging).await
            }
            None if error.host_cause() == Some(HostCause::DirectoryNotEmpty) => {
                Err(conflict(staging, "there is a directory with files in it"))
            }
            None => Err(error),
        }
    }

    /// Removes what is at `path` unforced (a link, or an empty folder) and
    /// makes an empty folder there.
    async fn replace_with_folder(&self, path: &WindowsPath) -> Result<()> {
        self.remove_unforced(path).await?;
        self.make_folder(path).await
    }

    /// Makes the folder `path`, and records it as made here.
    async fn make_folder(&self, path: &WindowsPath) -> Result<()> {
        self.journal
            .update(|records| records.made.insert(key(path.as_str()), path.clone()))?;
        self.proxy.filesystem()?.mkdir(path).await
    }

    /// Removes a link or an empty folder, never forced: a folder with files
    /// in it is a conflict, and stays.
    pub(super) async fn remove_unforced(&self, path: &WindowsPath) -> Result<()> {
        match self.proxy.filesystem()?.rmdir(path, false).await {
            Err(error) if error.host_cause() == Some(HostCause::DirectoryNotEmpty) => {
                Err(conflict(path, "there is a directory with files in it"))
            }
            other => other,
        }
    }

    async fn unstage_disk(
        self: &Arc<Self>,
        staging: &WindowsPath,
        offline: bool,
    ) -> Result<Change> {
        let path_key = key(staging.as_str());
        let records = self.journal.read();
        let left = records.unstages.get(&path_key).cloned();
        let disk = left
            .as_ref()
            .and_then(|u| u.disk)
            .or_else(|| records.stages.get(&path_key).map(|(_, s)| s.disk));
        let mut work = UnstageRecord {
            staging: staging.clone(),
            disk,
            offline: offline || left.is_some_and(|u| u.offline),
        };
        self.journal
            .update(|r| r.unstages.insert(path_key.clone(), work.clone()))?;
        let mut changed = false;
        let found = match self.volume_at(staging).await? {
            Some(volume) => PathState::VolumeMount { volume },
            None => self.inspect(staging, false).await?,
        };
        match found {
            PathState::Absent => {}
            PathState::VolumeMount { volume } => {
                if work.disk.is_none() {
                    work.disk = Some(self.disk_of(staging, &volume).await?);
                    self.journal
                        .update(|r| r.unstages.insert(path_key.clone(), work.clone()))?;
                }
                self.unmount(&volume, staging).await?;
                self.remove_unforced(staging).await?;
                changed = true;
            }
            PathState::SmbLink { .. } => {
                return Err(conflict(
                    staging,
                    "there is a link to an SMB share (unstage it with unstage_smb)",
                ))
            }
            PathState::Directory | PathState::Link { .. } => {
                self.remove_unforced(staging).await?;
                changed = true;
            }
        }
        if let (true, Some(disk)) = (work.offline, work.disk) {
            match self.proxy.disk()?.set_disk_state(disk, false).await {
                Ok(()) => changed = true,
                // Disk v1alpha1 and v1beta1 cannot: an unstage that failed
                // for it would fail forever.
                Err(Error::Unsupported { .. }) => {
                    tracing::warn!(disk, "the proxy cannot take a disk offline; left online")
                }
                Err(error) => return Err(error),
            }
        }
        self.journal.update(|records| {
            records.unstages.remove(&path_key);
            records.stages.remove(&path_key);
            records.links.remove(&path_key);
            records.made.remove(&path_key);
        })?;
        Ok(Change::of(changed))
    }

    /// Flushes `volume` and unmounts it from `staging`; a volume that is
    /// gone from there by the time the unmount fails is unmounted.
    async fn unmount(&self, volume: &VolumeId, staging: &WindowsPath) -> Result<()> {
        let api = self.proxy.volume()?;
        match api.write_volume_cache(volume).await {
            Ok(()) | Err(Error::Unsupported { .. }) => {}
            Err(error) => return Err(error),
        }
        match api.unmount_volume(volume, staging).await {
            Ok(()) => Ok(()),
            Err(error) => match self.volume_at(staging).await? {
                None => Ok(()),
                Some(_) => Err(error),
            },
        }
    }

    /// The volume at `path` (a staging path, or a link to one), or
    /// [`Error::NotFound`].
    pub(super) async fn volume_under(&self, path: &WindowsPath) -> Result<VolumeId> {
        self.volume_at(path).await?.ok_or_else(|| Error::NotFound {
            what: format!("volume at {path}"),
        })
    }

    async fn expand(&self, volume: &VolumeId, required_bytes: Option<u64>) -> Result<Expanded> {
        let (disk_api, api) = (self.proxy.disk()?, self.proxy.volume()?);
        let recorded = self
            .journal
            .read()
            .stages
            .values()
            .find(|(_, s)| s.volume == *volume)
            .map(|(_, s)| s.disk);
        let disk = match recorded {
            Some(disk) => disk,
            None => api.get_disk_number_from_volume_id(volume).await?,
        };
        disk_api.rescan().await?;
        if let Some(required) = required_bytes {
            // Disk v1alpha1 cannot tell the size: the growth is not checked.
            let size = match disk_api.get_disk_stats(disk).await {
                Err(Error::Unsupported { .. }) => u64::MAX,
                other => other?,
            };
            if size < required {
                return Err(Error::InProgress {
                    what: format!("the growth of disk {disk} to {required} bytes (it has {size}; the controller's resize has not reached the node yet)"),
                });
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

    /// Whether `path` is an SMB share's link the mounter made.
    pub(super) fn is_smb_path(&self, path: &WindowsPath) -> bool {
        let records = self.journal.read();
        let mut at = key(path.as_str());
        // A pod's link leads to a staging path, which may be a share's.
        for _ in 0..2 {
            match records.links.get(&at) {
                Some((_, LinkTo::Smb(_))) => return true,
                Some((_, LinkTo::Local(next))) => at = key(next.as_str()),
                None => return false,
            }
        }
        false
    }
}

/// Whether a failed change may still have happened (or be happening) on
/// the host: its answer was lost, not refused.
fn outcome_unknown(error: &Error) -> bool {
    matches!(
        error,
        Error::Timeout { .. }
            | Error::InvalidResponse { .. }
            | Error::Transport {
                maybe_sent: true,
                ..
            }
    )
}
