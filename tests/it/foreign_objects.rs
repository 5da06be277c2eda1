//! A node full of things that are not the plugin's: the OS and temporary
//! disks on adapter 0 with the data disk not attached yet, a disk with a
//! partition another system made, a blank disk asked for as ext4, files and
//! folders with files at staging and publish paths, a folder outside
//! kubelet's, another driver's mounted volume, a volume of another's on a
//! disk the plugin staged. Every CSI node call is made against them through
//! the node service, and each one is checked intact afterwards: the node
//! layer destroys only what it can prove is its own (docs/security.md).
//! The fake host follows CSI Proxy's code where it is unkind: `Rmdir`
//! removes a file, `IsSymlink` reads a file as no link, `IsVolumeFormatted`
//! reads a foreign file system as none.

mod paths;

use std::time::Duration;

use csi_proxy_client::csi::v1::node_server::Node;
use csi_proxy_client::csi::v1::{volume_capability as capability, *};
use csi_proxy_client::csi::{NodeService, VolumeKind};
use csi_proxy_client::mount::{DiskAfterUnstage, DiskSelector, Mounter};
use csi_proxy_client::testing::{FakeHost, PathEntry, ProxyRelease};
use csi_proxy_client::{Code, CsiProxy, Status};
use tonic::Request;

use crate::common::node::FakeNode;
use crate::common::path;
use crate::csi_service::{publish, stage, staging, target, unstage, writer, TestDriver};

const GIB: u64 = 1 << 30;
const PLUGINS: &str = r"C:\var\lib\kubelet\plugins\test.csi";
const PODS: &str = r"C:\var\lib\kubelet\pods\p1\volumes";
/// Another driver's staging path, where it mounted its volume.
const OTHER_STAGING: &str = r"C:\var\lib\kubelet\plugins\other.csi\pv9\globalmount";
/// A file where kubelet would have a publish target (someone else's).
const FILE_TARGET: &str = r"C:\var\lib\kubelet\pods\p1\volumes\file-t\mount";
/// A file where a staging path would be.
const FILE_STAGING: &str = r"C:\var\lib\kubelet\plugins\test.csi\file-s\globalmount";
/// A folder with a file in it at a publish target.
const FULL_TARGET: &str = r"C:\var\lib\kubelet\pods\p1\volumes\full-t\mount";
/// A folder with a file in it at a staging path.
const FULL_STAGING: &str = r"C:\var\lib\kubelet\plugins\test.csi\full-s\globalmount";
/// Folders outside kubelet's, which a proxy with a working directory of
/// `C:\data` lets the plugin reach.
const OUTSIDE_EMPTY: &str = r"C:\data\empty";
const OUTSIDE_FILE: &str = r"C:\data\keep\report.txt";
const SHARE: &str = r"\\files\data";

/// The seeded node, its proxy, and the plugin's service on it.
struct ForeignNode {
    _node: FakeNode,
    host: FakeHost,
    proxy: CsiProxy,
    state: tempfile::TempDir,
    other_state: tempfile::TempDir,
}

impl ForeignNode {
    async fn new(release: ProxyRelease) -> Self {
        // The node's own disks are there, disks 0 and 1, where Azure puts
        // them (the fake host's default).
        let host = FakeHost::builder()
            // Data disks on adapter 1: a partition another system made,
            // a blank disk (asked for as ext4), the plugin's own disk, the
            // other driver's disk.
            .partitioned_disk(3, "foreign", 10 * GIB)
            .disk(4, "blank", 10 * GIB)
            .disk(5, "ours", 10 * GIB)
            .disk(6, "other", 10 * GIB)
            .disk(7, "staged-on-a-file", 10 * GIB)
            .dir(PLUGINS)
            .dir(PODS)
            .dir(r"C:\var\lib\kubelet\plugins\other.csi\pv9")
            .file(FILE_TARGET)
            .file(FILE_STAGING)
            .file(&format!(r"{FULL_TARGET}\data.bin"))
            .file(&format!(r"{FULL_STAGING}\data.bin"))
            .working_dir(r"C:\data")
            .dir(OUTSIDE_EMPTY)
            .file(OUTSIDE_FILE)
            // A share with a folder someone else made, and a file in it.
            .smb_share(SHARE, "user", "pw")
            .share_folder(&format!(r"{SHARE}\pv-existing\keep"))
            .release(release)
            .build();
        let node = FakeNode::at(release, &host).await;
        let proxy = node.client().await;
        let this = Self {
            _node: node,
            host,
            proxy,
            state: tempfile::tempdir().unwrap(),
            other_state: tempfile::tempdir().unwrap(),
        };
        // Another driver, with its own journal, stages its disk.
        let other = Mounter::builder(this.proxy.clone(), this.other_state.path())
            .build()
            .unwrap();
        other
            .stage_disk(&DiskSelector::lun(6), &path(OTHER_STAGING))
            .await
            .unwrap();
        this
    }

    fn service(&self) -> NodeService<TestDriver> {
        let mounter = Mounter::builder(self.proxy.clone(), self.state.path())
            .disk_wait(Duration::from_millis(100))
            .poll_interval(Duration::from_millis(20))
            .build()
            .unwrap();
        let driver = TestDriver::of(&[VolumeKind::Disk, VolumeKind::Smb]);
        NodeService::new(driver, mounter, "node-1", self.state.path()).unwrap()
    }

    /// What must be as it was, whatever the plugin was asked.
    fn assert_intact(&self) {
        let host = &self.host;
        // The OS and temporary disks: online, their volumes formatted and
        // mounted nowhere the plugin put them.
        for number in [0, 1] {
            assert!(host.disk(number).unwrap().online, "disk {number}");
            let volumes = volumes_of(host, number);
            assert_eq!(volumes.len(), 1, "disk {number}: {volumes:?}");
            assert!(volumes[0].formatted && volumes[0].mounts.is_empty());
        }
        // The foreign partition: still unformatted (its ext4 intact), not
        // mounted.
        let foreign = volumes_of(host, 3);
        assert_eq!(foreign.len(), 1);
        assert!(!foreign[0].formatted && foreign[0].mounts.is_empty());
        // The disk asked for as ext4: untouched.
        assert!(!host.disk(4).unwrap().partitioned);
        assert!(volumes_of(host, 4).is_empty());
        // The other driver's volume: mounted where it put it, disk online.
        assert!(matches!(
            host.entry(OTHER_STAGING),
            Some(PathEntry::MountPoint(_))
        ));
        assert!(host.disk(6).unwrap().online);
        // Files and folders.
        for file in [
            FILE_TARGET.to_owned(),
            FILE_STAGING.to_owned(),
            format!(r"{FULL_TARGET}\data.bin"),
            format!(r"{FULL_STAGING}\data.bin"),
            OUTSIDE_FILE.to_owned(),
        ] {
            assert_eq!(host.entry(&file), Some(PathEntry::File), "{file}");
        }
        assert_eq!(host.entry(OUTSIDE_EMPTY), Some(PathEntry::Directory));
        assert!(host.share_folder_exists(&format!(r"{SHARE}\pv-existing\keep")));
    }
}

fn volumes_of(host: &FakeHost, disk: u32) -> Vec<csi_proxy_client::testing::FakeVolume> {
    (host.volumes().into_values())
        .filter(|volume| volume.disk == disk)
        .collect()
}

fn code<T>(answer: Result<T, Status>) -> Code {
    answer.err().map_or(Code::Ok, |status| status.code())
}

fn message<T: std::fmt::Debug>(answer: Result<T, Status>) -> String {
    answer.unwrap_err().message().to_owned()
}

fn stage_at(volume: &str, staging_path: &str) -> NodeStageVolumeRequest {
    NodeStageVolumeRequest {
        staging_target_path: staging_path.into(),
        ..stage(volume)
    }
}

fn stage_as(volume: &str, fs_type: &str) -> NodeStageVolumeRequest {
    let mut capability = writer();
    capability.access_type = Some(capability::AccessType::Mount(capability::MountVolume {
        fs_type: fs_type.into(),
        ..Default::default()
    }));
    NodeStageVolumeRequest {
        volume_capability: Some(capability),
        ..stage(volume)
    }
}

fn publish_at(volume: &str, target_path: &str) -> NodePublishVolumeRequest {
    NodePublishVolumeRequest {
        target_path: target_path.into(),
        ..publish(volume)
    }
}

fn unpublish(volume: &str, target_path: &str) -> NodeUnpublishVolumeRequest {
    NodeUnpublishVolumeRequest {
        volume_id: volume.into(),
        target_path: target_path.into(),
    }
}

fn unstage_at(volume: &str, staging_path: &str) -> NodeUnstageVolumeRequest {
    NodeUnstageVolumeRequest {
        volume_id: volume.into(),
        staging_target_path: staging_path.into(),
    }
}

#[tokio::test]
async fn every_node_call_leaves_what_is_not_the_plugins_intact() {
    for release in [ProxyRelease::V0_2_2, ProxyRelease::LATEST] {
        let node = ForeignNode::new(release).await;
        let service = node.service();
        let s = &service;
        // Stages: the data disk at LUN 0 is not attached yet, and the OS
        // disk reports LUN 0 (the temporary disk LUN 1): never taken.
        assert_eq!(
            code(s.node_stage_volume(Request::new(stage("lun-0"))).await),
            Code::NotFound
        );
        assert_eq!(
            code(s.node_stage_volume(Request::new(stage("lun-1"))).await),
            Code::NotFound
        );
        // A partition another system made reads as unformatted.
        let foreign = s.node_stage_volume(Request::new(stage("lun-3"))).await;
        assert_eq!(code(foreign), Code::FailedPrecondition, "{release}");
        // A blank disk asked for as ext4 is refused before the node is
        // touched.
        let ext4 = s
            .node_stage_volume(Request::new(stage_as("lun-4", "ext4")))
            .await;
        assert_eq!(code(ext4), Code::InvalidArgument);
        // Staging paths held by a folder with files, and by a file.
        let full = s
            .node_stage_volume(Request::new(stage_at("lun-5", FULL_STAGING)))
            .await;
        assert_eq!(code(full), Code::AlreadyExists, "{release}");
        let file = s
            .node_stage_volume(Request::new(stage_at("lun-7", FILE_STAGING)))
            .await;
        // The proxy mounts nothing at a file (and the file stays).
        assert_ne!(code(file), Code::Ok, "{release}");
        // The plugin's own volume, staged and published as usual.
        s.node_stage_volume(Request::new(stage("lun-5")))
            .await
            .unwrap();
        s.node_publish_volume(Request::new(publish("lun-5")))
            .await
            .unwrap();
        // Publish targets held by a file and a folder with files.
        for (held, refused) in [
            (FILE_TARGET, Code::FailedPrecondition),
            (FULL_TARGET, Code::AlreadyExists),
        ] {
            let published = s
                .node_publish_volume(Request::new(publish_at("lun-5", held)))
                .await;
            assert_eq!(code(published), refused, "{release}: {held}");
        }
        // Unpublish of what is not the plugin's: a file, a folder with
        // files, the other driver's mount point, folders outside kubelet's.
        for held in [
            FILE_TARGET,
            FULL_TARGET,
            OTHER_STAGING,
            OUTSIDE_EMPTY,
            r"C:\data\keep",
        ] {
            let gone = s
                .node_unpublish_volume(Request::new(unpublish("lun-5", held)))
                .await;
            assert_eq!(code(gone), Code::FailedPrecondition, "{release}: {held}");
        }
        // Unstage where the journal staged nothing: another driver's
        // volume, a file, a folder with files.
        for held in [OTHER_STAGING, FILE_STAGING, FULL_STAGING] {
            let gone = s
                .node_unstage_volume(Request::new(unstage_at("lun-6", held)))
                .await;
            assert_eq!(code(gone), Code::FailedPrecondition, "{release}: {held}");
        }
        // An unpublish or unstage that names another volume than the one
        // staged there: refused, the link and the mount kept.
        let wrong = s.node_unpublish_volume(Request::new(unpublish("lun-4", &target("lun-5"))));
        assert_eq!(code(wrong.await), Code::FailedPrecondition, "{release}");
        let wrong = s.node_unstage_volume(Request::new(unstage_at("lun-4", &staging("lun-5"))));
        assert_eq!(code(wrong.await), Code::FailedPrecondition, "{release}");
        assert!(matches!(
            node.host.entry(&target("lun-5")),
            Some(PathEntry::Symlink(_))
        ));
        assert!(matches!(
            node.host.entry(&staging("lun-5")),
            Some(PathEntry::MountPoint(_))
        ));
        // Another tool adds a volume to the plugin's disk: the plugin's
        // volume goes, the disk stays online.
        let theirs = node.host.add_volume(5, true).unwrap();
        s.node_unpublish_volume(Request::new(unpublish("lun-5", &target("lun-5"))))
            .await
            .unwrap();
        s.node_unstage_volume(Request::new(unstage("lun-5")))
            .await
            .unwrap();
        assert!(node.host.disk(5).unwrap().online, "{release}");
        assert!(node.host.volume(&theirs).unwrap().formatted);
        assert_eq!(node.host.entry(&staging("lun-5")), None);
        node.assert_intact();
    }
}

#[tokio::test]
async fn a_lun_never_stages_a_disk_on_the_boot_adapter() {
    let node = ForeignNode::new(ProxyRelease::LATEST).await;
    let mounter = Mounter::builder(node.proxy.clone(), node.state.path())
        .disk_wait(Duration::from_millis(100))
        .poll_interval(Duration::from_millis(20))
        .build()
        .unwrap();
    for lun in [0, 1] {
        let staged = mounter
            .stage_disk(&DiskSelector::lun(lun), &path(&staging("x")))
            .await;
        assert!(
            matches!(staged, Err(csi_proxy_client::Error::NotFound { .. })),
            "{staged:?}"
        );
    }
    // Once the data disk is attached at LUN 0 on adapter 1, it is the one.
    node.host.attach_disk(8, "late", 10 * GIB, 0);
    let staged = mounter
        .stage_disk(&DiskSelector::lun(0), &path(&staging("x")))
        .await
        .unwrap();
    assert_eq!(staged.disk, 8);
    // lun_on reaches adapter 0 when the driver names it.
    let found = mounter
        .find_disk(&DiskSelector::lun_on(0, 0, 1), Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(found, 1);
    mounter
        .unstage_disk(&path(&staging("x")), DiskAfterUnstage::KeepOnline)
        .await
        .unwrap();
    node.assert_intact();
}

#[tokio::test]
async fn refusals_say_what_was_not_proven_ours() {
    let node = ForeignNode::new(ProxyRelease::LATEST).await;
    let s = node.service();
    let foreign = message(s.node_stage_volume(Request::new(stage("lun-3"))).await);
    assert!(
        foreign.contains("not proven to be the plugin's"),
        "{foreign}"
    );
    assert!(
        foreign.contains("partition this mounter did not make"),
        "{foreign}"
    );
    let ext4 = message(
        s.node_stage_volume(Request::new(stage_as("lun-4", "ext4")))
            .await,
    );
    assert!(ext4.contains("\"ext4\"") && ext4.contains("NTFS"), "{ext4}");
    let file = message(
        s.node_unpublish_volume(Request::new(unpublish("x", FILE_TARGET)))
            .await,
    );
    assert!(file.contains("a file"), "{file}");
    let outside = message(
        s.node_unpublish_volume(Request::new(unpublish("x", OUTSIDE_EMPTY)))
            .await,
    );
    assert!(
        outside.contains("not below the kubelet folder"),
        "{outside}"
    );
    let other = message(
        s.node_unstage_volume(Request::new(unstage_at("x", OTHER_STAGING)))
            .await,
    );
    assert!(other.contains("records no stage"), "{other}");
    // NTFS in any case, or nothing, is a disk's file system.
    for fs_type in ["", "ntfs", "NTFS"] {
        let staged = s
            .node_stage_volume(Request::new(stage_as("lun-5", fs_type)))
            .await;
        assert_eq!(code(staged), Code::Ok, "{fs_type:?}");
    }
    node.assert_intact();
}

#[tokio::test]
async fn the_test_controller_never_adopts_a_folder_it_did_not_make() {
    use csi_proxy_client::csi::v1::controller_server::Controller;
    use csi_proxy_client::csi::TestController;

    let node = ForeignNode::new(ProxyRelease::LATEST).await;
    let mounter = Mounter::builder(node.proxy.clone(), node.state.path())
        .build()
        .unwrap();
    let controller = TestController::new(mounter, "node-1", "test.csi", &[VolumeKind::Smb]);
    let create = |name: &str| CreateVolumeRequest {
        name: name.into(),
        volume_capabilities: vec![writer()],
        parameters: [("share".to_owned(), SHARE.to_owned())].into(),
        secrets: [("username", "user"), ("password", "pw")]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .into(),
        ..Default::default()
    };
    let taken = controller
        .create_volume(Request::new(create("pv-existing")))
        .await;
    assert_eq!(code(taken), Code::AlreadyExists);
    // A new name is a folder of its own, made and deleted.
    let made = controller
        .create_volume(Request::new(create("pv-new")))
        .await
        .unwrap()
        .into_inner();
    assert!(node.host.share_folder_exists(&format!(r"{SHARE}\pv-new")));
    let volume_id = made.volume.unwrap().volume_id;
    controller
        .delete_volume(Request::new(DeleteVolumeRequest {
            volume_id,
            secrets: [("username", "user"), ("password", "pw")]
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .into(),
        }))
        .await
        .unwrap();
    assert!(!node.host.share_folder_exists(&format!(r"{SHARE}\pv-new")));
    node.assert_intact();
}

#[tokio::test]
async fn oversized_ids_and_contexts_are_refused_and_a_failed_stage_records_nothing() {
    let node = ForeignNode::new(ProxyRelease::LATEST).await;
    let s = node.service();
    let long = format!("lun-5{}", "0".repeat(124));
    assert_eq!(long.len(), 129);
    let staged = s
        .node_stage_volume(Request::new(stage_at(&long, &staging("lun-5"))))
        .await;
    assert_eq!(code(staged), Code::InvalidArgument);
    let mut big = stage("lun-5");
    big.volume_context = [("k".to_owned(), "v".repeat(4 << 10))].into();
    assert_eq!(
        code(s.node_stage_volume(Request::new(big)).await),
        Code::InvalidArgument
    );
    let mut big = publish("lun-5");
    big.publish_context = [("k".to_owned(), "v".repeat(4 << 10))].into();
    assert_eq!(
        code(s.node_publish_volume(Request::new(big)).await),
        Code::InvalidArgument
    );
    assert!(volumes_of(&node.host, 5).is_empty(), "nothing was touched");
    // A stage that fails leaves no contexts behind; one that succeeds
    // does.
    let mut refused = stage("lun-3");
    refused.volume_context = [("marker".to_owned(), "refused-stage".to_owned())].into();
    assert_ne!(
        code(s.node_stage_volume(Request::new(refused)).await),
        Code::Ok
    );
    let mut staged = stage("lun-5");
    staged.volume_context = [("marker".to_owned(), "good-stage".to_owned())].into();
    s.node_stage_volume(Request::new(staged)).await.unwrap();
    let mut recorded = String::new();
    for entry in std::fs::read_dir(node.state.path()).unwrap() {
        let path = entry.unwrap().path();
        recorded += &std::fs::read_to_string(path).unwrap_or_default();
    }
    assert!(recorded.contains("good-stage"), "{recorded}");
    assert!(!recorded.contains("refused-stage"), "{recorded}");
    node.assert_intact();
}

// ---- An administrator's SMB mapping (issue 62) -------------------------
//
// A share an administrator mapped on the node before the plugin's first
// stage is staged and unstaged by the plugin through the CSI API: the
// mapping is used, and outlives the plugin's last unstage of the share.
// Broken, it fails the stage (FAILED_PRECONDITION, naming it) and stays.

/// The stage of the share's folder `pv-existing` with the share's
/// credentials, at a staging path whose folder kubelet made.
async fn stage_share(node: &ForeignNode, volume: &str) -> NodeStageVolumeRequest {
    let parent = staging(volume).trim_end_matches(r"\globalmount").to_owned();
    let filesystem = node.proxy.filesystem().unwrap();
    filesystem.mkdir(&path(&parent)).await.unwrap();
    let mut request = stage(volume);
    request.secrets = [("username", "user"), ("password", "pw")]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .into();
    request
}

#[tokio::test]
async fn an_administrators_smb_mapping_outlives_the_plugins_last_unstage() {
    for release in [
        ProxyRelease::V0_2_2,
        ProxyRelease::V1_1_1,
        ProxyRelease::LATEST,
    ] {
        let node = ForeignNode::new(release).await;
        // The administrator's mapping, made before the plugin's first
        // stage (as the share's own user: a node maps a server as one
        // user).
        node.host.map_smb_outside(SHARE, "user", "pw");
        let s = node.service();
        let volume = format!(r"share-{SHARE}\pv-existing");
        let request = stage_share(&node, &volume).await;
        s.node_stage_volume(Request::new(request)).await.unwrap();
        s.node_publish_volume(Request::new(publish(&volume)))
            .await
            .unwrap();
        s.node_unpublish_volume(Request::new(unpublish(&volume, &target(&volume))))
            .await
            .unwrap();
        s.node_unstage_volume(Request::new(unstage(&volume)))
            .await
            .unwrap();
        assert_eq!(node.host.entry(&staging(&volume)), None, "{release}");
        assert!(
            node.host.smb_mappings().contains(&SHARE.to_owned()),
            "{release}: the administrator's mapping was removed: {:?}",
            node.host.smb_mappings()
        );
        assert_eq!(node.host.smb_mapping_user(SHARE).as_deref(), Some("user"));
        node.assert_intact();
    }
}

#[tokio::test]
async fn an_administrators_broken_smb_mapping_fails_the_stage_and_stays() {
    use csi_proxy_client::testing::SmbMappingStatus;

    let node = ForeignNode::new(ProxyRelease::LATEST).await;
    node.host.map_smb_outside(SHARE, "user", "pw");
    node.host
        .set_smb_mapping_status(SHARE, SmbMappingStatus::Disconnected);
    let s = node.service();
    let volume = format!(r"share-{SHARE}\pv-existing");
    let request = stage_share(&node, &volume).await;
    let refused = s.node_stage_volume(Request::new(request)).await;
    let status = refused.unwrap_err();
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert!(status.message().contains(SHARE), "{status:?}");
    assert_eq!(
        node.host.smb_mapping_status(SHARE),
        Some(SmbMappingStatus::Disconnected)
    );
    node.assert_intact();
}

// ---- What proves a partition the plugin's (issue 62) -----------------------
//
// A data disk at LUN 3 holds a partition another system made (its ext4
// reads as no file system), whose volume Windows lists late. The plugin
// formats a volume only on a partition it is shown to have made: its
// `PartitionDisk` answered success on a disk seen blank, and the volume
// was listed within the volume wait of that answer (docs/security.md,
// "What proves a partition ours"). Each test runs on v0.2.2 and v1.3.

type HostBuilder = csi_proxy_client::testing::FakeHostBuilder;

/// A node with the OS and temporary disks and `disk` at LUN 3, and the
/// plugin's service on it.
struct LateNode {
    _node: FakeNode,
    host: FakeHost,
    service: NodeService<TestDriver>,
    _state: tempfile::TempDir,
}

impl LateNode {
    async fn new(release: ProxyRelease, disk: impl FnOnce(HostBuilder) -> HostBuilder) -> Self {
        let builder = FakeHost::builder().dir(PLUGINS).release(release);
        let host = disk(builder).build();
        let node = FakeNode::at(release, &host).await;
        let state = tempfile::tempdir().unwrap();
        let mounter = Mounter::builder(node.client().await, state.path())
            .disk_wait(Duration::from_millis(100))
            .poll_interval(Duration::from_millis(20))
            .volume_wait(Duration::from_secs(2))
            .build()
            .unwrap();
        let driver = TestDriver::of(&[VolumeKind::Disk]);
        let service = NodeService::new(driver, mounter, "node-1", state.path()).unwrap();
        Self {
            _node: node,
            host,
            service,
            _state: state,
        }
    }

    /// The foreign partition's volume: there, never formatted, mounted
    /// nowhere; no format was sent.
    fn assert_foreign_volume_intact(&self, release: ProxyRelease) {
        let volumes = volumes_of(&self.host, 3);
        assert_eq!(volumes.len(), 1, "{release}: no partition was added");
        assert!(!volumes[0].formatted, "{release}: its ext4 is intact");
        assert!(volumes[0].mounts.is_empty(), "{release}");
        let formats = self
            .host
            .calls_of(csi_proxy_client::Operation::FormatVolume);
        assert_eq!(formats, 0, "{release}");
        assert_eq!(self.host.entry(&staging("lun-3")), None, "{release}");
    }
}

#[tokio::test]
async fn a_failed_partition_disk_proves_nothing_about_the_volume_listed_next() {
    use csi_proxy_client::testing::WindowsError;
    use csi_proxy_client::Operation;

    for release in [ProxyRelease::V0_2_2, ProxyRelease::LATEST] {
        // The first look lists no volume: the disk reads as blank.
        let node = LateNode::new(release, |host| {
            host.partitioned_disk(3, "foreign-late", 10 * GIB)
                .listed_late(3, 1)
        })
        .await;
        let failure = WindowsError::new(WindowsError::IO_DEVICE);
        node.host.fail_call(Operation::PartitionDisk, 1, failure);
        let s = &node.service;
        let first = s.node_stage_volume(Request::new(stage("lun-3"))).await;
        assert_ne!(code(first), Code::Ok, "{release}");
        assert_eq!(node.host.calls_of(Operation::PartitionDisk), 1);
        // The retry lists the partition's volume: the failed request made
        // nothing the plugin can show, so it is not formatted.
        let again = s.node_stage_volume(Request::new(stage("lun-3"))).await;
        let refused = message(again);
        assert!(
            refused.contains("not proven to be the plugin's"),
            "{release}: {refused}"
        );
        let again = s.node_stage_volume(Request::new(stage("lun-3"))).await;
        assert_eq!(code(again), Code::FailedPrecondition, "{release}");
        node.assert_foreign_volume_intact(release);
    }
}

#[tokio::test]
async fn a_partition_listed_only_after_its_disk_came_online_is_never_formatted() {
    for release in [ProxyRelease::V0_2_2, ProxyRelease::LATEST] {
        // Offline, as a disk the SAN policy left offline comes; once
        // online, its partition's volume shows on the fourth listing.
        let node = LateNode::new(release, |host| {
            host.partitioned_disk(3, "foreign-late", 10 * GIB)
                .offline(3)
                .listed_late(3, 3)
        })
        .await;
        let s = &node.service;
        let staged = s.node_stage_volume(Request::new(stage("lun-3"))).await;
        assert_eq!(code(staged), Code::FailedPrecondition, "{release}");
        let again = s.node_stage_volume(Request::new(stage("lun-3"))).await;
        assert_eq!(code(again), Code::FailedPrecondition, "{release}");
        assert!(node.host.disk(3).unwrap().online, "{release}");
        node.assert_foreign_volume_intact(release);
    }
}
