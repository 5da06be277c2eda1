//! The disk group's RPCs, one method each (the form: `catalogue/README.md`).

use crate::adapter::disk::{
    NumberedDiskIds, NumberedLocations, StringIdDiskIds, StringIdLocations,
};
use crate::adapter::fields::{Bytes, DecimalDisk};
use crate::api::{check_name, disk_by_page83, DiskIds, DiskLocation};
use std::collections::BTreeMap;

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
#[group(Disk, operations = DiskOperation)]
#[layout(
    StringIdDisk,
    wire = crate::wire::disk::v1beta2,
    doc = "v1alpha1, v1beta1, v1beta2: disk numbers as decimal strings,
           identifiers as a map."
)]
#[layout(
    NumberedDisk,
    wire = crate::wire::disk::v1,
    doc = "v1beta3, v1: `uint32` disk numbers, typed identifiers."
)]
trait DiskApi {
    /// Where each disk sits on its adapter, by disk number.
    #[operation(
        ListDiskLocations,
        name = "ListDiskLocations",
        effect = Reads,
        doc = "Where each disk sits on its adapter.",
        since(V1ALPHA1 = Native("ListDiskLocations"))
    )]
    #[wire(
        StringIdDisk,
        request = ListDiskLocationsRequest {},
        response = ListDiskLocationsResponse { disk_locations: StringIdLocations(disk_locations) }
    )]
    #[wire(
        NumberedDisk,
        request = ListDiskLocationsRequest {},
        response = ListDiskLocationsResponse { disk_locations: NumberedLocations(disk_locations) }
    )]
    async fn list_disk_locations(&self) -> Result<BTreeMap<u32, DiskLocation>>;

    /// Initialises disk `disk` (GPT since proxy v1.0, MBR before) and
    /// creates one partition spanning it. A disk that already has
    /// partitions is left as it is.
    #[operation(
        PartitionDisk,
        name = "PartitionDisk",
        effect = Mutates,
        doc = "Initialise a disk with one partition.",
        since(V1ALPHA1 = Native("PartitionDisk"))
    )]
    #[wire(
        StringIdDisk,
        request = PartitionDiskRequest { disk_id: DecimalDisk(disk) },
        response = PartitionDiskResponse {}
    )]
    #[wire(
        NumberedDisk,
        request = PartitionDiskRequest { disk_number: disk },
        response = PartitionDiskResponse {}
    )]
    async fn partition_disk(&self, disk: u32) -> Result<()>;

    /// Rescans the host's storage buses for new disks.
    #[operation(
        Rescan,
        name = "Rescan",
        effect = Mutates,
        doc = "Rescan the storage buses.",
        since(V1ALPHA1 = Native("Rescan"))
    )]
    #[wire(StringIdDisk, request = RescanRequest {}, response = RescanResponse {})]
    #[wire(NumberedDisk, request = RescanRequest {}, response = RescanResponse {})]
    async fn rescan(&self) -> Result<()>;

    /// The identifiers of each disk, by disk number. Needs v1beta1.
    #[operation(
        ListDiskIds,
        name = "ListDiskIDs",
        effect = Reads,
        doc = "The page83 and serial number identifiers of each disk.",
        since(V1ALPHA1 = No, V1BETA1 = Native("ListDiskIDs"))
    )]
    #[wire(
        StringIdDisk,
        request = ListDiskIDsRequest {},
        response = ListDiskIDsResponse { disk_i_ds: StringIdDiskIds(disk_i_ds) }
    )]
    #[wire(
        NumberedDisk,
        request = ListDiskIDsRequest {},
        response = ListDiskIDsResponse { disk_i_ds: NumberedDiskIds(disk_i_ds) }
    )]
    async fn list_disk_ids(&self) -> Result<BTreeMap<u32, DiskIds>>;

    /// The size of disk `disk` in bytes. Needs v1beta1.
    #[operation(
        GetDiskStats,
        name = "GetDiskStats",
        effect = Reads,
        doc = "The size of a disk.",
        since(
            V1ALPHA1 = No,
            V1BETA1 = Native("DiskStats"),
            V1BETA3 = Native("GetDiskStats")
        )
    )]
    #[wire(
        StringIdDisk,
        request = DiskStatsRequest { disk_id: DecimalDisk(disk) },
        response = DiskStatsResponse { disk_size: Bytes(disk_size) }
    )]
    #[wire(
        NumberedDisk,
        request = GetDiskStatsRequest { disk_number: disk },
        response = GetDiskStatsResponse { total_bytes: Bytes(total_bytes) }
    )]
    async fn get_disk_stats(&self, disk: u32) -> Result<u64>;

    /// Brings disk `disk` online (`true`) or takes it offline. Needs v1beta2.
    #[operation(
        SetDiskState,
        name = "SetDiskState",
        effect = Mutates,
        doc = "Bring a disk online or offline.",
        since(
            V1ALPHA1 = No,
            V1BETA2 = Native("SetAttachState"),
            V1BETA3 = Native("SetDiskState")
        )
    )]
    #[wire(
        StringIdDisk,
        request = SetAttachStateRequest { disk_id: DecimalDisk(disk), is_online: online },
        response = SetAttachStateResponse {}
    )]
    #[wire(
        NumberedDisk,
        request = SetDiskStateRequest { disk_number: disk, is_online: online },
        response = SetDiskStateResponse {}
    )]
    async fn set_disk_state(&self, disk: u32, online: bool) -> Result<()>;

    /// Whether disk `disk` is online. Needs v1beta2.
    #[operation(
        GetDiskState,
        name = "GetDiskState",
        effect = Reads,
        doc = "Whether a disk is online.",
        since(
            V1ALPHA1 = No,
            V1BETA2 = Native("GetAttachState"),
            V1BETA3 = Native("GetDiskState")
        )
    )]
    #[wire(
        StringIdDisk,
        request = GetAttachStateRequest { disk_id: DecimalDisk(disk) },
        response = GetAttachStateResponse { is_online }
    )]
    #[wire(
        NumberedDisk,
        request = GetDiskStateRequest { disk_number: disk },
        response = GetDiskStateResponse { is_online }
    )]
    async fn get_disk_state(&self, disk: u32) -> Result<bool>;

    /// The number of the disk whose page83 identifier is `page83`, or
    /// [`Error::NotFound`](crate::Error::NotFound) on every version when no
    /// disk has it.
    ///
    /// Only v1alpha1 has this RPC. On newer versions it is emulated exactly
    /// as the proxy implements it: [`list_disk_ids`](Self::list_disk_ids)
    /// and a match on `page83`. The default implementation does just that,
    /// so mocks get it for free.
    #[operation(
        GetDiskNumberByName,
        name = "GetDiskNumberByName",
        effect = Reads,
        doc = "The disk with a given page83 identifier.",
        since(V1ALPHA1 = Native("GetDiskNumberByName"), V1BETA1 = Emulated)
    )]
    #[check(check_name("disk name", page83))]
    #[wire(StringIdDisk, by_hand = disk_by_name)]
    async fn get_disk_number_by_name(&self, page83: &str) -> Result<u32> {
        disk_by_page83(page83, self.list_disk_ids()).await
    }
}
