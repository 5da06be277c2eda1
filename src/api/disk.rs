//! The disk group.

use std::collections::BTreeMap;

use super::define::group_trait;
use crate::capability::Operation;
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

/// The disk group's RPCs, each defined once: its method, its arguments,
/// its answer, its [`Operation`] and the checks its arguments get before
/// anything is sent. `disk_rpcs!(m)` hands the list to the macro `m`:
/// [`group_trait`](super::define) makes the trait of it, and the client
/// its handle.
macro_rules! disk_rpcs {
    ($then:ident) => {
        $then! {
            /// The disk group: find disks, partition them, bring them online.
            ///
            /// Disks are named by their Windows disk number. Obtain an implementation
            /// from [`CsiProxy::disk`](crate::CsiProxy::disk), or implement it to mock
            /// the host in a driver's unit tests.
            ///
            /// ```
            /// use std::collections::BTreeMap;
            /// use csi_proxy_client::{api::{DiskApi, DiskIds, DiskLocation}, async_trait, Error, Result};
            ///
            /// /// A host with one disk, number 2, with page83 ID "pd-1".
            /// struct OneDisk;
            ///
            /// #[async_trait]
            /// impl DiskApi for OneDisk {
            ///     async fn list_disk_locations(&self) -> Result<BTreeMap<u32, DiskLocation>> {
            ///         Ok(BTreeMap::from([(2, DiskLocation { lun_id: "0".into(), ..Default::default() })]))
            ///     }
            ///     async fn list_disk_ids(&self) -> Result<BTreeMap<u32, DiskIds>> {
            ///         Ok(BTreeMap::from([(2, DiskIds { page83: "pd-1".into(), serial_number: String::new() })]))
            ///     }
            /// }
            ///
            /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<()> {
            /// let disk: std::sync::Arc<dyn DiskApi> = std::sync::Arc::new(OneDisk);
            /// assert_eq!(disk.get_disk_number_by_name("pd-1").await?, 2);
            /// // Methods a mock does not implement say so.
            /// assert!(matches!(disk.rescan().await, Err(Error::NotImplemented { .. })));
            /// # Ok(()) }
            /// ```
            trait DiskApi;

            /// Where each disk sits on its adapter, by disk number.
            fn list_disk_locations(&self) -> BTreeMap<u32, DiskLocation>
                = Operation::ListDiskLocations;

            /// Initialises disk `disk` (GPT since proxy v1.0, MBR before) and
            /// creates one partition spanning it. A disk that already has
            /// partitions is left as it is.
            fn partition_disk(&self, disk: u32) -> () = Operation::PartitionDisk;

            /// Rescans the host's storage buses for new disks.
            fn rescan(&self) -> () = Operation::Rescan;

            /// The identifiers of each disk, by disk number. Needs v1beta1.
            fn list_disk_ids(&self) -> BTreeMap<u32, DiskIds> = Operation::ListDiskIds;

            /// The size of disk `disk` in bytes. Needs v1beta1.
            fn get_disk_stats(&self, disk: u32) -> u64 = Operation::GetDiskStats;

            /// Brings disk `disk` online (`true`) or takes it offline. Needs v1beta2.
            fn set_disk_state(&self, disk: u32, online: bool) -> () = Operation::SetDiskState;

            /// Whether disk `disk` is online. Needs v1beta2.
            fn get_disk_state(&self, disk: u32) -> bool = Operation::GetDiskState;

            /// The number of the disk whose page83 identifier is `page83`, or
            /// [`Error::NotFound`](crate::Error::NotFound) on every version when no
            /// disk has it.
            ///
            /// Only v1alpha1 has this RPC. On newer versions it is emulated exactly
            /// as the proxy implements it: [`list_disk_ids`](Self::list_disk_ids)
            /// and a match on `page83`. The default implementation does just that,
            /// so mocks get it for free.
            fn get_disk_number_by_name(&self, page83: &str) -> u32 = Operation::GetDiskNumberByName,
                check crate::api::check_name("disk name", page83),
                default { crate::api::disk_by_page83(page83, self.list_disk_ids()).await };
        }
    };
}
pub(crate) use disk_rpcs;

disk_rpcs!(group_trait);

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
pub(crate) fn no_disk_with_page83(page83: &str) -> crate::Error {
    crate::Error::NotFound {
        what: format!("disk with page83 identifier {page83:?}"),
    }
}

/// How every CSI Proxy release words an unknown page83 identifier in
/// v1alpha1's own `GetDiskNumberByName` (capitalized in some releases).
pub(crate) const PROXY_NO_SUCH_PAGE83: &str = "could not find disk with Page83 ID";
