//! How many calls each CSI node call of the example plugin sends, first
//! and repeated, on v1.3 and v0.2.2, and how deep they go: the rounds of
//! calls that wait on one another, each call taking the same time on the
//! host (on tokio's paused clock, so that calls sent side by side overlap
//! whatever the machine's load). `docs/mounting.md` shows the figures
//! (checked here) beside the Go mounters', and `cargo run --example bench
//! -- --round-trips` prints them. A change that adds a call or a round
//! shows here.

use std::time::Duration;

use super::{path, Node, GIB, PAGE83, STAGING, TARGET};
use crate::node_plugin::node;
use csi_proxy_client::api::FilesystemApi;
use csi_proxy_client::testing::ProxyRelease;

/// One step: its name, its calls by round (`A+B C`: `A` beside `B`, then
/// `C`), and its depth.
type Step = (&'static str, String);

/// What every host call takes: long beside the mounter's own waits.
const LATENCY: Duration = Duration::from_secs(1);

/// The calls of the proxy since the last step, by round.
fn rounds(node: &Node) -> String {
    let rounds = node.fake.rounds();
    node.take_rpcs();
    let rounds: Vec<String> = rounds.iter().map(|round| round.join("+")).collect();
    rounds.join(" ")
}

/// The rounds of each step of a disk's life.
async fn disk_steps(release: ProxyRelease) -> Vec<Step> {
    let node = Node::with_disk(release).await;
    node.uniform_latency(LATENCY);
    let (m, staging, target) = (&node.mounter, path(STAGING), path(TARGET));
    // kubelet makes the staging folder before NodeStageVolume.
    node.host.mkdir(&staging).await.unwrap();
    let mut steps = Vec::new();
    let mut step = |name, node: &Node| steps.push((name, rounds(node)));
    node.take_rpcs();
    node::node_stage_volume(m, PAGE83, &staging).await.unwrap();
    step("stage", &node);
    node::node_stage_volume(m, PAGE83, &staging).await.unwrap();
    step("stage again", &node);
    node::node_publish_volume(m, &staging, &target)
        .await
        .unwrap();
    step("publish", &node);
    node::node_publish_volume(m, &staging, &target)
        .await
        .unwrap();
    step("publish again", &node);
    node::node_get_volume_stats(m, PAGE83, &target)
        .await
        .unwrap();
    step("stats", &node);
    node.host.set_disk_size(1, 20 * GIB);
    node::node_expand_volume(m, PAGE83, &target, Some(20 * GIB))
        .await
        .unwrap();
    step("expand", &node);
    node::node_unpublish_volume(m, &target).await.unwrap();
    step("unpublish", &node);
    node::node_unpublish_volume(m, &target).await.unwrap();
    step("unpublish again", &node);
    node::node_unstage_volume(m, &staging).await.unwrap();
    step("unstage", &node);
    node::node_unstage_volume(m, &staging).await.unwrap();
    step("unstage again", &node);
    steps
}

/// The rounds of each step of a share's volume's life.
async fn share_steps(release: ProxyRelease) -> Vec<Step> {
    use csi_proxy_client::api::{Secret, SmbRemotePath};
    use csi_proxy_client::mount::SmbCredentials;
    use csi_proxy_client::testing::FakeHost;

    let host = FakeHost::builder()
        .smb_share(r"\\files\share", "user", "pw")
        .share_folder(r"\\files\share\pv1");
    let node = Node::on(release, host).await;
    node.uniform_latency(LATENCY);
    let (m, staging, target) = (&node.mounter, path(STAGING), path(TARGET));
    let share = SmbRemotePath::new(r"\\files\share\pv1").unwrap();
    let creds = SmbCredentials::new("user", Secret::new("pw"));
    let mut steps = Vec::new();
    let mut step = |name, node: &Node| steps.push((name, rounds(node)));
    node.take_rpcs();
    m.stage_smb("pv1", &share, &creds, &staging).await.unwrap();
    step("stage", &node);
    m.stage_smb("pv1", &share, &creds, &staging).await.unwrap();
    step("stage again", &node);
    m.publish(&staging, &target).await.unwrap();
    step("publish", &node);
    m.publish(&staging, &target).await.unwrap();
    step("publish again", &node);
    m.unpublish(&target).await.unwrap();
    step("unpublish", &node);
    m.unstage_smb("pv1", &staging).await.unwrap();
    step("unstage", &node);
    m.unstage_smb("pv1", &staging).await.unwrap();
    step("unstage again", &node);
    steps
}

#[tokio::test(start_paused = true)]
async fn print_them() {
    for release in [ProxyRelease::LATEST, ProxyRelease::V0_2_2] {
        for (name, rounds) in disk_steps(release).await {
            println!("{release} disk {name}: {rounds}");
        }
        for (name, rounds) in share_steps(release).await {
            println!("{release} smb {name}: {rounds}");
        }
    }
}
