//! The disk group of the fake host.

use std::collections::BTreeMap;

use async_trait::async_trait;

use super::faults::{windows_error, WindowsError};
use super::state::HostState;
use super::{disk_ids, host_error, FakeDisk, FakeHost};
use crate::api::{disk_by_page83, DiskApi, DiskIds, DiskLocation};
use crate::capability::Operation as Op;
use crate::error::Result;

impl HostState {
    fn disk_mut(&mut self, op: Op, disk: u32) -> Result<&mut FakeDisk> {
        self.disks
            .get_mut(&disk)
            .ok_or_else(|| host_error(op, format!("disk {disk} not found")))
    }

    fn partition_disk(&mut self, disk: u32) -> Result<()> {
        let op = Op::PartitionDisk;
        let found = self.disk_mut(op, disk)?;
        // A disk with a partition, online or not (Windows reads an offline
        // disk's partition table): left as it is, nothing written, and
        // success, as CSI Proxy answers when `BasicPartitionsExist` says
        // so. Its success proves nothing about who made the partition.
        if found.partitioned {
            return Ok(());
        }
        if !found.online {
            return Err(host_error(op, format!("disk {disk} is offline")));
        }
        if found.read_only {
            return Err(windows_error(op, WindowsError::WRITE_PROTECT));
        }
        if let Some(volume) = self.add_data_partition(disk) {
            self.made_by_partition.insert(volume);
        }
        Ok(())
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl DiskApi for FakeHost {
    async fn list_disk_locations(&self) -> Result<BTreeMap<u32, DiskLocation>> {
        self.host_call(Op::ListDiskLocations, |state| {
            Ok(state
                .disks
                .iter()
                .map(|(&n, d)| (n, d.location.clone()))
                .collect())
        })
        .await
    }

    async fn partition_disk(&self, disk: u32) -> Result<()> {
        self.host_call(Op::PartitionDisk, move |state| state.partition_disk(disk))
            .await
    }

    async fn rescan(&self) -> Result<()> {
        self.host_call(Op::Rescan, |state| {
            state.rescans += 1;
            Ok(())
        })
        .await
    }

    async fn list_disk_ids(&self) -> Result<BTreeMap<u32, DiskIds>> {
        self.host_call(Op::ListDiskIds, |state| Ok(all_disk_ids(state)))
            .await
    }

    async fn get_disk_stats(&self, disk: u32) -> Result<u64> {
        self.host_call(Op::GetDiskStats, move |state| {
            Ok(state.disk_mut(Op::GetDiskStats, disk)?.size_bytes)
        })
        .await
    }

    /// Changes only whether the disk is online: a read-only disk stays so,
    /// as with CSI Proxy.
    async fn set_disk_state(&self, disk: u32, online: bool) -> Result<()> {
        self.host_call(Op::SetDiskState, move |state| {
            state.disk_mut(Op::SetDiskState, disk)?.online = online;
            Ok(())
        })
        .await
    }

    async fn get_disk_state(&self, disk: u32) -> Result<bool> {
        self.host_call(Op::GetDiskState, move |state| {
            Ok(state.disk_mut(Op::GetDiskState, disk)?.online)
        })
        .await
    }

    /// As the proxy does from v1beta1 on, counted as one call of
    /// `GetDiskNumberByName`.
    async fn get_disk_number_by_name(&self, page83: &str) -> Result<u32> {
        let ids = self
            .host_call(Op::GetDiskNumberByName, |state| Ok(all_disk_ids(state)))
            .await?;
        disk_by_page83(page83, async { Ok(ids) }).await
    }
}

fn all_disk_ids(state: &HostState) -> BTreeMap<u32, DiskIds> {
    state.disks.iter().map(|(&n, d)| (n, disk_ids(d))).collect()
}
