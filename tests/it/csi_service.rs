//! The CSI node service (feature `csi`): a driver's `NodeDriver` in
//! `NodeService`, on a fake proxy. Each request checked with the spec's
//! codes; capabilities, info and `Probe` from the driver's kinds; stats
//! and expand only for the volume the driver names, with the stage's
//! contexts also after a restart; the driver's hooks; a span and metrics
//! per call; and serving: the endpoint bound before the proxy is dialled,
//! a stale socket replaced, a stop that answers the calls under way, and
//! the caps on calls, streams and connections (`limits`).
//!
//! Here: the tests' driver, node and requests, which `node_plugin` and
//! `foreign_objects` use too.

mod calls;
mod limits;
mod serving;
mod spans;
mod volumes;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use csi_proxy_client::api::{IscsiAuth, Secret, TargetPortal, WindowsPath};
use csi_proxy_client::csi::v1::{volume_capability as capability, *};
use csi_proxy_client::csi::{NodeDriver, NodeInfo, NodeService, Volume, VolumeKind, VolumeRequest};
use csi_proxy_client::mount::{
    DiskAfterUnstage, DiskSelector, IscsiVolume, Mounter, MounterBuilder,
};
use csi_proxy_client::testing::{FakeHost, FakeProxy, ProxyRelease};
use csi_proxy_client::{Code, CsiProxy, Status};

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

/// A client channel to a `tcp://` endpoint.
pub async fn channel(endpoint: &str) -> tonic::transport::Channel {
    let address = endpoint.strip_prefix("tcp://").unwrap();
    tonic::transport::Endpoint::from_shared(format!("http://{address}"))
        .unwrap()
        .connect()
        .await
        .unwrap()
}
