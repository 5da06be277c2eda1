//! The disk group against recorded `MSFT_Disk` and `MSFT_Partition`
//! objects, shaped as Microsoft documents the classes, and recorded
//! answers of the disks to the storage IOCTLs: the queries and calls it
//! makes, what it makes of their answers, and the conformance suite over
//! the seams.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::sync::{Arc, Mutex};

use super::recorded::{instance_path, object, returned, text, Method, RecordedWmi, Store};
use crate::api::{DiskApi, DiskIds};
use crate::capability::Operation;
use crate::host::devices::tests::{descriptor, identifier, NAA};
use crate::host::devices::{DeviceAnswer, Devices, CODE_SET_BINARY};
use crate::host::disk::{
    HostDisk, BASIC_DATA_GPT_TYPE, DISK, PARTITION, RESERVED_GPT_TYPE, STORAGE_SETTING,
};
use crate::host::wmi::{WmiObject, WmiValue, PATH, STORAGE};
use crate::testing::conformance::{self, DiskFixture};
use crate::Error;

/// The page 0x83 identifier of the recorded disk, as bytes and as the
/// group reports it.
const NAA_ID: [u8; 8] = [0x60, 0x02, 0x24, 0x80, 0x12, 0x34, 0x56, 0x78];
const PAGE83: &str = "6002248012345678";
const SIZE: u64 = 10 * 1024 * 1024 * 1024;
const DEVICE_PATH: &str =
    r"\\?\scsi#disk&ven_msft&prod_virtual_disk#1#{53f56307-b6bf-11d0-94f2-00a0c91efb8b}";

fn path(class: &str, key: &str) -> String {
    instance_path(STORAGE, class, "ObjectId", key)
}

/// Disk 3 of the recorded host: a data disk on LUN 2, RAW, offline.
fn recorded_disk() -> WmiObject {
    object([
        ("Number", WmiValue::UInt(3)),
        (
            "Location",
            text("PCI Slot 3 : Adapter 0 : Port 0 : Target 0 : LUN 2"),
        ),
        ("Path", text(DEVICE_PATH)),
        // As GCE and others give it: padded.
        ("SerialNumber", text("serial-3    ")),
        // WMI sends a `uint64` as text; the seam reads it by its type.
        ("Size", WmiValue::UInt(SIZE)),
        ("IsOffline", WmiValue::Bool(true)),
        ("PartitionStyle", WmiValue::UInt(0)),
        // Offline (4), as a `uint16[]`; no unique ID: null.
        (
            "OperationalStatus",
            WmiValue::Array(vec![WmiValue::UInt(4)]),
        ),
        ("UniqueId", WmiValue::Null),
        (PATH, text(&path(DISK, "3"))),
    ])
}

fn partition(number: u64, gpt_type: &str) -> WmiObject {
    object([
        ("DiskNumber", WmiValue::UInt(3)),
        ("PartitionNumber", WmiValue::UInt(number)),
        ("GptType", text(gpt_type)),
        (PATH, text(&path(PARTITION, &number.to_string()))),
    ])
}

/// Sets `property` of the object at `target`.
fn set(store: &mut Store, target: &str, property: &str, value: WmiValue) -> WmiObject {
    match store.at(target) {
        Some(found) => {
            found.insert(property.to_owned(), value);
            returned(0)
        }
        None => returned(1),
    }
}

/// What `CreatePartition` answers, and so what the recorded host does.
fn create_partition(answer: u32) -> Method {
    Box::new(
        move |store: &mut Store, _, params: &HashMap<&str, WmiValue>| {
            let gpt_type = match params.get("GptType") {
                Some(WmiValue::String(t)) => t.clone(),
                _ => return Ok(returned(87)),
            };
            if answer == 0 || answer == 42002 {
                let number = store.of(PARTITION).len() as u64 + 1;
                store.add(PARTITION, partition(number, &gpt_type));
            }
            Ok(returned(answer.into()))
        },
    )
}

/// The recorded host: disk 3, and what its methods do.
fn recorded(create_answer: u32) -> Arc<RecordedWmi> {
    let initialize = Box::new(
        |store: &mut Store, target: &str, params: &HashMap<&str, WmiValue>| {
            let style = params
                .get("PartitionStyle")
                .cloned()
                .unwrap_or(WmiValue::Null);
            // Windows makes the reserved partition on a disk it makes GPT.
            store.add(PARTITION, partition(1, RESERVED_GPT_TYPE));
            Ok(set(store, target, "PartitionStyle", style))
        },
    ) as Method;
    let online = Box::new(|s: &mut Store, t: &str, _: &HashMap<&str, WmiValue>| {
        Ok(set(s, t, "IsOffline", WmiValue::Bool(false)))
    }) as Method;
    let offline = Box::new(|s: &mut Store, t: &str, _: &HashMap<&str, WmiValue>| {
        Ok(set(s, t, "IsOffline", WmiValue::Bool(true)))
    }) as Method;
    let fine = || {
        Box::new(|_: &mut Store, _: &str, _: &HashMap<&str, WmiValue>| Ok(returned(0))) as Method
    };
    Arc::new(
        RecordedWmi::new(STORAGE)
            .with_object(DISK, recorded_disk())
            .with_method(DISK, "Initialize", initialize)
            .with_method(DISK, "CreatePartition", create_partition(create_answer))
            .with_method(DISK, "Refresh", fine())
            .with_method(DISK, "Online", online)
            .with_method(DISK, "Offline", offline)
            .with_method(PARTITION, "Online", fine())
            .with_method(STORAGE_SETTING, "UpdateHostStorageCache", fine()),
    )
}

/// Disks that answer the IOCTLs as recorded; every path asked is logged.
#[derive(Default)]
struct RecordedDevices {
    answers: HashMap<String, DeviceAnswer>,
    asked: Mutex<Vec<String>>,
}

impl Devices for RecordedDevices {
    fn ask(&self, path: &str) -> io::Result<DeviceAnswer> {
        self.asked.lock().unwrap().push(path.to_owned());
        // As Windows answers for a device that is gone.
        self.answers
            .get(path)
            .cloned()
            .ok_or_else(|| io::Error::from_raw_os_error(2))
    }
}

/// Disk 3 answers with its NAA identifier; `number` is the number it
/// gives for itself.
fn devices(number: u32) -> Arc<RecordedDevices> {
    let id = descriptor(&[identifier(CODE_SET_BINARY, NAA, 0, &NAA_ID)]);
    let answer = DeviceAnswer {
        number,
        id_descriptor: id,
    };
    Arc::new(RecordedDevices {
        answers: HashMap::from([(DEVICE_PATH.to_owned(), answer)]),
        ..RecordedDevices::default()
    })
}

fn calls(wmi: &RecordedWmi) -> Vec<String> {
    (wmi.take_log().into_iter())
        .filter(|r| r.starts_with("call "))
        .collect()
}

#[tokio::test]
async fn the_disk_group_passes_the_conformance_suite_over_recorded_objects() {
    let disk = HostDisk::new(recorded(0), devices(3));
    let fixture = DiskFixture {
        number: 3,
        page83: PAGE83.to_owned(),
        lun: "2".to_owned(),
        size_bytes: SIZE,
    };
    let report = conformance::disk(&disk, &fixture).await.unwrap();
    assert!(report.unsupported.is_empty(), "{report:?}");
    assert_eq!(report.succeeded.len(), 8, "every operation: {report:?}");
}

#[tokio::test]
async fn partitioning_a_raw_disk_initializes_it_and_fills_it_once() {
    let wmi = recorded(0);
    let disk = HostDisk::new(wmi.clone(), devices(3));
    disk.partition_disk(3).await.unwrap();
    let disk_path = path(DISK, "3");
    assert_eq!(
        wmi.take_log(),
        [
            "query SELECT * FROM MSFT_Disk WHERE Number = 3".to_owned(),
            format!("call {disk_path} Initialize(PartitionStyle=UInt(2))"),
            "query SELECT * FROM MSFT_Partition WHERE DiskNumber = 3".to_owned(),
            format!(
                r#"call {disk_path} CreatePartition(UseMaximumSize=Bool(true), AssignDriveLetter=Bool(false), GptType=String("{BASIC_DATA_GPT_TYPE}"))"#
            ),
            format!("call {disk_path} Refresh()"),
            "query SELECT * FROM MSFT_Partition WHERE DiskNumber = 3".to_owned(),
            format!("call {} Online()", path(PARTITION, "2")),
        ]
    );
    // Partitioned: the second time only looks.
    disk.partition_disk(3).await.unwrap();
    assert!(calls(&wmi).is_empty());
    assert_eq!(wmi.objects(PARTITION).len(), 2);
}

#[tokio::test]
async fn create_partition_answers_are_read_as_the_proxy_reads_them() {
    // 42002 (its access path in use): made, and taken for success.
    let wmi = recorded(42002);
    HostDisk::new(wmi.clone(), devices(3))
        .partition_disk(3)
        .await
        .unwrap();
    assert_eq!(wmi.objects(PARTITION).len(), 2);
    // Anything else: the error, with the method's own code apart from
    // Windows' codes (5 is the provider's "Invalid Parameter").
    let wmi = recorded(5);
    match HostDisk::new(wmi.clone(), devices(3))
        .partition_disk(3)
        .await
    {
        Err(Error::Host {
            operation,
            os_code,
            return_value,
            ..
        }) => {
            assert_eq!(operation, Operation::PartitionDisk);
            assert_eq!((os_code, return_value), (None, Some(5)));
        }
        other => panic!("{other:?}"),
    }
    assert!(!calls(&wmi).iter().any(|c| c.contains("Refresh")));
}

#[tokio::test]
async fn disk_ids_come_from_the_disks_themselves() {
    // The disk answers with its own number, which keys the list.
    let devices = devices(5);
    let disk = HostDisk::new(recorded(0), devices.clone());
    let ids = disk.list_disk_ids().await.unwrap();
    let expected = DiskIds {
        page83: PAGE83.to_owned(),
        serial_number: "serial-3    ".to_owned(),
    };
    assert_eq!(ids, BTreeMap::from([(5, expected)]));
    assert_eq!(*devices.asked.lock().unwrap(), [DEVICE_PATH]);
    assert_eq!(disk.get_disk_number_by_name(PAGE83).await.unwrap(), 5);
    assert!(matches!(
        disk.get_disk_number_by_name("no-such-disk").await,
        Err(Error::NotFound { .. })
    ));

    // A disk that cannot be asked fails the list, with its Windows code.
    let mute = HostDisk::new(recorded(0), Arc::new(RecordedDevices::default()));
    match mute.list_disk_ids().await {
        Err(Error::Host {
            message, os_code, ..
        }) => {
            assert_eq!(os_code, Some(2));
            assert!(message.contains(DEVICE_PATH), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_disk_in_the_state_asked_for_is_left_alone() {
    let wmi = recorded(0);
    let disk = HostDisk::new(wmi.clone(), devices(3));
    assert!(!disk.get_disk_state(3).await.unwrap());
    disk.set_disk_state(3, false).await.unwrap();
    assert!(calls(&wmi).is_empty());
    disk.set_disk_state(3, true).await.unwrap();
    assert_eq!(calls(&wmi), [format!("call {} Online()", path(DISK, "3"))]);
    assert!(disk.get_disk_state(3).await.unwrap());
    assert_eq!(disk.get_disk_stats(3).await.unwrap(), SIZE);
}

#[tokio::test]
async fn what_wmi_does_not_say_is_an_error_not_a_guess() {
    let wmi = Arc::new(RecordedWmi::new(STORAGE).with_object(
        DISK,
        object([
            ("Number", WmiValue::UInt(4)),
            // What WMI gives for a value the provider does not know: null.
            ("IsOffline", WmiValue::Null),
            ("Size", WmiValue::Null),
            (PATH, text(&path(DISK, "4"))),
        ]),
    ));
    let disk = HostDisk::new(wmi, devices(4));
    let results = [
        disk.get_disk_state(4).await.map(drop),
        disk.set_disk_state(4, true).await,
        disk.get_disk_stats(4).await.map(drop),
        disk.get_disk_stats(9).await.map(drop),
        disk.partition_disk(9).await,
    ];
    for result in results {
        assert!(matches!(result, Err(Error::Host { .. })), "{result:?}");
    }
}

#[tokio::test]
async fn a_disk_that_cannot_be_asked_does_not_hide_the_one_named() {
    // Disk 3 answers; a second disk (going away) does not.
    let wmi = recorded(0);
    let mut gone = recorded_disk();
    gone.insert("Number".into(), WmiValue::UInt(8));
    gone.insert("Path".into(), text(r"\\?\scsi#disk&ven_gone#8"));
    gone.insert(PATH.into(), text(&path(DISK, "8")));
    wmi.store().add(DISK, gone);
    let disk = HostDisk::new(wmi, devices(3));
    assert_eq!(disk.get_disk_number_by_name(PAGE83).await.unwrap(), 3);
    // The list, and a name no readable disk has, fail with the disk's code:
    // the unreadable one might have been it.
    for result in [
        disk.list_disk_ids().await.map(drop),
        disk.get_disk_number_by_name("no-such-disk").await.map(drop),
    ] {
        match result {
            Err(Error::Host { os_code, .. }) => assert_eq!(os_code, Some(2)),
            other => panic!("{other:?}"),
        }
    }
}
