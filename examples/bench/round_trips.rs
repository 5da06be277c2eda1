//! Part 5: the calls each CSI node call of the example plugin sends, and
//! how deep they go (the rounds of calls that wait on one another),
//! counted at the fake proxy with every host call taking the same `UNIT`
//! of real time; and what that means for a pod's start at CSI Proxy
//! latencies: each round costs one call's time, calls side by side
//! overlapping. The wall time measured over the unit is printed too, as
//! a check of the rounds counted.

use std::time::{Duration, Instant};

use crate::node;
use csi_proxy_client::api::{Secret, SmbRemotePath, WindowsPath};
use csi_proxy_client::mount::{Mounter, SmbCredentials};
use csi_proxy_client::testing::{FakeHost, FakeProxy, LocalEndpoints, ProxyRelease};
use csi_proxy_client::{CsiProxy, Operation};

const GIB: u64 = 1 << 30;
const PAGE83: &str = "Google  pvc-1";
/// What every host call takes here.
const UNIT: Duration = Duration::from_millis(20);
/// A call's time on CSI Proxy v1.1 and v1.2 (a PowerShell process a call).
const V1_1_CALL: f64 = 0.5;
/// A call's time on CSI Proxy v1.3 (CIM; a format takes longer).
const V1_3_CALL: f64 = 0.05;

/// One step measured: its name, its calls by round, and its wall time.
struct Step {
    name: &'static str,
    rounds: Vec<Vec<String>>,
    wall: Duration,
}

pub async fn print() {
    println!(
        "\nRound trips per CSI node call (the example plugin on the mounter), and a pod's wait"
    );
    println!(
        "{:<34} {:>7} {:>7} {:>7} {:>9} {:>9}  calls at v1.3.0 by round (A+B: side by side)",
        "", "release", "calls", "rounds", "v1.1 s", "v1.3 s"
    );
    let mut line = Vec::new();
    for release in [ProxyRelease::LATEST, ProxyRelease::V0_2_2] {
        let mut steps = disk_steps(release).await;
        steps.extend(share_steps(release).await);
        for step in steps {
            let calls: usize = step.rounds.iter().map(Vec::len).sum();
            let depth = step.rounds.len();
            let measured = step.wall.as_secs_f64() / UNIT.as_secs_f64();
            let shown: Vec<String> = step.rounds.iter().map(|r| r.join("+")).collect();
            println!(
                "{:<34} {:>7} {calls:>7} {depth:>7} {:>9.2} {:>9.2}  {} (measured {measured:.1} rounds)",
                step.name,
                release.to_string(),
                depth as f64 * V1_1_CALL,
                depth as f64 * V1_3_CALL,
                shown.join(" "),
            );
            if release == ProxyRelease::LATEST && step.name.ends_with(", first") {
                let key: String = (step.name.chars())
                    .map(|c| {
                        if c.is_alphanumeric() {
                            c.to_ascii_lowercase()
                        } else {
                            '_'
                        }
                    })
                    .collect();
                line.push(format!("{key}_calls={calls} {key}_rounds={depth}"));
            }
        }
    }
    println!("round_trips: {}", line.join(" "));
}

/// A node at `release` serving `host`, every call taking `UNIT`, and a
/// mounter on it.
async fn node_at(
    release: ProxyRelease,
    host: FakeHost,
) -> (FakeProxy, Mounter, LocalEndpoints, tempfile::TempDir) {
    host.set_latencies(Operation::ALL.iter().map(|&op| (op, UNIT)));
    let endpoints = LocalEndpoints::new().unwrap();
    let mut fake = FakeProxy::for_host(endpoints.transport(), &host);
    fake.serve_release(release).await.unwrap();
    let proxy = CsiProxy::builder()
        .transport(endpoints.transport())
        .connect()
        .await
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    let mounter = Mounter::builder(proxy, state.path()).build().unwrap();
    (fake, mounter, endpoints, state)
}

/// A step's answer, which must be a success.
fn ok<T>(answer: Result<T, csi_proxy_client::Error>) {
    answer.unwrap();
}

/// Runs `work`, then takes the proxy's calls as one step.
async fn step<T>(
    fake: &FakeProxy,
    name: &'static str,
    work: impl std::future::Future<Output = T>,
) -> Step {
    fake.clear_calls();
    let started = Instant::now();
    work.await;
    let wall = started.elapsed();
    Step {
        name,
        rounds: fake.rounds(),
        wall,
    }
}

async fn disk_steps(release: ProxyRelease) -> Vec<Step> {
    let staging = WindowsPath::new(r"C:\var\lib\kubelet\plugins\pd\pv1\globalmount").unwrap();
    let target = WindowsPath::new(r"C:\var\lib\kubelet\pods\p1\volumes\pv1\mount").unwrap();
    let host = FakeHost::builder()
        .disk(1, PAGE83, 10 * GIB)
        .dir(staging.as_str())
        .dir(target.parent().unwrap().as_str())
        .build();
    let (fake, m, _endpoints, _state) = node_at(release, host.clone()).await;
    let (m, f) = (&m, &fake);
    vec![
        step(f, "disk: NodeStageVolume, first", async {
            ok(node::node_stage_volume(m, PAGE83, &staging).await)
        })
        .await,
        step(f, "disk: NodeStageVolume, repeat", async {
            ok(node::node_stage_volume(m, PAGE83, &staging).await)
        })
        .await,
        step(f, "disk: NodePublishVolume, first", async {
            ok(node::node_publish_volume(m, &staging, &target).await)
        })
        .await,
        step(f, "disk: NodePublishVolume, repeat", async {
            ok(node::node_publish_volume(m, &staging, &target).await)
        })
        .await,
        step(f, "disk: NodeGetVolumeStats", async {
            ok(node::node_get_volume_stats(m, PAGE83, &target).await)
        })
        .await,
        step(f, "disk: NodeExpandVolume", async {
            host.set_disk_size(1, 20 * GIB);
            ok(node::node_expand_volume(m, PAGE83, &target, Some(20 * GIB)).await)
        })
        .await,
        step(f, "disk: NodeUnpublishVolume, first", async {
            ok(node::node_unpublish_volume(m, &target).await)
        })
        .await,
        step(f, "disk: NodeUnpublishVolume, repeat", async {
            ok(node::node_unpublish_volume(m, &target).await)
        })
        .await,
        step(f, "disk: NodeUnstageVolume, first", async {
            ok(node::node_unstage_volume(m, &staging).await)
        })
        .await,
        step(f, "disk: NodeUnstageVolume, repeat", async {
            ok(node::node_unstage_volume(m, &staging).await)
        })
        .await,
    ]
}

async fn share_steps(release: ProxyRelease) -> Vec<Step> {
    let staging = WindowsPath::new(r"C:\var\lib\kubelet\plugins\smb\pv1\globalmount").unwrap();
    let target = WindowsPath::new(r"C:\var\lib\kubelet\pods\p1\volumes\pv1\mount").unwrap();
    let host = FakeHost::builder()
        .smb_share(r"\\files\share", "user", "pw")
        .share_folder(r"\\files\share\pv1")
        .dir(staging.parent().unwrap().as_str())
        .dir(target.parent().unwrap().as_str())
        .build();
    let (fake, m, _endpoints, _state) = node_at(release, host).await;
    let (m, f) = (&m, &fake);
    let share = SmbRemotePath::new(r"\\files\share\pv1").unwrap();
    let creds = SmbCredentials::new("user", Secret::new("pw"));
    vec![
        step(f, "share: stage_smb, first", async {
            ok(m.stage_smb("pv1", &share, &creds, &staging).await)
        })
        .await,
        step(f, "share: stage_smb, repeat", async {
            ok(m.stage_smb("pv1", &share, &creds, &staging).await)
        })
        .await,
        step(f, "share: publish, first", async {
            ok(m.publish(&staging, &target).await)
        })
        .await,
        step(f, "share: publish, repeat", async {
            ok(m.publish(&staging, &target).await)
        })
        .await,
        step(f, "share: unpublish", async {
            ok(m.unpublish(&target).await)
        })
        .await,
        step(f, "share: unstage_smb, last lease", async {
            ok(m.unstage_smb("pv1", &staging).await)
        })
        .await,
    ]
}
