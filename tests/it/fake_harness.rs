//! The test harness itself: the fake host keeps the proxy's rules, and the
//! fake proxy reports them over the wire the same way, with the same code.

use std::sync::Arc;

use crate::common::node::FakeNode;
use crate::common::path;
use crate::common::scenario::seeded_host;
use crate::common::TestNode;
use csi_proxy_client::testing::conformance::Fixture;
use csi_proxy_client::testing::{FakeHost, FakeProxy, PathEntry};
use csi_proxy_client::{
    api::{DiskApi, IscsiAuth, Secret, SmbMapping, SmbRemotePath},
    async_trait,
    negotiate::VersionPolicy,
    ApiGroup, ApiVersion, Backends, Code, CsiProxy, Error, Result,
};
use ApiVersion as V;

/// The same host, directly and through a fake proxy at the newest stable
/// versions.
async fn both_ways(host: &FakeHost) -> (CsiProxy, CsiProxy, FakeNode) {
    both_ways_with(host, VersionPolicy::default()).await
}

/// The same host, directly and through a fake proxy at the versions
/// `policy` picks.
async fn both_ways_with(host: &FakeHost, policy: VersionPolicy) -> (CsiProxy, CsiProxy, FakeNode) {
    let mut node = FakeNode::of(host);
    node.fake.serve_everything().await.unwrap();
    let wired = node
        .client_builder()
        .policy(policy)
        .connect()
        .await
        .unwrap();
    (host.proxy(), wired, node)
}

/// Both ways fail alike: a host error with code Unknown and the same text.
fn assert_same_rejection<T: std::fmt::Debug>(direct: Result<T>, wired: Result<T>) -> String {
    let (direct, wired) = (direct.unwrap_err(), wired.unwrap_err());
    match (&direct, &wired) {
        (
            Error::Host {
                operation: a,
                code: Code::Unknown,
                message: m1,
                ..
            },
            Error::Host {
                operation: b,
                code: Code::Unknown,
                message: m2,
                ..
            },
        ) => {
            assert_eq!((a, m1), (b, m2));
            m1.clone()
        }
        _ => panic!("direct: {direct:?}\nwired: {wired:?}"),
    }
}

#[tokio::test]
async fn the_proxy_rules_hold_directly_and_over_the_wire() {
    let host = seeded_host();
    let (direct, wired, _node) = both_ways(&host).await;
    for proxy in [&direct, &wired] {
        proxy
            .filesystem()
            .unwrap()
            .mkdir(&path(r"C:\var\lib\kubelet\d\sub"))
            .await
            .unwrap();
    }

    let outside = path(r"C:\Windows\System32");
    let msg = assert_same_rejection(
        direct.filesystem().unwrap().mkdir(&outside).await,
        wired.filesystem().unwrap().mkdir(&outside).await,
    );
    assert!(msg.contains("working directories"), "{msg}");
    // Paths as Windows writes them, not escaped.
    assert!(
        msg.contains(r"path C:\Windows\System32 is not within the working directories"),
        "{msg}"
    );
    assert!(
        host.entry(r"C:\Windows\System32").is_none(),
        "nothing was created"
    );

    let non_empty = path(r"C:\var\lib\kubelet\d");
    assert_same_rejection(
        direct.filesystem().unwrap().rmdir(&non_empty, false).await,
        wired.filesystem().unwrap().rmdir(&non_empty, false).await,
    );
    assert_eq!(
        host.entry(r"C:\var\lib\kubelet\d\sub"),
        Some(PathEntry::Directory)
    );

    let missing = path(r"C:\var\lib\kubelet\nowhere");
    assert_same_rejection(
        direct.filesystem().unwrap().is_symlink(&missing).await,
        wired.filesystem().unwrap().is_symlink(&missing).await,
    );

    let wrong = SmbMapping::new(
        SmbRemotePath::new(r"\\files\share").unwrap(),
        "smb-user",
        Secret::new("nope"),
    );
    let msg = assert_same_rejection(
        direct.smb().unwrap().new_smb_global_mapping(&wrong).await,
        wired.smb().unwrap().new_smb_global_mapping(&wrong).await,
    );
    assert!(msg.contains("user name or password is incorrect"), "{msg}");

    let fixture = Fixture::default();
    let portal = fixture.iscsi.portal.clone();
    for proxy in [&direct, &wired] {
        proxy
            .iscsi()
            .unwrap()
            .add_target_portal(&portal)
            .await
            .unwrap();
    }
    let bad_chap = IscsiAuth::OneWayChap {
        username: "chap-user".into(),
        secret: Secret::new("wrong"),
    };
    let iqn = fixture.iscsi.one_way.iqn.as_str();
    assert_same_rejection(
        direct
            .iscsi()
            .unwrap()
            .connect_target(&portal, iqn, &bad_chap)
            .await,
        wired
            .iscsi()
            .unwrap()
            .connect_target(&portal, iqn, &bad_chap)
            .await,
    );
    assert!(host.iscsi_sessions().is_empty());

    assert_same_rejection(
        direct
            .volume()
            .unwrap()
            .resize_volume(&csi_proxy_client::testing::sample::volume(), 0)
            .await,
        wired
            .volume()
            .unwrap()
            .resize_volume(&csi_proxy_client::testing::sample::volume(), 0)
            .await,
    );
    assert_same_rejection(
        direct
            .system()
            .unwrap()
            .start_service("no-such-service")
            .await,
        wired
            .system()
            .unwrap()
            .start_service("no-such-service")
            .await,
    );
}

#[tokio::test]
async fn mounts_need_an_empty_folder_and_resizes_follow_the_proxy() {
    let host = FakeHost::builder().disk(1, "d", 10 << 30).build();
    let proxy = host.proxy();
    let (disk, fs, volume) = (
        proxy.disk().unwrap(),
        proxy.filesystem().unwrap(),
        proxy.volume().unwrap(),
    );
    disk.partition_disk(1).await.unwrap();
    let id = volume
        .list_volumes_on_disk(1, None)
        .await
        .unwrap()
        .remove(0);
    let target = path(r"C:\var\lib\kubelet\mnt");
    assert!(
        volume.mount_volume(&id, &target).await.is_err(),
        "the folder must exist"
    );
    fs.mkdir(&path(r"C:\var\lib\kubelet\mnt\x")).await.unwrap();
    assert!(
        volume.mount_volume(&id, &target).await.is_err(),
        "the folder must be empty"
    );
    fs.rmdir(&path(r"C:\var\lib\kubelet\mnt\x"), false)
        .await
        .unwrap();
    volume.mount_volume(&id, &target).await.unwrap();
    assert_eq!(
        host.entry(r"c:\VAR\lib\kubelet\MNT"),
        Some(PathEntry::MountPoint(id.clone()))
    );

    volume.format_volume(&id).await.unwrap();
    let size = volume.get_volume_stats(&id).await.unwrap().total_bytes;
    let total = || async { volume.get_volume_stats(&id).await.unwrap().total_bytes };
    // The proxy never shrinks: a smaller size is skipped silently.
    volume.resize_volume(&id, 5 << 30).await.unwrap();
    assert_eq!(total().await, size);
    // So is growth under 100 MiB, before the size is checked at all.
    volume.resize_volume(&id, size + (50 << 20)).await.unwrap();
    assert_eq!(total().await, size);
    volume.resize_volume(&id, 0).await.unwrap();
    assert_eq!(total().await, size);
    assert!(
        volume.resize_volume(&id, 11 << 30).await.is_err(),
        "larger than the disk"
    );
}

/// Previews too: `GetClosestVolumeIDFromTargetPath` is v2alpha1's.
fn previews() -> VersionPolicy {
    VersionPolicy::default().allow_preview(true)
}

#[tokio::test]
async fn paths_under_no_mount_belong_to_the_system_volume_when_there_is_one() {
    let host = FakeHost::builder()
        .system_disk(0, "system", 100 << 30)
        .disk(1, "d", 10 << 30)
        .dir(r"C:\var\lib\kubelet\pods\p1\mnt")
        .build();
    let (direct, wired, _node) = both_ways_with(&host, previews()).await;
    let system = host.system_volume().unwrap();
    let plain = path(r"C:\var\lib\kubelet\pods\p1");
    for proxy in [&direct, &wired] {
        let volume = proxy.volume().unwrap();
        assert_eq!(
            volume
                .get_closest_volume_id_from_target_path(&plain)
                .await
                .unwrap(),
            system
        );
        // From v1.3 the proxy asks whether the path is a mount point
        // first: a drive's root is no reparse point.
        let root = volume.get_volume_id_from_target_path(&path(r"C:\")).await;
        let error = root.unwrap_err();
        assert!(
            error.to_string().contains("not a mounted folder"),
            "{error}"
        );
        assert_eq!(
            volume.list_volumes_on_disk(0, None).await.unwrap(),
            std::slice::from_ref(&system)
        );
        assert!(volume.is_volume_formatted(&system).await.unwrap());
    }

    // A mounted volume is closer than the system volume.
    let volume = direct.volume().unwrap();
    direct.disk().unwrap().partition_disk(1).await.unwrap();
    let data = volume
        .list_volumes_on_disk(1, None)
        .await
        .unwrap()
        .remove(0);
    let mnt = path(r"C:\var\lib\kubelet\pods\p1\mnt");
    volume.mount_volume(&data, &mnt).await.unwrap();
    let below = path(r"C:\var\lib\kubelet\pods\p1\mnt\x");
    direct.filesystem().unwrap().mkdir(&below).await.unwrap();
    assert_eq!(
        volume
            .get_closest_volume_id_from_target_path(&below)
            .await
            .unwrap(),
        data
    );

    // Without a system disk, no volume holds such a path.
    let bare = (FakeHost::builder().bare())
        .dir(r"C:\var\lib\kubelet\pods")
        .build();
    let (direct, wired, _node) = both_ways_with(&bare, previews()).await;
    let pods = path(r"C:\var\lib\kubelet\pods");
    let message = assert_same_rejection(
        direct
            .volume()
            .unwrap()
            .get_closest_volume_id_from_target_path(&pods)
            .await,
        wired
            .volume()
            .unwrap()
            .get_closest_volume_id_from_target_path(&pods)
            .await,
    );
    assert!(message.contains("no volume holds"), "{message}");
}

#[tokio::test]
async fn smb_mappings_are_per_share_root_and_remapped_when_bad() {
    let host = FakeHost::builder()
        .smb_share(r"\\srv\data", "u", "p")
        .build();
    let smb = host.proxy().smb().unwrap();
    let mapping = SmbMapping::new(
        SmbRemotePath::new(r"\\SRV\Data\a\b").unwrap(),
        "u",
        Secret::new("p"),
    );
    smb.new_smb_global_mapping(&mapping).await.unwrap();
    assert_eq!(host.smb_mappings(), [r"\\srv\data"]);
    host.invalidate_smb_mapping(r"\\srv\data");
    smb.new_smb_global_mapping(&mapping).await.unwrap();
    smb.remove_smb_global_mapping(&SmbRemotePath::new(r"\\srv\data\other").unwrap())
        .await
        .unwrap();
    assert!(host.smb_mappings().is_empty());
    assert!(smb
        .remove_smb_global_mapping(&mapping.remote_path)
        .await
        .is_err());
}

/// A driver's own mock, served over the real wire.
struct CountingDisk(std::sync::Mutex<u32>);

#[async_trait]
impl DiskApi for CountingDisk {
    async fn rescan(&self) -> Result<()> {
        *self.0.lock().unwrap() += 1;
        Ok(())
    }
}

#[tokio::test]
async fn an_injected_mock_is_served_at_any_version() {
    let mock = Arc::new(CountingDisk(Default::default()));
    for version in ApiGroup::Disk.versions() {
        let node = TestNode::new();
        let backends = Backends {
            disk: Some(mock.clone()),
            ..Default::default()
        };
        let mut fake = FakeProxy::new(node.transport(), backends);
        fake.serve(ApiGroup::Disk, *version).await.unwrap();
        assert!(
            fake.serve(ApiGroup::Volume, V::V1).await.is_err(),
            "no volume backend"
        );
        let proxy = node.connect(ApiGroup::Disk, *version).await;
        proxy.disk().unwrap().rescan().await.unwrap();
        // What the mock does not implement comes back as Unimplemented.
        match proxy.disk().unwrap().partition_disk(1).await {
            Err(Error::Host {
                code: Code::Unimplemented,
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
        let rpcs: Vec<_> = fake.calls().into_iter().map(|c| c.rpc).collect();
        assert_eq!(rpcs, ["Rescan", "PartitionDisk"]);
    }
    assert_eq!(*mock.0.lock().unwrap(), 5);
}

#[tokio::test]
async fn the_served_set_can_change_like_a_proxy_upgrade() {
    let host = seeded_host();
    let mut node = FakeNode::of(&host);
    node.fake
        .serve_all([(ApiGroup::Disk, V::V1BETA2), (ApiGroup::Volume, V::V1BETA2)])
        .await
        .unwrap();
    let before = node.client().await;
    assert_eq!(before.version(ApiGroup::Disk), Some(V::V1BETA2));

    node.fake
        .restart([
            (ApiGroup::Disk, V::V1),
            (ApiGroup::Disk, V::V1BETA2),
            (ApiGroup::Volume, V::V1),
        ])
        .await
        .unwrap();
    assert_eq!(node.fake.served().len(), 3);
    let after = node.client().await;
    assert_eq!(after.version(ApiGroup::Disk), Some(V::V1));
    assert_eq!(after.version(ApiGroup::Volume), Some(V::V1));
    after.disk().unwrap().rescan().await.unwrap();
    assert_eq!(host.rescans(), 1);

    #[cfg(unix)]
    {
        let socket = node.fake.transport().address(ApiGroup::Disk, V::V1);
        assert!(std::path::Path::new(&socket).exists());
        node.fake.shutdown().await;
        assert!(
            !std::path::Path::new(&socket).exists(),
            "shutdown removes the sockets"
        );
    }
}

#[tokio::test]
async fn unknown_methods_answer_unimplemented_like_grpc_go() {
    // A v1 request sent to a v1beta1 endpoint: the path names another service.
    let node = FakeNode::serving([(ApiGroup::Disk, V::V1BETA1)]).await;
    let negotiated = csi_proxy_client::negotiate::Negotiator::new(node.fake.transport().clone())
        .negotiate(&[ApiGroup::Disk])
        .await
        .unwrap();
    let channel = negotiated.connection(ApiGroup::Disk).unwrap().channel();
    let mut v1 = csi_proxy_client::wire::disk::v1::disk_client::DiskClient::new(channel.clone());
    let status = v1
        .rescan(csi_proxy_client::wire::disk::v1::RescanRequest {})
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unimplemented);
    // SetAttachState only exists from v1beta2 on.
    let mut old = csi_proxy_client::wire::disk::v1beta2::disk_client::DiskClient::new(channel);
    let request = csi_proxy_client::wire::disk::v1beta2::SetAttachStateRequest {
        disk_id: "1".into(),
        is_online: true,
    };
    let path_of_v1beta2 = old.set_attach_state(request).await.unwrap_err();
    assert_eq!(path_of_v1beta2.code(), Code::Unimplemented);
}

#[tokio::test]
async fn old_string_disk_ids_that_are_not_numbers_fail_like_the_proxy() {
    let node = FakeNode::serving([(ApiGroup::Disk, V::V1BETA2)]).await;
    let negotiated = csi_proxy_client::negotiate::Negotiator::new(node.fake.transport().clone())
        .negotiate(&[ApiGroup::Disk])
        .await
        .unwrap();
    let channel = negotiated.connection(ApiGroup::Disk).unwrap().channel();
    let mut client = csi_proxy_client::wire::disk::v1beta2::disk_client::DiskClient::new(channel);
    let request = csi_proxy_client::wire::disk::v1beta2::PartitionDiskRequest {
        disk_id: "one".into(),
    };
    let status = client.partition_disk(request).await.unwrap_err();
    assert_eq!(status.code(), Code::Unknown);
    assert!(
        status.message().contains("ParseUint"),
        "{}",
        status.message()
    );
}

#[test]
fn the_fake_host_reads_paths_as_the_sdk_normalizes_them() {
    let host = FakeHost::builder()
        .dir("/var/lib/kubelet/plugins/x")
        .build();
    for written in [
        r"\var\lib\kubelet\plugins\x",
        "/var/lib/kubelet/plugins/x",
        r"c:\VAR\lib\kubelet\plugins\x\",
    ] {
        assert_eq!(host.entry(written), Some(PathEntry::Directory), "{written}");
    }
    assert_eq!(host.entry(r"\var\lib\kubelet\plugins\y"), None);
    // A path the SDK refuses cannot be asked about: a test asserting its
    // absence would pass by accident.
    for refused in [r"relative\x", r"C:\var\..\x"] {
        let asked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| host.entry(refused)));
        assert!(asked.is_err(), "{refused}");
    }
}
