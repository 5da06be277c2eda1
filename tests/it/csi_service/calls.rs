//! Each call's answer: the spec's codes for a request that is wrong,
//! and capabilities, info and `Probe` from the driver's kinds (and a
//! proxy that comes late).

use std::time::Duration;

use csi_proxy_client::csi::v1::identity_server::Identity;
use csi_proxy_client::csi::v1::node_server::Node;
use csi_proxy_client::csi::v1::{volume_capability as capability, *};
use csi_proxy_client::csi::{NodeService, VolumeKind};
use csi_proxy_client::mount::Mounter;
use csi_proxy_client::testing::{FakeHost, FakeProxy, ProxyRelease};
use csi_proxy_client::{Code, CsiProxy};
use tonic::Request;

use super::{code, mount, publish, stage, staging, stats, unstage, writer, Node1, TestDriver};
use crate::common::TestNode;

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
