//! The volume group against recorded `MSFT_Volume`, `MSFT_Partition` and
//! `MSFT_Disk` objects, shaped as Microsoft documents the classes, with
//! mount folders kept in memory over the host's real directories (Wine
//! makes no volume mount points): the queries and calls it makes, what it
//! makes of their answers, and the conformance suite over the seams.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::recorded::{
    instance_path, not_found, object, returned, text, Method, RecordedWmi, Store,
};
use super::{fresh_root, LinksInMemory};
use crate::api::{VolumeApi, VolumeId, WindowsPath};
use crate::capability::Operation;
use crate::host::disk::{DISK, PARTITION};
use crate::host::links::{Entry, Links};
use crate::host::mounts::Mounts;
use crate::host::volume::{HostVolume, TO_VOLUME, VOLUME};
use crate::host::wmi::{uint64, WmiObject, WmiValue, PATH, STORAGE};
use crate::testing::conformance::{self, VolumeFixture};
use crate::Error;

const DATA_VOLUME: &str = r"\\?\Volume{3a1c2b4d-0000-4000-8000-000000000003}\";
/// Another GUID name of the data volume: a volume may have several, and
/// its mount folders answer with the first, its unique name.
const DATA_ALIAS: &str = r"\\?\Volume{a11a5000-0000-4000-8000-000000000003}\";
const SYSTEM_VOLUME: &str = r"\\?\Volume{c0c0c0c0-0000-4000-8000-00000000000c}\";
const MIB: u64 = 1024 * 1024;
/// The data partition's size, and the most its disk lets it grow to.
const SIZE: u64 = 1024 * MIB;
const MAX_SIZE: u64 = 4096 * MIB;
/// What a fresh NTFS takes of a volume.
const NTFS_OVERHEAD: u64 = 20 * MIB;

fn path(class: &str, key: &str) -> String {
    instance_path(STORAGE, class, "ObjectId", key)
}

/// A volume as the backend's WMI seam gives it: sizes as numbers (WMI
/// sends a `uint64` as text; the `wmi` crate reads it by the property's
/// type), its status as a `uint16[]`, and no drive letter as null.
fn volume(id: &str, key: &str, size: u64, file_system: u64) -> WmiObject {
    let remaining = if file_system == 0 {
        0
    } else {
        size - NTFS_OVERHEAD
    };
    object([
        ("UniqueId", text(id)),
        ("FileSystemType", WmiValue::UInt(file_system)),
        ("Size", WmiValue::UInt(size)),
        ("SizeRemaining", WmiValue::UInt(remaining)),
        (
            "OperationalStatus",
            WmiValue::Array(vec![WmiValue::UInt(2)]),
        ),
        ("DriveLetter", WmiValue::Null),
        (PATH, text(&path(VOLUME, key))),
    ])
}

/// Disk 3 with one unformatted data partition, and the system drive C:.
fn recorded() -> Arc<RecordedWmi> {
    let data = object([
        ("DiskNumber", WmiValue::UInt(3)),
        ("PartitionNumber", WmiValue::UInt(2)),
        ("Size", WmiValue::UInt(SIZE)),
        // A `char16`, read as a one-letter string: none is NUL.
        ("DriveLetter", text("\0")),
        (PATH, text(&path(PARTITION, "data"))),
    ]);
    let system = object([
        ("DiskNumber", WmiValue::UInt(0)),
        ("PartitionNumber", WmiValue::UInt(3)),
        ("Size", WmiValue::UInt(64 * 1024 * MIB)),
        ("DriveLetter", text("C")),
        (PATH, text(&path(PARTITION, "system"))),
    ]);
    let disk = object([
        ("Number", WmiValue::UInt(3)),
        (PATH, text(&path(DISK, "3"))),
    ]);
    let wmi = RecordedWmi::new(STORAGE)
        .with_object(PARTITION, data)
        .with_object(PARTITION, system)
        .with_object(VOLUME, volume(DATA_VOLUME, "data", SIZE, 0))
        .with_object(VOLUME, volume(SYSTEM_VOLUME, "system", 64 * 1024 * MIB, 14))
        .with_object(DISK, disk);
    {
        let mut store = wmi.store();
        store.link(TO_VOLUME, &path(PARTITION, "data"), &path(VOLUME, "data"));
        store.link(
            TO_VOLUME,
            &path(PARTITION, "system"),
            &path(VOLUME, "system"),
        );
    }
    let format = Box::new(
        |store: &mut Store, target: &str, params: &HashMap<&str, WmiValue>| {
            if params.get("FileSystem") != Some(&text("NTFS")) {
                return Ok(returned(1));
            }
            let found = store.at(target).ok_or_else(not_found)?;
            found.insert("FileSystemType".into(), WmiValue::UInt(14));
            let size = uint64(&found["Size"]).unwrap();
            let remaining = WmiValue::UInt(size - NTFS_OVERHEAD);
            found.insert("SizeRemaining".into(), remaining);
            Ok(returned(0))
        },
    ) as Method;
    let supported = Box::new(|_: &mut Store, _: &str, _: &HashMap<&str, WmiValue>| {
        Ok(object([
            ("ReturnValue", WmiValue::UInt(0)),
            ("SizeMin", WmiValue::UInt(8 * MIB)),
            ("SizeMax", WmiValue::UInt(MAX_SIZE)),
        ]))
    }) as Method;
    let resize = Box::new(
        |store: &mut Store, target: &str, params: &HashMap<&str, WmiValue>| {
            // A `uint64`: decimal text (the stand-in refuses anything else).
            let Some(size) = params.get("Size").and_then(uint64) else {
                return Ok(returned(5)); // "Invalid Parameter"
            };
            if size > MAX_SIZE {
                // "The size of the extent is less than the minimum" and kin.
                return Ok(returned(40000));
            }
            store
                .at(target)
                .ok_or_else(not_found)?
                .insert("Size".into(), WmiValue::UInt(size));
            let volume = store.at(&path(VOLUME, "data")).ok_or_else(not_found)?;
            let free = uint64(&volume["SizeRemaining"]).unwrap();
            let old = uint64(&volume["Size"]).unwrap();
            volume.insert("Size".into(), WmiValue::UInt(size));
            volume.insert("SizeRemaining".into(), WmiValue::UInt(free + size - old));
            Ok(returned(0))
        },
    ) as Method;
    let fine = || {
        Box::new(|_: &mut Store, _: &str, _: &HashMap<&str, WmiValue>| Ok(returned(0))) as Method
    };
    Arc::new(
        wmi.with_method(VOLUME, "Format", format)
            .with_method(VOLUME, "Flush", fine())
            .with_method(PARTITION, "GetSupportedSize", supported)
            .with_method(PARTITION, "Resize", resize)
            .with_method(DISK, "Refresh", fine()),
    )
}

/// Volume mount folders kept in memory over the host's real directories
/// and the links in `links`.
#[derive(Default)]
struct MountsInMemory {
    links: Arc<LinksInMemory>,
    mounted: Mutex<BTreeMap<String, String>>,
    /// Other GUID names of volumes (lower case), and the unique one.
    aliases: BTreeMap<String, String>,
    log: Mutex<Vec<String>>,
}

fn key(folder: &str) -> String {
    folder.trim_end_matches('\\').to_lowercase()
}

impl Mounts for MountsInMemory {
    fn mounted_at(&self, folder: &str) -> io::Result<Option<String>> {
        if self.links.entry(Path::new(folder))? == Entry::Missing {
            return Err(io::ErrorKind::NotFound.into());
        }
        Ok(self.mounted.lock().unwrap().get(&key(folder)).cloned())
    }

    fn unique_name(&self, volume: &str) -> io::Result<String> {
        let alias = self.aliases.get(&volume.to_lowercase());
        Ok(alias.cloned().unwrap_or_else(|| volume.to_owned()))
    }

    fn mount(&self, folder: &str, volume: &str) -> io::Result<()> {
        self.log
            .lock()
            .unwrap()
            .push(format!("mount {volume} at {folder}"));
        if std::fs::read_dir(folder)?.next().is_some() {
            return Err(io::Error::from_raw_os_error(145)); // ERROR_DIR_NOT_EMPTY
        }
        // The folder answers with the volume's unique name, whichever
        // name it was mounted by.
        let unique = self.unique_name(volume)?;
        self.mounted.lock().unwrap().insert(key(folder), unique);
        Ok(())
    }

    fn unmount(&self, folder: &str) -> io::Result<()> {
        self.log.lock().unwrap().push(format!("unmount {folder}"));
        match self.mounted.lock().unwrap().remove(&key(folder)) {
            Some(_) => Ok(()),
            None => Err(io::Error::from_raw_os_error(4390)), // ERROR_NOT_A_REPARSE_POINT
        }
    }
}

struct Host {
    wmi: Arc<RecordedWmi>,
    mounts: Arc<MountsInMemory>,
    links: Arc<LinksInMemory>,
    volume: HostVolume,
}

fn host() -> Host {
    let (wmi, links) = (recorded(), Arc::new(LinksInMemory::default()));
    let mounts = Arc::new(MountsInMemory {
        links: links.clone(),
        aliases: BTreeMap::from([(DATA_ALIAS.to_lowercase(), DATA_VOLUME.to_owned())]),
        ..MountsInMemory::default()
    });
    let volume = HostVolume::new(wmi.clone(), mounts.clone(), links.clone());
    Host {
        wmi,
        mounts,
        links,
        volume,
    }
}

fn id(value: &str) -> VolumeId {
    VolumeId::new(value).unwrap()
}

fn calls(wmi: &RecordedWmi) -> Vec<String> {
    (wmi.take_log().into_iter())
        .filter(|r| r.starts_with("call "))
        .collect()
}

#[tokio::test]
async fn the_volume_group_passes_the_conformance_suite_over_recorded_objects() {
    let root = fresh_root("volume-conformance");
    let mount_point = WindowsPath::new(format!(r"{root}\mount")).unwrap();
    std::fs::create_dir(mount_point.as_str()).unwrap();
    let host = host();
    let fixture = VolumeFixture {
        disk: 3,
        partition: 2,
        mount_point,
    };
    let report = conformance::volume(&host.volume, &fixture).await.unwrap();
    assert!(report.unsupported.is_empty(), "{report:?}");
    assert_eq!(report.succeeded.len(), 12, "every operation: {report:?}");
    assert!(host.mounts.mounted.lock().unwrap().is_empty());
    std::fs::remove_dir_all(root.as_str()).unwrap();
}

#[tokio::test]
async fn listing_asks_for_the_partitions_and_their_volumes() {
    let host = host();
    let found = host.volume.list_volumes_on_disk(3, Some(2)).await.unwrap();
    assert_eq!(found, [id(DATA_VOLUME)]);
    let data = path(PARTITION, "data");
    assert_eq!(
        host.wmi.take_log(),
        [
            "query SELECT * FROM MSFT_Partition WHERE DiskNumber = 3 AND PartitionNumber = 2"
                .to_owned(),
            format!(
                "query ASSOCIATORS OF {{{data}}} WHERE AssocClass = {TO_VOLUME} \
                 ResultClass = {VOLUME} ResultRole = Volume Role = Partition"
            ),
        ]
    );
    assert!(host
        .volume
        .list_volumes_on_disk(99, None)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn a_quick_forced_ntfs_format_is_asked_for() {
    let host = host();
    host.volume.format_volume(&id(DATA_VOLUME)).await.unwrap();
    assert_eq!(
        calls(&host.wmi),
        [format!(
            r#"call {} Format(FileSystem=String("NTFS"), FileSystemLabel=String(""), Full=Bool(false), Force=Bool(true))"#,
            path(VOLUME, "data")
        )]
    );
    assert!(host
        .volume
        .is_volume_formatted(&id(DATA_VOLUME))
        .await
        .unwrap());
}

#[tokio::test]
async fn a_resize_grows_by_at_least_100_mib_and_never_shrinks() {
    let host = host();
    let data = id(DATA_VOLUME);
    let partition = path(PARTITION, "data");
    // Too little growth, and a shrink: nothing is called.
    for size in [SIZE + 50 * MIB, SIZE / 2] {
        host.volume.resize_volume(&data, size).await.unwrap();
        assert!(calls(&host.wmi).is_empty(), "{size}");
    }
    // 0: the most the partition supports, then the disk is refreshed.
    host.volume.resize_volume(&data, 0).await.unwrap();
    assert_eq!(
        calls(&host.wmi),
        [
            format!("call {partition} GetSupportedSize()"),
            format!("call {partition} Resize(Size=String(\"{MAX_SIZE}\"))"),
            format!("call {} Refresh()", path(DISK, "3")),
        ]
    );
    // More than the disk holds: the method's refusal, its own code apart
    // from Windows' codes.
    match host.volume.resize_volume(&data, MAX_SIZE * 2).await {
        Err(Error::Host {
            operation,
            os_code,
            return_value,
            ..
        }) => {
            assert_eq!(operation, Operation::ResizeVolume);
            assert_eq!((os_code, return_value), (None, Some(40000)));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_volume_mounted_by_another_of_its_names_is_the_same_volume() {
    let root = fresh_root("volume-aliases");
    let folder = WindowsPath::new(format!(r"{root}\mount")).unwrap();
    std::fs::create_dir(folder.as_str()).unwrap();
    let host = host();
    let (data, alias) = (id(DATA_VOLUME), id(DATA_ALIAS));
    host.volume.mount_volume(&alias, &folder).await.unwrap();
    // Asked again by either name: the same volume, no change (it was
    // compared as text before this release: "another volume").
    host.volume.mount_volume(&data, &folder).await.unwrap();
    host.volume.mount_volume(&alias, &folder).await.unwrap();
    assert_eq!(
        *host.mounts.log.lock().unwrap(),
        [format!("mount {DATA_ALIAS} at {folder}")]
    );
    let found = host.volume.get_volume_id_from_target_path(&folder).await;
    assert_eq!(found.unwrap(), data, "the folder answers the unique name");
    host.volume.unmount_volume(&data, &folder).await.unwrap();
    std::fs::remove_dir_all(root.as_str()).unwrap();
}

#[tokio::test]
async fn mount_folders_are_checked_before_they_are_made() {
    let root = fresh_root("volume-mounts");
    let folder = WindowsPath::new(format!(r"{root}\mount")).unwrap();
    std::fs::create_dir(folder.as_str()).unwrap();
    let host = host();
    let (data, system) = (id(DATA_VOLUME), id(SYSTEM_VOLUME));
    host.volume.mount_volume(&data, &folder).await.unwrap();
    host.volume.mount_volume(&data, &folder).await.unwrap();
    assert_eq!(
        *host.mounts.log.lock().unwrap(),
        [format!("mount {DATA_VOLUME} at {folder}")],
        "the same volume again is no change"
    );
    // Another volume where one is mounted, or a folder that is not there.
    let missing = WindowsPath::new(format!(r"{root}\missing")).unwrap();
    for result in [
        host.volume.mount_volume(&system, &folder).await,
        host.volume.mount_volume(&data, &missing).await,
    ] {
        assert!(matches!(result, Err(Error::Host { .. })), "{result:?}");
    }
    // Found from the folder and from below it, through a link too.
    let below = WindowsPath::new(format!(r"{root}\mount\sub")).unwrap();
    std::fs::create_dir(below.as_str()).unwrap();
    let link = WindowsPath::new(format!(r"{root}\link")).unwrap();
    host.links
        .create_dir_link(Path::new(below.as_str()), Path::new(link.as_str()))
        .unwrap();
    assert_eq!(
        host.volume
            .get_volume_id_from_target_path(&folder)
            .await
            .unwrap(),
        data
    );
    for path in [&below, &link] {
        let closest = host
            .volume
            .get_closest_volume_id_from_target_path(path)
            .await;
        assert_eq!(closest.unwrap(), data, "{path}");
    }
    // Unmounted: its volume is flushed first; what holds the folder now is
    // the system drive.
    host.wmi.take_log();
    host.volume.unmount_volume(&data, &folder).await.unwrap();
    assert_eq!(
        calls(&host.wmi),
        [format!("call {} Flush()", path(VOLUME, "data"))]
    );
    let closest = host
        .volume
        .get_closest_volume_id_from_target_path(&below)
        .await;
    assert_eq!(closest.unwrap(), system);
    assert!(host
        .volume
        .get_volume_id_from_target_path(&folder)
        .await
        .is_err());
    std::fs::remove_dir_all(root.as_str()).unwrap();
}

#[tokio::test]
async fn what_wmi_does_not_say_is_an_error_not_a_guess() {
    let wmi = Arc::new(RecordedWmi::new(STORAGE).with_object(
        VOLUME,
        object([
            ("UniqueId", text(DATA_VOLUME)),
            // More free than its size; no file system type, no partition.
            ("Size", WmiValue::UInt(100)),
            ("SizeRemaining", WmiValue::UInt(200)),
            (PATH, text(&path(VOLUME, "odd"))),
        ]),
    ));
    let volume = HostVolume::new(
        wmi,
        Arc::new(MountsInMemory::default()),
        Arc::new(LinksInMemory::default()),
    );
    let data = id(DATA_VOLUME);
    let results = [
        volume.get_volume_stats(&data).await.map(drop),
        volume.is_volume_formatted(&data).await.map(drop),
        volume.get_disk_number_from_volume_id(&data).await.map(drop),
        volume.write_volume_cache(&id(SYSTEM_VOLUME)).await,
    ];
    for result in results {
        assert!(matches!(result, Err(Error::Host { .. })), "{result:?}");
    }
}

#[tokio::test]
async fn the_volume_of_a_path_is_found_through_links_to_its_mount_folder() {
    let root = fresh_root("volume-links");
    let folder = WindowsPath::new(format!(r"{root}\staging")).unwrap();
    std::fs::create_dir(folder.as_str()).unwrap();
    let host = host();
    let data = id(DATA_VOLUME);
    host.volume.mount_volume(&data, &folder).await.unwrap();
    let at = |name: &str| WindowsPath::new(format!(r"{root}\{name}")).unwrap();
    let link = |from: &str, to: &str| {
        (host.links)
            .create_dir_link(Path::new(to), Path::new(at(from).as_str()))
            .unwrap()
    };
    // A pod's published path links to the staging folder; one more link
    // before it, a relative one, and one straight to the volume.
    link("published", folder.as_str());
    link("pod", r"published");
    link("direct", DATA_VOLUME);
    for path in ["published", "pod", "direct"] {
        let found = host.volume.get_volume_id_from_target_path(&at(path)).await;
        assert_eq!(found.unwrap(), data, "{path}");
    }
    // A link to a folder that is no mount point, and a loop: no volume.
    std::fs::create_dir(at("plain").as_str()).unwrap();
    link("elsewhere", at("plain").as_str());
    link("a", at("b").as_str());
    link("b", at("a").as_str());
    for (path, said) in [("elsewhere", "no volume is mounted"), ("a", "loop")] {
        match host.volume.get_volume_id_from_target_path(&at(path)).await {
            Err(Error::Host { message, .. }) => assert!(message.contains(said), "{message}"),
            other => panic!("{path}: {other:?}"),
        }
    }
    host.volume.unmount_volume(&data, &folder).await.unwrap();
    std::fs::remove_dir_all(root.as_str()).unwrap();
}
