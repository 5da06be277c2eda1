//! The disk group's RPCs (see [the module](super)).

/// The disk group's RPCs, each defined once (see [the module](super)).
macro_rules! disk_rpcs {
    ($then:ident $($carry:tt)*) => {
        $then! {
            $($carry)*
            {
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
            trait DiskApi: Disk => DiskOperation;

            /// Where each disk sits on its adapter, by disk number.
            fn list_disk_locations(&self) -> BTreeMap<u32, DiskLocation> = {
                /// Where each disk sits on its adapter.
                ListDiskLocations = "ListDiskLocations", Reads,
                    [V1ALPHA1 => Native("ListDiskLocations")]
            };

            /// Initialises disk `disk` (GPT since proxy v1.0, MBR before) and
            /// creates one partition spanning it. A disk that already has
            /// partitions is left as it is.
            fn partition_disk(&self, disk: u32) -> () = {
                /// Initialise a disk with one partition.
                PartitionDisk = "PartitionDisk", Mutates, [V1ALPHA1 => Native("PartitionDisk")]
            };

            /// Rescans the host's storage buses for new disks.
            fn rescan(&self) -> () = {
                /// Rescan the storage buses.
                Rescan = "Rescan", Mutates, [V1ALPHA1 => Native("Rescan")]
            };

            /// The identifiers of each disk, by disk number. Needs v1beta1.
            fn list_disk_ids(&self) -> BTreeMap<u32, DiskIds> = {
                /// The page83 and serial number identifiers of each disk.
                ListDiskIds = "ListDiskIDs", Reads,
                    [V1ALPHA1 => No, V1BETA1 => Native("ListDiskIDs")]
            };

            /// The size of disk `disk` in bytes. Needs v1beta1.
            fn get_disk_stats(&self, disk: u32) -> u64 = {
                /// The size of a disk.
                GetDiskStats = "GetDiskStats", Reads, [
                    V1ALPHA1 => No,
                    V1BETA1 => Native("DiskStats"),
                    V1BETA3 => Native("GetDiskStats"),
                ]
            };

            /// Brings disk `disk` online (`true`) or takes it offline. Needs v1beta2.
            fn set_disk_state(&self, disk: u32, online: bool) -> () = {
                /// Bring a disk online or offline.
                SetDiskState = "SetDiskState", Mutates, [
                    V1ALPHA1 => No,
                    V1BETA2 => Native("SetAttachState"),
                    V1BETA3 => Native("SetDiskState"),
                ]
            };

            /// Whether disk `disk` is online. Needs v1beta2.
            fn get_disk_state(&self, disk: u32) -> bool = {
                /// Whether a disk is online.
                GetDiskState = "GetDiskState", Reads, [
                    V1ALPHA1 => No,
                    V1BETA2 => Native("GetAttachState"),
                    V1BETA3 => Native("GetDiskState"),
                ]
            };

            /// The number of the disk whose page83 identifier is `page83`, or
            /// [`Error::NotFound`](crate::Error::NotFound) on every version when no
            /// disk has it.
            ///
            /// Only v1alpha1 has this RPC. On newer versions it is emulated exactly
            /// as the proxy implements it: [`list_disk_ids`](Self::list_disk_ids)
            /// and a match on `page83`. The default implementation does just that,
            /// so mocks get it for free.
            fn get_disk_number_by_name(&self, page83: &str) -> u32 = {
                /// The disk with a given page83 identifier.
                GetDiskNumberByName = "GetDiskNumberByName", Reads,
                    [V1ALPHA1 => Native("GetDiskNumberByName"), V1BETA1 => Emulated]
            }
            check { check_name("disk name", page83) }
            default { disk_by_page83(page83, self.list_disk_ids()).await };
            }
        }
    };
}
pub(crate) use disk_rpcs;
