//! A CSI node plugin's volume life against embedded fake proxies: the
//! functions of `node.rs` (what a driver's `NodeStageVolume`, ... handlers
//! call), run unchanged on a node with CSI Proxy v0.2.2 and on one with
//! v1.1, printing each step, the versions negotiated and the calls each
//! proxy received. See `docs/porting.md` for the guide from the Go client.
//!
//! Run it with `cargo run --example node_plugin`.

mod node;

use csi_proxy_client::testing::{FakeHost, FakeProxy, LocalEndpoints, ProxyRelease};
use csi_proxy_client::{api::WindowsPath, ApiGroup, CsiProxy};

const GIB: u64 = 1 << 30;
const PAGE83: &str = "Google  pvc-1234";
const STAGING: &str =
    r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\pd.csi.storage.gke.io\0f1e\globalmount";
const POD_DIR: &str = r"C:\var\lib\kubelet\pods\7c1d\volumes\kubernetes.io~csi\pvc-1234";

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    for release in [ProxyRelease::V0_2_2, ProxyRelease::V1_1_0] {
        let endpoints = LocalEndpoints::new()?;
        let transport = endpoints.transport();
        let host = FakeHost::builder()
            .disk(1, PAGE83, 10 * GIB)
            .dir(POD_DIR)
            .build();
        let mut fake = FakeProxy::for_host(transport.clone(), &host);
        fake.serve_release(release).await?;
        let proxy = CsiProxy::builder()
            .transport(transport)
            .require(ApiGroup::Disk)
            .require(ApiGroup::Volume)
            .require(ApiGroup::Filesystem)
            .connect()
            .await?;
        println!("CSI Proxy {release}:\n{}", proxy.health());
        one_volume(&proxy, &host).await?;
        let mut rpcs: Vec<String> = fake
            .calls()
            .iter()
            .map(|c| format!("{} {} {}", c.group, c.version, c.rpc))
            .collect();
        rpcs.dedup();
        println!("  calls the proxy received:\n    {}\n", rpcs.join("\n    "));
        fake.shutdown().await;
    }
    Ok(())
}

async fn one_volume(proxy: &CsiProxy, host: &FakeHost) -> Result<(), Box<dyn std::error::Error>> {
    let staging = WindowsPath::new(STAGING)?;
    let target = WindowsPath::new(format!(r"{POD_DIR}\mount"))?;

    let volume = node::node_stage_volume(proxy, PAGE83, &staging).await?;
    println!("  staged {volume} at {staging}");
    node::node_publish_volume(proxy, &staging, &target).await?;
    println!("  published at {target}");
    let stats = node::node_get_volume_stats(proxy, &target).await?;
    println!(
        "  stats: {} of {} bytes used",
        stats.used_bytes, stats.total_bytes
    );
    // The controller grows the disk to 20 GiB; the node grows the volume.
    host.set_disk_size(1, 20 * GIB);
    let size = node::node_expand_volume(proxy, &target).await?;
    println!("  expanded to {size} bytes");
    node::node_unpublish_volume(proxy, &target).await?;
    node::node_unstage_volume(proxy, &staging).await?;
    println!("  unpublished and unstaged");
    // What a handler answers kubelet when something fails: the SDK's error
    // converts into the CSI status (`?` in a tonic handler does it).
    if let Err(error) = node::node_stage_volume(proxy, "Google  no-such-disk", &staging).await {
        let status = tonic::Status::from(error);
        println!(
            "  a disk that is not attached: {:?}: {}",
            status.code(),
            status.message()
        );
    }
    Ok(())
}
