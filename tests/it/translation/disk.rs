//! Disk: numbers as decimal strings up to v1beta2 and varints after, the
//! old names v1beta2 kept, number keys checked, and the disk number by
//! name, native on v1alpha1 and emulated after it.

use std::collections::{BTreeMap, HashMap};

use super::{assert_invalid_response, pinned};
use csi_proxy_client::api::{DiskIds, DiskLocation};
use csi_proxy_client::{wire, ApiGroup::Disk, ApiVersion as V, Error, Operation};
use prost::Message;

#[tokio::test]
async fn disk_numbers_are_decimal_strings_up_to_v1beta2() {
    let (_node, raw, proxy) = pinned(Disk, V::V1BETA2).await;
    proxy.disk().unwrap().partition_disk(3).await.unwrap();
    let sent = raw.only_request();
    assert_eq!(sent.path, "/v1beta2.Disk/PartitionDisk");
    assert_eq!(sent.body, [0x0a, 0x01, b'3']);
}

#[tokio::test]
async fn disk_numbers_are_varints_from_v1beta3() {
    for version in [V::V1BETA3, V::V1] {
        let (_node, raw, proxy) = pinned(Disk, version).await;
        proxy.disk().unwrap().partition_disk(3).await.unwrap();
        let sent = raw.only_request();
        assert_eq!(sent.path, format!("/{version}.Disk/PartitionDisk"));
        assert_eq!(sent.body, [0x08, 0x03]);
    }
}

#[tokio::test]
async fn disk_stats_and_attach_state_use_the_old_names() {
    let (_node, raw, proxy) = pinned(Disk, V::V1BETA2).await;
    let disk = proxy.disk().unwrap();
    raw.reply(wire::disk::v1beta2::DiskStatsResponse { disk_size: 1 << 30 });
    assert_eq!(disk.get_disk_stats(7).await.unwrap(), 1 << 30);
    raw.reply(wire::disk::v1beta2::SetAttachStateResponse {});
    disk.set_disk_state(2, true).await.unwrap();
    raw.reply(wire::disk::v1beta2::GetAttachStateResponse { is_online: true });
    assert!(disk.get_disk_state(2).await.unwrap());

    let sent = raw.requests();
    assert_eq!(sent[0].path, "/v1beta2.Disk/DiskStats");
    assert_eq!(sent[0].body, [0x0a, 0x01, b'7']);
    assert_eq!(sent[1].path, "/v1beta2.Disk/SetAttachState");
    assert_eq!(sent[1].body, [0x0a, 0x01, b'2', 0x10, 0x01]);
    assert_eq!(sent[2].path, "/v1beta2.Disk/GetAttachState");

    raw.reply(wire::disk::v1beta2::DiskStatsResponse { disk_size: -1 });
    assert_invalid_response(disk.get_disk_stats(7).await, Operation::GetDiskStats);
}

#[tokio::test]
async fn string_keyed_disk_ids_become_numbered() {
    let (_node, raw, proxy) = pinned(Disk, V::V1BETA1).await;
    let ids = |page83: &str, serial: Option<&str>| {
        let mut identifiers = HashMap::from([("page83".to_owned(), page83.to_owned())]);
        if let Some(serial) = serial {
            identifiers.insert("serialNumber".to_owned(), serial.to_owned());
        }
        wire::disk::v1beta2::DiskIDs { identifiers }
    };
    raw.reply(wire::disk::v1beta2::ListDiskIDsResponse {
        disk_i_ds: HashMap::from([
            ("0".into(), ids("p0", Some("s0"))),
            ("12".into(), ids("p12", None)),
        ]),
    });
    let listed = proxy.disk().unwrap().list_disk_ids().await.unwrap();
    assert_eq!(
        listed,
        BTreeMap::from([
            (
                0,
                DiskIds {
                    page83: "p0".into(),
                    serial_number: "s0".into()
                }
            ),
            (
                12,
                DiskIds {
                    page83: "p12".into(),
                    serial_number: String::new()
                }
            ),
        ])
    );
    assert_eq!(raw.only_request().path, "/v1beta1.Disk/ListDiskIDs");
}

#[tokio::test]
async fn malformed_disk_number_keys_are_invalid_responses() {
    let (_node, raw, proxy) = pinned(Disk, V::V1BETA2).await;
    let disk = proxy.disk().unwrap();
    for key in ["disk0", "-1", "4294967296", ""] {
        raw.reply(wire::disk::v1beta2::ListDiskLocationsResponse {
            disk_locations: HashMap::from([(key.to_owned(), Default::default())]),
        });
        assert_invalid_response(
            disk.list_disk_locations().await,
            Operation::ListDiskLocations,
        );
        raw.reply(wire::disk::v1beta2::ListDiskIDsResponse {
            disk_i_ds: HashMap::from([(key.to_owned(), Default::default())]),
        });
        assert_invalid_response(disk.list_disk_ids().await, Operation::ListDiskIds);
    }
}

#[tokio::test]
async fn disk_locations_keep_every_part() {
    let (_node, raw, proxy) = pinned(Disk, V::V1).await;
    raw.reply(wire::disk::v1::ListDiskLocationsResponse {
        disk_locations: HashMap::from([(
            4,
            wire::disk::v1::DiskLocation {
                adapter: "0".into(),
                bus: "1".into(),
                target: "2".into(),
                lunid: "3".into(),
            },
        )]),
    });
    let locations = proxy.disk().unwrap().list_disk_locations().await.unwrap();
    assert_eq!(
        locations[&4],
        DiskLocation {
            adapter: "0".into(),
            bus: "1".into(),
            target: "2".into(),
            lun_id: "3".into()
        }
    );
}

#[tokio::test]
async fn disk_number_by_name_is_native_on_v1alpha1() {
    let (_node, raw, proxy) = pinned(Disk, V::V1ALPHA1).await;
    let disk = proxy.disk().unwrap();
    raw.reply(wire::disk::v1alpha1::GetDiskNumberByNameResponse {
        disk_number: "5".into(),
    });
    assert_eq!(disk.get_disk_number_by_name("pd-1").await.unwrap(), 5);
    let sent = raw.only_request();
    assert_eq!(sent.path, "/v1alpha1.Disk/GetDiskNumberByName");
    let request = wire::disk::v1alpha1::GetDiskNumberByNameRequest::decode(&sent.body[..]).unwrap();
    assert_eq!(request.disk_name, "pd-1");

    raw.reply(wire::disk::v1alpha1::GetDiskNumberByNameResponse {
        disk_number: "five".into(),
    });
    assert_invalid_response(
        disk.get_disk_number_by_name("pd-1").await,
        Operation::GetDiskNumberByName,
    );

    // Both ways releases word an unknown identifier: the same error as the
    // emulation on newer versions.
    for words in [
        "could not find disk with Page83 ID pd-9",
        "Could not find disk with Page83 ID pd-9",
    ] {
        raw.script(move |_| Err(tonic::Status::unknown(words)));
        assert!(matches!(
            disk.get_disk_number_by_name("pd-9").await,
            Err(Error::NotFound { .. })
        ));
    }
    // Any other failure stays the proxy's.
    raw.script(|_| Err(tonic::Status::unknown("WMI query failed")));
    assert!(matches!(
        disk.get_disk_number_by_name("pd-9").await,
        Err(Error::Host { .. })
    ));
}

#[tokio::test]
async fn disk_number_by_name_is_emulated_after_v1alpha1() {
    let (_node, raw, proxy) = pinned(Disk, V::V1).await;
    let disk = proxy.disk().unwrap();
    let ids = |page83: &str| wire::disk::v1::DiskIDs {
        page83: page83.into(),
        serial_number: String::new(),
    };
    raw.reply(wire::disk::v1::ListDiskIDsResponse {
        disk_i_ds: HashMap::from([(1, ids("other")), (6, ids("pd-1"))]),
    });
    assert_eq!(disk.get_disk_number_by_name("pd-1").await.unwrap(), 6);
    assert!(matches!(
        disk.get_disk_number_by_name("pd-9").await,
        Err(Error::NotFound { .. })
    ));
    assert!(raw
        .requests()
        .iter()
        .all(|r| r.path == "/v1.Disk/ListDiskIDs"));
}

#[tokio::test]
async fn bytes_that_are_not_protobuf_are_invalid_responses() {
    let (_node, raw, proxy) = pinned(Disk, V::V1).await;
    raw.reply_bytes(&[0xff, 0xff, 0xff]);
    assert_invalid_response(
        proxy.disk().unwrap().list_disk_ids().await,
        Operation::ListDiskIds,
    );
    // A field of the wrong wire type.
    raw.reply_bytes(&[0x08, 0x01]);
    assert_invalid_response(
        proxy.disk().unwrap().list_disk_ids().await,
        Operation::ListDiskIds,
    );
}
