//! The disk group's values (its trait is generated, in `disk.rs`).

use std::collections::BTreeMap;

use crate::error::Result;

/// Where a disk sits on its storage adapter, as Windows reports it
/// (`MSFT_Disk.Location`). All parts are text; `bus` is empty on servers
/// before v1.0.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiskLocation {
    /// The adapter.
    pub adapter: String,
    /// The bus (port).
    pub bus: String,
    /// The target.
    pub target: String,
    /// The logical unit number: what Azure and others use to find a disk.
    pub lun_id: String,
}

/// The identifiers of a disk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiskIds {
    /// The SCSI page 0x83 identifier, e.g. `"Google  persistent-disk-1"`.
    pub page83: String,
    /// The serial number; empty on many disks, and always empty from
    /// servers before v1.0.
    pub serial_number: String,
}

/// `GetDiskNumberByName` as the proxy emulates it from `ListDiskIDs`: checks
/// the name, then finds it among the identifiers that `list_disk_ids` gives.
pub(crate) async fn disk_by_page83(
    page83: &str,
    list_disk_ids: impl std::future::Future<Output = Result<BTreeMap<u32, DiskIds>>>,
) -> Result<u32> {
    crate::api::check_name("disk name", page83)?;
    find_disk_by_page83(&list_disk_ids.await?, page83)
}

/// The emulation of `GetDiskNumberByName`: the disk whose page83 identifier
/// equals `page83`.
fn find_disk_by_page83(ids: &BTreeMap<u32, DiskIds>, page83: &str) -> Result<u32> {
    ids.iter()
        .find(|(_, id)| id.page83 == page83)
        .map(|(&number, _)| number)
        .ok_or_else(|| no_disk_with_page83(page83))
}

/// What every version reports for a page83 identifier no disk has.
pub(crate) fn no_disk_with_page83(page83: &str) -> crate::error::Error {
    crate::error::Error::NotFound {
        what: format!("disk with page83 identifier {page83:?}"),
    }
}

/// How every CSI Proxy release words an unknown page83 identifier in
/// v1alpha1's own `GetDiskNumberByName` (capitalized in some releases).
pub(crate) const PROXY_NO_SUCH_PAGE83: &str = "could not find disk with Page83 ID";
