//! The disk group on the host: disks and partitions through WMI's
//! `MSFT_Disk`, `MSFT_Partition` and `MSFT_StorageSetting` (namespace
//! `Root\Microsoft\Windows\Storage`), and each disk's number and page 0x83
//! identifier through the storage IOCTLs, as CSI Proxy's host layer gets
//! them since it left PowerShell.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;

use super::devices::{page83_of, Devices};
use super::on_host::io_error;
use super::wmi::{string, uint64, unsigned, Requests, Wmi, WmiGroup, WmiObject, WmiValue, STORAGE};
use crate::api::{DiskApi, DiskIds, DiskLocation};
use crate::capability::Operation as Op;
use crate::error::Result;
use crate::group::ApiGroup;

pub(super) const DISK: &str = "MSFT_Disk";
pub(super) const PARTITION: &str = "MSFT_Partition";
pub(super) const STORAGE_SETTING: &str = "MSFT_StorageSetting";
/// The GPT type of the Microsoft reserved partition, which Windows makes
/// on every GPT disk it initializes: not a data partition.
pub(super) const RESERVED_GPT_TYPE: &str = "{e3c9e316-0b5c-4db8-817d-f92df00215ae}";
/// The GPT type of a basic data partition.
pub(super) const BASIC_DATA_GPT_TYPE: &str = "{ebd0a0a2-b9e5-4433-87c0-68b6b72699c7}";
/// `MSFT_Disk.PartitionStyle` of a disk not initialized yet (RAW).
const PARTITION_STYLE_RAW: u64 = 0;
/// `PartitionStyle` GPT, for `Initialize`.
const PARTITION_STYLE_GPT: u64 = 2;
/// A `CreatePartition` return value CSI Proxy takes for success: the
/// partition was made but its access path is in use.
const ACCESS_PATH_IN_USE: u64 = 42002;

/// The disk group, served by the host.
pub(crate) struct HostDisk {
    wmi: WmiGroup,
    devices: Arc<dyn Devices>,
}

impl HostDisk {
    /// The group over `wmi`, asking the disks through `devices`.
    pub fn new(wmi: Arc<dyn Wmi>, devices: Arc<dyn Devices>) -> Self {
        Self {
            wmi: WmiGroup::new(wmi, ApiGroup::Disk, STORAGE),
            devices,
        }
    }

    /// The same, with another grace for changes whose caller left.
    #[cfg(test)]
    pub fn with_mutation_grace(mut self, grace: std::time::Duration) -> Self {
        self.wmi = self.wmi.with_mutation_grace(grace);
        self
    }

    /// Runs `work` for `op` on disk `object` (`None`: every disk) on a
    /// blocking thread.
    async fn run<T, F>(&self, op: Op, object: Option<u32>, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Storage<'_>) -> Result<T> + Send + 'static,
    {
        let devices = self.devices.clone();
        let object = object.map_or_else(String::new, |n| format!("disk {n}"));
        self.wmi
            .run(op, object, move |wmi| {
                work(&Storage {
                    wmi,
                    devices: &*devices,
                })
            })
            .await
    }
}

/// The host's storage as one operation sees it.
struct Storage<'a> {
    wmi: Requests<'a>,
    devices: &'a dyn Devices,
}

impl Storage<'_> {
    fn error(&self, message: impl Into<String>) -> crate::error::Error {
        self.wmi.error(message)
    }

    /// Each disk's number and identifiers, asked of the disk itself, or
    /// why they could not be read; the error is the WMI query's.
    fn each_disk_ids(&self, op: Op) -> Result<Vec<Result<(u32, DiskIds)>>> {
        let disks = (self.wmi).query(&format!("SELECT Number, Path, SerialNumber FROM {DISK}"))?;
        let read = |disk: &WmiObject| {
            let path = string(disk, "Path")
                .ok_or_else(|| self.error(format!("WMI gave a {DISK} without a Path")))?;
            let answer = self.devices.ask(path).map_err(|e| io_error(op, path, e))?;
            let page83 = page83_of(&answer.id_descriptor)
                .map_err(|why| self.error(format!("{path}: its page 0x83 identifiers: {why}")))?;
            let serial_number = string(disk, "SerialNumber").unwrap_or_default().to_owned();
            let ids = DiskIds {
                page83,
                serial_number,
            };
            Ok((answer.number, ids))
        };
        Ok(disks.iter().map(read).collect())
    }

    /// Disk `number`, with every property; not there is an error.
    fn disk(&self, number: u32) -> Result<WmiObject> {
        (self.wmi).one(
            &format!("SELECT * FROM {DISK} WHERE Number = {number}"),
            format_args!("disk {number}"),
        )
    }

    /// The partitions of disk `number` that hold data: all but the
    /// Microsoft reserved one (an MBR disk's have no GPT type).
    fn data_partitions(&self, number: u32) -> Result<Vec<WmiObject>> {
        let all = self.wmi.query(&format!(
            "SELECT * FROM {PARTITION} WHERE DiskNumber = {number}"
        ))?;
        let reserved = |p: &WmiObject| {
            string(p, "GptType").is_some_and(|t| t.eq_ignore_ascii_case(RESERVED_GPT_TYPE))
        };
        Ok(all.into_iter().filter(|p| !reserved(p)).collect())
    }

    /// Whether disk `number` is offline (`IsOffline`).
    fn is_offline(&self, disk: &WmiObject, number: u32) -> Result<bool> {
        match disk.get("IsOffline") {
            Some(WmiValue::Bool(offline)) => Ok(*offline),
            other => Err(self.error(format!(
                "disk {number}: IsOffline is not a boolean: {other:?}"
            ))),
        }
    }

    /// A property holding a disk number.
    fn number(&self, object: &WmiObject, property: &str) -> Result<u32> {
        let number = object.get(property).and_then(unsigned);
        (number.and_then(|n| u32::try_from(n).ok())).ok_or_else(|| {
            self.error(format!(
                "WMI gave a {DISK} without a {property}: {object:?}"
            ))
        })
    }
}

/// The adapter, bus, target and LUN in an `MSFT_Disk.Location` such as
/// `PCI Slot 3 : Adapter 0 : Port 0 : Target 1 : LUN 0`, read as CSI Proxy
/// reads it: at least five parts; those of two words, `Name value`, are
/// read, and `Port` is not taken for the bus. `None` for a location with
/// no part of two words.
fn location_of(location: &str) -> Option<DiskLocation> {
    let parts: Vec<&str> = location.split(':').collect();
    if parts.len() < 5 {
        return None;
    }
    let mut found = DiskLocation::default();
    let mut any = false;
    for part in parts {
        let words: Vec<&str> = part.trim().split(' ').collect();
        let [name, value] = words[..] else {
            continue;
        };
        any = true;
        let field = match name {
            "Adapter" => &mut found.adapter,
            "Bus" => &mut found.bus,
            "Target" => &mut found.target,
            "LUN" => &mut found.lun_id,
            _ => continue,
        };
        *field = value.to_owned();
    }
    any.then_some(found)
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl DiskApi for HostDisk {
    /// Disks whose location names no adapter, bus, target or LUN (virtual
    /// disks) are left out.
    async fn list_disk_locations(&self) -> Result<BTreeMap<u32, DiskLocation>> {
        self.run(Op::ListDiskLocations, None, |host| {
            let mut locations = BTreeMap::new();
            for disk in host
                .wmi
                .query(&format!("SELECT Number, Location FROM {DISK}"))?
            {
                let number = host.number(&disk, "Number")?;
                if let Some(location) = string(&disk, "Location").and_then(location_of) {
                    locations.insert(number, location);
                }
            }
            Ok(locations)
        })
        .await
    }

    /// A RAW disk is initialized as GPT; a disk with a data partition is
    /// left as it is; else one basic data partition fills it, and comes
    /// online.
    async fn partition_disk(&self, number: u32) -> Result<()> {
        self.run(Op::PartitionDisk, Some(number), move |host| {
            let disk = host.disk(number)?;
            let path = host.wmi.path_of(&disk)?;
            if disk.get("PartitionStyle").and_then(unsigned) == Some(PARTITION_STYLE_RAW) {
                let style = vec![("PartitionStyle", WmiValue::UInt(PARTITION_STYLE_GPT))];
                host.wmi.call(DISK, path, "Initialize", style)?;
            }
            if !host.data_partitions(number)?.is_empty() {
                return Ok(());
            }
            let params = vec![
                ("UseMaximumSize", WmiValue::Bool(true)),
                ("AssignDriveLetter", WmiValue::Bool(false)),
                ("GptType", WmiValue::String(BASIC_DATA_GPT_TYPE.to_owned())),
            ];
            (host.wmi).call_with(DISK, path, "CreatePartition", params, &[ACCESS_PATH_IN_USE])?;
            host.wmi.call(DISK, path, "Refresh", Vec::new())?;
            let made = host.data_partitions(number)?;
            let partition = made.first().ok_or_else(|| {
                host.error(format!("disk {number}: no partition after CreatePartition"))
            })?;
            let partition = host.wmi.path_of(partition)?;
            host.wmi.call(PARTITION, partition, "Online", Vec::new())
        })
        .await
    }

    async fn rescan(&self) -> Result<()> {
        self.run(Op::Rescan, None, |host| {
            let update = "UpdateHostStorageCache";
            (host.wmi).call(STORAGE_SETTING, STORAGE_SETTING, update, Vec::new())
        })
        .await
    }

    /// By the number each disk gives for itself; the serial number is
    /// `MSFT_Disk.SerialNumber`, as it is. One disk that cannot be asked
    /// fails the whole list, as through the proxy.
    /// Every disk's identifiers; a disk that cannot be asked fails the
    /// list, with its Windows code.
    async fn list_disk_ids(&self) -> Result<BTreeMap<u32, DiskIds>> {
        self.run(Op::ListDiskIds, None, move |host| {
            host.each_disk_ids(Op::ListDiskIds)?.into_iter().collect()
        })
        .await
    }

    async fn get_disk_stats(&self, number: u32) -> Result<u64> {
        self.run(Op::GetDiskStats, Some(number), move |host| {
            let query = format!("SELECT Size FROM {DISK} WHERE Number = {number}");
            let disk = host.wmi.one(&query, format_args!("disk {number}"))?;
            disk.get("Size")
                .and_then(uint64)
                .ok_or_else(|| host.error(format!("disk {number}: Size is not a number: {disk:?}")))
        })
        .await
    }

    /// A disk already in the state asked for is left as it is.
    async fn set_disk_state(&self, number: u32, online: bool) -> Result<()> {
        self.run(Op::SetDiskState, Some(number), move |host| {
            let disk = host.disk(number)?;
            if host.is_offline(&disk, number)? != online {
                return Ok(());
            }
            let method = if online { "Online" } else { "Offline" };
            host.wmi
                .call(DISK, host.wmi.path_of(&disk)?, method, Vec::new())
        })
        .await
    }

    async fn get_disk_state(&self, number: u32) -> Result<bool> {
        self.run(Op::GetDiskState, Some(number), move |host| {
            let query = format!("SELECT IsOffline FROM {DISK} WHERE Number = {number}");
            let disk = host.wmi.one(&query, format_args!("disk {number}"))?;
            Ok(!host.is_offline(&disk, number)?)
        })
        .await
    }

    /// The disk whose page 0x83 identifier is `page83`, as the proxy finds
    /// it from the identifiers of every disk, but past a disk that cannot
    /// be asked (one going away): a match is the answer whatever the other
    /// disks do; with none, the first such failure is, since that disk
    /// might have been the one.
    async fn get_disk_number_by_name(&self, page83: &str) -> Result<u32> {
        let op = Op::GetDiskNumberByName;
        let page83 = page83.to_owned();
        self.run(op, None, move |host| {
            let (mut found, mut failed) = (None::<u32>, None);
            for disk in host.each_disk_ids(op)? {
                match disk {
                    // The lowest number, as the proxy's list gives it first.
                    Ok((number, ids)) if ids.page83 == page83 => {
                        found = Some(found.map_or(number, |f| f.min(number)));
                    }
                    Ok(_) => {}
                    Err(error) => drop(failed.get_or_insert(error)),
                }
            }
            found.ok_or_else(|| failed.unwrap_or_else(|| crate::api::no_disk_with_page83(&page83)))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn location(adapter: &str, bus: &str, target: &str, lun: &str) -> DiskLocation {
        DiskLocation {
            adapter: adapter.into(),
            bus: bus.into(),
            target: target.into(),
            lun_id: lun.into(),
        }
    }

    #[test]
    fn a_location_is_read_as_the_proxy_reads_it() {
        assert_eq!(
            location_of("PCI Slot 3 : Adapter 0 : Port 0 : Target 1 : LUN 2"),
            Some(location("0", "", "1", "2"))
        );
        assert_eq!(
            location_of("Integrated : Adapter 1 : Bus 2 : Target 3 : LUN 4"),
            Some(location("1", "2", "3", "4"))
        );
        // Too few parts, or none of two words.
        assert_eq!(location_of("Adapter 0 : Target 0 : LUN 0"), None);
        assert_eq!(location_of("a b c : d e f : g : h : i"), None);
        let unnamed = location_of("a b c : Port 1 : g : h : i");
        assert_eq!(unnamed, Some(location("", "", "", "")));
        assert_eq!(location_of(""), None);
    }
}
