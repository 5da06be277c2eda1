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
    step("disk: NodeStageVolume, first", &node);
    node::node_stage_volume(m, PAGE83, &staging).await.unwrap();
    step("disk: NodeStageVolume, repeat", &node);
    node::node_publish_volume(m, &staging, &target)
        .await
        .unwrap();
    step("disk: NodePublishVolume, first", &node);
    node::node_publish_volume(m, &staging, &target)
        .await
        .unwrap();
    step("disk: NodePublishVolume, repeat", &node);
    node::node_get_volume_stats(m, PAGE83, &target)
        .await
        .unwrap();
    step("disk: NodeGetVolumeStats", &node);
    node.host.set_disk_size(1, 20 * GIB);
    node::node_expand_volume(m, PAGE83, &target, Some(20 * GIB))
        .await
        .unwrap();
    step("disk: NodeExpandVolume", &node);
    node::node_unpublish_volume(m, &target).await.unwrap();
    step("disk: NodeUnpublishVolume, first", &node);
    node::node_unpublish_volume(m, &target).await.unwrap();
    step("disk: NodeUnpublishVolume, repeat", &node);
    node::node_unstage_volume(m, &staging).await.unwrap();
    step("disk: NodeUnstageVolume, first", &node);
    node::node_unstage_volume(m, &staging).await.unwrap();
    step("disk: NodeUnstageVolume, repeat", &node);
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
    step("share: stage_smb, first", &node);
    m.stage_smb("pv1", &share, &creds, &staging).await.unwrap();
    step("share: stage_smb, repeat", &node);
    m.publish(&staging, &target).await.unwrap();
    step("share: publish, first", &node);
    m.publish(&staging, &target).await.unwrap();
    step("share: publish, repeat", &node);
    m.unpublish(&target).await.unwrap();
    step("share: unpublish", &node);
    m.unstage_smb("pv1", &staging).await.unwrap();
    step("share: unstage_smb, last lease", &node);
    m.unstage_smb("pv1", &staging).await.unwrap();
    step("share: unstage_smb, repeat", &node);
    steps
}

/// What each step sends, by round, at v1.3 and at v0.2.2.
const EXPECTED: [(&str, &str, &str); 17] = [
    ("disk: NodeStageVolume, first", "IsSymlink+ListDiskIDs GetDiskState+ListVolumesOnDisk PartitionDisk ListVolumesOnDisk IsVolumeFormatted FormatVolume MountVolume", "IsMountPoint+ListDiskIDs GetAttachState+ListVolumesOnDisk PartitionDisk ListVolumesOnDisk IsVolumeFormatted FormatVolume MountVolume"),
    ("disk: NodeStageVolume, repeat", "GetDiskNumberFromVolumeID+IsSymlink GetVolumeIDFromTargetPath", "GetVolumeDiskNumber+IsMountPoint GetVolumeIDFromMount"),
    ("disk: NodePublishVolume, first", "GetVolumeIDFromTargetPath+IsSymlink CreateSymlink", "GetVolumeIDFromMount+IsMountPoint LinkPath"),
    ("disk: NodePublishVolume, repeat", "GetVolumeIDFromTargetPath+IsSymlink", "GetVolumeIDFromMount+IsMountPoint"),
    ("disk: NodeGetVolumeStats", "GetVolumeIDFromTargetPath GetVolumeStats", "GetVolumeIDFromMount VolumeStats"),
    ("disk: NodeExpandVolume", "GetVolumeIDFromTargetPath GetDiskNumberFromVolumeID Rescan GetDiskStats GetVolumeStats ResizeVolume GetVolumeStats", "GetVolumeIDFromMount GetVolumeDiskNumber Rescan DiskStats VolumeStats ResizeVolume VolumeStats"),
    ("disk: NodeUnpublishVolume, first", "Rmdir", "Rmdir"),
    ("disk: NodeUnpublishVolume, repeat", "IsSymlink", "IsMountPoint"),
    ("disk: NodeUnstageVolume, first", "GetDiskNumberFromVolumeID+GetVolumeIDFromTargetPath WriteVolumeCache UnmountVolume Rmdir ListVolumesOnDisk SetDiskState", "GetVolumeDiskNumber+GetVolumeIDFromMount WriteVolumeCache DismountVolume Rmdir ListVolumesOnDisk SetAttachState"),
    ("disk: NodeUnstageVolume, repeat", "GetVolumeIDFromTargetPath+IsSymlink", "GetVolumeIDFromMount+IsMountPoint"),
    ("share: stage_smb, first", "IsSymlink+IsSymlink NewSmbGlobalMapping IsSymlink", "IsMountPoint+IsMountPoint NewSmbGlobalMapping IsMountPoint"),
    ("share: stage_smb, repeat", "IsSymlink", "IsMountPoint"),
    ("share: publish, first", "IsSymlink+IsSymlink CreateSymlink", "IsMountPoint+IsMountPoint LinkPath"),
    ("share: publish, repeat", "IsSymlink+IsSymlink", "IsMountPoint+IsMountPoint"),
    ("share: unpublish", "Rmdir", "Rmdir"),
    ("share: unstage_smb, last lease", "Rmdir RemoveSmbGlobalMapping", "Rmdir RemoveSmbGlobalMapping"),
    ("share: unstage_smb, repeat", "IsSymlink", "IsMountPoint"),
];

/// Every step's rounds at `release`: the disk's, then the share's.
async fn all_steps(release: ProxyRelease) -> Vec<Step> {
    let mut steps = disk_steps(release).await;
    steps.extend(share_steps(release).await);
    steps
}

/// How many calls, and how many rounds, `rounds` has.
fn calls_and_depth(rounds: &str) -> (usize, usize) {
    let calls = rounds.split([' ', '+']).filter(|c| !c.is_empty()).count();
    (calls, rounds.split_whitespace().count())
}

#[tokio::test(start_paused = true)]
async fn each_node_call_sends_the_calls_and_rounds_the_docs_count() {
    let v1 = all_steps(ProxyRelease::LATEST).await;
    let old = all_steps(ProxyRelease::V0_2_2).await;
    let expected = |pick: fn(&(&'static str, &'static str, &'static str)) -> &'static str| {
        (EXPECTED.iter())
            .map(|step| (step.0, pick(step).to_owned()))
            .collect::<Vec<_>>()
    };
    assert_eq!(v1, expected(|step| step.1), "v1.3");
    assert_eq!(old, expected(|step| step.2), "v0.2.2");
    // The table in docs/mounting.md says the same.
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/mounting.md")).unwrap();
    let table = round_trip_table(&docs);
    let measured: Vec<(String, String)> = (v1.iter().zip(&old))
        .map(|((name, v1), (_, old))| {
            let (c1, d1) = calls_and_depth(v1);
            let (c0, d0) = calls_and_depth(old);
            let row = format!("| {name} | {c1}, {d1} | {c0}, {d0} | `{v1}` |");
            (name.to_string(), row)
        })
        .collect();
    for (name, row) in &measured {
        assert!(
            table.iter().any(|line| line == row),
            "docs/mounting.md's round-trip table lacks, for {name}:\n{row}"
        );
    }
    assert_eq!(table.len(), measured.len(), "one row a step: {table:#?}");
}

/// The rows of the table under "## Round trips" in `docs` whose header
/// starts `| step | v1.3`.
fn round_trip_table(docs: &str) -> Vec<String> {
    let section = docs.split("\n## Round trips").nth(1).expect("the section");
    let table = section.split("\n| step | v1.3").nth(1).expect("the table");
    (table.lines().skip(2))
        .take_while(|line| line.starts_with('|'))
        .map(str::to_owned)
        .collect()
}

/// Issue 63's targets, on both releases: a disk's first stage at most 9
/// calls, a share's at most 4 rounds and 6 calls, each publish at most 2
/// and 3, a repeat stage or publish at most 2 rounds. A disk's first stage
/// takes 7 rounds where the target is 6: `IsVolumeFormatted` of the
/// partition the stage made is a guard the partition proof leaves needed
/// (docs/mounting.md, "Round trips").
#[tokio::test(start_paused = true)]
async fn a_pods_first_volume_takes_few_rounds() {
    for release in [ProxyRelease::LATEST, ProxyRelease::V0_2_2] {
        for (name, rounds) in all_steps(release).await {
            let (calls, depth) = calls_and_depth(&rounds);
            let most = match name {
                "disk: NodeStageVolume, first" => Some((9, 7)),
                "share: stage_smb, first" => Some((6, 4)),
                name if name.contains("publish, first") => Some((3, 2)),
                name if name.contains("repeat") => Some((usize::MAX, 2)),
                _ => None,
            };
            if let Some((most_calls, most_depth)) = most {
                assert!(
                    calls <= most_calls && depth <= most_depth,
                    "{release} {name}: {calls} calls, {depth} rounds ({rounds})"
                );
            }
        }
    }
}
