//! Disk adapters.
//!
//! - [`StringIdDisk`]: v1alpha1, v1beta1, v1beta2 — disk numbers as decimal
//!   strings, identifiers as a map with keys `page83` and `serialNumber`.
//! - [`NumberedDisk`]: v1beta3, v1 — `uint32` disk numbers, typed identifiers.

use std::collections::{BTreeMap, HashMap};

use super::convert::{by_disk_number, disk_number};
use super::fields::{AnswerField, Bytes, DecimalDisk, Plain};
use super::layout::wire_adapter;
use crate::api::{
    disk_by_page83, no_disk_with_page83, DiskApi, DiskIds, DiskLocation, PROXY_NO_SUCH_PAGE83,
};
use crate::capability::Operation;
use crate::error::{Code, Error, Result};
use crate::wire::disk::{v1 as numbered, v1alpha1 as alpha, v1beta2 as string_id};

/// Both families carry the same `DiskLocation` message.
macro_rules! location_both_ways {
    ($($module:ident),+) => {$(
        impl From<$module::DiskLocation> for DiskLocation {
            fn from(l: $module::DiskLocation) -> Self {
                Self { adapter: l.adapter, bus: l.bus, target: l.target, lun_id: l.lunid }
            }
        }

        #[cfg(feature = "testing")]
        impl From<DiskLocation> for $module::DiskLocation {
            fn from(l: DiskLocation) -> Self {
                Self { adapter: l.adapter, bus: l.bus, target: l.target, lunid: l.lun_id }
            }
        }
    )+};
}
location_both_ways!(string_id, numbered);

/// Disk locations keyed by decimal strings.
pub(crate) struct StringIdLocations;

impl AnswerField for StringIdLocations {
    type Value = BTreeMap<u32, DiskLocation>;
    type Wire = HashMap<String, string_id::DiskLocation>;

    fn from_answer(operation: Operation, _: &'static str, wire: Self::Wire) -> Result<Self::Value> {
        by_disk_number(operation, wire, DiskLocation::from)
    }

    #[cfg(feature = "testing")]
    fn to_answer(value: Self::Value) -> Self::Wire {
        value
            .into_iter()
            .map(|(n, l)| (n.to_string(), l.into()))
            .collect()
    }
}

/// Disk identifiers keyed by decimal strings, each a map with the keys
/// `page83` and `serialNumber` (the fake proxy leaves out an empty serial
/// number, as the proxy does).
pub(crate) struct StringIdDiskIds;

impl AnswerField for StringIdDiskIds {
    type Value = BTreeMap<u32, DiskIds>;
    type Wire = HashMap<String, string_id::DiskIDs>;

    fn from_answer(operation: Operation, _: &'static str, wire: Self::Wire) -> Result<Self::Value> {
        by_disk_number(operation, wire, |mut ids| DiskIds {
            page83: ids.identifiers.remove("page83").unwrap_or_default(),
            serial_number: ids.identifiers.remove("serialNumber").unwrap_or_default(),
        })
    }

    #[cfg(feature = "testing")]
    fn to_answer(value: Self::Value) -> Self::Wire {
        value
            .into_iter()
            .map(|(n, ids)| {
                let mut identifiers = HashMap::from([("page83".to_owned(), ids.page83)]);
                if !ids.serial_number.is_empty() {
                    identifiers.insert("serialNumber".to_owned(), ids.serial_number);
                }
                (n.to_string(), string_id::DiskIDs { identifiers })
            })
            .collect()
    }
}

/// Disk locations keyed by number.
pub(crate) struct NumberedLocations;

impl AnswerField for NumberedLocations {
    type Value = BTreeMap<u32, DiskLocation>;
    type Wire = HashMap<u32, numbered::DiskLocation>;

    fn from_answer(_: Operation, _: &'static str, wire: Self::Wire) -> Result<Self::Value> {
        Ok(wire.into_iter().map(|(n, l)| (n, l.into())).collect())
    }

    #[cfg(feature = "testing")]
    fn to_answer(value: Self::Value) -> Self::Wire {
        value.into_iter().map(|(n, l)| (n, l.into())).collect()
    }
}

/// Disk identifiers keyed by number.
pub(crate) struct NumberedDiskIds;

impl AnswerField for NumberedDiskIds {
    type Value = BTreeMap<u32, DiskIds>;
    type Wire = HashMap<u32, numbered::DiskIDs>;

    fn from_answer(_: Operation, _: &'static str, wire: Self::Wire) -> Result<Self::Value> {
        Ok(wire
            .into_iter()
            .map(|(n, ids)| {
                let ids = DiskIds {
                    page83: ids.page83,
                    serial_number: ids.serial_number,
                };
                (n, ids)
            })
            .collect())
    }

    #[cfg(feature = "testing")]
    fn to_answer(value: Self::Value) -> Self::Wire {
        value
            .into_iter()
            .map(|(n, ids)| {
                let ids = numbered::DiskIDs {
                    page83: ids.page83,
                    serial_number: ids.serial_number,
                };
                (n, ids)
            })
            .collect()
    }
}

/// The string-ID layout's table (see `super::layout`).
macro_rules! string_id_disk {
    ($then:ident $($carry:tt)*) => {
        $then! { $($carry)* {
            /// v1alpha1, v1beta1, v1beta2: disk numbers as decimal strings,
            /// identifiers as a map.
            StringIdDisk: DiskApi in crate::wire::disk::v1beta2;

            fn list_disk_locations() -> BTreeMap<u32, DiskLocation>
                = ListDiskLocations: ListDiskLocationsRequest {}
                -> ListDiskLocationsResponse { disk_locations: StringIdLocations }
                => (disk_locations);
            fn partition_disk(disk: u32) -> ()
                = PartitionDisk: PartitionDiskRequest { disk_id: disk as DecimalDisk }
                -> PartitionDiskResponse {} => ();
            fn rescan() -> () = Rescan: RescanRequest {} -> RescanResponse {} => ();
            fn list_disk_ids() -> BTreeMap<u32, DiskIds>
                = ListDiskIds: ListDiskIDsRequest {}
                -> ListDiskIDsResponse { disk_i_ds: StringIdDiskIds } => (disk_i_ds);
            fn get_disk_stats(disk: u32) -> u64
                = GetDiskStats: DiskStatsRequest { disk_id: disk as DecimalDisk }
                -> DiskStatsResponse { disk_size: Bytes } => (disk_size);
            fn set_disk_state(disk: u32, online: bool) -> ()
                = SetDiskState: SetAttachStateRequest {
                    disk_id: disk as DecimalDisk,
                    is_online: online as Plain<bool>
                }
                -> SetAttachStateResponse {} => ();
            fn get_disk_state(disk: u32) -> bool
                = GetDiskState: GetAttachStateRequest { disk_id: disk as DecimalDisk }
                -> GetAttachStateResponse { is_online: Plain<bool> } => (is_online);
            fn get_disk_number_by_name(page83: &str) -> u32
                = by hand disk_by_name: GetDiskNumberByName;
        } }
    };
}
#[cfg(feature = "testing")] // for the fake proxy
pub(crate) use string_id_disk;

/// The numbered layout's table (see `super::layout`).
macro_rules! numbered_disk {
    ($then:ident $($carry:tt)*) => {
        $then! { $($carry)* {
            /// v1beta3, v1: `uint32` disk numbers, typed identifiers.
            NumberedDisk: DiskApi in crate::wire::disk::v1;

            fn list_disk_locations() -> BTreeMap<u32, DiskLocation>
                = ListDiskLocations: ListDiskLocationsRequest {}
                -> ListDiskLocationsResponse { disk_locations: NumberedLocations }
                => (disk_locations);
            fn partition_disk(disk: u32) -> ()
                = PartitionDisk: PartitionDiskRequest { disk_number: disk as Plain<u32> }
                -> PartitionDiskResponse {} => ();
            fn rescan() -> () = Rescan: RescanRequest {} -> RescanResponse {} => ();
            fn list_disk_ids() -> BTreeMap<u32, DiskIds>
                = ListDiskIds: ListDiskIDsRequest {}
                -> ListDiskIDsResponse { disk_i_ds: NumberedDiskIds } => (disk_i_ds);
            fn get_disk_stats(disk: u32) -> u64
                = GetDiskStats: GetDiskStatsRequest { disk_number: disk as Plain<u32> }
                -> GetDiskStatsResponse { total_bytes: Bytes } => (total_bytes);
            fn set_disk_state(disk: u32, online: bool) -> ()
                = SetDiskState: SetDiskStateRequest {
                    disk_number: disk as Plain<u32>,
                    is_online: online as Plain<bool>
                }
                -> SetDiskStateResponse {} => ();
            fn get_disk_state(disk: u32) -> bool
                = GetDiskState: GetDiskStateRequest { disk_number: disk as Plain<u32> }
                -> GetDiskStateResponse { is_online: Plain<bool> } => (is_online);
            fn get_disk_number_by_name(page83: &str) -> u32
                = by hand disk_by_name: GetDiskNumberByName;
        } }
    };
}
#[cfg(feature = "testing")] // for the fake proxy
pub(crate) use numbered_disk;

string_id_disk!(wire_adapter);
numbered_disk!(wire_adapter);

impl StringIdDisk {
    /// Native on v1alpha1; emulated through `ListDiskIDs` after.
    async fn disk_by_name(&self, page83: &str) -> Result<u32> {
        if !self.wire.is_native(Operation::GetDiskNumberByName) {
            return disk_by_page83(page83, self.list_disk_ids()).await;
        }
        let request = alpha::GetDiskNumberByNameRequest {
            disk_name: page83.to_owned(),
        };
        let sent: Result<alpha::GetDiskNumberByNameResponse> = self
            .wire
            .call(Operation::GetDiskNumberByName, request)
            .await;
        let response = sent.map_err(|e| match e {
            // The same answer as the emulation on newer versions.
            Error::Host {
                code: Code::Unknown,
                message,
                ..
            } if contains_ignoring_case(&message, PROXY_NO_SUCH_PAGE83) => {
                no_disk_with_page83(page83)
            }
            other => other,
        })?;
        disk_number(Operation::GetDiskNumberByName, &response.disk_number)
    }
}

/// Whether `text` contains `part`, ASCII case ignored.
fn contains_ignoring_case(text: &str, part: &str) -> bool {
    text.to_ascii_lowercase()
        .contains(&part.to_ascii_lowercase())
}

impl NumberedDisk {
    /// No such RPC: emulated as the proxy does.
    async fn disk_by_name(&self, page83: &str) -> Result<u32> {
        disk_by_page83(page83, self.list_disk_ids()).await
    }
}
