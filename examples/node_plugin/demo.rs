//! The plugin's demonstration (`cargo run --example node_plugin` with no
//! arguments): one volume's life against embedded fake proxies, the
//! functions of `node.rs` run unchanged on a node with CSI Proxy v0.2.2
//! and on one with v1.3, printing each step, the versions negotiated and
//! the calls each proxy received.

use crate::node;
use csi_proxy_client::mount::Mounter;
use csi_proxy_client::testing::{FakeHost, FakeProxy, LocalEndpoints, ProxyRelease};
use csi_proxy_client::{api::WindowsPath, ApiGroup, CsiProxy};

const GIB: u64 = 1 << 30;
const PAGE83: &str = "Google  pvc-1234";
const STAGING: &str =
    r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\pd.csi.storage.gke.io\0f1e\globalmount";
const POD_DIR: &str = r"C:\var\lib\kubelet\pods\7c1d\volumes\kubernetes.io~csi\pvc-1234";

pub async fn run() -> Result<(), Box<dyn std::error::Error>> {
    for release in [ProxyRelease::V0_2_2, ProxyRelease::LATEST] {
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
        // On a node: a folder under the plugin's host directory.
        let state = tempfile::tempdir()?;
        let mounter = Mounter::builder(proxy, state.path()).build()?;
        one_volume(&mounter, &host, &fake).await?;
        fake.shutdown().await;
    }
    Ok(())
}

async fn one_volume(
    mounter: &Mounter,
    host: &FakeHost,
    fake: &FakeProxy,
) -> Result<(), Box<dyn std::error::Error>> {
    let staging = WindowsPath::new(STAGING)?;
    let target = WindowsPath::new(format!(r"{POD_DIR}\mount"))?;
    let rpcs = || {
        let calls: Vec<String> = fake.calls().into_iter().map(|c| c.rpc).collect();
        fake.clear_calls();
        calls.join(" ")
    };

    let volume = node::node_stage_volume(mounter, PAGE83, &staging).await?;
    println!("  staged {volume} at {staging}\n    {}", rpcs());
    node::node_stage_volume(mounter, PAGE83, &staging).await?;
    println!(
        "  staged again (kubelet's retry): nothing changed\n    {}",
        rpcs()
    );
    node::node_publish_volume(mounter, &staging, &target).await?;
    println!("  published at {target}\n    {}", rpcs());
    let stats = node::node_get_volume_stats(mounter, PAGE83, &target).await?;
    println!(
        "  stats: {} of {} bytes used, {} free\n    {}",
        stats.used_bytes,
        stats.total_bytes,
        stats.available_bytes,
        rpcs()
    );
    // The controller grows the disk to 20 GiB; the node grows the volume.
    host.set_disk_size(1, 20 * GIB);
    let size = node::node_expand_volume(mounter, PAGE83, &target, Some(20 * GIB)).await?;
    println!("  expanded to {size} bytes\n    {}", rpcs());
    node::node_unpublish_volume(mounter, &target).await?;
    node::node_unstage_volume(mounter, &staging).await?;
    println!("  unpublished and unstaged (disk offline)\n    {}", rpcs());
    // What a handler answers kubelet when something fails: the SDK's error
    // converts into the CSI status (`?` in a tonic handler does it).
    let other = WindowsPath::new(format!(r"{POD_DIR}\other"))?;
    if let Err(error) = node::node_publish_volume(mounter, &staging, &other).await {
        let status = tonic::Status::from(error);
        println!(
            "  a publish before the stage: {:?}: {}",
            status.code(),
            status.message()
        );
    }
    Ok(())
}
