//! Staging a disk: online, partition, wait for the volume, format, mount.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

use super::again::{idempotent, never};
use super::beside::beside;
use super::disks::DiskSelector;
use super::journal::{key, StageRecord};
use super::paths::conflict;
use super::{Change, Inner, Mounter, PathState};
use crate::api::{VolumeId, WindowsPath};
use crate::client::CallOptions;
use crate::error::{Error, Result};
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
            let (found, disk) =
                beside(self.paths.inspect(staging, true), self.disk_of(&volume)).await?;
            if found.volume() == Some(&volume) {
                return Ok(unchanged(disk?, volume));
            }
            let mounted = mounted_at(staging, &found)?;
            let disk = self.find_disk(selector, self.settings.disk_wait).await?;
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
        let find = self.find_disk(selector, self.settings.disk_wait);
        let ((found, mounted), disk) = beside(look, find).await?;
        self.stage_on(disk?, found, mounted, selector, staging, stage)
            .await
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
            let holder = self.disk_of(&volume).await?;
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
        let seen = self.bring_online(disk).await?;
        let onlined = matches!(seen, Seen::BroughtOnline(_));
        let (volume, partitioned) = self.volume_of(disk, selector, seen).await?;
        let formatted = (self.format_once(&volume, selector, stage.formatting)).await?;
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

    /// The number of the disk that holds `volume` now: asked every time,
    /// since Windows numbers disks anew after a reboot or an attach.
    pub(super) async fn disk_of(&self, volume: &VolumeId) -> Result<u32> {
        self.proxy
            .volume()?
            .get_disk_number_from_volume_id(volume)
            .await
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

    /// Brings `disk` online if it is not, its volumes listed beside the look
    /// at its state: the listing, when the disk was online (or the proxy,
    /// before disk v1beta2, can neither tell nor change it); when it came
    /// online, when this stage brought it (that listing, of a disk that
    /// was offline, is not read).
    async fn bring_online(&self, disk: u32) -> Result<Seen> {
        let (api, volumes) = (self.proxy.disk()?, self.proxy.volume()?);
        let looked = unix_millis();
        let (state, listed) = tokio::join!(
            api.get_disk_state(disk),
            volumes.list_volumes_on_disk(disk, None)
        );
        match state {
            Ok(true) | Err(Error::Unsupported { .. }) => Ok(Seen::Online {
                listed: listed?,
                looked,
            }),
            Ok(false) => idempotent(|| api.set_disk_state(disk, true), never)
                .await
                .map(|()| Seen::BroughtOnline(Instant::now())),
            Err(error) => Err(error),
        }
    }

    /// The volume of `disk`, which was `seen` so, and whether this stage
    /// partitioned the disk for it. A disk is partitioned only when it was
    /// seen blank: it listed no volume, and, when this stage brought it
    /// online, still lists none once `volume_wait` has passed since
    /// (Windows lists the volumes of a disk's partitions some time after
    /// the disk comes online). The new partition's volume is waited for
    /// as long. See [`adopt`](Self::adopt) for what makes it the mounter's.
    async fn volume_of(
        &self,
        disk: u32,
        selector: &DiskSelector,
        seen: Seen,
    ) -> Result<(VolumeId, bool)> {
        let (mut listed, looked) = match seen {
            Seen::BroughtOnline(onlined) => self.volumes_by(disk, onlined).await?,
            Seen::Online { listed, looked } => (listed, looked),
        };
        let partitioned = listed.is_empty();
        if partitioned {
            let answered = self.partition(disk, selector).await?;
            (listed, _) = self.volumes_by(disk, answered).await?;
        }
        let listed_by = match partitioned {
            true => Listed::AfterItsAnswer,
            false => Listed::At(looked),
        };
        match listed.len() {
            0 => Err(Error::NotFound {
                what: format!(
                    "volume on disk {disk} after partitioning it (waited {:?})",
                    self.settings.volume_wait
                ),
            }),
            1 => {
                let volume = listed.remove(0);
                self.adopt(selector, disk, &volume, listed_by).await?;
                Ok((volume, partitioned))
            }
            _ => Err(Error::Ambiguous {
                what: format!("volume on disk {disk}"),
                candidates: listed.iter().map(ToString::to_string).collect(),
            }),
        }
    }

    /// Lists `disk`'s volumes every poll interval until one is listed or
    /// `volume_wait` has passed since `since` (a listing is sent then
    /// too): the last listing, and when it was sent (milliseconds since
    /// the Unix epoch).
    async fn volumes_by(&self, disk: u32, since: Instant) -> Result<(Vec<VolumeId>, u64)> {
        let volumes = self.proxy.volume()?;
        let deadline = since + self.settings.volume_wait;
        loop {
            let looked = unix_millis();
            let listed = volumes.list_volumes_on_disk(disk, None).await?;
            let now = Instant::now();
            if !listed.is_empty() || now >= deadline {
                return Ok((listed, looked));
            }
            tokio::time::sleep_until((now + self.settings.poll_interval).min(deadline)).await;
        }
    }

    /// Sends `PartitionDisk` for `disk`, which was just seen blank (once
    /// more if its answer was lost: the proxy leaves a disk with
    /// partitions as it is), and records its success under `selector`,
    /// once answered. A request that failed, or whose answers were all
    /// lost, proves nothing and is not recorded. When it answered.
    async fn partition(&self, disk: u32, selector: &DiskSelector) -> Result<Instant> {
        let api = self.proxy.disk()?;
        idempotent(|| api.partition_disk(disk), never).await?;
        let answered = Instant::now();
        let (selector, at) = (selector.to_string(), unix_millis());
        self.journal
            .update(|records| records.partition_answered(&selector, disk, at))
            .await?;
        Ok(answered)
    }

    /// Records `volume`, the one volume of `disk`, as on a partition this
    /// mounter made, when a `PartitionDisk` of this disk for `selector`
    /// answered success, on the disk seen blank, within `volume_wait`
    /// before the listing that showed it: the volume a stage waits for,
    /// whether this stage sent the request or one that a driver restart
    /// cut short. A volume listed later may be another partition's, listed
    /// late, and a record of another disk (a disk attached at the LUN
    /// since) proves nothing: both are forgotten, as are earlier builds'
    /// records of a request sent.
    async fn adopt(
        &self,
        selector: &DiskSelector,
        disk: u32,
        volume: &VolumeId,
        listed: Listed,
    ) -> Result<()> {
        let selector = selector.to_string();
        let (answer, sent) = self.journal.view(|records| {
            let answer = records.partition_answers.get(&selector).copied();
            (answer, records.partitions.contains_key(&selector))
        });
        if answer.is_none() && !sent {
            return Ok(());
        }
        let wait = u64::try_from(self.settings.volume_wait.as_millis()).unwrap_or(u64::MAX);
        let ours = answer.is_some_and(|answer| {
            let within = answer.answered..=answer.answered.saturating_add(wait);
            answer.disk == disk
                && match listed {
                    Listed::AfterItsAnswer => true,
                    // A clock set back since reads as too late, not as in time.
                    Listed::At(looked) => within.contains(&looked),
                }
        });
        self.journal
            .update(|records| {
                records.partitions.remove(&selector);
                records.partition_answers.remove(&selector);
                if ours {
                    records.partitioned.insert(volume.as_str().to_owned(), ());
                }
            })
            .await
    }

    /// Formats `volume` if it has no file system and it is proven the
    /// plugin's (see [`Formatting`]); whether it did. A format whose
    /// outcome is unknown is recorded, and not sent again, while the
    /// volume still shows no file system, until its deadline and the grace
    /// after it have passed. The volume is asked whether it has a file
    /// system even on the partition this stage made: where the partition
    /// proof cannot tell (docs/security.md), a volume Windows knows is
    /// spared by that answer (docs/mounting.md, "Round trips").
    async fn format_once(
        &self,
        volume: &VolumeId,
        selector: &DiskSelector,
        formatting: Formatting,
    ) -> Result<bool> {
        let api = self.proxy.volume()?;
        let id = volume.as_str().to_owned();
        if api.is_volume_formatted(volume).await? {
            self.journal
                .update(|records| records.formats.remove(&id))
                .await?;
            return Ok(false);
        }
        // Proof: this mounter made the volume's partition, or sent a
        // format of this volume before; or the driver vouches for its
        // disks.
        let partitioned_here = self.journal.view(|records| {
            records.partitioned.contains_key(&id) || records.formats.contains_key(&id)
        });
        if !partitioned_here && formatting != Formatting::AnyUnformatted {
            return Err(Error::NotOurs {
                what: format!("volume {volume} of the {selector}"),
                why: "it is on a partition this mounter did not make (or cannot show it \
                      made: its PartitionDisk failed or its answer was lost, or the volume \
                      was listed more than the volume wait after it), and CSI Proxy reads a \
                      file system Windows does not know (ext4, XFS, a locked BitLocker \
                      volume) as none, so formatting it could destroy data; if the disk holds \
                      no data, format the volume (or clear the disk) by hand; a driver whose \
                      disks come partitioned and empty says so with Formatting::AnyUnformatted"
                    .to_owned(),
            });
        }
        let now = unix_millis();
        if let Some(sent) = self
            .journal
            .view(|records| records.formats.get(&id).copied())
        {
            let go_ahead = sent.saturating_add(self.settings.format_wait_millis());
            if now < go_ahead {
                return Err(Error::InProgress {
                    what: format!(
                        "the format of volume {volume}, sent {} s ago, may still be running on \
                         the host (its answer was lost); a stage formats it from {} UTC (in {} \
                         s) only if it still has no file system then; retry later",
                        now.saturating_sub(sent) / 1_000,
                        utc_text(go_ahead.div_ceil(1_000)),
                        (go_ahead - now).div_ceil(1_000),
                    ),
                });
            }
        }
        self.journal
            .update(|records| records.formats.insert(id.clone(), now))
            .await?;
        // Its own deadline, short of the wait above: a format that may
        // still run is never sent again.
        let options = CallOptions::default().deadline(self.settings.format_deadline);
        let formatted = self
            .proxy
            .with_call_options(options)
            .volume()?
            .format_volume(volume)
            .await;
        match formatted {
            Ok(()) => {
                self.journal
                    .update(|records| records.formats.remove(&id))
                    .await?;
                Ok(true)
            }
            // Looked at once (the SDK waits for a restarted proxy): a format
            // that finished before its answer was lost is done; one that
            // did not may still run, and waits as above.
            Err(error) if error.may_have_run() => match api.is_volume_formatted(volume).await {
                Ok(true) => {
                    self.journal
                        .update(|records| records.formats.remove(&id))
                        .await?;
                    Ok(true)
                }
                _ => Err(error),
            },
            Err(error) => {
                self.journal
                    .update(|records| records.formats.remove(&id))
                    .await?;
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

/// A disk as a stage found it, for [`Inner::volume_of`].
enum Seen {
    /// Online: it listed these volumes, looked at then (milliseconds since
    /// the Unix epoch).
    Online { listed: Vec<VolumeId>, looked: u64 },
    /// Offline, and this stage brought it online then.
    BroughtOnline(Instant),
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

/// When a disk's volume was listed, for [`Inner::adopt`].
#[derive(Clone, Copy, Debug)]
enum Listed {
    /// By this stage, within `volume_wait` of its own `PartitionDisk`'s
    /// answer (on tokio's clock).
    AfterItsAnswer,
    /// By a listing sent then (milliseconds since the Unix epoch), with no
    /// `PartitionDisk` of this stage before it.
    At(u64),
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

/// `seconds` since the Unix epoch as `YYYY-MM-DD HH:MM:SS`, in UTC.
fn utc_text(seconds: u64) -> String {
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    // Howard Hinnant's civil-from-days, for days since 1970-01-01.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60
    )
}

/// Now, in milliseconds since the Unix epoch: what the journal records.
pub(super) fn unix_millis() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::utc_text;

    #[test]
    fn times_read_as_utc_dates() {
        assert_eq!(utc_text(0), "1970-01-01 00:00:00");
        assert_eq!(utc_text(951_782_400), "2000-02-29 00:00:00");
        assert_eq!(utc_text(1_798_761_599), "2026-12-31 23:59:59");
    }
}
