//! Disk adapters.
//!
//! - [`StringIdDisk`]: v1alpha1, v1beta1, v1beta2 — disk numbers as decimal
//!   strings, identifiers as a map with keys `page83` and `serialNumber`.
//! - [`NumberedDisk`]: v1beta3, v1 — `uint32` disk numbers, typed identifiers.

mod numbered_disk;
mod string_id_disk;

pub(crate) use numbered_disk::NumberedDisk;
pub(crate) use string_id_disk::StringIdDisk;

use std::collections::{BTreeMap, HashMap};

use super::convert::{by_disk_number, disk_number};
use super::fields::AnswerField;
use crate::api::{
    disk_by_page83, no_disk_with_page83, DiskApi, DiskIds, DiskLocation, PROXY_NO_SUCH_PAGE83,
};
use crate::capability::Operation;
use crate::error::{Code, Error, Result};
use crate::wire::disk::{v1 as numbered, v1alpha1 as alpha, v1beta2 as string_id};

impl From<string_id::DiskLocation> for DiskLocation {
    fn from(l: string_id::DiskLocation) -> Self {
        Self {
            adapter: l.adapter,
            bus: l.bus,
            target: l.target,
            lun_id: l.lunid,
        }
    }
}

/// The same message as the string-ID layout's.
impl From<numbered::DiskLocation> for DiskLocation {
    fn from(l: numbered::DiskLocation) -> Self {
        Self {
            adapter: l.adapter,
            bus: l.bus,
            target: l.target,
            lun_id: l.lunid,
        }
    }
}

/// Disk locations keyed by decimal strings.
pub(crate) struct StringIdLocations;

impl AnswerField for StringIdLocations {
    type Value = BTreeMap<u32, DiskLocation>;
    type Wire = HashMap<String, string_id::DiskLocation>;

    fn from_answer(operation: Operation, _: &'static str, wire: Self::Wire) -> Result<Self::Value> {
        by_disk_number(operation, wire, DiskLocation::from)
    }
}

/// Disk identifiers keyed by decimal strings, each a map with the keys
/// `page83` and `serialNumber` (the proxy leaves out an empty serial
/// number).
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
}

/// Disk locations keyed by number.
pub(crate) struct NumberedLocations;

impl AnswerField for NumberedLocations {
    type Value = BTreeMap<u32, DiskLocation>;
    type Wire = HashMap<u32, numbered::DiskLocation>;

    fn from_answer(_: Operation, _: &'static str, wire: Self::Wire) -> Result<Self::Value> {
        Ok(wire.into_iter().map(|(n, l)| (n, l.into())).collect())
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
}

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
