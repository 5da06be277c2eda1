//! What each adapter family puts on the wire, and what it makes of every
//! answer, including malformed ones, checked byte for byte against a
//! scripted gRPC server.

use std::collections::{BTreeMap, HashMap};

use crate::common::TestNode;
use csi_proxy_client::testing::sample::{path, pod_path, portal, share, volume, IQN};
use csi_proxy_client::{
    api::{
        DiskIds, DiskLocation, IscsiAuth, Secret, ServiceStatus, SmbMapping, StartType,
        TargetPortal, WindowsPath,
    },
    wire, ApiGroup, ApiVersion, Code, CsiProxy, Error, Operation,
};
use prost::Message;
use ApiGroup::*;
use ApiVersion as V;

/// A raw server for `group` `version` and a client pinned to it.
async fn pinned(
    group: ApiGroup,
    version: ApiVersion,
) -> (
    TestNode,
    csi_proxy_client::testing::ScriptedServer,
    CsiProxy,
) {
    let node = TestNode::new();
    let raw = node.raw(group, version).await;
    let proxy = node.connect(group, version).await;
    (node, raw, proxy)
}

fn assert_invalid_response<T: std::fmt::Debug>(result: Result<T, Error>, operation: Operation) {
    match result {
        Err(Error::InvalidResponse { operation: op, .. }) => assert_eq!(op, operation),
        other => panic!("expected InvalidResponse from {operation}, got {other:?}"),
    }
}

// ---- disk -----------------------------------------------------------------

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

// ---- filesystem -----------------------------------------------------------

#[tokio::test]
async fn old_filesystem_requests_carry_the_path_context() {
    let (_node, raw, proxy) = pinned(Filesystem, V::V1BETA1).await;
    let fs = proxy.filesystem().unwrap();
    fs.rmdir(&pod_path(), true).await.unwrap();
    fs.mkdir(&path()).await.unwrap();
    let sent = raw.requests();

    assert_eq!(sent[0].path, "/v1beta1.Filesystem/Rmdir");
    let rmdir = wire::filesystem::v1beta1::RmdirRequest::decode(&sent[0].body[..]).unwrap();
    assert_eq!(rmdir.path, pod_path().as_str());
    assert_eq!(
        rmdir.context,
        wire::filesystem::v1beta1::PathContext::Pod as i32
    );
    assert!(rmdir.force);
    assert!(
        sent[0].body.ends_with(&[0x10, 0x01, 0x18, 0x01]),
        "context 2 = POD, force 3 = true"
    );

    let mkdir = wire::filesystem::v1beta1::MkdirRequest::decode(&sent[1].body[..]).unwrap();
    assert_eq!(
        mkdir.context,
        wire::filesystem::v1beta1::PathContext::Plugin as i32
    );
}

#[tokio::test]
async fn only_the_kubelet_pods_directory_makes_a_pod_path() {
    let (_node, raw, proxy) = pinned(Filesystem, V::V1ALPHA1).await;
    let fs = proxy.filesystem().unwrap();
    // A static volume named `pods` under the plugins directory.
    let plugin_pods = WindowsPath::new(r"C:\var\lib\kubelet\plugins\drv\pods\v").unwrap();
    fs.mkdir(&plugin_pods).await.unwrap();
    fs.mkdir(&WindowsPath::new(r"c:\Var\Lib\Kubelet\Pods\uid\v").unwrap())
        .await
        .unwrap();
    let contexts: Vec<i32> = raw
        .requests()
        .iter()
        .map(|r| wire::filesystem::v1alpha1::MkdirRequest::decode(&r.body[..]).unwrap())
        .map(|mkdir| mkdir.context)
        .collect();
    use wire::filesystem::v1alpha1::PathContext;
    assert_eq!(
        contexts,
        [PathContext::Plugin as i32, PathContext::Pod as i32]
    );
}

#[tokio::test]
async fn new_filesystem_requests_put_force_in_field_2() {
    let (_node, raw, proxy) = pinned(Filesystem, V::V1).await;
    proxy
        .filesystem()
        .unwrap()
        .rmdir(&path(), true)
        .await
        .unwrap();
    let sent = raw.only_request();
    let rmdir = wire::filesystem::v1::RmdirRequest::decode(&sent.body[..]).unwrap();
    assert!(rmdir.force);
    assert!(sent.body.ends_with(&[0x10, 0x01]));
}

#[tokio::test]
async fn the_legacy_error_field_is_a_failure() {
    let (_node, raw, proxy) = pinned(Filesystem, V::V1ALPHA1).await;
    let fs = proxy.filesystem().unwrap();
    raw.reply(wire::filesystem::v1alpha1::PathExistsResponse {
        error: String::new(),
        exists: true,
    });
    assert!(fs.path_exists(&path()).await.unwrap());
    raw.reply(wire::filesystem::v1alpha1::PathExistsResponse {
        error: "access denied".into(),
        exists: true,
    });
    match fs.path_exists(&path()).await {
        Err(Error::Host {
            code: Code::Unknown,
            message,
            ..
        }) => assert_eq!(message, "access denied"),
        other => panic!("{other:?}"),
    }
    raw.reply(wire::filesystem::v1alpha1::MkdirResponse {
        error: "exists".into(),
    });
    assert!(matches!(fs.mkdir(&path()).await, Err(Error::Host { .. })));
    raw.reply(wire::filesystem::v1alpha1::IsMountPointResponse {
        error: String::new(),
        is_mount_point: true,
    });
    assert!(fs.is_symlink(&path()).await.unwrap());
}

#[tokio::test]
async fn symlinks_are_link_path_and_is_mount_point_before_v1beta2() {
    let (_node, raw, proxy) = pinned(Filesystem, V::V1BETA1).await;
    let fs = proxy.filesystem().unwrap();
    fs.create_symlink(&path(), &pod_path()).await.unwrap();
    fs.is_symlink(&pod_path()).await.unwrap();
    let sent = raw.requests();
    assert_eq!(sent[0].path, "/v1beta1.Filesystem/LinkPath");
    let link = wire::filesystem::v1beta1::LinkPathRequest::decode(&sent[0].body[..]).unwrap();
    // The new link is target_path; the existing directory is source_path.
    assert_eq!(
        (link.source_path.as_str(), link.target_path.as_str()),
        (path().as_str(), pod_path().as_str())
    );
    assert_eq!(sent[1].path, "/v1beta1.Filesystem/IsMountPoint");
}

#[tokio::test]
async fn new_symlink_requests_name_the_link_and_its_target_apart() {
    for version in [V::V1BETA2, V::V1, V::V2ALPHA1] {
        let (_node, raw, proxy) = pinned(Filesystem, version).await;
        let fs = proxy.filesystem().unwrap();
        fs.create_symlink(&path(), &pod_path()).await.unwrap();
        let sent = raw.only_request();
        assert_eq!(sent.path, format!("/{version}.Filesystem/CreateSymlink"));
        let link =
            wire::filesystem::v2alpha1::CreateSymlinkRequest::decode(&sent.body[..]).unwrap();
        // The new link is target_path; the existing directory is source_path.
        assert_eq!(
            (link.source_path.as_str(), link.target_path.as_str()),
            (path().as_str(), pod_path().as_str()),
            "{version}"
        );
    }
}

#[tokio::test]
async fn rmdir_contents_is_only_on_v2alpha1() {
    let (_node, raw, proxy) = pinned(Filesystem, V::V2ALPHA1).await;
    proxy
        .filesystem()
        .unwrap()
        .rmdir_contents(&path())
        .await
        .unwrap();
    assert_eq!(
        raw.only_request().path,
        "/v2alpha1.Filesystem/RmdirContents"
    );
}

// ---- smb ------------------------------------------------------------------

#[tokio::test]
async fn smb_mappings_go_out_whole_and_secrets_stay_out_of_errors() {
    for version in [V::V1BETA1, V::V1] {
        let (_node, raw, proxy) = pinned(Smb, version).await;
        let mapping =
            SmbMapping::new(share(), "user", Secret::new("pw-123")).with_local_path(pod_path());
        // The proxy fails and echoes the password back.
        if version == V::V1BETA1 {
            raw.reply(wire::smb::v1beta1::NewSmbGlobalMappingResponse {
                error: "bad password pw-123".into(),
            });
        } else {
            raw.script(|_| {
                Err(tonic::Status::unknown(
                    "New-SmbGlobalMapping -Password pw-123 failed",
                ))
            });
        }
        let err = proxy
            .smb()
            .unwrap()
            .new_smb_global_mapping(&mapping)
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                Error::Host {
                    code: Code::Unknown,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(!err.to_string().contains("pw-123"), "{err}");
        assert!(!format!("{err:?}").contains("pw-123"), "{err:?}");

        let sent = raw.only_request();
        assert_eq!(sent.path, format!("/{version}.Smb/NewSmbGlobalMapping"));
        let request = wire::smb::v1::NewSmbGlobalMappingRequest::decode(&sent.body[..]).unwrap();
        assert_eq!(request.remote_path, r"\\files\share\dir");
        assert_eq!(request.local_path, pod_path().as_str());
        assert_eq!(
            (request.username.as_str(), request.password.as_str()),
            ("user", "pw-123")
        );
    }
}

// ---- volume ---------------------------------------------------------------

#[tokio::test]
async fn old_volume_requests_use_string_disk_ids_and_old_names() {
    let (_node, raw, proxy) = pinned(Volume, V::V1BETA1).await;
    let volumes = proxy.volume().unwrap();
    raw.reply(wire::volume::v1beta2::ListVolumesOnDiskResponse {
        volume_ids: vec![volume().to_string()],
    });
    assert_eq!(
        volumes.list_volumes_on_disk(12, None).await.unwrap(),
        [volume()]
    );
    // Partition 0 means all partitions, which every version can do.
    volumes.list_volumes_on_disk(12, Some(0)).await.unwrap();
    raw.reply(wire::volume::v1beta2::DismountVolumeResponse {});
    volumes.unmount_volume(&volume(), &path()).await.unwrap();
    volumes.resize_volume(&volume(), 5 << 30).await.unwrap();
    raw.reply(wire::volume::v1beta2::VolumeIdFromMountResponse {
        volume_id: volume().to_string(),
    });
    assert_eq!(
        volumes
            .get_volume_id_from_target_path(&path())
            .await
            .unwrap(),
        volume()
    );

    let sent = raw.requests();
    let paths: Vec<_> = sent.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/v1beta1.Volume/ListVolumesOnDisk",
            "/v1beta1.Volume/ListVolumesOnDisk",
            "/v1beta1.Volume/DismountVolume",
            "/v1beta1.Volume/ResizeVolume",
            "/v1beta1.Volume/GetVolumeIDFromMount",
        ]
    );
    assert_eq!(sent[0].body, [0x0a, 0x02, b'1', b'2']);
    let dismount = wire::volume::v1beta2::DismountVolumeRequest::decode(&sent[2].body[..]).unwrap();
    assert_eq!(dismount.path, path().as_str());
    let resize = wire::volume::v1beta2::ResizeVolumeRequest::decode(&sent[3].body[..]).unwrap();
    assert_eq!(resize.size, 5 << 30);
    let mount = wire::volume::v1beta2::VolumeIdFromMountRequest::decode(&sent[4].body[..]).unwrap();
    assert_eq!(mount.mount, path().as_str());
}

#[tokio::test]
async fn the_partition_filter_needs_v1beta3() {
    let (_node, raw, proxy) = pinned(Volume, V::V1BETA2).await;
    match proxy
        .volume()
        .unwrap()
        .list_volumes_on_disk(12, Some(2))
        .await
    {
        Err(Error::Unsupported {
            operation,
            served,
            needed,
        }) => {
            assert_eq!(operation, Operation::ListVolumesOnPartition);
            assert_eq!((served, needed), (V::V1BETA2, V::V1BETA3));
        }
        other => panic!("{other:?}"),
    }
    assert!(raw.requests().is_empty());

    let (_node, raw, proxy) = pinned(Volume, V::V1).await;
    proxy
        .volume()
        .unwrap()
        .list_volumes_on_disk(12, Some(2))
        .await
        .unwrap();
    assert_eq!(raw.only_request().body, [0x08, 12, 0x10, 2]);
}

#[tokio::test]
async fn volume_disk_numbers_and_sizes_are_checked() {
    let (_node, raw, proxy) = pinned(Volume, V::V1BETA1).await;
    let volumes = proxy.volume().unwrap();
    raw.reply(wire::volume::v1beta2::VolumeDiskNumberResponse { disk_number: 7 });
    assert_eq!(
        volumes
            .get_disk_number_from_volume_id(&volume())
            .await
            .unwrap(),
        7
    );
    assert_eq!(
        raw.requests()[0].path,
        "/v1beta1.Volume/GetVolumeDiskNumber"
    );
    for bad in [-1, 1 << 33] {
        raw.reply(wire::volume::v1beta2::VolumeDiskNumberResponse { disk_number: bad });
        assert_invalid_response(
            volumes.get_disk_number_from_volume_id(&volume()).await,
            Operation::GetDiskNumberFromVolumeId,
        );
    }
    raw.reply(wire::volume::v1beta2::VolumeStatsResponse {
        volume_size: 10,
        volume_used_size: 4,
    });
    let stats = volumes.get_volume_stats(&volume()).await.unwrap();
    assert_eq!((stats.total_bytes, stats.used_bytes), (10, 4));
    raw.reply(wire::volume::v1beta2::VolumeStatsResponse {
        volume_size: 10,
        volume_used_size: -4,
    });
    assert_invalid_response(
        volumes.get_volume_stats(&volume()).await,
        Operation::GetVolumeStats,
    );
    raw.reply(wire::volume::v1beta2::ListVolumesOnDiskResponse {
        volume_ids: vec![String::new()],
    });
    assert_invalid_response(
        volumes.list_volumes_on_disk(1, None).await,
        Operation::ListVolumesOnDisk,
    );
}

#[tokio::test]
async fn new_volume_requests_use_target_path_and_size_bytes() {
    let (_node, raw, proxy) = pinned(Volume, V::V2ALPHA1).await;
    let volumes = proxy.volume().unwrap();
    volumes.mount_volume(&volume(), &path()).await.unwrap();
    volumes.resize_volume(&volume(), 0).await.unwrap();
    raw.reply(
        wire::volume::v2alpha1::GetClosestVolumeIdFromTargetPathResponse {
            volume_id: volume().to_string(),
        },
    );
    assert_eq!(
        volumes
            .get_closest_volume_id_from_target_path(&pod_path())
            .await
            .unwrap(),
        volume()
    );
    let sent = raw.requests();
    let mount = wire::volume::v2alpha1::MountVolumeRequest::decode(&sent[0].body[..]).unwrap();
    assert_eq!(
        (mount.volume_id, mount.target_path),
        (volume().to_string(), path().to_string())
    );
    assert_eq!(
        sent[2].path,
        "/v2alpha1.Volume/GetClosestVolumeIDFromTargetPath"
    );
}

#[tokio::test]
async fn numbered_requests_put_each_argument_in_its_own_field() {
    let (_node, raw, proxy) = pinned(Volume, V::V1).await;
    let volumes = proxy.volume().unwrap();
    volumes.unmount_volume(&volume(), &path()).await.unwrap();
    volumes.resize_volume(&volume(), 5 << 30).await.unwrap();
    let sent = raw.requests();
    assert_eq!(sent[0].path, "/v1.Volume/UnmountVolume");
    let unmount = wire::volume::v1::UnmountVolumeRequest::decode(&sent[0].body[..]).unwrap();
    assert_eq!(
        (unmount.volume_id, unmount.target_path),
        (volume().to_string(), path().to_string())
    );
    let resize = wire::volume::v1::ResizeVolumeRequest::decode(&sent[1].body[..]).unwrap();
    assert_eq!(
        (resize.volume_id, resize.size_bytes),
        (volume().to_string(), 5 << 30)
    );

    let (_node, raw, proxy) = pinned(Disk, V::V1).await;
    proxy.disk().unwrap().set_disk_state(7, true).await.unwrap();
    let sent = raw.only_request();
    assert_eq!(sent.path, "/v1.Disk/SetDiskState");
    let state = wire::disk::v1::SetDiskStateRequest::decode(&sent.body[..]).unwrap();
    assert_eq!((state.disk_number, state.is_online), (7, true));
}

// ---- iscsi ----------------------------------------------------------------

#[tokio::test]
async fn the_target_portal_is_always_set() {
    let (_node, raw, proxy) = pinned(Iscsi, V::V1ALPHA1).await;
    let iscsi = proxy.iscsi().unwrap();
    iscsi.add_target_portal(&portal()).await.unwrap();
    iscsi
        .disconnect_target(&portal().with_port(3261), IQN)
        .await
        .unwrap();
    let sent = raw.requests();
    let add = wire::iscsi::v1alpha1::AddTargetPortalRequest::decode(&sent[0].body[..]).unwrap();
    let expected = wire::iscsi::v1alpha1::TargetPortal {
        target_address: "10.0.0.5".into(),
        target_port: 3260,
    };
    assert_eq!(add.target_portal, Some(expected));
    let disconnect =
        wire::iscsi::v1alpha1::DisconnectTargetRequest::decode(&sent[1].body[..]).unwrap();
    assert_eq!(disconnect.target_portal.unwrap().target_port, 3261);
    assert_eq!(disconnect.iqn, IQN);
}

#[tokio::test]
async fn chap_goes_on_the_wire_but_not_into_errors() {
    let (_node, raw, proxy) = pinned(Iscsi, V::V1ALPHA2).await;
    let iscsi = proxy.iscsi().unwrap();
    raw.script(|_| {
        Err(tonic::Status::unknown(
            "login with secret chap-s3cret rejected",
        ))
    });
    let auth = IscsiAuth::MutualChap {
        username: "u".into(),
        secret: Secret::new("chap-s3cret"),
    };
    let err = iscsi
        .connect_target(&portal(), IQN, &auth)
        .await
        .unwrap_err();
    assert!(!err.to_string().contains("chap-s3cret"), "{err}");
    let request =
        wire::iscsi::v1alpha2::ConnectTargetRequest::decode(&raw.only_request().body[..]).unwrap();
    assert_eq!(
        request.auth_type,
        wire::iscsi::v1alpha2::AuthenticationType::MutualChap as i32
    );
    assert_eq!(
        (request.chap_username.as_str(), request.chap_secret.as_str()),
        ("u", "chap-s3cret")
    );

    let err = iscsi
        .set_mutual_chap_secret(&Secret::new("chap-s3cret"))
        .await
        .unwrap_err();
    assert!(!format!("{err} {err:?}").contains("chap-s3cret"));
}

#[tokio::test]
async fn target_disks_and_portals_are_checked() {
    let (_node, raw, proxy) = pinned(Iscsi, V::V1ALPHA2).await;
    let iscsi = proxy.iscsi().unwrap();
    raw.reply(wire::iscsi::v1alpha2::GetTargetDisksResponse {
        disk_i_ds: vec!["1".into(), "2".into()],
    });
    assert_eq!(
        iscsi.get_target_disks(&portal(), IQN).await.unwrap(),
        [1, 2]
    );
    raw.reply(wire::iscsi::v1alpha2::GetTargetDisksResponse {
        disk_i_ds: vec!["1".into(), "x".into()],
    });
    assert_invalid_response(
        iscsi.get_target_disks(&portal(), IQN).await,
        Operation::GetTargetDisks,
    );

    let wire_portal = |port| wire::iscsi::v1alpha2::TargetPortal {
        target_address: "a".into(),
        target_port: port,
    };
    raw.reply(wire::iscsi::v1alpha2::ListTargetPortalsResponse {
        target_portals: vec![wire_portal(3260)],
    });
    assert_eq!(
        iscsi.list_target_portals().await.unwrap(),
        [TargetPortal::new("a")]
    );
    raw.reply(wire::iscsi::v1alpha2::ListTargetPortalsResponse {
        target_portals: vec![wire_portal(70000)],
    });
    assert_invalid_response(
        iscsi.list_target_portals().await,
        Operation::ListTargetPortals,
    );
}

// ---- system ---------------------------------------------------------------

#[tokio::test]
async fn services_are_decoded_and_unknown_enums_rejected() {
    let (_node, raw, proxy) = pinned(System, V::V1ALPHA1).await;
    let system = proxy.system().unwrap();
    raw.reply(wire::system::v1alpha1::GetServiceResponse {
        display_name: "CSI Proxy".into(),
        start_type: wire::system::v1alpha1::StartType::Automatic as i32,
        status: wire::system::v1alpha1::ServiceStatus::Running as i32,
    });
    let service = system.get_service("csiproxy").await.unwrap();
    assert_eq!(
        (
            service.display_name.as_str(),
            service.start_type,
            service.status
        ),
        ("CSI Proxy", StartType::Automatic, ServiceStatus::Running)
    );
    raw.reply(wire::system::v1alpha1::GetServiceResponse {
        start_type: 9,
        ..Default::default()
    });
    assert_invalid_response(system.get_service("csiproxy").await, Operation::GetService);
    raw.reply(wire::system::v1alpha1::GetServiceResponse {
        status: 42,
        ..Default::default()
    });
    assert_invalid_response(system.get_service("csiproxy").await, Operation::GetService);

    raw.reply(wire::system::v1alpha1::StopServiceResponse {});
    system.stop_service("csiproxy", true).await.unwrap();
    let stop = raw.requests().pop().unwrap();
    assert_eq!(stop.path, "/v1alpha1.System/StopService");
    let request = wire::system::v1alpha1::StopServiceRequest::decode(&stop.body[..]).unwrap();
    assert_eq!((request.name.as_str(), request.force), ("csiproxy", true));
}

// ---- errors from the proxy --------------------------------------------------

#[tokio::test]
async fn status_codes_map_to_error_kinds() {
    let (_node, raw, proxy) = pinned(Disk, V::V1).await;
    let disk = proxy.disk().unwrap();
    raw.script(|_| Err(tonic::Status::unknown("Get-Disk failed")));
    match disk.rescan().await {
        Err(Error::Host {
            operation,
            code,
            message,
            os_code,
            ..
        }) => {
            assert_eq!(
                (operation, code, message.as_str(), os_code),
                (Operation::Rescan, Code::Unknown, "Get-Disk failed", None)
            );
        }
        other => panic!("{other:?}"),
    }
    raw.script(|_| Err(tonic::Status::unavailable("going away")));
    assert!(matches!(disk.rescan().await, Err(Error::Transport { .. })));
    raw.script(|_| Err(tonic::Status::invalid_argument("bad disk")));
    assert!(matches!(
        disk.rescan().await,
        Err(Error::Host {
            code: Code::InvalidArgument,
            ..
        })
    ));
}
