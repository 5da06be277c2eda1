//! The fake proxy's servers of the disk layouts, generated from the
//! catalogue (`string_id_disk.rs`, `numbered_disk.rs`), but for
//! v1alpha1's `GetDiskNumberByName`, written by hand here; and how they
//! write the group's own field kinds.

mod numbered_disk;
mod string_id_disk;

pub(super) use numbered_disk::NumberedDiskServer;
pub(super) use string_id_disk::StringIdDiskServer;

use std::collections::{BTreeMap, HashMap};

use tonic::Status;

use super::codec::{decode, reply, status, Answer};
use super::fields::{DiskName, ReadRequest, WriteAnswer};
use crate::adapter::disk::{
    NumberedDiskIds, NumberedLocations, StringIdDiskIds, StringIdLocations,
};
use crate::adapter::fields::DecimalDisk;
use crate::api::{DiskIds, DiskLocation, PROXY_NO_SUCH_PAGE83};
use crate::capability::DiskOperation as Op;
use crate::error::Error;
use crate::wire::disk::{v1 as numbered, v1alpha1 as alpha, v1beta2 as string_id};

impl StringIdDiskServer {
    /// v1alpha1's own RPC (the newer string-ID versions lack it: no route
    /// leads here from them).
    async fn disk_by_name(&self, _: Op, body: &[u8]) -> Answer {
        let request: alpha::GetDiskNumberByNameRequest = decode(body)?;
        let name = DiskName::from_request(request.disk_name)?;
        // The proxy's own words for an unknown identifier.
        let number = match self.api.get_disk_number_by_name(&name).await {
            Err(Error::NotFound { .. }) => {
                Err(Status::unknown(format!("{PROXY_NO_SUCH_PAGE83} {name}")))
            }
            other => other.map_err(status),
        }?;
        reply(alpha::GetDiskNumberByNameResponse {
            disk_number: DecimalDisk::to_answer(number),
        })
    }
}

impl WriteAnswer for StringIdLocations {
    type Value = BTreeMap<u32, DiskLocation>;
    type Wire = HashMap<String, string_id::DiskLocation>;

    fn to_answer(value: Self::Value) -> Self::Wire {
        (value.into_iter())
            .map(|(n, l)| {
                let l = string_id::DiskLocation {
                    adapter: l.adapter,
                    bus: l.bus,
                    target: l.target,
                    lunid: l.lun_id,
                };
                (n.to_string(), l)
            })
            .collect()
    }
}

/// The fake proxy leaves out an empty serial number, as the proxy does.
impl WriteAnswer for StringIdDiskIds {
    type Value = BTreeMap<u32, DiskIds>;
    type Wire = HashMap<String, string_id::DiskIDs>;

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

impl WriteAnswer for NumberedLocations {
    type Value = BTreeMap<u32, DiskLocation>;
    type Wire = HashMap<u32, numbered::DiskLocation>;

    fn to_answer(value: Self::Value) -> Self::Wire {
        (value.into_iter())
            .map(|(n, l)| {
                let l = numbered::DiskLocation {
                    adapter: l.adapter,
                    bus: l.bus,
                    target: l.target,
                    lunid: l.lun_id,
                };
                (n, l)
            })
            .collect()
    }
}

impl WriteAnswer for NumberedDiskIds {
    type Value = BTreeMap<u32, DiskIds>;
    type Wire = HashMap<u32, numbered::DiskIDs>;

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
