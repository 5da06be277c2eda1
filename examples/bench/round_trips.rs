//! Part 5: the calls each CSI node call of the example plugin sends,
//! counted at the fake proxy.

use crate::node;
use csi_proxy_client::api::WindowsPath;
use csi_proxy_client::mount::Mounter;
use csi_proxy_client::testing::{FakeHost, FakeProxy, LocalEndpoints, ProxyRelease};
use csi_proxy_client::CsiProxy;

const GIB: u64 = 1 << 30;
const PAGE83: &str = "Google  pvc-1";

pub async fn print() {
    println!("\nRound trips per CSI node call (the example plugin on the mounter)");
    println!(
        "{:<16} {:>6} {:>8}  calls at v1.3.0 (v0.2.2 sends as many)",
        "", "v1.3.0", "v0.2.2"
    );
    let v1 = count(ProxyRelease::LATEST).await;
    let old = count(ProxyRelease::V0_2_2).await;
    for ((name, rpcs), (_, old_rpcs)) in v1.iter().zip(&old) {
        println!(
            "{name:<16} {:>6} {:>8}  {}",
            rpcs.len(),
            old_rpcs.len(),
            rpcs.join(" ")
        );
    }
}

async fn count(release: ProxyRelease) -> Vec<(&'static str, Vec<String>)> {
    let endpoints = LocalEndpoints::new().unwrap();
    let staging = WindowsPath::new(r"C:\var\lib\kubelet\plugins\pd\pv1\globalmount").unwrap();
    let target = WindowsPath::new(r"C:\var\lib\kubelet\pods\p1\volumes\pv1\mount").unwrap();
    let host = FakeHost::builder()
        .disk(1, PAGE83, 10 * GIB)
        .dir(staging.as_str())
        .dir(target.parent().unwrap().as_str())
        .build();
    let mut fake = FakeProxy::for_host(endpoints.transport(), &host);
    fake.serve_release(release).await.unwrap();
    let proxy = CsiProxy::builder()
        .transport(endpoints.transport())
        .connect()
        .await
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    let m = &Mounter::builder(proxy, state.path()).build().unwrap();
    let mut steps = Vec::new();
    let mut step = |name| {
        steps.push((name, fake.calls().into_iter().map(|c| c.rpc).collect()));
        fake.clear_calls();
    };
    node::node_stage_volume(m, PAGE83, &staging).await.unwrap();
    step("stage");
    node::node_stage_volume(m, PAGE83, &staging).await.unwrap();
    step("stage again");
    node::node_publish_volume(m, &staging, &target)
        .await
        .unwrap();
    step("publish");
    node::node_publish_volume(m, &staging, &target)
        .await
        .unwrap();
    step("publish again");
    node::node_get_volume_stats(m, PAGE83, &target)
        .await
        .unwrap();
    step("stats");
    host.set_disk_size(1, 20 * GIB);
    node::node_expand_volume(m, PAGE83, &target, Some(20 * GIB))
        .await
        .unwrap();
    step("expand");
    node::node_unpublish_volume(m, &target).await.unwrap();
    step("unpublish");
    node::node_unpublish_volume(m, &target).await.unwrap();
    step("unpublish again");
    node::node_unstage_volume(m, &staging).await.unwrap();
    step("unstage");
    node::node_unstage_volume(m, &staging).await.unwrap();
    step("unstage again");
    steps
}
