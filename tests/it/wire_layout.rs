//! The generated wire code matches CSI Proxy's contract where versions
//! differ on the wire: field numbers, types and service names. (The full
//! field-by-field comparison is `../shared/tools/wire-check`; this is the
//! part every build checks.)

use csi_proxy_client::wire;
use prost::Message;

fn bytes(message: &impl Message) -> Vec<u8> {
    message.encode_to_vec()
}

#[test]
fn disk_numbers_are_decimal_strings_up_to_v1beta2_and_varints_after() {
    let old = wire::disk::v1beta2::PartitionDiskRequest {
        disk_id: "3".into(),
    };
    assert_eq!(bytes(&old), [0x0a, 0x01, b'3']); // field 1, length-delimited
    let new = wire::disk::v1::PartitionDiskRequest { disk_number: 3 };
    assert_eq!(bytes(&new), [0x08, 0x03]); // field 1, varint
    let old = wire::volume::v1beta2::ListVolumesOnDiskRequest {
        disk_id: "12".into(),
    };
    assert_eq!(bytes(&old), [0x0a, 0x02, b'1', b'2']);
    let new = wire::volume::v1::ListVolumesOnDiskRequest {
        disk_number: 12,
        partition_number: 2,
    };
    assert_eq!(bytes(&new), [0x08, 12, 0x10, 2]);
}

#[test]
fn old_filesystem_requests_carry_context_and_move_force_to_field_3() {
    let old = wire::filesystem::v1beta1::RmdirRequest {
        path: "C:\\x".into(),
        context: wire::filesystem::v1beta1::PathContext::Pod as i32,
        force: true,
    };
    assert_eq!(
        bytes(&old),
        [0x0a, 0x04, b'C', b':', b'\\', b'x', 0x10, 0x01, 0x18, 0x01]
    );
    let new = wire::filesystem::v1::RmdirRequest {
        path: String::new(),
        force: true,
    };
    assert_eq!(bytes(&new), [0x10, 0x01]);
}

#[test]
fn old_responses_put_the_legacy_error_in_field_1() {
    let v1beta1 = wire::filesystem::v1beta1::PathExistsResponse::decode(&[0x10, 0x01][..]).unwrap();
    assert!(v1beta1.exists && v1beta1.error.is_empty());
    let v1 = wire::filesystem::v1::PathExistsResponse::decode(&[0x08, 0x01][..]).unwrap();
    assert!(v1.exists);
    let failed =
        wire::smb::v1beta1::NewSmbGlobalMappingResponse::decode(&[0x0a, 0x02, b'n', b'o'][..])
            .unwrap();
    assert_eq!(failed.error, "no");
    let mount =
        wire::filesystem::v1alpha1::IsMountPointResponse::decode(&[0x10, 0x01][..]).unwrap();
    assert!(mount.is_mount_point);
}

#[test]
fn renamed_fields_keep_their_numbers() {
    // VolumeDiskNumberResponse.diskNumber (int64) -> GetDiskNumberFromVolumeIDResponse.disk_number (uint32)
    let encoded = [0x08, 0x07];
    let old = wire::volume::v1beta1::VolumeDiskNumberResponse::decode(&encoded[..]).unwrap();
    let new = wire::volume::v1::GetDiskNumberFromVolumeIdResponse::decode(&encoded[..]).unwrap();
    assert_eq!((old.disk_number, new.disk_number), (7_i64, 7_u32));
    // DiskStatsResponse.diskSize -> GetDiskStatsResponse.total_bytes
    let size = bytes(&wire::disk::v1beta2::DiskStatsResponse { disk_size: 1 << 30 });
    let new = wire::disk::v1::GetDiskStatsResponse::decode(&size[..]).unwrap();
    assert_eq!(new.total_bytes, 1 << 30);
    // ResizeVolumeRequest.size -> size_bytes, field 2
    let old = bytes(&wire::volume::v1alpha1::ResizeVolumeRequest {
        volume_id: String::new(),
        size: 5,
    });
    assert_eq!(old, [0x10, 0x05]);
}

#[test]
fn disk_id_maps_change_shape_at_v1beta3() {
    use std::collections::HashMap;
    let old = wire::disk::v1beta2::ListDiskIDsResponse {
        disk_i_ds: HashMap::from([(
            "0".to_owned(),
            wire::disk::v1beta2::DiskIDs {
                identifiers: HashMap::from([("page83".to_owned(), "p".to_owned())]),
            },
        )]),
    };
    // entry { key "0" (field 1), value DiskIDs (field 2) { identifiers entry { "page83" -> "p" } } }
    let mut expected = vec![
        0x0a, 0x12, 0x0a, 0x01, b'0', 0x12, 0x0d, 0x0a, 0x0b, 0x0a, 0x06,
    ];
    expected.extend_from_slice(b"page83");
    expected.extend_from_slice(&[0x12, 0x01, b'p']);
    assert_eq!(bytes(&old), expected);

    let new = wire::disk::v1::ListDiskIDsResponse {
        disk_i_ds: HashMap::from([(
            2,
            wire::disk::v1::DiskIDs {
                page83: "p".into(),
                serial_number: "s".into(),
            },
        )]),
    };
    assert_eq!(
        bytes(&new),
        [0x0a, 0x0a, 0x08, 0x02, 0x12, 0x06, 0x0a, 0x01, b'p', 0x12, 0x01, b's']
    );
}

#[test]
fn enums_have_the_upstream_numbers() {
    use wire::iscsi::v1alpha2::AuthenticationType;
    use wire::system::v1alpha1::{ServiceStatus, StartType};
    assert_eq!(
        [
            AuthenticationType::None,
            AuthenticationType::OneWayChap,
            AuthenticationType::MutualChap
        ]
        .map(|a| a as i32),
        [0, 1, 2]
    );
    assert_eq!((StartType::Boot as i32, StartType::Disabled as i32), (0, 4));
    assert_eq!(
        (ServiceStatus::Unknown as i32, ServiceStatus::Paused as i32),
        (0, 7)
    );
    let connect = wire::iscsi::v1alpha1::ConnectTargetRequest {
        auth_type: AuthenticationType::MutualChap as i32,
        ..Default::default()
    };
    assert_eq!(bytes(&connect), [0x18, 0x02]);
}

/// The server names of every generated service are `<version>.<Service>`:
/// the gRPC paths are `/<version>.<Service>/<Rpc>` (the negotiation tests
/// call one RPC per group-version and check the path the server saw).
#[test]
fn service_names_are_version_dot_service() {
    let names = [
        wire::disk::v1alpha1::disk_server::SERVICE_NAME,
        wire::disk::v1beta3::disk_server::SERVICE_NAME,
        wire::disk::v1::disk_server::SERVICE_NAME,
        wire::filesystem::v2alpha1::filesystem_server::SERVICE_NAME,
        wire::smb::v1beta1::smb_server::SERVICE_NAME,
        wire::volume::v1beta2::volume_server::SERVICE_NAME,
        wire::iscsi::v1alpha2::iscsi_server::SERVICE_NAME,
        wire::system::v1alpha1::system_server::SERVICE_NAME,
    ];
    assert_eq!(
        names,
        [
            "v1alpha1.Disk",
            "v1beta3.Disk",
            "v1.Disk",
            "v2alpha1.Filesystem",
            "v1beta1.Smb",
            "v1beta2.Volume",
            "v1alpha2.Iscsi",
            "v1alpha1.System",
        ]
    );
}

/// The version table the SDK negotiates from lists exactly the protos the
/// crate is built from.
#[cfg(unix)]
#[test]
fn version_table_matches_the_proto_tree() {
    use csi_proxy_client::{ApiGroup, ApiVersion};

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("proto");
    let mut on_disk = Vec::new();
    for group in std::fs::read_dir(&root).unwrap() {
        let group = group.unwrap();
        for version in std::fs::read_dir(group.path()).unwrap() {
            let version = version.unwrap();
            assert!(version.path().join("api.proto").is_file());
            on_disk.push((
                group.file_name().into_string().unwrap(),
                version.file_name().into_string().unwrap(),
            ));
        }
    }
    on_disk.sort();
    let mut table: Vec<(String, String)> = ApiGroup::ALL
        .iter()
        .flat_map(|g| {
            g.versions()
                .iter()
                .map(move |v| (g.to_string(), v.to_string()))
        })
        .collect();
    table.sort();
    assert_eq!(table, on_disk);
    assert!(table.iter().all(|(_, v)| v.parse::<ApiVersion>().is_ok()));
}
