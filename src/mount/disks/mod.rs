//! Finding a disk: by LUN, page 0x83 ID, serial number or a predicate,
//! waited for with at most one rescan a poll interval, the listings and
//! rescans shared by the finders that look at the same time ([`shared_listings`]).

mod shared_listings;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::Mounter;
use crate::api::{DiskApi, DiskIds, DiskLocation, VolumeId};
use crate::client::CsiProxy;
use crate::error::{Error, Result};

use shared_listings::SharedListings;
use shared_listings::{AfterRescan, Wants};

/// Which disk a volume is: [`Mounter::find_disk`], [`Mounter::stage_disk`].
#[derive(Clone)]
pub struct DiskSelector(Selector);

#[derive(Clone)]
enum Selector {
    Lun(String),
    LunOn {
        adapter: String,
        target: String,
        lun: String,
    },
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

/// The adapter that holds the OS and temporary disks on an Azure node; its
/// data disks are on a SCSI controller of their own (azuredisk-csi-driver's
/// Windows code skips adapter 0's disks when it looks for a LUN, after
/// staging the temporary disk in a data disk's place, its issue #2661).
const BOOT_ADAPTER: &str = "0";

/// Whether `adapter` (as `ListDiskLocations` reports it) is the boot
/// adapter, whose disks [`DiskSelector::lun`] never selects.
pub(crate) fn on_boot_adapter(adapter: &str) -> bool {
    same_part(adapter, BOOT_ADAPTER)
}

impl DiskSelector {
    /// The data disk at logical unit `lun` (`ListDiskLocations`), as Azure
    /// attaches data disks. Compared as numbers when both are numbers,
    /// else as text without case.
    ///
    /// A LUN numbers the disks of one target on one adapter, so a node can
    /// have several disks at a LUN: on Azure the OS disk reports LUN 0 and
    /// the temporary disk LUN 1, both on adapter 0, the boot controller,
    /// while data disks sit on a SCSI controller of their own. A disk on
    /// adapter 0 is never a data disk by LUN: it is passed over even when
    /// it is the only one at the LUN (the data disk may not be attached
    /// yet, and staging, formatting or taking offline the OS or temporary
    /// disk in its place would destroy the node's own data). So:
    ///
    /// - one disk off adapter 0 reports `lun`: that disk;
    /// - none does (yet): looked for again until the wait ends, then
    ///   [`Error::NotFound`];
    /// - several do (two targets or adapters with data disks at that LUN,
    ///   as with two iSCSI targets): [`Error::Ambiguous`], naming each with
    ///   its location. Say which with [`lun_on`](Self::lun_on), which
    ///   reaches any adapter, adapter 0 included.
    ///
    /// Its text ([`Display`](fmt::Display), what the journal records) is
    /// `disk at LUN <lun>`.
    ///
    /// ```
    /// use csi_proxy_client::mount::DiskSelector;
    ///
    /// assert_eq!(DiskSelector::lun(0).to_string(), "disk at LUN 0");
    /// assert_eq!(
    ///     DiskSelector::lun_on(1, 0, 0).to_string(),
    ///     "disk at adapter 1, target 0, LUN 0"
    /// );
    /// ```
    pub fn lun(lun: impl fmt::Display) -> Self {
        Self(Selector::Lun(lun.to_string().trim().to_owned()))
    }

    /// The disk at logical unit `lun` of target `target` on adapter
    /// `adapter` (`ListDiskLocations`): exactly that place, whatever else
    /// reports the LUN. Each part compared as [`lun`](Self::lun) compares
    /// it; the bus (port) is not compared, since CSI Proxy leaves it empty.
    pub fn lun_on(
        adapter: impl fmt::Display,
        target: impl fmt::Display,
        lun: impl fmt::Display,
    ) -> Self {
        let part = |value: &dyn fmt::Display| value.to_string().trim().to_owned();
        Self(Selector::LunOn {
            adapter: part(&adapter),
            target: part(&target),
            lun: part(&lun),
        })
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

    /// Fails with [`Error::InvalidArgument`] for a selector that names no
    /// disk: an empty page 0x83 ID, serial number or LUN would otherwise
    /// select every disk that reports none.
    fn check(&self) -> Result<()> {
        let (what, value) = match &self.0 {
            Selector::Page83(id) => ("page 0x83 ID", id),
            Selector::Serial(serial) => ("serial number", serial),
            Selector::Lun(lun) => ("LUN", lun),
            Selector::LunOn { lun, .. } => ("LUN", lun),
            Selector::Matching(..) => return Ok(()),
        };
        match value.trim().is_empty() {
            true => Err(Error::invalid_argument(
                "disk selector",
                format!("its {what} is empty: it would name every disk that reports none"),
            )),
            false => Ok(()),
        }
    }

    /// Whether `candidate` is the disk.
    fn selects(&self, candidate: &DiskCandidate) -> bool {
        let ids = candidate.ids.as_ref();
        match &self.0 {
            Selector::Lun(lun) => candidate
                .location
                .as_ref()
                .is_some_and(|at| same_part(&at.lun_id, lun) && !on_boot_adapter(&at.adapter)),
            Selector::LunOn {
                adapter,
                target,
                lun,
            } => candidate.location.as_ref().is_some_and(|at| {
                same_part(&at.adapter, adapter)
                    && same_part(&at.target, target)
                    && same_part(&at.lun_id, lun)
            }),
            // An empty one names no disk (`check` refuses it first).
            Selector::Page83(id) => !id.is_empty() && ids.is_some_and(|ids| ids.page83 == *id),
            Selector::Serial(serial) => {
                !serial.is_empty() && ids.is_some_and(|ids| ids.serial_number == *serial)
            }
            Selector::Matching(_, predicate) => predicate(candidate),
        }
    }

    /// Which listings it needs.
    fn needs(&self) -> Wants {
        let (locations, ids) = match self.0 {
            Selector::Lun(_) | Selector::LunOn { .. } => (true, false),
            Selector::Page83(_) | Selector::Serial(_) => (false, true),
            Selector::Matching(..) => (true, true),
        };
        Wants { locations, ids }
    }
}

impl fmt::Display for DiskSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Selector::Lun(lun) => write!(f, "disk at LUN {lun}"),
            Selector::LunOn {
                adapter,
                target,
                lun,
            } => write!(f, "disk at adapter {adapter}, target {target}, LUN {lun}"),
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

/// Whether a part of a location (adapter, target, LUN) is the one wanted:
/// as numbers when both are numbers, else as text without case.
fn same_part(reported: &str, wanted: &str) -> bool {
    let reported = reported.trim();
    match (reported.parse::<u64>(), wanted.parse::<u64>()) {
        (Ok(a), Ok(b)) => a == b,
        _ => reported.eq_ignore_ascii_case(wanted),
    }
}

/// A disk as an [`Error::Ambiguous`] names it: its number, and where it
/// sits when that was listed.
fn describe(candidate: &DiskCandidate) -> String {
    match &candidate.location {
        Some(at) => format!(
            "disk {} (adapter {}, target {}, LUN {})",
            candidate.number,
            at.adapter.trim(),
            at.target.trim(),
            at.lun_id.trim()
        ),
        None => format!("disk {}", candidate.number),
    }
}

impl Mounter {
    /// The number of the one disk `selector` names, looking at once, then
    /// again every poll interval (with a rescan of the storage buses before
    /// each look but the first) until `wait` has passed, and a last time
    /// then.
    ///
    /// Concurrent finders of one mounter (a node's stages after a reboot,
    /// [`stats`](Self::stats), [`expand`](Self::expand)) share their looks:
    ///
    /// - a listing (`ListDiskLocations`, `ListDiskIDs`) serves every
    ///   finder that asked before it was sent; one that asks while a
    ///   listing is in flight waits for the next, sent when that one ends
    ///   for all who asked meanwhile. A listing newer than the request
    ///   serves every waiter: no finder is answered with a listing older
    ///   than its question, and each kind is in flight at most once at a
    ///   time;
    /// - waiting finders look again together, at the ticks of the
    ///   mounter's poll clock (one a poll interval), so a finder's first
    ///   look again comes within a poll interval of its first look;
    /// - a rescan asked for while one runs joins it, and one asked for in a
    ///   poll interval that already had one is skipped (the finder just
    ///   looks again): at most one rescan a poll interval in all. The
    ///   finders that waited for a rescan share the listings sent as it
    ///   ended;
    /// - a finder that gives up stops no shared call; a shared listing
    ///   that fails fails every finder it was to answer, with its error,
    ///   and the next look sends a new one.
    ///
    /// # Errors
    ///
    /// [`Error::NotFound`] when no disk matched by then, [`Error::Ambiguous`]
    /// at once when several do, each named with its location where it was
    /// listed; the error of a listing that failed.
    pub async fn find_disk(&self, selector: &DiskSelector, wait: Duration) -> Result<u32> {
        self.inner.disks.find_disk(selector, wait).await
    }
}

/// Finds disks: one by its selector ([`find_disk`](Self::find_disk)), the
/// one that holds a volume ([`disk_of`](Self::disk_of)), with the
/// listings and rescans its finders share.
pub(super) struct DiskFinder {
    proxy: CsiProxy,
    /// The disk listings and rescans concurrent finders share.
    listings: SharedListings,
    poll_interval: Duration,
}

impl DiskFinder {
    /// The finder on `proxy`, whose waiting finders look again every
    /// `poll_interval`.
    pub(super) fn new(proxy: CsiProxy, poll_interval: Duration) -> Self {
        Self {
            proxy,
            listings: SharedListings::default(),
            poll_interval,
        }
    }

    pub(super) async fn find_disk(&self, selector: &DiskSelector, wait: Duration) -> Result<u32> {
        selector.check()?;
        let disk = self.proxy.disk()?;
        let deadline = Instant::now() + wait;
        // The first look's listings are sent from now on; a later one's,
        // as its rescan ended (or from then on, when it was skipped).
        let mut after = AfterRescan::default();
        loop {
            let found = self.candidates(&disk, selector, after).await?;
            match found.as_slice() {
                [one] => return Ok(one.number),
                [] => {}
                several => {
                    return Err(Error::Ambiguous {
                        what: selector.to_string(),
                        candidates: several.iter().map(describe).collect(),
                    })
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::NotFound {
                    what: format!("{selector} (looked for {wait:?})"),
                });
            }
            // At the next tick of the poll clock, with every finder
            // waiting then: see the module docs of `shared_listings`.
            let poll = self.poll_interval;
            tokio::time::sleep_until(self.listings.next_poll(poll).min(deadline)).await;
            after = self.listings.rescan(&disk, poll, selector.needs()).await;
        }
    }

    /// The disks `selector` names now: from the listings sent `after` a
    /// rescan, or else sent after this call began, shared with the
    /// finders that look at the same time.
    async fn candidates(
        &self,
        disk: &Arc<dyn DiskApi>,
        selector: &DiskSelector,
        after: AfterRescan,
    ) -> Result<Vec<DiskCandidate>> {
        let wants = selector.needs();
        let mut locations = match wants.locations {
            true => self.listings.locations(disk, after).await?,
            false => Default::default(),
        };
        let mut ids = match wants.ids {
            true => match self.listings.ids(disk, after).await {
                Ok(ids) => ids,
                // v1alpha1 has no identifiers: a predicate sees none.
                Err(Error::Unsupported { .. }) if wants.locations => Default::default(),
                Err(error) => return Err(error),
            },
            false => Default::default(),
        };
        let mut numbers: Vec<u32> = locations.keys().chain(ids.keys()).copied().collect();
        numbers.sort_unstable();
        numbers.dedup();
        Ok(numbers
            .into_iter()
            .map(|number| DiskCandidate {
                number,
                location: locations.remove(&number),
                ids: ids.remove(&number),
            })
            .filter(|candidate| selector.selects(candidate))
            .collect())
    }

    /// The number of the disk that holds `volume` now: asked every time,
    /// since Windows numbers disks anew after a reboot or an attach.
    pub(in crate::mount) async fn disk_of(&self, volume: &VolumeId) -> Result<u32> {
        self.proxy
            .volume()?
            .get_disk_number_from_volume_id(volume)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn luns_compare_as_numbers_or_text() {
        assert!(same_part("03", "3"));
        assert!(same_part(" 3", "3"));
        assert!(same_part("Lun-A", "lun-a"));
        assert!(!same_part("13", "3"));
        assert_eq!(DiskSelector::lun(4).to_string(), "disk at LUN 4");
        assert_eq!(
            DiskSelector::lun_on(" 2", "0", 5).to_string(),
            "disk at adapter 2, target 0, LUN 5"
        );
    }

    fn at(number: u32, adapter: &str, target: &str, lun: &str) -> DiskCandidate {
        DiskCandidate {
            number,
            location: Some(DiskLocation {
                adapter: adapter.into(),
                bus: String::new(),
                target: target.into(),
                lun_id: lun.into(),
            }),
            ids: None,
        }
    }

    /// What `selector` selects of `disks`: their numbers.
    fn chosen(selector: &DiskSelector, disks: &[DiskCandidate]) -> Vec<u32> {
        let selected = disks.iter().filter(|d| selector.selects(d));
        selected.map(|d| d.number).collect()
    }

    #[test]
    fn an_empty_selector_names_no_disk_and_is_refused() {
        let blank = DiskCandidate {
            number: 4,
            location: Some(DiskLocation {
                adapter: "1".into(),
                bus: String::new(),
                target: "0".into(),
                lun_id: "4".into(),
            }),
            ids: Some(DiskIds {
                page83: String::new(),
                serial_number: String::new(),
            }),
        };
        for empty in [
            DiskSelector::page83(""),
            DiskSelector::serial_number(""),
            DiskSelector::lun(" "),
        ] {
            assert!(!empty.selects(&blank), "{empty}");
            let refused = empty.check().unwrap_err();
            assert!(
                matches!(refused, Error::InvalidArgument { .. }),
                "{refused}"
            );
        }
        assert!(DiskSelector::page83("Google  pv").check().is_ok());
    }

    #[test]
    fn a_lun_never_names_a_disk_on_adapter_0() {
        // An Azure node: the OS disk and the temporary disk on adapter 0,
        // data disks on adapter 3.
        let node = [
            at(0, "0", "0", "0"),
            at(1, "0", "0", "1"),
            at(2, "3", "0", "0"),
            at(3, "3", "0", "1"),
            at(4, "3", "0", "2"),
        ];
        assert_eq!(chosen(&DiskSelector::lun(0), &node), [2]);
        assert_eq!(chosen(&DiskSelector::lun(1), &node), [3]);
        assert_eq!(chosen(&DiskSelector::lun(2), &node), [4]);
        // The data disks not attached yet: the OS and temporary disks at
        // LUNs 0 and 1 are still not theirs (a finder waits, then says
        // NotFound).
        assert!(chosen(&DiskSelector::lun(0), &node[..2]).is_empty());
        assert!(chosen(&DiskSelector::lun(1), &node[..2]).is_empty());
        // Two data adapters (or targets) with a disk at the LUN: both are
        // selected (Ambiguous), and lun_on says which, adapter 0 included.
        let two = [
            at(0, "0", "0", "0"),
            at(5, "3", "0", "0"),
            at(6, "4", "1", "0"),
        ];
        assert_eq!(chosen(&DiskSelector::lun(0), &two), [5, 6]);
        assert_eq!(chosen(&DiskSelector::lun_on(4, 1, 0), &two), [6]);
        assert_eq!(chosen(&DiskSelector::lun_on(0, 0, 0), &two), [0]);
        // Adapter 0 as written by any proxy ("00", " 0").
        assert!(chosen(&DiskSelector::lun(0), &[at(7, "00", "0", "0")]).is_empty());
        assert_eq!(describe(&two[1]), "disk 5 (adapter 3, target 0, LUN 0)");
    }
}
