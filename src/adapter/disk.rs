//! Disk adapters.
//!
//! - [`StringIdDisk`]: v1alpha1, v1beta1, v1beta2 — disk numbers as decimal
//!   strings, identifiers as a map with keys `page83` and `serialNumber`.
//! - [`NumberedDisk`]: v1beta3, v1 — `uint32` disk numbers, typed identifiers.

use std::collections::BTreeMap;

use async_trait::async_trait;

use super::convert::{by_disk_number, byte_count, disk_number};
use super::WireClient;
use crate::api::{
    disk_by_page83, no_disk_with_page83, DiskApi, DiskIds, DiskLocation, PROXY_NO_SUCH_PAGE83,
};
use crate::capability::Operation as Op;
use crate::error::{Code, Error, Result};
use crate::wire::disk::{v1 as numbered, v1alpha1 as alpha, v1beta2 as string_id};

/// Both families carry the same `DiskLocation` message.
macro_rules! location_from_wire {
    ($($module:ident),+) => {$(
        impl From<$module::DiskLocation> for DiskLocation {
            fn from(l: $module::DiskLocation) -> Self {
                Self { adapter: l.adapter, bus: l.bus, target: l.target, lun_id: l.lunid }
            }
        }
    )+};
}
location_from_wire!(string_id, numbered);

pub(super) struct StringIdDisk {
    wire: WireClient,
}

impl StringIdDisk {
    pub fn new(wire: WireClient) -> Self {
        Self { wire }
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl DiskApi for StringIdDisk {
    async fn list_disk_locations(&self) -> Result<BTreeMap<u32, DiskLocation>> {
        let request = string_id::ListDiskLocationsRequest {};
        let response: string_id::ListDiskLocationsResponse =
            self.wire.call(Op::ListDiskLocations, request).await?;
        by_disk_number(
            Op::ListDiskLocations,
            response.disk_locations,
            DiskLocation::from,
        )
    }

    async fn partition_disk(&self, disk: u32) -> Result<()> {
        let request = string_id::PartitionDiskRequest {
            disk_id: disk.to_string(),
        };
        let _: string_id::PartitionDiskResponse =
            self.wire.call(Op::PartitionDisk, request).await?;
        Ok(())
    }

    async fn rescan(&self) -> Result<()> {
        let _: string_id::RescanResponse = self
            .wire
            .call(Op::Rescan, string_id::RescanRequest {})
            .await?;
        Ok(())
    }

    async fn list_disk_ids(&self) -> Result<BTreeMap<u32, DiskIds>> {
        let request = string_id::ListDiskIDsRequest {};
        let response: string_id::ListDiskIDsResponse =
            self.wire.call(Op::ListDiskIds, request).await?;
        by_disk_number(Op::ListDiskIds, response.disk_i_ds, |mut ids| DiskIds {
            page83: ids.identifiers.remove("page83").unwrap_or_default(),
            serial_number: ids.identifiers.remove("serialNumber").unwrap_or_default(),
        })
    }

    async fn get_disk_stats(&self, disk: u32) -> Result<u64> {
        let request = string_id::DiskStatsRequest {
            disk_id: disk.to_string(),
        };
        let response: string_id::DiskStatsResponse =
            self.wire.call(Op::GetDiskStats, request).await?;
        byte_count(Op::GetDiskStats, "disk size", response.disk_size)
    }

    async fn set_disk_state(&self, disk: u32, online: bool) -> Result<()> {
        let request = string_id::SetAttachStateRequest {
            disk_id: disk.to_string(),
            is_online: online,
        };
        let _: string_id::SetAttachStateResponse =
            self.wire.call(Op::SetDiskState, request).await?;
        Ok(())
    }

    async fn get_disk_state(&self, disk: u32) -> Result<bool> {
        let request = string_id::GetAttachStateRequest {
            disk_id: disk.to_string(),
        };
        let response: string_id::GetAttachStateResponse =
            self.wire.call(Op::GetDiskState, request).await?;
        Ok(response.is_online)
    }

    /// Native on v1alpha1; emulated through `ListDiskIDs` after.
    async fn get_disk_number_by_name(&self, page83: &str) -> Result<u32> {
        if !self.wire.is_native(Op::GetDiskNumberByName) {
            return disk_by_page83(page83, self.list_disk_ids()).await;
        }
        let request = alpha::GetDiskNumberByNameRequest {
            disk_name: page83.to_owned(),
        };
        let sent: Result<alpha::GetDiskNumberByNameResponse> =
            self.wire.call(Op::GetDiskNumberByName, request).await;
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
        disk_number(Op::GetDiskNumberByName, &response.disk_number)
    }
}

/// Whether `text` contains `part`, ASCII case ignored.
fn contains_ignoring_case(text: &str, part: &str) -> bool {
    text.to_ascii_lowercase()
        .contains(&part.to_ascii_lowercase())
}

pub(super) struct NumberedDisk {
    wire: WireClient,
}

impl NumberedDisk {
    pub fn new(wire: WireClient) -> Self {
        Self { wire }
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl DiskApi for NumberedDisk {
    async fn list_disk_locations(&self) -> Result<BTreeMap<u32, DiskLocation>> {
        let request = numbered::ListDiskLocationsRequest {};
        let response: numbered::ListDiskLocationsResponse =
            self.wire.call(Op::ListDiskLocations, request).await?;
        Ok(response
            .disk_locations
            .into_iter()
            .map(|(n, l)| (n, l.into()))
            .collect())
    }

    async fn partition_disk(&self, disk: u32) -> Result<()> {
        let request = numbered::PartitionDiskRequest { disk_number: disk };
        let _: numbered::PartitionDiskResponse = self.wire.call(Op::PartitionDisk, request).await?;
        Ok(())
    }

    async fn rescan(&self) -> Result<()> {
        let _: numbered::RescanResponse = self
            .wire
            .call(Op::Rescan, numbered::RescanRequest {})
            .await?;
        Ok(())
    }

    async fn list_disk_ids(&self) -> Result<BTreeMap<u32, DiskIds>> {
        let request = numbered::ListDiskIDsRequest {};
        let response: numbered::ListDiskIDsResponse =
            self.wire.call(Op::ListDiskIds, request).await?;
        Ok(response
            .disk_i_ds
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

    async fn get_disk_stats(&self, disk: u32) -> Result<u64> {
        let request = numbered::GetDiskStatsRequest { disk_number: disk };
        let response: numbered::GetDiskStatsResponse =
            self.wire.call(Op::GetDiskStats, request).await?;
        byte_count(Op::GetDiskStats, "disk size", response.total_bytes)
    }

    async fn set_disk_state(&self, disk: u32, online: bool) -> Result<()> {
        let request = numbered::SetDiskStateRequest {
            disk_number: disk,
            is_online: online,
        };
        let _: numbered::SetDiskStateResponse = self.wire.call(Op::SetDiskState, request).await?;
        Ok(())
    }

    async fn get_disk_state(&self, disk: u32) -> Result<bool> {
        let request = numbered::GetDiskStateRequest { disk_number: disk };
        let response: numbered::GetDiskStateResponse =
            self.wire.call(Op::GetDiskState, request).await?;
        Ok(response.is_online)
    }

    /// No such RPC: emulated as the proxy does.
    async fn get_disk_number_by_name(&self, page83: &str) -> Result<u32> {
        disk_by_page83(page83, self.list_disk_ids()).await
    }
}
