//! The plugin's demonstration (`cargo run --example node_plugin` with no
//! arguments): one volume's life as kubelet drives it, through the
//! plugin's Node service, unchanged on a node with CSI Proxy v0.2.2 and on
//! one with v1.3, printing each call and the calls the proxy received.

use csi_proxy_client::csi::v1::{node_server::Node, volume_capability as capability, *};
use csi_proxy_client::csi::NodeService;
use csi_proxy_client::mount::Mounter;
use csi_proxy_client::testing::{FakeHost, FakeProxy, LocalEndpoints, ProxyRelease};
use csi_proxy_client::CsiProxy;
use tonic::Request;

use crate::driver::ExampleDriver;

const GIB: u64 = 1 << 30;
const VOLUME: &str = "disk:page83:Google  pvc-1234";
const STAGING: &str = r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\example\0f1e\globalmount";
const POD_DIR: &str = r"C:\var\lib\kubelet\pods\7c1d\volumes\kubernetes.io~csi\pvc-1234";
const TARGET: &str = r"C:\var\lib\kubelet\pods\7c1d\volumes\kubernetes.io~csi\pvc-1234\mount";

pub async fn run() -> Result<(), Box<dyn std::error::Error>> {
    for release in [ProxyRelease::V0_2_2, ProxyRelease::LATEST] {
        let endpoints = LocalEndpoints::new()?;
        let host = FakeHost::builder()
            .disk(1, "Google  pvc-1234", 10 * GIB)
            .dir(POD_DIR)
            .build();
        let mut fake = FakeProxy::for_host(endpoints.transport(), &host);
        fake.serve_release(release).await?;
        let proxy = CsiProxy::builder()
            .transport(endpoints.transport())
            .connect()
            .await?;
        println!("CSI Proxy {release}:\n{}", proxy.health());
        // On a node: a folder under the plugin's host directory.
        let state = tempfile::tempdir()?;
        let mounter = Mounter::builder(proxy, state.path()).build()?;
        let node = NodeService::new(
            ExampleDriver::of_kind("disk")?,
            mounter,
            "node-1",
            state.path(),
        )?;
        let rpcs = || {
            let calls: Vec<String> = fake.calls().into_iter().map(|c| c.rpc).collect();
            fake.clear_calls();
            calls.join(" ")
        };
        let mount = VolumeCapability {
            access_type: Some(capability::AccessType::Mount(Default::default())),
            access_mode: Some(capability::AccessMode {
                mode: capability::access_mode::Mode::SingleNodeWriter as i32,
            }),
        };
        let stage = NodeStageVolumeRequest {
            volume_id: VOLUME.into(),
            staging_target_path: STAGING.into(),
            volume_capability: Some(mount.clone()),
            ..Default::default()
        };
        for what in ["staged", "staged again (kubelet's retry): nothing changed"] {
            node.node_stage_volume(Request::new(stage.clone())).await?;
            println!("  {what}\n    {}", rpcs());
        }
        let publish = NodePublishVolumeRequest {
            volume_id: VOLUME.into(),
            staging_target_path: STAGING.into(),
            target_path: TARGET.into(),
            volume_capability: Some(mount),
            ..Default::default()
        };
        node.node_publish_volume(Request::new(publish.clone()))
            .await?;
        println!("  published at {TARGET}\n    {}", rpcs());
        let stats = NodeGetVolumeStatsRequest {
            volume_id: VOLUME.into(),
            volume_path: TARGET.into(),
            staging_target_path: STAGING.into(),
        };
        let usage = node.node_get_volume_stats(Request::new(stats)).await?;
        let usage = &usage.get_ref().usage[0];
        println!(
            "  stats: {} of {} bytes used\n    {}",
            usage.used,
            usage.total,
            rpcs()
        );
        // The controller grows the disk to 20 GiB; the node grows the volume.
        host.set_disk_size(1, 20 * GIB);
        let expand = NodeExpandVolumeRequest {
            volume_id: VOLUME.into(),
            volume_path: TARGET.into(),
            capacity_range: Some(CapacityRange {
                required_bytes: 20 << 30,
                limit_bytes: 0,
            }),
            ..Default::default()
        };
        let expanded = node.node_expand_volume(Request::new(expand)).await?;
        println!(
            "  expanded to {} bytes\n    {}",
            expanded.get_ref().capacity_bytes,
            rpcs()
        );
        let target = (VOLUME.to_owned(), TARGET.to_owned());
        let unpublish = NodeUnpublishVolumeRequest {
            volume_id: target.0,
            target_path: target.1,
        };
        node.node_unpublish_volume(Request::new(unpublish)).await?;
        let unstage = NodeUnstageVolumeRequest {
            volume_id: VOLUME.into(),
            staging_target_path: STAGING.into(),
        };
        node.node_unstage_volume(Request::new(unstage)).await?;
        println!("  unpublished and unstaged (disk offline)\n    {}", rpcs());
        // What kubelet gets when something fails: the code the CSI spec
        // gives it in that call.
        let early = node
            .node_publish_volume(Request::new(publish))
            .await
            .unwrap_err();
        println!(
            "  a publish before the stage: {:?}: {}",
            early.code(),
            early.message()
        );
        fake.shutdown().await;
    }
    Ok(())
}
