//! A disk made ready for its volume's stage: brought online, partitioned
//! only when seen blank, its one volume adopted as the mounter's on the
//! proof of its own partition, and formatted only on that proof.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

use super::again::{idempotent, never};
use super::journal::Journal;
use super::{DiskSelector, Formatting, Settings};
use crate::api::VolumeId;
use crate::client::{CallOptions, CsiProxy};
use crate::error::{Error, Result};

/// The steps that make a disk ready, on the proxy's disk and volume
/// groups, with the journal's proof of what the mounter partitioned and
/// formatted.
pub(super) struct DiskPrep {
    proxy: CsiProxy,
    journal: Arc<Journal>,
    settings: Arc<Settings>,
}

impl DiskPrep {
    /// The steps on `proxy`, recorded in `journal`, timed by `settings`.
    pub(super) fn new(proxy: CsiProxy, journal: Arc<Journal>, settings: Arc<Settings>) -> Self {
        Self {
            proxy,
            journal,
            settings,
        }
    }

    /// Brings `disk` online if it is not, its volumes listed beside the look
    /// at its state: the listing, when the disk was online (or the proxy,
    /// before disk v1beta2, can neither tell nor change it); when it came
    /// online, when this stage brought it (that listing, of a disk that
    /// was offline, is not read).
    pub(super) async fn bring_online(&self, disk: u32) -> Result<Seen> {
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
    pub(super) async fn volume_of(
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
    pub(super) async fn format_once(
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
}

/// A disk as a stage found it, for [`DiskPrep::volume_of`].
pub(super) enum Seen {
    /// Online: it listed these volumes, looked at then (milliseconds since
    /// the Unix epoch).
    Online { listed: Vec<VolumeId>, looked: u64 },
    /// Offline, and this stage brought it online then.
    BroughtOnline(Instant),
}

/// When a disk's volume was listed, for [`DiskPrep::adopt`].
#[derive(Clone, Copy, Debug)]
enum Listed {
    /// By this stage, within `volume_wait` of its own `PartitionDisk`'s
    /// answer (on tokio's clock).
    AfterItsAnswer,
    /// By a listing sent then (milliseconds since the Unix epoch), with no
    /// `PartitionDisk` of this stage before it.
    At(u64),
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
