//! Finding a disk: by LUN, page 0x83 ID, serial number or a predicate,
//! waited for with at most one rescan a look.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::{Inner, Mounter};
use crate::api::{DiskIds, DiskLocation};
use crate::error::{Error, Result};

/// Which disk a volume is: [`Mounter::find_disk`], [`Mounter::stage_disk`].
#[derive(Clone)]
pub struct DiskSelector(Selector);

#[derive(Clone)]
enum Selector {
    Lun(String),
    Page83(String),
    Serial(String),
    Matching(String, Arc<dyn Fn(&DiskCandidate) -> bool + Send + Sync>),
}

/// A disk as [`DiskSelector::matching`]'s predicate sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DiskCandidate {
    /// Its Windows disk number.
    pub number: u32,
    /// Where it sits on its adapter (LUN and the rest).
    pub location: Option<DiskLocation>,
    /// Its page 0x83 ID and serial number (`None` on proxies before v0.2,
    /// which cannot list them).
    pub ids: Option<DiskIds>,
}

impl DiskSelector {
    /// The disk at logical unit `lun` (`ListDiskLocations`), as Azure
    /// attaches data disks. Compared as numbers when both are numbers,
    /// else as text without case.
    pub fn lun(lun: impl fmt::Display) -> Self {
        Self(Selector::Lun(lun.to_string().trim().to_owned()))
    }

    /// The disk whose SCSI page 0x83 ID is `id` (`ListDiskIDs`), as GCE
    /// names persistent disks (`"Google  <name>"`).
    pub fn page83(id: impl Into<String>) -> Self {
        Self(Selector::Page83(id.into()))
    }

    /// The disk whose serial number is `serial` (`ListDiskIDs`; needs CSI
    /// Proxy v1.0, earlier ones send no serial numbers).
    pub fn serial_number(serial: impl Into<String>) -> Self {
        Self(Selector::Serial(serial.into()))
    }

    /// The disk for which `predicate` holds, `description` naming it in
    /// errors and logs (EBS: a serial number that contains the volume ID).
    pub fn matching(
        description: impl Into<String>,
        predicate: impl Fn(&DiskCandidate) -> bool + Send + Sync + 'static,
    ) -> Self {
        Self(Selector::Matching(description.into(), Arc::new(predicate)))
    }

    /// Whether `candidate` is the disk.
    fn selects(&self, candidate: &DiskCandidate) -> bool {
        let ids = candidate.ids.as_ref();
        match &self.0 {
            Selector::Lun(lun) => candidate
                .location
                .as_ref()
                .is_some_and(|at| same_lun(&at.lun_id, lun)),
            Selector::Page83(id) => ids.is_some_and(|ids| ids.page83 == *id),
            Selector::Serial(serial) => ids.is_some_and(|ids| ids.serial_number == *serial),
            Selector::Matching(_, predicate) => predicate(candidate),
        }
    }

    /// Which listings it needs: (locations, identifiers).
    fn needs(&self) -> (bool, bool) {
        match self.0 {
            Selector::Lun(_) => (true, false),
            Selector::Page83(_) | Selector::Serial(_) => (false, true),
            Selector::Matching(..) => (true, true),
        }
    }
}

impl fmt::Display for DiskSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Selector::Lun(lun) => write!(f, "disk at LUN {lun}"),
            Selector::Page83(id) => write!(f, "disk with page 0x83 ID {id:?}"),
            Selector::Serial(serial) => write!(f, "disk with serial number {serial:?}"),
            Selector::Matching(description, _) => write!(f, "disk {description}"),
        }
    }
}

impl fmt::Debug for DiskSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DiskSelector({self})")
    }
}

fn same_lun(reported: &str, wanted: &str) -> bool {
    let reported = reported.trim();
    match (reported.parse::<u64>(), wanted.parse::<u64>()) {
        (Ok(a), Ok(b)) => a == b,
        _ => reported.eq_ignore_ascii_case(wanted),
    }
}

impl Mounter {
    /// The number of the one disk `selector` names, looking again every
    /// poll interval (with a rescan of the storage buses before each look
    /// but the first) until `wait` has passed.
    ///
    /// # Errors
    ///
    /// [`Error::NotFound`] when no disk matched by then, [`Error::Ambiguous`]
    /// at once when several do.
    pub async fn find_disk(&self, selector: &DiskSelector, wait: Duration) -> Result<u32> {
        self.inner.find_disk(selector, wait).await
    }
}

impl Inner {
    pub(super) async fn find_disk(&self, selector: &DiskSelector, wait: Duration) -> Result<u32> {
        let disk = self.proxy.disk()?;
        let deadline = Instant::now() + wait;
        loop {
            let mut found = self.candidates(selector).await?;
            match found.len() {
                1 => return Ok(found.remove(0)),
                0 => {}
                _ => {
                    return Err(Error::Ambiguous {
                        what: selector.to_string(),
                        candidates: found.iter().map(|n| format!("disk {n}")).collect(),
                    })
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::NotFound {
                    what: format!("{selector} (looked for {wait:?})"),
                });
            }
            tokio::time::sleep(self.settings.poll_interval.min(deadline - now)).await;
            if let Err(error) = disk.rescan().await {
                // The next look may still find it; a host that cannot
                // rescan is no reason to stop looking.
                tracing::debug!(%error, "rescan before looking for a disk again failed");
            }
        }
    }

    /// The numbers of the disks `selector` names now.
    async fn candidates(&self, selector: &DiskSelector) -> Result<Vec<u32>> {
        let disk = self.proxy.disk()?;
        let (want_locations, want_ids) = selector.needs();
        let mut locations = match want_locations {
            true => disk.list_disk_locations().await?,
            false => Default::default(),
        };
        let mut ids = match want_ids {
            true => match disk.list_disk_ids().await {
                Ok(ids) => ids,
                // v1alpha1 has no identifiers: a predicate sees none.
                Err(Error::Unsupported { .. }) if want_locations => Default::default(),
                Err(error) => return Err(error),
            },
            false => Default::default(),
        };
        let mut numbers: Vec<u32> = locations.keys().chain(ids.keys()).copied().collect();
        numbers.sort_unstable();
        numbers.dedup();
        Ok(numbers
            .into_iter()
            .filter(|&number| {
                selector.selects(&DiskCandidate {
                    number,
                    location: locations.remove(&number),
                    ids: ids.remove(&number),
                })
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn luns_compare_as_numbers_or_text() {
        assert!(same_lun("03", "3"));
        assert!(same_lun(" 3", "3"));
        assert!(same_lun("Lun-A", "lun-a"));
        assert!(!same_lun("13", "3"));
        assert_eq!(DiskSelector::lun(4).to_string(), "disk at LUN 4");
    }
}
