//! Staging a disk: online, partition, wait for the volume, format, mount.

use std::sync::Arc;

use super::beside::beside;
use super::disks::DiskSelector;
use super::journal::{key, StageRecord};
use super::paths::conflict;
use super::prepare::Seen;
use super::{Change, Inner, IscsiVolume, Mounter, PathState};
use crate::api::{VolumeId, WindowsPath};
/// Named by the docs of the stage's outcomes.
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use crate::host_cause::HostCause;

/// What [`Mounter::stage_disk`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Staged {
    /// The disk's number now (Windows numbers disks anew after a reboot).
    pub disk: u32,
    /// Its volume, now mounted at the staging path.
    pub volume: VolumeId,
    /// Whether anything changed (`Unchanged`: it was staged already).
    pub change: Change,
    /// Whether the disk was brought online.
    pub onlined: bool,
    /// Whether `PartitionDisk` was sent (the disk was seen blank: it listed
    /// no volume; the proxy partitions only a disk without partitions).
    pub partitioned: bool,
    /// Whether the volume was formatted (it had no file system).
    pub formatted: bool,
}

/// Which volume without a file system a disk's stage may format
/// ([`Mounter::stage_disk_for`]). CSI Proxy reads a file system
/// Windows does not know (ext4 or XFS from a Linux node, a locked
/// BitLocker volume) as none, so an unformatted-looking volume is only
/// formatted on proof that it is the plugin's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Formatting {
    /// Only a volume on a partition this mounter made, as its journal
    /// records: the disk was seen blank, `PartitionDisk` answered success
    /// (only then is it recorded), and the volume was listed within
    /// [`volume_wait`](super::MounterBuilder::volume_wait) of that answer.
    /// The controller hands out blank disks, and the first stage
    /// partitions and formats them. A partition the mounter did not make,
    /// or cannot show it made (its `PartitionDisk` failed or its answer was
    /// lost, or its volume was listed later), that reads as unformatted is
    /// [`Error::NotOurs`], never formatted.
    #[default]
    PartitionedHere,
    /// Also a volume on a partition the mounter did not make, when it
    /// reads as unformatted: for a driver whose controller hands out disks
    /// partitioned and knows they hold no data. Only a driver that knows
    /// its disks may say so.
    AnyUnformatted,
}

impl Mounter {
    /// `NodeStageVolume` of a disk: brings the disk `selector` names online
    /// (where the proxy can: disk v1beta2 and newer), partitions it if it
    /// lists no volume (the proxy leaves a disk with partitions as it is),
    /// waits for its volume to be listed, formats the volume only if it has
    /// no file system, and mounts it at `staging` (made if missing). A disk
    /// this stage brought online counts as blank only if it still lists no
    /// volume [`volume_wait`](super::MounterBuilder::volume_wait) after:
    /// Windows lists the volumes of its partitions some time after it
    /// comes online.
    ///
    /// - The volume already mounted there: [`Change::Unchanged`], with no
    ///   partition, format or mount sent.
    /// - Another volume there, a link to elsewhere, a folder with files in
    ///   it: [`Error::Conflict`], nothing changed.
    /// - A link that leads nowhere (left by a reboot): replaced.
    /// - A retry while the same stage runs (its format outlived kubelet's
    ///   deadline) waits for it and gets its answer.
    /// - A format whose outcome is unknown (its call timed out, the proxy
    ///   restarted) is not sent again until its
    ///   [`format_deadline`](super::MounterBuilder::format_deadline) and the
    ///   [`format_grace`](super::MounterBuilder::format_grace) after it
    ///   have passed since it was sent: [`Error::InProgress`], which says
    ///   when the stage goes ahead, until then or until the volume shows a
    ///   file system.
    /// - A read-only disk fails at its first write with an [`Error::Host`]
    ///   whose [`HostCause`] is `WriteProtected`: no CSI Proxy API clears
    ///   the attribute.
    ///
    /// `IsVolumeFormatted` is the only sign of a file system CSI Proxy
    /// gives, and it reads a file system Windows does not know (ext4, a
    /// locked BitLocker volume) as none. So a volume that reads as
    /// unformatted is formatted only when this mounter partitioned its
    /// disk ([`Formatting::PartitionedHere`]); one on a partition it found
    /// is [`Error::NotOurs`], and nothing is changed. Every Go mounter
    /// formats it. A driver whose disks come partitioned says so with
    /// [`stage_disk_for`](Self::stage_disk_for).
    ///
    /// A disk is partitioned only when it lists no volume (and the proxy
    /// partitions only a disk without partitions, answering success on
    /// one with partitions, so its success alone proves nothing). CSI
    /// Proxy cannot tell a disk with a file system written on the whole
    /// device, with no partition table (a Linux node's `mkfs` on the raw
    /// disk), from a blank one: see docs/security.md.
    pub async fn stage_disk(
        &self,
        selector: &DiskSelector,
        staging: &WindowsPath,
    ) -> Result<Staged> {
        self.stage(None, selector, staging, Formatting::PartitionedHere)
            .await
    }

    /// [`stage_disk`](Self::stage_disk) of the disk of CSI volume `volume`,
    /// formatting what `formatting` lets it format. The volume ID is
    /// recorded with the stage: a stage of another volume at the path is
    /// [`Error::Conflict`], and so are an [`unstage`](Self::unstage) and an
    /// [`unpublish_volume`](Self::unpublish_volume) that name another.
    pub async fn stage_disk_for(
        &self,
        volume: &str,
        selector: &DiskSelector,
        staging: &WindowsPath,
        formatting: Formatting,
    ) -> Result<Staged> {
        super::check_volume(volume)?;
        self.stage(Some(volume), selector, staging, formatting)
            .await
    }

    async fn stage(
        &self,
        volume: Option<&str>,
        selector: &DiskSelector,
        staging: &WindowsPath,
        formatting: Formatting,
    ) -> Result<Staged> {
        // A stage for another volume ID joins nothing: it is checked.
        let request = format!("stage {volume:?} {selector}");
        let (selector, path) = (selector.clone(), staging.clone());
        let volume = volume.map(str::to_owned);
        self.in_flight(staging.as_str(), request, |inner| async move {
            let stage = DiskStage {
                volume: volume.as_deref(),
                formatting,
            };
            inner.stage_disk(&selector, &path, stage).await
        })
        .await
    }
}

/// What a stage is for: the CSI volume ID it records, and what it may
/// format.
#[derive(Clone, Copy, Debug)]
pub(super) struct DiskStage<'a> {
    pub volume: Option<&'a str>,
    pub formatting: Formatting,
}

impl Inner {
    pub(super) async fn stage_disk(
        self: &Arc<Self>,
        selector: &DiskSelector,
        staging: &WindowsPath,
        stage: DiskStage<'_>,
    ) -> Result<Staged> {
        if let Some(volume) = stage.volume {
            self.paths.check_staged_for(volume, staging)?;
        }
        let recorded = (self.paths.recorded_stage(staging))
            .filter(|recorded| recorded.selector == selector.to_string());
        // A repeat: the volume this mounter staged there for this selector
        // is still there. Its disk is asked beside the look at the path.
        if let Some(StageRecord { volume, .. }) = recorded {
            let (found, disk) = beside(
                self.paths.inspect(staging, true),
                self.disks.disk_of(&volume),
            )
            .await?;
            if found.volume() == Some(&volume) {
                return Ok(unchanged(disk?, volume));
            }
            let mounted = mounted_at(staging, &found)?;
            let disk = self
                .disks
                .find_disk(selector, self.settings.disk_wait)
                .await?;
            return self
                .stage_on(disk, found, mounted, selector, staging, stage)
                .await;
        }
        // A first stage: the disk is looked for beside the look at the
        // path, and not waited for when the path is another's.
        let look = async {
            let found = self.paths.inspect(staging, true).await?;
            let mounted = mounted_at(staging, &found)?;
            Ok((found, mounted))
        };
        let find = self.disks.find_disk(selector, self.settings.disk_wait);
        let ((found, mounted), disk) = beside(look, find).await?;
        self.stage_on(disk?, found, mounted, selector, staging, stage)
            .await
    }

    /// [`Mounter::stage_iscsi`]: the login, then the target's disk staged.
    pub(super) async fn stage_iscsi(
        self: &Arc<Self>,
        volume: &str,
        target: &IscsiVolume,
        staging: &WindowsPath,
    ) -> Result<Staged> {
        self.targets.log_in(volume, target, staging).await?;
        let disks = self.targets.target_disks(target).await?;
        let selector = target.selector(disks);
        let stage = DiskStage {
            volume: Some(volume),
            formatting: Formatting::PartitionedHere,
        };
        self.stage_disk(&selector, staging, stage).await
    }

    /// The stage of `disk` at `staging`, where `found` is, with the volume
    /// `mounted` there (if any): the same volume is recorded, any other is
    /// a conflict; else the disk is brought online, partitioned if blank,
    /// its volume formatted if it may be, and mounted.
    async fn stage_on(
        self: &Arc<Self>,
        disk: u32,
        found: PathState,
        mounted: Option<VolumeId>,
        selector: &DiskSelector,
        staging: &WindowsPath,
        stage: DiskStage<'_>,
    ) -> Result<Staged> {
        let _disk = self.flights.lock(&format!("disk {disk}")).await;
        if let Some(volume) = mounted {
            let holder = self.disks.disk_of(&volume).await?;
            if holder != disk {
                return Err(conflict(
                    staging,
                    format!("volume {volume} of disk {holder} is mounted there, not the {selector} (disk {disk})"),
                ));
            }
            self.record_stage(staging, &volume, selector, stage.volume)
                .await?;
            return Ok(unchanged(disk, volume));
        }
        let seen = self.prep.bring_online(disk).await?;
        let onlined = matches!(seen, Seen::BroughtOnline(_));
        let (volume, partitioned) = self.prep.volume_of(disk, selector, seen).await?;
        let formatted = (self.prep.format_once(&volume, selector, stage.formatting)).await?;
        self.mount(&volume, staging, &found).await?;
        self.record_stage(staging, &volume, selector, stage.volume)
            .await?;
        Ok(Staged {
            disk,
            volume,
            change: Change::Changed,
            onlined,
            partitioned,
            formatted,
        })
    }

    /// Records the stage, and forgets an unstage of the same path left
    /// unfinished before it: that volume is staged again, and a later
    /// `reconcile` must not finish unstaging it.
    async fn record_stage(
        &self,
        staging: &WindowsPath,
        volume: &VolumeId,
        selector: &DiskSelector,
        csi_volume: Option<&str>,
    ) -> Result<()> {
        let stage = StageRecord {
            volume: volume.clone(),
            selector: selector.to_string(),
            csi_volume: csi_volume.map(str::to_owned),
        };
        let path_key = key(staging.as_str());
        self.journal
            .update(|records| {
                records.links.remove(&path_key);
                records.unstages.remove(&path_key);
                records.partitions.remove(&selector.to_string());
                records.partition_answers.remove(&selector.to_string());
                records.partitioned.remove(volume.as_str());
                records.stages.insert(path_key, (staging.clone(), stage));
            })
            .await
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
            PathState::Absent => self.paths.make_folder(staging).await?,
            PathState::Link { .. } => self.paths.replace_with_folder(staging, found).await?,
            _ => {}
        }
        let api = self.proxy.volume()?;
        let Err(error) = api.mount_volume(volume, staging).await else {
            return Ok(());
        };
        match self.paths.mounted_volume(staging).await? {
            Some(there) if there == *volume => Ok(()),
            Some(other) => Err(conflict(
                staging,
                format!("volume {other} is mounted there"),
            )),
            // A folder that was a link leading nowhere, which the proxy
            // could not tell from one: replaced, then mounted, if it is
            // the mounter's (a file reads so too).
            None if error.host_cause() == Some(HostCause::PathNotFound) => {
                self.paths.replace_with_folder(staging, found).await?;
                api.mount_volume(volume, staging).await
            }
            None if error.host_cause() == Some(HostCause::DirectoryNotEmpty) => {
                Err(conflict(staging, "there is a directory with files in it"))
            }
            // Its answer was lost, and the volume is not there: once more.
            None if error.may_have_run() => api.mount_volume(volume, staging).await,
            None => Err(error),
        }
    }
}

/// The volume mounted at `staging`, where `found` is, if a stage may go on
/// there: nothing, an empty folder, a link that leads nowhere or a
/// leftover no record names (replaced by the staging folder), or a volume
/// (the same disk's is the stage done); anything else is a conflict.
fn mounted_at(staging: &WindowsPath, found: &PathState) -> Result<Option<VolumeId>> {
    match found {
        PathState::VolumeMount { volume } => Ok(Some(volume.clone())),
        PathState::Absent | PathState::Directory => Ok(None),
        // A link that leads nowhere, or one no record names (a
        // leftover): replaced by the staging folder.
        PathState::Link {
            reachable: false, ..
        }
        | PathState::Link {
            target: None,
            volume: None,
            ..
        } => Ok(None),
        other => Err(conflict(staging, other)),
    }
}

fn unchanged(disk: u32, volume: VolumeId) -> Staged {
    Staged {
        disk,
        volume,
        change: Change::Unchanged,
        onlined: false,
        partitioned: false,
        formatted: false,
    }
}
