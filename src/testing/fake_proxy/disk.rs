//! Server side of the disk layouts.

use std::sync::Arc;

use async_trait::async_trait;
use tonic::Status;

use super::codec::{decode, disk_id, host, name, reply, wire_bytes, Answer};
use super::routing::WireServer;
use crate::api::{DiskApi, DiskLocation, PROXY_NO_SUCH_PAGE83};
use crate::capability::DiskOperation as Op;
use crate::error::Error;
use crate::wire::disk::{v1 as numbered, v1alpha1 as alpha, v1beta2 as string_id};

macro_rules! location_to_wire {
    ($($module:ident),+) => {$(
        impl From<DiskLocation> for $module::DiskLocation {
            fn from(l: DiskLocation) -> Self {
                Self { adapter: l.adapter, bus: l.bus, target: l.target, lunid: l.lun_id }
            }
        }
    )+};
}
location_to_wire!(string_id, numbered);

pub(super) struct StringIdDisk(pub Arc<dyn DiskApi>);

#[async_trait]
impl WireServer<Op> for StringIdDisk {
    async fn handle(&self, op: Op, body: &[u8]) -> Answer {
        let api = &self.0;
        match op {
            Op::ListDiskLocations => {
                decode::<string_id::ListDiskLocationsRequest>(body)?;
                let locations = host!(api.list_disk_locations());
                reply(string_id::ListDiskLocationsResponse {
                    disk_locations: locations
                        .into_iter()
                        .map(|(n, l)| (n.to_string(), l.into()))
                        .collect(),
                })
            }
            Op::PartitionDisk => {
                let request: string_id::PartitionDiskRequest = decode(body)?;
                host!(api.partition_disk(disk_id(&request.disk_id)?));
                reply(string_id::PartitionDiskResponse {})
            }
            Op::Rescan => {
                host!(api.rescan());
                reply(string_id::RescanResponse {})
            }
            Op::ListDiskIds => {
                let ids = host!(api.list_disk_ids());
                let disk_i_ds = ids
                    .into_iter()
                    .map(|(n, ids)| {
                        let mut identifiers =
                            std::collections::HashMap::from([("page83".to_owned(), ids.page83)]);
                        if !ids.serial_number.is_empty() {
                            identifiers.insert("serialNumber".to_owned(), ids.serial_number);
                        }
                        (n.to_string(), string_id::DiskIDs { identifiers })
                    })
                    .collect();
                reply(string_id::ListDiskIDsResponse { disk_i_ds })
            }
            Op::GetDiskStats => {
                let request: string_id::DiskStatsRequest = decode(body)?;
                let size = host!(api.get_disk_stats(disk_id(&request.disk_id)?));
                reply(string_id::DiskStatsResponse {
                    disk_size: wire_bytes(size),
                })
            }
            Op::SetDiskState => {
                let request: string_id::SetAttachStateRequest = decode(body)?;
                host!(api.set_disk_state(disk_id(&request.disk_id)?, request.is_online));
                reply(string_id::SetAttachStateResponse {})
            }
            Op::GetDiskState => {
                let request: string_id::GetAttachStateRequest = decode(body)?;
                let is_online = host!(api.get_disk_state(disk_id(&request.disk_id)?));
                reply(string_id::GetAttachStateResponse { is_online })
            }
            Op::GetDiskNumberByName => {
                let request: alpha::GetDiskNumberByNameRequest = decode(body)?;
                name("disk name", &request.disk_name)?;
                // The proxy's own words for an unknown identifier.
                let number = match api.get_disk_number_by_name(&request.disk_name).await {
                    Err(Error::NotFound { .. }) => Err(Status::unknown(format!(
                        "{PROXY_NO_SUCH_PAGE83} {}",
                        request.disk_name
                    ))),
                    other => other.map_err(super::codec::status),
                }?;
                reply(alpha::GetDiskNumberByNameResponse {
                    disk_number: number.to_string(),
                })
            }
        }
    }
}

pub(super) struct NumberedDisk(pub Arc<dyn DiskApi>);

#[async_trait]
impl WireServer<Op> for NumberedDisk {
    async fn handle(&self, op: Op, body: &[u8]) -> Answer {
        let api = &self.0;
        match op {
            Op::ListDiskLocations => {
                let locations = host!(api.list_disk_locations());
                reply(numbered::ListDiskLocationsResponse {
                    disk_locations: locations.into_iter().map(|(n, l)| (n, l.into())).collect(),
                })
            }
            Op::PartitionDisk => {
                let request: numbered::PartitionDiskRequest = decode(body)?;
                host!(api.partition_disk(request.disk_number));
                reply(numbered::PartitionDiskResponse {})
            }
            Op::Rescan => {
                host!(api.rescan());
                reply(numbered::RescanResponse {})
            }
            Op::ListDiskIds => {
                let ids = host!(api.list_disk_ids());
                let disk_i_ds = ids
                    .into_iter()
                    .map(|(n, ids)| {
                        let ids = numbered::DiskIDs {
                            page83: ids.page83,
                            serial_number: ids.serial_number,
                        };
                        (n, ids)
                    })
                    .collect();
                reply(numbered::ListDiskIDsResponse { disk_i_ds })
            }
            Op::GetDiskStats => {
                let request: numbered::GetDiskStatsRequest = decode(body)?;
                let size = host!(api.get_disk_stats(request.disk_number));
                reply(numbered::GetDiskStatsResponse {
                    total_bytes: wire_bytes(size),
                })
            }
            Op::SetDiskState => {
                let request: numbered::SetDiskStateRequest = decode(body)?;
                host!(api.set_disk_state(request.disk_number, request.is_online));
                reply(numbered::SetDiskStateResponse {})
            }
            Op::GetDiskState => {
                let request: numbered::GetDiskStateRequest = decode(body)?;
                let is_online = host!(api.get_disk_state(request.disk_number));
                reply(numbered::GetDiskStateResponse { is_online })
            }
            // Not in this layout.
            Op::GetDiskNumberByName => Err(super::routing::not_in_layout(op)),
        }
    }
}
