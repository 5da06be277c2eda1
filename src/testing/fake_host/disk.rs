//! The disk group of the fake host.

use std::collections::BTreeMap;

use async_trait::async_trait;

use super::{disk_ids, host_error, FakeHost};
use crate::api::{disk_by_page83, DiskApi, DiskIds, DiskLocation};
use crate::capability::Operation as Op;
use crate::error::Result;

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl DiskApi for FakeHost {
    async fn list_disk_locations(&self) -> Result<BTreeMap<u32, DiskLocation>> {
        Ok(self
            .state()
            .disks
            .iter()
            .map(|(&n, d)| (n, d.location.clone()))
            .collect())
    }

    async fn partition_disk(&self, disk: u32) -> Result<()> {
        let mut state = self.state();
        let Some(found) = state.disks.get(&disk) else {
            return Err(host_error(
                Op::PartitionDisk,
                format!("disk {disk} not found"),
            ));
        };
        if !found.online {
            return Err(host_error(
                Op::PartitionDisk,
                format!("disk {disk} is offline"),
            ));
        }
        // Already initialised: left as it is.
        if !found.partitioned {
            state.add_data_partition(disk);
        }
        Ok(())
    }

    async fn rescan(&self) -> Result<()> {
        self.state().rescans += 1;
        Ok(())
    }

    async fn list_disk_ids(&self) -> Result<BTreeMap<u32, DiskIds>> {
        Ok(self
            .state()
            .disks
            .iter()
            .map(|(&n, d)| (n, disk_ids(d)))
            .collect())
    }

    async fn get_disk_stats(&self, disk: u32) -> Result<u64> {
        self.state()
            .disks
            .get(&disk)
            .map(|d| d.size_bytes)
            .ok_or_else(|| host_error(Op::GetDiskStats, format!("disk {disk} not found")))
    }

    async fn set_disk_state(&self, disk: u32, online: bool) -> Result<()> {
        match self.state().disks.get_mut(&disk) {
            Some(found) => {
                found.online = online;
                Ok(())
            }
            None => Err(host_error(
                Op::SetDiskState,
                format!("disk {disk} not found"),
            )),
        }
    }

    async fn get_disk_state(&self, disk: u32) -> Result<bool> {
        self.state()
            .disks
            .get(&disk)
            .map(|d| d.online)
            .ok_or_else(|| host_error(Op::GetDiskState, format!("disk {disk} not found")))
    }

    /// As the proxy does from v1beta1 on.
    async fn get_disk_number_by_name(&self, page83: &str) -> Result<u32> {
        disk_by_page83(page83, self.list_disk_ids()).await
    }
}
