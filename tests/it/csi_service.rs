//! The CSI node service (feature `csi`): a driver's `NodeDriver` in
//! `NodeService`, on a fake proxy. Each request checked with the spec's
//! codes; capabilities, info and `Probe` from the driver's kinds; stats
//! and expand only for the volume the driver names, with the stage's
//! contexts also after a restart; the driver's hooks; a span and metrics
//! per call; and serving: the endpoint bound before the proxy is dialled,
//! a stale socket replaced, a stop that answers the calls under way.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use csi_proxy_client::api::{IscsiAuth, Secret, TargetPortal, WindowsPath};
use csi_proxy_client::csi::v1::identity_server::Identity;
use csi_proxy_client::csi::v1::node_server::Node;
use csi_proxy_client::csi::v1::{volume_capability as capability, *};
use csi_proxy_client::csi::{
    NodeDriver, NodeInfo, NodeService, Volume, VolumeKind, VolumeRequest, CSI_CALLS_TOTAL,
};
use csi_proxy_client::mount::{
    DiskAfterUnstage, DiskSelector, FsStats, IscsiVolume, Mounter, MounterBuilder, ShareSpace,
};
use csi_proxy_client::testing::{FakeHost, FakeProxy, PathEntry, ProxyRelease};
use csi_proxy_client::{Code, CsiProxy, Status};
use tonic::Request;

use crate::common::recorder::LogRecorder;
use crate::common::TestNode;

const GIB: u64 = 1 << 30;
const PLUGINS: &str = r"C:\var\lib\kubelet\plugins\test.csi";
const PODS: &str = r"C:\var\lib\kubelet\pods\p1\volumes";
const ISCSI_TARGET: &str = "iqn.2026-01.com.example:pv-i";

/// The tests' driver: `lun-<N>` is the disk at LUN N, `share-<path>` a
/// share, `by-context` the disk at the publish context's `lun`; any other
/// ID is not one of its volumes. It counts its hooks, refuses to stage
/// `refused-by-hook`, and keeps the disks of `keep-<N>` online.
#[derive(Default)]
pub struct TestDriver {
    kinds: Vec<VolumeKind>,
    before: AtomicUsize,
    after: AtomicUsize,
}

impl TestDriver {
    pub fn of(kinds: &[VolumeKind]) -> Self {
        Self {
            kinds: kinds.to_vec(),
            ..Self::default()
        }
    }
}

#[csi_proxy_client::async_trait]
impl NodeDriver for TestDriver {
    fn name(&self) -> &str {
        "test.csi"
    }
    fn version(&self) -> &str {
        "9.9.9"
    }
    fn kinds(&self) -> &[VolumeKind] {
        &self.kinds
    }
    fn volume(&self, request: &VolumeRequest<'_>) -> Result<Volume, Status> {
        let id = request.volume_id;
        if let Some(lun) = id.strip_prefix("lun-").or(id.strip_prefix("keep-")) {
            return Ok(Volume::Disk(DiskSelector::lun(lun)));
        }
        if let Some(share) = id.strip_prefix("share-") {
            return Ok(Volume::Smb(
                csi_proxy_client::api::SmbRemotePath::new(share).unwrap(),
                None,
            ));
        }
        if id.starts_with("iqn.") {
            // CHAP from the node-stage secrets; the other calls need none.
            let target = IscsiVolume::new(TargetPortal::new("10.0.0.5"), id);
            return Ok(Volume::Iscsi(match request.secrets.get("chap") {
                Some(secret) => target.with_auth(IscsiAuth::OneWayChap {
                    username: "node".into(),
                    secret: Secret::new(secret.clone()),
                }),
                None => target,
            }));
        }
        if id == "by-context" || id == "refused-by-hook" {
            let lun = request.publish_context.get("lun");
            let lun = lun.ok_or_else(|| Status::invalid_argument("no lun in the context"))?;
            return Ok(Volume::Disk(DiskSelector::lun(lun)));
        }
        Err(Status::not_found(format!("no volume {id}")))
    }
    fn node_info(&self, node_id: &str) -> NodeInfo {
        NodeInfo::new(node_id)
            .with_topology("topology.test/zone", "zone-a")
            .with_max_volumes(16)
    }
    fn disk_after_unstage(&self, volume_id: &str) -> DiskAfterUnstage {
        match volume_id.starts_with("keep-") {
            true => DiskAfterUnstage::KeepOnline,
            false => DiskAfterUnstage::TakeOffline,
        }
    }
    async fn before_stage(&self, request: &VolumeRequest<'_>, _: &Volume) -> Result<(), Status> {
        self.before.fetch_add(1, Ordering::SeqCst);
        match request.volume_id {
            "refused-by-hook" => Err(Status::permission_denied("not on this node")),
            _ => Ok(()),
        }
    }
    async fn after_stage(
        &self,
        _: &VolumeRequest<'_>,
        _: &Volume,
        staging: &WindowsPath,
    ) -> Result<(), Status> {
        assert!(staging.as_str().ends_with("globalmount"));
        self.after.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// A node on CSI Proxy v1.3 with disks at LUN 1 and 2, the share
/// `\\files\data`, and the driver's service on it.
pub struct Node1 {
    pub _node: TestNode,
    pub host: FakeHost,
    pub fake: FakeProxy,
    pub proxy: CsiProxy,
    pub state: tempfile::TempDir,
}

impl Node1 {
    pub async fn new(release: ProxyRelease) -> Self {
        let node = TestNode::new();
        let host = FakeHost::builder()
            .disk(1, "", 10 * GIB)
            .disk(2, "", 10 * GIB)
            .smb_share(r"\\files\data", "user", "pw")
            .share_size(r"\\files\data", 100 * GIB, 30 * GIB)
            .share_folder(r"\\files\data\pv")
            .iscsi_target(
                TargetPortal::new("10.0.0.5"),
                ISCSI_TARGET,
                &[("pv-i", 10 * GIB)],
                Some(("node", "chap-secret")),
                None,
            )
            .dir(PLUGINS)
            .dir(PODS)
            .build();
        let mut fake = FakeProxy::for_host(node.transport(), &host);
        fake.serve_release(release).await.unwrap();
        let proxy = CsiProxy::builder()
            .transport(node.transport())
            .connect()
            .await
            .unwrap();
        Self {
            _node: node,
            host,
            fake,
            proxy,
            state: tempfile::tempdir().unwrap(),
        }
    }

    /// The service of `driver` (a new one each time: a plugin's restart).
    pub fn service<D: NodeDriver>(&self, driver: D) -> NodeService<D> {
        self.service_on(driver, |mounter| mounter)
    }

    /// The service of `driver`, which measures shares as the fake host
    /// keeps them, as a node that reaches them does.
    pub fn service_measuring_shares<D: NodeDriver>(&self, driver: D) -> NodeService<D> {
        self.service_on(driver, |mounter| mounter.share_space(self.host.clone()))
    }

    pub fn service_on<D: NodeDriver>(
        &self,
        driver: D,
        configure: impl FnOnce(MounterBuilder) -> MounterBuilder,
    ) -> NodeService<D> {
        let mounter = Mounter::builder(self.proxy.clone(), self.state.path())
            .disk_wait(Duration::from_millis(100));
        let mounter = configure(mounter).build().unwrap();
        NodeService::new(driver, mounter, "node-1", self.state.path()).unwrap()
    }
}

/// A volume ID as a folder's name.
fn folder(volume: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || c == '-';
    volume
        .chars()
        .map(|c| if safe(c) { c } else { '_' })
        .collect()
}

pub fn staging(volume: &str) -> String {
    format!(r"{PLUGINS}\{}\globalmount", folder(volume))
}

pub fn target(volume: &str) -> String {
    format!(r"{PODS}\{}\mount", folder(volume))
}

pub fn mount(mode: capability::access_mode::Mode) -> VolumeCapability {
    VolumeCapability {
        access_type: Some(capability::AccessType::Mount(Default::default())),
        access_mode: Some(capability::AccessMode { mode: mode as i32 }),
    }
}

pub fn writer() -> VolumeCapability {
    mount(capability::access_mode::Mode::SingleNodeWriter)
}

pub fn stage(volume: &str) -> NodeStageVolumeRequest {
    NodeStageVolumeRequest {
        volume_id: volume.into(),
        staging_target_path: staging(volume),
        volume_capability: Some(writer()),
        ..Default::default()
    }
}

pub fn publish(volume: &str) -> NodePublishVolumeRequest {
    NodePublishVolumeRequest {
        volume_id: volume.into(),
        staging_target_path: staging(volume),
        target_path: target(volume),
        volume_capability: Some(writer()),
        ..Default::default()
    }
}

pub fn stats(volume: &str, path: &str) -> NodeGetVolumeStatsRequest {
    NodeGetVolumeStatsRequest {
        volume_id: volume.into(),
        volume_path: path.into(),
        staging_target_path: String::new(),
    }
}

pub fn unstage(volume: &str) -> NodeUnstageVolumeRequest {
    NodeUnstageVolumeRequest {
        volume_id: volume.into(),
        staging_target_path: staging(volume),
    }
}

/// The code of an answer (`Ok` for a success).
fn code<T>(answer: Result<T, Status>) -> Code {
    answer.err().map_or(Code::Ok, |status| status.code())
}

#[tokio::test]
async fn every_request_is_checked_with_the_specs_codes() {
    use capability::access_mode::Mode;
    let node = Node1::new(ProxyRelease::LATEST).await;
    let service = node.service(TestDriver::of(&[VolumeKind::Disk, VolumeKind::Smb]));
    let stage_with = |change: &dyn Fn(&mut NodeStageVolumeRequest)| {
        let mut request = stage("lun-1");
        change(&mut request);
        service.node_stage_volume(Request::new(request))
    };
    let block = VolumeCapability {
        access_type: Some(capability::AccessType::Block(Default::default())),
        ..writer()
    };
    type Change<'a> = &'a dyn Fn(&mut NodeStageVolumeRequest);
    let cases: [(&str, Change, Code); 8] = [
        (
            "no volume ID",
            &|r| r.volume_id.clear(),
            Code::InvalidArgument,
        ),
        (
            "no staging path",
            &|r| r.staging_target_path.clear(),
            Code::InvalidArgument,
        ),
        (
            "no capability",
            &|r| r.volume_capability = None,
            Code::InvalidArgument,
        ),
        (
            "raw block",
            &|r| r.volume_capability = Some(block.clone()),
            Code::InvalidArgument,
        ),
        (
            "no access mode",
            &|r| r.volume_capability = Some(mount(Mode::Unknown)),
            Code::InvalidArgument,
        ),
        (
            "an unknown volume",
            &|r| r.volume_id = "vol-9".into(),
            Code::NotFound,
        ),
        (
            "a disk on several nodes",
            &|r| r.volume_capability = Some(mount(Mode::MultiNodeMultiWriter)),
            Code::FailedPrecondition,
        ),
        (
            "a read-only disk",
            &|r| r.volume_capability = Some(mount(Mode::SingleNodeReaderOnly)),
            Code::FailedPrecondition,
        ),
    ];
    for (case, change, expected) in cases {
        assert_eq!(code(stage_with(change).await), expected, "{case}");
    }
    assert!(node.host.calls_of(csi_proxy_client::Operation::MountVolume) == 0);

    // A share on several nodes is fine; without its secrets it cannot be
    // mapped.
    let mut share = stage(r"share-\\files\data\pv");
    share.volume_capability = Some(mount(Mode::MultiNodeMultiWriter));
    let missing = service.node_stage_volume(Request::new(share.clone())).await;
    assert_eq!(code(missing), Code::InvalidArgument);

    // Publish: read-only refused, nothing staged is FAILED_PRECONDITION.
    let mut read_only = publish("lun-1");
    read_only.readonly = true;
    let answer = service.node_publish_volume(Request::new(read_only)).await;
    assert_eq!(code(answer), Code::FailedPrecondition);
    let early = service
        .node_publish_volume(Request::new(publish("lun-1")))
        .await;
    assert_eq!(code(early), Code::FailedPrecondition);
    let unknown = service
        .node_publish_volume(Request::new(publish("vol-9")))
        .await;
    assert_eq!(code(unknown), Code::NotFound);

    // Unpublish, unstage, stats, expand: missing fields.
    let unpublish = NodeUnpublishVolumeRequest {
        volume_id: "lun-1".into(),
        target_path: String::new(),
    };
    let answer = service.node_unpublish_volume(Request::new(unpublish)).await;
    assert_eq!(code(answer), Code::InvalidArgument);
    let mut no_path = unstage("lun-1");
    no_path.staging_target_path.clear();
    let answer = service.node_unstage_volume(Request::new(no_path)).await;
    assert_eq!(code(answer), Code::InvalidArgument);
    let answer = service
        .node_get_volume_stats(Request::new(stats("lun-1", "")))
        .await;
    assert_eq!(code(answer), Code::InvalidArgument);
    let answer = service
        .node_get_volume_stats(Request::new(stats("vol-9", &staging("vol-9"))))
        .await;
    assert_eq!(code(answer), Code::NotFound);
    // A path with no volume, or that cannot be a Windows path.
    let answer = service
        .node_get_volume_stats(Request::new(stats("lun-1", &staging("lun-1"))))
        .await;
    assert_eq!(code(answer), Code::NotFound);
    let answer = service
        .node_get_volume_stats(Request::new(stats("lun-1", "/not/windows")))
        .await;
    assert_eq!(code(answer), Code::NotFound);
}

#[tokio::test]
async fn capabilities_info_and_probe_follow_the_drivers_kinds() {
    let node = Node1::new(ProxyRelease::LATEST).await;
    let rpcs = |caps: NodeGetCapabilitiesResponse| -> Vec<i32> {
        caps.capabilities
            .into_iter()
            .filter_map(|c| {
                c.r#type
                    .map(|node_service_capability::Type::Rpc(rpc)| rpc.r#type)
            })
            .collect()
    };
    use node_service_capability::rpc::Type;
    let disks = node.service(TestDriver::of(&[VolumeKind::Disk]));
    let caps = disks.node_get_capabilities(Request::new(NodeGetCapabilitiesRequest {}));
    let expected = [
        Type::StageUnstageVolume,
        Type::GetVolumeStats,
        Type::ExpandVolume,
    ];
    assert_eq!(
        rpcs(caps.await.unwrap().into_inner()),
        expected.map(|t| t as i32)
    );
    let shares = node.service(TestDriver::of(&[VolumeKind::Smb]));
    let caps = shares.node_get_capabilities(Request::new(NodeGetCapabilitiesRequest {}));
    assert_eq!(
        rpcs(caps.await.unwrap().into_inner()),
        [Type::StageUnstageVolume, Type::GetVolumeStats].map(|t| t as i32)
    );
    let plugin = shares.get_plugin_capabilities(Request::new(GetPluginCapabilitiesRequest {}));
    assert!(plugin.await.unwrap().into_inner().capabilities.is_empty());

    let info = disks
        .node_get_info(Request::new(NodeGetInfoRequest {}))
        .await;
    let info = info.unwrap().into_inner();
    assert_eq!(info.node_id, "node-1");
    assert_eq!(info.max_volumes_per_node, 16);
    let zone = &info.accessible_topology.unwrap().segments["topology.test/zone"];
    assert_eq!(zone, "zone-a");
    let plugin = disks
        .get_plugin_info(Request::new(GetPluginInfoRequest {}))
        .await;
    let plugin = plugin.unwrap().into_inner();
    assert_eq!(
        (plugin.name.as_str(), plugin.vendor_version.as_str()),
        ("test.csi", "9.9.9")
    );

    // Probe: ready while the groups of the driver's kinds are served.
    let probe = || async {
        let answer = disks.probe(Request::new(ProbeRequest {})).await;
        answer.unwrap().into_inner().ready
    };
    assert_eq!(probe().await, Some(true));
    node.fake.shutdown().await;
    crate::common::wait_until("the proxy is seen gone", || {
        !node.proxy.health().is_ready(VolumeKind::Disk.groups())
    })
    .await;
    assert_eq!(probe().await, Some(false));
}

#[tokio::test]
async fn stats_and_expand_answer_for_the_drivers_volume_with_the_stages_contexts() {
    let node = Node1::new(ProxyRelease::V1_1_0).await;
    let service = node.service(TestDriver::of(&[VolumeKind::Disk]));
    // A volume whose ID does not say its disk: its LUN is in the publish
    // context, which only the stage carries.
    let mut by_context = stage("by-context");
    by_context.publish_context = HashMap::from([("lun".into(), "1".into())]);
    service
        .node_stage_volume(Request::new(by_context))
        .await
        .unwrap();
    service
        .node_stage_volume(Request::new(stage("lun-2")))
        .await
        .unwrap();
    let total = |answer: Result<tonic::Response<NodeGetVolumeStatsResponse>, Status>| {
        answer.unwrap().into_inner().usage[0].total
    };
    let answer = service
        .node_get_volume_stats(Request::new(stats("by-context", &staging("by-context"))))
        .await;
    assert!(total(answer) > 0);
    // Another volume's path: NOT_FOUND, never the other's figures.
    let answer = service
        .node_get_volume_stats(Request::new(stats("by-context", &staging("lun-2"))))
        .await;
    assert_eq!(code(answer), Code::NotFound);

    // The plugin restarts: the contexts were kept.
    let restarted = node.service(TestDriver::of(&[VolumeKind::Disk]));
    let answer = restarted
        .node_get_volume_stats(Request::new(stats("by-context", &staging("by-context"))))
        .await;
    assert!(total(answer) > 0);
    assert!(node.host.set_disk_size(1, 20 * GIB));
    let expand = NodeExpandVolumeRequest {
        volume_id: "by-context".into(),
        volume_path: staging("by-context"),
        capacity_range: Some(CapacityRange {
            required_bytes: 20 << 30,
            limit_bytes: 0,
        }),
        ..Default::default()
    };
    let expanded = restarted
        .node_expand_volume(Request::new(expand.clone()))
        .await;
    assert!(expanded.unwrap().into_inner().capacity_bytes > 19 << 30);
    let other = NodeExpandVolumeRequest {
        volume_path: staging("lun-2"),
        ..expand
    };
    let answer = restarted.node_expand_volume(Request::new(other)).await;
    assert_eq!(code(answer), Code::NotFound);

    // Unstaged, the contexts are forgotten, and the disk goes offline
    // (kept online for `keep-`).
    restarted
        .node_unstage_volume(Request::new(unstage("by-context")))
        .await
        .unwrap();
    assert!(!node.host.disk(1).unwrap().online);
    let answer = restarted
        .node_get_volume_stats(Request::new(stats("by-context", &staging("by-context"))))
        .await;
    assert_eq!(
        code(answer),
        Code::InvalidArgument,
        "the driver lacks its context"
    );
    restarted
        .node_unstage_volume(Request::new(unstage("lun-2")))
        .await
        .unwrap();
    restarted
        .node_stage_volume(Request::new(stage("keep-2")))
        .await
        .unwrap();
    restarted
        .node_unstage_volume(Request::new(unstage("keep-2")))
        .await
        .unwrap();
    assert!(node.host.disk(2).unwrap().online);
}

#[tokio::test]
async fn the_hooks_run_around_the_stage_and_a_refusal_stages_nothing() {
    let node = Node1::new(ProxyRelease::LATEST).await;
    let service = node.service(TestDriver::of(&[VolumeKind::Disk]));
    service
        .node_stage_volume(Request::new(stage("lun-1")))
        .await
        .unwrap();
    service
        .node_stage_volume(Request::new(stage("lun-1")))
        .await
        .unwrap();
    let driver = service.driver();
    assert_eq!(driver.before.load(Ordering::SeqCst), 2);
    assert_eq!(
        driver.after.load(Ordering::SeqCst),
        2,
        "a repeat runs it too"
    );

    let mut refused = stage("refused-by-hook");
    refused.publish_context = HashMap::from([("lun".into(), "2".into())]);
    let answer = service.node_stage_volume(Request::new(refused)).await;
    assert_eq!(code(answer), Code::PermissionDenied);
    assert_eq!(node.host.entry(&staging("refused-by-hook")), None);
    assert_eq!(driver.after.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_share_is_staged_with_the_node_stage_secrets_and_published() {
    let node = Node1::new(ProxyRelease::LATEST).await;
    let service = node.service(TestDriver::of(&[VolumeKind::Smb]));
    let volume = r"share-\\files\data\pv";
    // kubelet makes the staging path's parent.
    let parent = staging(volume).trim_end_matches(r"\globalmount").to_owned();
    let filesystem = node.proxy.filesystem().unwrap();
    filesystem
        .mkdir(&WindowsPath::new(parent).unwrap())
        .await
        .unwrap();
    let mut request = stage(volume);
    request.secrets = HashMap::from([
        ("username".into(), "user".into()),
        ("password".into(), "pw".into()),
    ]);
    service
        .node_stage_volume(Request::new(request))
        .await
        .unwrap();
    assert_eq!(node.host.smb_mappings().len(), 1);
    service
        .node_publish_volume(Request::new(publish(volume)))
        .await
        .unwrap();
    assert!(matches!(
        node.host.entry(&target(volume)),
        Some(PathEntry::Symlink(_))
    ));
    // A node that cannot reach the share from the plugin answers a usage
    // with nothing set, which kubelet takes.
    struct Unreachable;
    impl ShareSpace for Unreachable {
        fn measure(&self, _: &csi_proxy_client::api::SmbRemotePath) -> Option<FsStats> {
            None
        }
    }
    let unreachable = node.service_on(TestDriver::of(&[VolumeKind::Smb]), |mounter| {
        mounter.share_space(Unreachable)
    });
    let answer = unreachable
        .node_get_volume_stats(Request::new(stats(volume, &target(volume))))
        .await;
    let usage = answer.unwrap().into_inner().usage;
    assert_eq!(usage.len(), 1);
    assert_eq!(
        (usage[0].total, usage[0].used, usage[0].available),
        (0, 0, 0)
    );
    assert_eq!(usage[0].unit, volume_usage::Unit::Bytes as i32);
    // One that reaches it measures the share, through the pod's link or
    // the staging path; a plugin of disks and shares grows nothing of it.
    let measuring =
        node.service_measuring_shares(TestDriver::of(&[VolumeKind::Disk, VolumeKind::Smb]));
    for path in [target(volume), staging(volume)] {
        let answer = measuring
            .node_get_volume_stats(Request::new(stats(volume, &path)))
            .await;
        let usage = &answer.unwrap().into_inner().usage[0];
        assert_eq!((usage.total, usage.used), (100 << 30, 30 << 30), "{path}");
        assert_eq!(usage.available, 70 << 30);
    }
    let expand = NodeExpandVolumeRequest {
        volume_id: volume.into(),
        volume_path: target(volume),
        ..Default::default()
    };
    let expanded = measuring.node_expand_volume(Request::new(expand)).await;
    assert_eq!(expanded.unwrap().into_inner().capacity_bytes, 100 << 30);
    // Another share folder's ID at this path: it is not there.
    let other = r"share-\\files\data\other";
    let answer = measuring
        .node_get_volume_stats(Request::new(stats(other, &target(volume))))
        .await;
    assert_eq!(code(answer), Code::NotFound);
    let unpublish = NodeUnpublishVolumeRequest {
        volume_id: volume.into(),
        target_path: target(volume),
    };
    service
        .node_unpublish_volume(Request::new(unpublish))
        .await
        .unwrap();
    // The journal says it is a share: unmapped with its last volume.
    service
        .node_unstage_volume(Request::new(unstage(volume)))
        .await
        .unwrap();
    assert!(node.host.smb_mappings().is_empty());
}

#[tokio::test]
async fn each_call_has_a_span_and_counts_by_method_and_code() {
    #[derive(Clone, Default)]
    struct Log(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Log {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let log = Log::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _traced = tracing::subscriber::set_default(subscriber);
    let recorder = LogRecorder::default();
    let _recorded = metrics::set_default_local_recorder(&recorder);

    let node = Node1::new(ProxyRelease::LATEST).await;
    let service = node.service(TestDriver::of(&[VolumeKind::Disk]));
    service
        .node_stage_volume(Request::new(stage("lun-1")))
        .await
        .unwrap();
    let _ = service
        .node_stage_volume(Request::new(stage("vol-9")))
        .await;
    let _ = service
        .node_get_info(Request::new(NodeGetInfoRequest {}))
        .await;

    let count =
        |method, code| recorder.count(CSI_CALLS_TOTAL, &[("method", method), ("code", code)]);
    assert_eq!(count("NodeStageVolume", "OK"), 1);
    assert_eq!(count("NodeStageVolume", "NOT_FOUND"), 1);
    assert_eq!(count("NodeGetInfo", "OK"), 1);
    let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("csi_call{")).collect();
    let found = |method: &str, code: &str| {
        lines.iter().any(|line| {
            line.contains(&format!("method=\"{method}\""))
                && line.contains(&format!("code=\"{code}\""))
                && line.contains("duration_ms=")
        })
    };
    assert!(found("NodeStageVolume", "OK"), "{text}");
    assert!(found("NodeStageVolume", "NOT_FOUND"), "{text}");
    assert!(text.contains("volume_id=\"vol-9\""), "{text}");
}

/// A client channel to a `tcp://` endpoint.
pub async fn channel(endpoint: &str) -> tonic::transport::Channel {
    let address = endpoint.strip_prefix("tcp://").unwrap();
    tonic::transport::Endpoint::from_shared(format!("http://{address}"))
        .unwrap()
        .connect()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_answers_the_calls_under_way_before_serving_ends() {
    use csi_proxy_client::csi::v1::node_client::NodeClient;
    use csi_proxy_client::csi::{serve, Listener};
    use csi_proxy_client::Operation;

    let node = Node1::new(ProxyRelease::LATEST).await;
    let service = node.service(TestDriver::of(&[VolumeKind::Disk]));
    let listener = Listener::bind("tcp://127.0.0.1:0").await.unwrap();
    let endpoint = listener.endpoint().to_owned();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(serve(listener, service.into(), async {
        let _ = stopped.await;
    }));
    let mut client = NodeClient::new(channel(&endpoint).await);
    // A stage whose format takes a while; the stop comes in the middle.
    node.host
        .set_latency(Operation::FormatVolume, Duration::from_millis(500));
    let staged = tokio::spawn(async move { client.node_stage_volume(stage("lun-1")).await });
    crate::common::wait_until("the format has started", || {
        node.host.calls_of(Operation::FormatVolume) > 0
    })
    .await;
    stop.send(()).unwrap();
    let answer = staged.await.unwrap();
    assert!(answer.is_ok(), "{answer:?}");
    served.await.unwrap().unwrap();
    assert!(matches!(
        node.host.entry(&staging("lun-1")),
        Some(PathEntry::MountPoint(_))
    ));
    // Stopped: no new connection is served.
    let address = endpoint.strip_prefix("tcp://").unwrap();
    assert!(tokio::net::TcpStream::connect(address).await.is_err());
}

/// A call that never ends does not keep the plugin from stopping: serving
/// ends `SHUTDOWN_DEADLINE` after the stop, without it. (Time is the
/// runtime's, paused: it jumps ahead while everything waits.)
#[tokio::test(start_paused = true)]
async fn a_call_that_never_ends_is_left_at_the_shutdown_deadline() {
    use csi_proxy_client::csi::v1::identity_client::IdentityClient;
    use csi_proxy_client::csi::v1::identity_server::IdentityServer;
    use csi_proxy_client::csi::{serve, Listener, Services, SHUTDOWN_DEADLINE};
    use tokio::sync::Notify;

    /// Its `Probe` never answers; it says when one came.
    struct Stuck(Arc<Notify>);

    #[csi_proxy_client::async_trait]
    impl Identity for Stuck {
        async fn get_plugin_info(
            &self,
            _: Request<GetPluginInfoRequest>,
        ) -> Result<tonic::Response<GetPluginInfoResponse>, Status> {
            Err(Status::unimplemented("not here"))
        }
        async fn get_plugin_capabilities(
            &self,
            _: Request<GetPluginCapabilitiesRequest>,
        ) -> Result<tonic::Response<GetPluginCapabilitiesResponse>, Status> {
            Err(Status::unimplemented("not here"))
        }
        async fn probe(
            &self,
            _: Request<ProbeRequest>,
        ) -> Result<tonic::Response<ProbeResponse>, Status> {
            self.0.notify_one();
            std::future::pending().await
        }
    }

    let came = Arc::new(Notify::new());
    let services = Services::new().with_service(IdentityServer::new(Stuck(came.clone())));
    let listener = Listener::bind("tcp://127.0.0.1:0").await.unwrap();
    let endpoint = listener.endpoint().to_owned();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(serve(listener, services, async {
        let _ = stopped.await;
    }));
    let mut client = IdentityClient::new(channel(&endpoint).await);
    let stuck = tokio::spawn(async move { client.probe(ProbeRequest {}).await });
    came.notified().await;
    let stopping = tokio::time::Instant::now();
    stop.send(()).unwrap();
    served.await.unwrap().unwrap();
    let took = stopping.elapsed();
    assert!(
        took >= SHUTDOWN_DEADLINE && took < SHUTDOWN_DEADLINE + Duration::from_secs(5),
        "{took:?}"
    );
    // Serving ended without answering it.
    assert!(!stuck.is_finished(), "the stuck call was answered");
    stuck.abort();
}

#[tokio::test]
async fn an_endpoint_that_cannot_be_served_stops_the_start_before_the_proxy() {
    use csi_proxy_client::csi::{NodePlugin, ServeError};
    let dir = tempfile::tempdir().unwrap();
    let no_proxy = TestNode::new();
    for endpoint in ["http://127.0.0.1:1", "unix://", "tcp://256.0.0.1:0"] {
        // The proxy would be waited for a minute: the endpoint is first.
        let started = NodePlugin::new(TestDriver::of(&[VolumeKind::Disk]))
            .endpoint(endpoint)
            .state_dir(dir.path())
            .proxy(|proxy| {
                proxy
                    .transport(no_proxy.transport())
                    .wait_for_proxy(Duration::from_secs(60))
                    .require(csi_proxy_client::ApiGroup::Disk)
            })
            .run();
        let answer = tokio::time::timeout(Duration::from_secs(10), started).await;
        let error = answer.expect("it stops at once").unwrap_err();
        assert!(
            matches!(error, ServeError::Endpoint { .. }),
            "{endpoint}: {error}"
        );
    }
}

/// A plugin started on Linux without `--socket-dir` says which flag to
/// give, not which builder method to call.
#[cfg(unix)]
#[tokio::test]
async fn the_plugins_start_errors_name_its_flags() {
    use csi_proxy_client::csi::{NodePlugin, ServeError};
    let dir = tempfile::tempdir().unwrap();
    let args = ["--endpoint", "tcp://127.0.0.1:0", "--state-dir"].map(str::to_owned);
    let args = args.into_iter().chain([dir.path().display().to_string()]);
    let plugin = NodePlugin::new(TestDriver::of(&[VolumeKind::Disk]))
        .args(args)
        .unwrap();
    let error = plugin.run().await.unwrap_err();
    let ServeError::Usage(text) = &error else {
        panic!("not a usage error: {error}");
    };
    assert!(
        text.starts_with("CSI Proxy's named pipes exist only on Windows: give --socket-dir"),
        "{text}"
    );
    assert!(!text.contains("CsiProxyBuilder"), "{text}");
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_socket_is_bound_before_the_proxy_is_dialled_and_a_stale_one_replaced() {
    use csi_proxy_client::csi::v1::identity_client::IdentityClient;
    use csi_proxy_client::csi::NodePlugin;
    use hyper_util::rt::TokioIo;

    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("csi.sock");
    // A crashed run's socket.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    let proxy_dir = dir.path().join("proxy");
    std::fs::create_dir(&proxy_dir).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let plugin = NodePlugin::new(TestDriver::of(&[VolumeKind::Disk]))
        .args([
            format!("--endpoint=unix://{}", socket.display()),
            "--socket-dir".into(),
            proxy_dir.display().to_string(),
            "--state-dir".into(),
            dir.path().join("state").display().to_string(),
            "--node-id".into(),
            "node-7".into(),
        ])
        .unwrap()
        // The proxy is required, and waited for: it is not there yet.
        .proxy(|proxy| {
            use csi_proxy_client::ApiGroup::{Disk, Filesystem, Volume};
            let proxy = proxy.wait_for_proxy(Duration::from_secs(60));
            proxy.require(Disk).require(Volume).require(Filesystem)
        })
        .stop_on(async {
            let _ = stopped.await;
        });
    let running = tokio::spawn(plugin.run());

    // The socket is there (the stale one replaced) while the plugin waits
    // for the proxy: kubelet's connection is taken, and answered once the
    // proxy came and serving started.
    let connected = async {
        loop {
            if let Ok(stream) = tokio::net::UnixStream::connect(&socket).await {
                break stream;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let early = tokio::time::timeout(Duration::from_secs(10), connected).await;
    drop(early.expect("bound while the proxy is waited for"));
    let path = socket.clone();
    let endpoint = tonic::transport::Endpoint::from_static("http://csi");
    let channel = endpoint.connect_with_connector(tower::service_fn(move |_| {
        let path = path.clone();
        async move {
            tokio::net::UnixStream::connect(path)
                .await
                .map(TokioIo::new)
        }
    }));
    let mut fake = FakeProxy::for_host(
        csi_proxy_client::transport::Transport::unix_sockets(&proxy_dir).unwrap(),
        &FakeHost::default(),
    );
    assert!(!running.is_finished());
    fake.serve_release(ProxyRelease::LATEST).await.unwrap();
    let mut client = IdentityClient::new(channel.await.unwrap());
    let info = client
        .get_plugin_info(GetPluginInfoRequest {})
        .await
        .unwrap();
    assert_eq!(info.into_inner().name, "test.csi");
    // Ready once the proxy serves the disk groups (each found in turn).
    let mut ready = None;
    for _ in 0..200 {
        let answer = client.probe(ProbeRequest {}).await.unwrap();
        ready = answer.into_inner().ready;
        if ready == Some(true) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(ready, Some(true));
    drop(client);

    stop.send(()).unwrap();
    running.await.unwrap().unwrap();
    assert!(!socket.exists(), "the socket is removed at the stop");
    fake.shutdown().await;
}

#[tokio::test]
async fn probe_finds_a_proxy_that_started_after_the_plugin() {
    let node = TestNode::new();
    let proxy = CsiProxy::builder()
        .transport(node.transport())
        .wait_for_proxy(Duration::ZERO)
        .connect()
        .await
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    let mounter = Mounter::builder(proxy, state.path()).build().unwrap();
    let driver = TestDriver::of(&[VolumeKind::Disk]);
    let service = NodeService::new(driver, mounter, "node-1", state.path()).unwrap();
    let probe = || async {
        let answer = service.probe(Request::new(ProbeRequest {})).await;
        answer.unwrap().into_inner().ready
    };
    assert_eq!(probe().await, Some(false));
    let mut fake = FakeProxy::for_host(node.transport(), &FakeHost::default());
    fake.serve_release(ProxyRelease::V0_2_2).await.unwrap();
    // No call was made: the probe itself looks.
    assert_eq!(probe().await, Some(true));
}

#[tokio::test]
async fn an_iscsi_volume_is_logged_in_staged_measured_and_logged_out() {
    let node = Node1::new(ProxyRelease::LATEST).await;
    let service = node.service(TestDriver::of(&[VolumeKind::Iscsi]));
    let mut request = stage(ISCSI_TARGET);
    // A wrong CHAP secret: refused, nothing logged in.
    request.secrets = HashMap::from([("chap".into(), "wrong".into())]);
    let refused = service
        .node_stage_volume(Request::new(request.clone()))
        .await;
    assert_ne!(code(refused), Code::Ok);
    assert!(node.host.iscsi_sessions().is_empty());
    request.secrets = HashMap::from([("chap".into(), "chap-secret".into())]);
    for _ in 0..2 {
        let staged = service
            .node_stage_volume(Request::new(request.clone()))
            .await;
        staged.unwrap();
    }
    assert_eq!(node.host.iscsi_sessions().len(), 1);
    let path = staging(ISCSI_TARGET);
    assert!(matches!(
        node.host.entry(&path),
        Some(PathEntry::MountPoint(_))
    ));
    // Stats and expand: the volume at the path is on the target's disk;
    // another volume's path is NOT_FOUND.
    let usage = service
        .node_get_volume_stats(Request::new(stats(ISCSI_TARGET, &path)))
        .await;
    assert!(usage.unwrap().into_inner().usage[0].total > 9 * GIB as i64);
    service
        .node_stage_volume(Request::new(stage("lun-1")))
        .await
        .unwrap();
    let other = service
        .node_get_volume_stats(Request::new(stats(ISCSI_TARGET, &staging("lun-1"))))
        .await;
    assert_eq!(code(other), Code::NotFound);
    // The journal says it is an iSCSI volume: its unstage logs out.
    for _ in 0..2 {
        let unstaged = service.node_unstage_volume(Request::new(unstage(ISCSI_TARGET)));
        unstaged.await.unwrap();
    }
    assert!(node.host.iscsi_sessions().is_empty());
    assert_eq!(node.host.entry(&path), None);
}
