//! The example node plugin: its driver (`examples/node_plugin/driver.rs`)
//! in the library's node service, served over CSI as kubelet calls it, for
//! disks and shares; and the node calls on the mounter that the service
//! makes for a disk (`node`, also counted by the round-trip tests), one
//! volume's life against a fake proxy of CSI Proxy v0.2.2 and of v1.1,
//! checked step by step on the fake host, with every step repeated as
//! kubelet repeats calls. `unix_bridge`: how a plugin serves kubelet's
//! `unix://` endpoint on Windows.

#[path = "../../examples/node_plugin/driver.rs"]
pub mod driver;
pub mod node;
mod unix_bridge;

use std::collections::BTreeSet;

use crate::common::path;
use crate::common::TestNode;
use csi_proxy_client::mount::Mounter;
use csi_proxy_client::testing::{FakeHost, FakeProxy, PathEntry, ProxyRelease};
use csi_proxy_client::{api::WindowsPath, ApiGroup, ApiVersion as V, Code, CsiProxy, Error};

const GIB: u64 = 1 << 30;
const PAGE83: &str = "Google  pvc-1234";
const STAGING: &str = r"C:\var\lib\kubelet\plugins\example.csi\0f1e\globalmount";
const POD_DIR: &str = r"C:\var\lib\kubelet\pods\7c1d\volumes\kubernetes.io~csi\pvc-1234";
const TARGET: &str = r"C:\var\lib\kubelet\pods\7c1d\volumes\kubernetes.io~csi\pvc-1234\mount";

/// A node on `release` with one raw 10 GiB disk, and a client of it.
async fn node_on(release: ProxyRelease) -> (TestNode, FakeHost, FakeProxy, Mounter) {
    let node = TestNode::new();
    let host = FakeHost::builder()
        .disk(1, "Google  other-disk", 5 * GIB)
        .disk(2, PAGE83, 10 * GIB)
        .dir(POD_DIR)
        // For the example driver's share volumes, and its paths.
        .smb_share(r"\\files\data", "user", "pw")
        .share_folder(r"\\files\data\pv")
        .dir(r"C:\var\lib\kubelet\plugins\test.csi")
        .dir(r"C:\var\lib\kubelet\pods\p1\volumes")
        .build();
    let mut fake = FakeProxy::for_host(node.transport(), &host);
    fake.serve_release(release).await.unwrap();
    let proxy = CsiProxy::builder()
        .transport(node.transport())
        .require(ApiGroup::Disk)
        .require(ApiGroup::Volume)
        .require(ApiGroup::Filesystem)
        .connect()
        .await
        .unwrap();
    // The journal's folder stays for the test's life (a node's would).
    let state = tempfile::tempdir().unwrap().keep();
    let mounter = Mounter::builder(proxy, state)
        .disk_wait(std::time::Duration::from_millis(200))
        .build()
        .unwrap();
    (node, host, fake, mounter)
}

/// The life of one volume, checked on the host after each step.
async fn one_volume_life(release: ProxyRelease) -> (FakeProxy, CsiProxy) {
    let (_node, host, fake, mounter) = node_on(release).await;
    let proxy = mounter.proxy().clone();
    let (staging, target) = (path(STAGING), path(TARGET));

    // Stage, twice: the second finds it staged.
    let volume = node::node_stage_volume(&mounter, PAGE83, &staging)
        .await
        .unwrap();
    let again = node::node_stage_volume(&mounter, PAGE83, &staging)
        .await
        .unwrap();
    assert_eq!(again, volume);
    let staged = host.volume(&volume).unwrap();
    assert_eq!(staged.disk, 2);
    assert!(staged.formatted);
    assert_eq!(staged.mounts.len(), 1);
    assert_eq!(
        host.entry(STAGING),
        Some(PathEntry::MountPoint(volume.clone()))
    );
    assert!(host.volume(&volume).unwrap().size_bytes < 10 * GIB);

    // Publish, twice; then once more over an empty directory kubelet made.
    node::node_publish_volume(&mounter, &staging, &target)
        .await
        .unwrap();
    node::node_publish_volume(&mounter, &staging, &target)
        .await
        .unwrap();
    let link = host.entry(TARGET);
    assert!(
        matches!(&link, Some(PathEntry::Symlink(to)) if to.eq_ignore_ascii_case(STAGING)),
        "{link:?}"
    );

    let stats = node::node_get_volume_stats(&mounter, PAGE83, &target)
        .await
        .unwrap();
    assert_eq!(stats.total_bytes, staged.size_bytes);
    assert!(stats.used_bytes <= stats.total_bytes);

    // The controller grew the disk: the volume follows, once.
    assert!(host.set_disk_size(2, 20 * GIB));
    let grown = node::node_expand_volume(&mounter, PAGE83, &target, Some(20 * GIB))
        .await
        .unwrap();
    assert!(grown > 19 * GIB && grown <= 20 * GIB, "{grown}");
    assert_eq!(
        node::node_expand_volume(&mounter, PAGE83, &target, Some(20 * GIB))
            .await
            .unwrap(),
        grown
    );
    assert_eq!(host.volume(&volume).unwrap().size_bytes, grown);

    // Unpublish, twice: the link goes, the staged volume stays.
    node::node_unpublish_volume(&mounter, &target)
        .await
        .unwrap();
    node::node_unpublish_volume(&mounter, &target)
        .await
        .unwrap();
    assert_eq!(host.entry(TARGET), None);
    assert_eq!(
        host.entry(STAGING),
        Some(PathEntry::MountPoint(volume.clone()))
    );

    // Unstage, twice: nothing is mounted and the staging path is gone.
    node::node_unstage_volume(&mounter, &staging).await.unwrap();
    node::node_unstage_volume(&mounter, &staging).await.unwrap();
    assert_eq!(host.entry(STAGING), None);
    assert!(host.volume(&volume).unwrap().mounts.is_empty());
    assert!(host.volume(&volume).unwrap().formatted, "the data stays");
    assert!(!host.disk(2).unwrap().online, "offline after the unstage");

    // Publish over the directory kubelet may create first.
    node::node_stage_volume(&mounter, PAGE83, &staging)
        .await
        .unwrap();
    proxy.filesystem().unwrap().mkdir(&target).await.unwrap();
    node::node_publish_volume(&mounter, &staging, &target)
        .await
        .unwrap();
    assert!(matches!(host.entry(TARGET), Some(PathEntry::Symlink(_))));
    (fake, proxy)
}

/// Checks that the proxy's calls went to disk, filesystem and volume at
/// `versions`, and used each of `rpcs` among others.
fn assert_called(fake: &FakeProxy, versions: [V; 3], rpcs: [&str; 4]) {
    let groups = [ApiGroup::Disk, ApiGroup::Filesystem, ApiGroup::Volume];
    let expected: BTreeSet<(ApiGroup, V)> = groups.into_iter().zip(versions).collect();
    let called: BTreeSet<(ApiGroup, V)> =
        fake.calls().iter().map(|c| (c.group, c.version)).collect();
    assert_eq!(called, expected);
    let called: BTreeSet<String> = fake.calls().into_iter().map(|c| c.rpc).collect();
    for rpc in rpcs {
        assert!(called.contains(rpc), "{rpc} not in {called:?}");
    }
}

#[tokio::test]
async fn a_volume_lives_on_a_node_with_csi_proxy_v0_2_2() {
    let (fake, proxy) = one_volume_life(ProxyRelease::V0_2_2).await;
    // The old versions and RPC names, from the same code.
    assert_called(
        &fake,
        [V::V1BETA2, V::V1BETA1, V::V1BETA2],
        [
            "LinkPath",
            "DismountVolume",
            "GetVolumeIDFromMount",
            "VolumeStats",
        ],
    );
    assert_eq!(proxy.version(ApiGroup::Volume), Some(V::V1BETA2));
}

#[tokio::test]
async fn the_same_code_runs_on_a_node_with_csi_proxy_v1_1() {
    let (fake, _proxy) = one_volume_life(ProxyRelease::V1_1_0).await;
    assert_called(
        &fake,
        [V::V1, V::V1, V::V1],
        [
            "CreateSymlink",
            "UnmountVolume",
            "GetVolumeIDFromTargetPath",
            "GetVolumeStats",
        ],
    );
}

#[tokio::test]
async fn failures_reach_the_handler_as_csi_codes() {
    let (_node, _host, _fake, mounter) = node_on(ProxyRelease::V0_2_2).await;
    let proxy = mounter.proxy();
    let staging = path(STAGING);

    let missing = node::node_stage_volume(&mounter, "Google  no-such-disk", &staging).await;
    let error = missing.unwrap_err();
    assert!(matches!(error, Error::NotFound { .. }), "{error:?}");
    assert_eq!(error.csi_code(), Code::NotFound);
    let made = proxy.filesystem().unwrap().path_exists(&staging).await;
    assert!(!made.unwrap(), "nothing was made");

    let unstaged = node::node_get_volume_stats(&mounter, PAGE83, &staging)
        .await
        .unwrap_err();
    assert!(matches!(unstaged, Error::NotFound { .. }), "{unstaged:?}");
    assert_eq!(unstaged.csi_code(), Code::NotFound);

    let rejected = WindowsPath::new(r"C:\var\lib\kubelet\pods\a\..\..\..\Windows");
    let error = rejected.unwrap_err();
    assert_eq!(error.csi_code(), Code::InvalidArgument);
}

/// The example driver served over CSI on a node of `release` with disk
/// `PAGE83` and the share `\\files\data`: kubelet's calls of one volume's
/// life, each twice, checked on the host.
async fn example_driver_life(release: ProxyRelease, kind: &str) {
    use crate::csi_service::{channel, publish, stage, stats, unstage};
    use csi_proxy_client::csi::v1::node_client::NodeClient;
    use csi_proxy_client::csi::v1::{NodeExpandVolumeRequest, NodeUnpublishVolumeRequest};
    use csi_proxy_client::csi::{serve, Listener, NodeService};

    let (_node, host, _fake, mounter) = node_on(release).await;
    let state = tempfile::tempdir().unwrap();
    let example = driver::ExampleDriver::of_kind(kind).unwrap();
    let service = NodeService::new(example, mounter.clone(), "node-1", state.path()).unwrap();
    let listener = Listener::bind("tcp://127.0.0.1:0").await.unwrap();
    let endpoint = listener.endpoint().to_owned();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(serve(listener, service.into(), async {
        let _ = stopped.await;
    }));
    let mut kubelet = NodeClient::new(channel(&endpoint).await);
    let volume = match kind {
        "disk" => format!("disk:page83:{PAGE83}"),
        _ => r"smb:\\files\data\pv".to_owned(),
    };
    // kubelet makes the staging path's parent.
    let staging = crate::csi_service::staging(&volume);
    let parent = staging.trim_end_matches(r"\globalmount").to_owned();
    let filesystem = mounter.proxy().filesystem().unwrap();
    filesystem
        .mkdir(&WindowsPath::new(parent).unwrap())
        .await
        .unwrap();
    let mut staged = stage(&volume);
    staged.secrets = [("username", "user"), ("password", "pw")]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .into();
    for _ in 0..2 {
        kubelet.node_stage_volume(staged.clone()).await.unwrap();
    }
    for _ in 0..2 {
        kubelet.node_publish_volume(publish(&volume)).await.unwrap();
    }
    let target = crate::csi_service::target(&volume);
    assert!(matches!(host.entry(&target), Some(PathEntry::Symlink(_))));
    if kind == "disk" {
        let usage = kubelet.node_get_volume_stats(stats(&volume, &target)).await;
        assert!(usage.unwrap().into_inner().usage[0].total > 9 * GIB as i64);
        assert!(host.set_disk_size(2, 20 * GIB));
        let expand = NodeExpandVolumeRequest {
            volume_id: volume.clone(),
            volume_path: target.clone(),
            ..Default::default()
        };
        let grown = kubelet.node_expand_volume(expand).await.unwrap();
        assert!(grown.into_inner().capacity_bytes > 19 * GIB as i64);
    } else {
        assert_eq!(host.smb_mappings().len(), 1);
    }
    for _ in 0..2 {
        let unpublish = NodeUnpublishVolumeRequest {
            volume_id: volume.clone(),
            target_path: target.clone(),
        };
        kubelet.node_unpublish_volume(unpublish).await.unwrap();
        kubelet.node_unstage_volume(unstage(&volume)).await.unwrap();
    }
    assert_eq!(host.entry(&target), None);
    assert_eq!(host.entry(&crate::csi_service::staging(&volume)), None);
    match kind {
        "disk" => assert!(!host.disk(2).unwrap().online, "offline after the unstage"),
        _ => assert!(
            host.smb_mappings().is_empty(),
            "unmapped with its last volume"
        ),
    }
    // A volume ID the driver never made.
    let unknown = kubelet
        .node_stage_volume(stage("disk-9"))
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);
    stop.send(()).unwrap();
    served.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_driver_serves_a_disk_over_csi_on_v0_2_2_and_v1_3() {
    example_driver_life(ProxyRelease::V0_2_2, "disk").await;
    example_driver_life(ProxyRelease::LATEST, "disk").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_driver_serves_a_share_over_csi_on_v0_2_2_and_v1_3() {
    example_driver_life(ProxyRelease::V0_2_2, "smb").await;
    example_driver_life(ProxyRelease::LATEST, "smb").await;
}

/// The example's own flag, and its controller's naming of the test
/// controller's volumes: within CSI's 128 bytes, and resolved by its
/// `volume` to what the test controller made.
#[test]
fn the_examples_kinds_and_test_volume_ids() {
    use csi_proxy_client::api::SmbRemotePath;
    use csi_proxy_client::csi::{NodeDriver, TestVolume, Volume, VolumeKind, VolumeRequest};
    use std::collections::HashMap;

    assert!(driver::KIND_USAGE.contains("--kind"));
    let mut args = ["--kind=disk,smb", "--node-id", "n"]
        .map(str::to_owned)
        .to_vec();
    let both = driver::ExampleDriver::from_args(&mut args).unwrap();
    assert_eq!(both.kinds(), [VolumeKind::Disk, VolumeKind::Smb]);
    assert_eq!(args, ["--node-id", "n"], "its flag taken out");
    assert!(driver::ExampleDriver::of_kind("nfs").is_err());

    let long = SmbRemotePath::new(format!(r"\\files\data\{}", "a".repeat(140))).unwrap();
    let disk = TestVolume::disk(PAGE83, "1", "0", "3");
    for made in [disk, TestVolume::Share(long.clone())] {
        let named = driver::controller_ids(&made);
        assert!(named.volume_id.len() <= 128, "{}", named.volume_id);
        let none = HashMap::new();
        let request = VolumeRequest::new(
            csi_proxy_client::CsiNodeCall::StageVolume,
            &named.volume_id,
            &named.volume_context,
            &named.publish_context,
            &none,
        );
        match (both.volume(&request).unwrap(), &made) {
            // The ID's page 0x83 ID, never the publish context's LUN
            // (which never names a disk on the boot adapter).
            (Volume::Disk(selector), TestVolume::Disk { .. }) => {
                assert_eq!(
                    selector.to_string(),
                    csi_proxy_client::mount::DiskSelector::page83(PAGE83).to_string()
                );
            }
            (Volume::Smb(share, None), TestVolume::Share(folder)) => assert_eq!(&share, folder),
            (volume, made) => panic!("{made:?} resolved to {volume:?}"),
        }
    }
}
