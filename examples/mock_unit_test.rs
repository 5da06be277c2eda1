//! A driver's unit test with a mock injected through the group traits: no
//! proxy, no wire. The driver code takes a `CsiProxy`; the test builds one
//! from mocks with `CsiProxy::from_backends`. A mock implements only the
//! methods the code under test calls; the rest answer `NotImplemented`.
//!
//! Run it with `cargo run --example mock_unit_test`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use csi_proxy_client::{
    api::{DiskApi, DiskIds},
    async_trait, Backends, CsiProxy, Result,
};

/// Driver code under test: find a disk by its serial number and bring it
/// online (AWS EBS puts the volume ID in the serial number).
async fn attach_by_serial(proxy: &CsiProxy, serial: &str) -> Result<Option<u32>> {
    let disk = proxy.disk()?;
    let ids = disk.list_disk_ids().await?;
    let Some((&number, _)) = ids.iter().find(|(_, ids)| ids.serial_number == serial) else {
        return Ok(None);
    };
    disk.set_disk_state(number, true).await?;
    Ok(Some(number))
}

/// The mock: two disks, and a record of what was brought online.
#[derive(Default)]
struct MockDisks {
    onlined: Mutex<Vec<u32>>,
}

#[async_trait]
impl DiskApi for MockDisks {
    async fn list_disk_ids(&self) -> Result<BTreeMap<u32, DiskIds>> {
        let ids = |serial: &str| DiskIds {
            page83: String::new(),
            serial_number: serial.into(),
        };
        Ok(BTreeMap::from([(0, ids("vol-root")), (3, ids("vol-0abc"))]))
    }

    async fn set_disk_state(&self, disk: u32, online: bool) -> Result<()> {
        assert!(online);
        self.onlined.lock().unwrap().push(disk);
        Ok(())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let mock = Arc::new(MockDisks::default());
    let proxy = CsiProxy::from_backends(Backends {
        disk: Some(mock.clone()),
        ..Default::default()
    });

    assert_eq!(attach_by_serial(&proxy, "vol-0abc").await?, Some(3));
    assert_eq!(attach_by_serial(&proxy, "vol-missing").await?, None);
    assert_eq!(*mock.onlined.lock().unwrap(), [3]);
    println!("attach_by_serial: found disk 3 and brought it online; a missing serial gives None");
    Ok(())
}
