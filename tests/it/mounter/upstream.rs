//! The mounter against a fake host that answers as upstream CSI Proxy's
//! code does (issue 43): one test per defect found when the mounter ran
//! over CSI Proxy's own servers, named after what it now guarantees. v1.3
//! reads a link as the volume that holds it where earlier releases follow
//! it; which volume Windows names was never observed, so the link tests
//! run under both readings ([`LinkReading`]).

use std::time::Duration;

use super::{
    creds, host_with_share, page83, path, share, Node, GIB, PAGE83, SHARE_ROOT as ROOT, STAGING,
    STAGING_2, TARGET,
};
use csi_proxy_client::api::FilesystemApi;
use csi_proxy_client::mount::{Change, DiskAfterUnstage, DiskSelector, Mounter, PathState};
use csi_proxy_client::testing::{FakeHost, LinkReading, PathEntry, ProxyRelease, WindowsError};
use csi_proxy_client::{Error, Operation as Op};

/// Each way a node may read links: v0.2.2 (followed by PowerShell), and
/// v1.3 under each reading of its code.
fn link_readings() -> [(ProxyRelease, LinkReading); 3] {
    [
        (ProxyRelease::V0_2_2, LinkReading::Target),
        (ProxyRelease::LATEST, LinkReading::Holder),
        (ProxyRelease::LATEST, LinkReading::Target),
    ]
}

/// A node with a share (its folders `a` and `b` there) and a disk.
async fn node_with_share_read_as(release: ProxyRelease, reading: LinkReading) -> Node {
    let host = host_with_share().disk(1, PAGE83, 10 * GIB);
    let node = Node::on(release, host).await;
    node.host.set_link_reading(reading);
    node
}

/// Retries `call` as kubelet does, until it succeeds (at most 20 times).
async fn until_ok<T, F, Fut>(mut call: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Error>>,
{
    let mut last = None;
    for _ in 0..20 {
        match call().await {
            Ok(value) => return value,
            Err(error) => last = Some(error),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("never converged: {last:?}");
}

/// The next call of `op` takes 300 ms on the host, and the proxy restarts
/// once it is there: the host does the work, and its answer is lost.
async fn lose_the_answer_of<T: Send + 'static>(
    node: &mut Node,
    op: Op,
    call: impl std::future::Future<Output = T> + Send + 'static,
) -> T {
    node.host.delay_call(op, 1, Duration::from_millis(300));
    let before = node.host.calls_of(op);
    let running = tokio::spawn(call);
    crate::common::wait_until("the call is on the host", || {
        node.host.calls_of(op) > before
    })
    .await;
    let served = node.fake.served();
    node.fake.restart(served).await.unwrap();
    running.await.unwrap()
}

#[tokio::test]
async fn a_lost_answer_after_the_smb_link_was_made_leaves_no_volume_stuck() {
    for (release, reading) in link_readings() {
        for driver_restarts in [false, true] {
            let mut node = node_with_share_read_as(release, reading).await;
            let staging = path(STAGING);
            let mounter = node.mounter.clone();
            let stage = {
                let staging = staging.clone();
                async move {
                    mounter
                        .stage_smb("pv1", &share("a"), &creds(), &staging)
                        .await
                }
            };
            // Its outcome is unknown to the caller: an error, or success
            // when the look after it found the link.
            let _unknown = lose_the_answer_of(&mut node, Op::NewSmbGlobalMapping, stage).await;
            // The test's premise: the host did the lost call's work (the
            // mapping, and the link) before anyone calls again. On a slow
            // machine it may land only later, after the unstage below,
            // which nothing could undo.
            crate::common::wait_until("the lost call's work has landed", || {
                node.host.entry(STAGING).is_some()
            })
            .await;
            if driver_restarts {
                // The driver dies with the answer: its successor reconciles.
                node.restart_driver().await;
                let report = node.mounter.reconcile(|_| true).await.unwrap();
                assert!(report.failed.is_empty(), "{release}: {report:?}");
            }
            let (m, remote, credentials) = (node.mounter.clone(), share("a"), creds());
            until_ok(|| m.stage_smb("pv1", &remote, &credentials, &staging)).await;
            assert_eq!(
                m.inspect(&staging).await.unwrap(),
                PathState::SmbLink {
                    remote: share("a"),
                    reachable: true
                },
                "{release} {reading:?}"
            );
            assert_eq!(
                m.unstage_smb("pv1", &staging).await.unwrap(),
                Change::Changed
            );
            assert_eq!(node.host.entry(STAGING), None, "{release} {reading:?}");
            // The mapping the lost call made is the mounter's, and goes
            // with the unstage, only if the look after the call saw its
            // link answer; otherwise it was never seen made by the
            // mounter, and is left (a leak, never a removal of someone
            // else's): either outcome is right here.
        }
    }
}

#[tokio::test]
async fn staging_volume_b_never_removes_the_mapping_volume_a_uses() {
    // v1.1.2 and later map the share's root: one mapping under both.
    for release in [ProxyRelease::new(1, 1, 2).unwrap(), ProxyRelease::LATEST] {
        let node = node_with_share_read_as(release, LinkReading::Holder).await;
        let (a, m) = (path(STAGING), &node.mounter);
        m.stage_smb("pv1", &share("a"), &creds(), &a).await.unwrap();
        // B's link is refused (its parent folder is missing), after the
        // proxy found the share mapped.
        let nowhere = path(r"C:\var\lib\kubelet\plugins\missing\pv2\globalmount");
        m.stage_smb("pv2", &share("b"), &creds(), &nowhere)
            .await
            .unwrap_err();
        assert_eq!(node.host.smb_mappings(), vec![ROOT.to_owned()], "{release}");
        // A link that cannot be made fails the same way whatever the
        // clean-up would have met.
        node.host
            .fail_call(Op::Rmdir, 1, WindowsError::new(WindowsError::ACCESS_DENIED));
        m.stage_smb("pv2", &share("b"), &creds(), &nowhere)
            .await
            .unwrap_err();
        assert_eq!(node.host.smb_mappings(), vec![ROOT.to_owned()], "{release}");
        // B staged, then its folder on the share is deleted: its repeat
        // stage leaves A's mapping alone.
        let b = path(STAGING_2);
        m.stage_smb("pv2", &share("b"), &creds(), &b).await.unwrap();
        node.host.remove_share_folder(r"\\files\share\b");
        let _ = m.stage_smb("pv2", &share("b"), &creds(), &b).await;
        assert_eq!(
            node.host.smb_mappings(),
            vec![ROOT.to_owned()],
            "{release}: A's mapping was removed"
        );
        assert_eq!(
            m.inspect(&a).await.unwrap(),
            PathState::SmbLink {
                remote: share("a"),
                reachable: true
            },
            "{release}: A lost its share"
        );
        assert_eq!(
            node.host.calls_of(Op::RemoveSmbGlobalMapping),
            0,
            "{release}"
        );
    }
}

#[tokio::test]
async fn a_disk_staged_at_two_paths_stays_online_until_both_are_unstaged() {
    let node = Node::with_disk(ProxyRelease::LATEST).await;
    let (s1, s2, m) = (path(STAGING), path(STAGING_2), &node.mounter);
    node.stage(STAGING).await;
    let second = node.stage(STAGING_2).await;
    assert_eq!(second.change, Change::Changed);
    assert_eq!(
        m.unstage_disk(&s1, DiskAfterUnstage::TakeOffline)
            .await
            .unwrap(),
        Change::Changed
    );
    assert!(
        node.host.disk(1).unwrap().online,
        "taken offline while staged at {s2}"
    );
    assert!(matches!(
        node.host.entry(STAGING_2),
        Some(PathEntry::MountPoint(_))
    ));
    m.stats(&page83(), &s2).await.unwrap();
    assert_eq!(
        m.unstage_disk(&s2, DiskAfterUnstage::TakeOffline)
            .await
            .unwrap(),
        Change::Changed
    );
    assert!(!node.host.disk(1).unwrap().online);
}

#[tokio::test]
async fn links_are_read_where_they_lead_under_either_reading_of_v1_3() {
    for (release, reading) in link_readings() {
        let node = node_with_share_read_as(release, reading).await;
        let (staging, target, m) = (path(STAGING), path(TARGET), &node.mounter);
        let staged = node.stage_and_publish(STAGING, TARGET).await;
        let at = format!("{release} {reading:?}");
        assert_eq!(
            m.inspect(&target).await.unwrap(),
            PathState::Link {
                target: Some(staging.clone()),
                volume: Some(staged.volume.clone()),
                reachable: true
            },
            "{at}"
        );
        // Every call through the pod's link answers for the staged volume.
        let truth = node.host.volume(&staged.volume).unwrap();
        let stats = m.stats(&page83(), &target).await.unwrap();
        assert_eq!(stats.total_bytes, truth.size_bytes, "{at}");
        node.host.set_disk_size(1, 20 * GIB);
        let grown = m.expand(&page83(), &target, Some(20 * GIB)).await.unwrap();
        assert!(grown.grew, "{at}");
        let again = node.stage(STAGING).await;
        assert_eq!(again.change, Change::Unchanged, "{at}");
        assert_eq!(
            m.publish(&staging, &target).await.unwrap(),
            Change::Unchanged,
            "{at}"
        );
        // A share's staging link is never taken for a volume.
        let share_staging = path(STAGING_2);
        m.stage_smb("pv2", &share("a"), &creds(), &share_staging)
            .await
            .unwrap();
        assert_eq!(
            m.stage_smb("pv2", &share("a"), &creds(), &share_staging)
                .await
                .unwrap(),
            Change::Unchanged,
            "{at}"
        );
        assert!(m.stats(&page83(), &share_staging).await.is_err(), "{at}");
        m.unpublish(&target).await.unwrap();
        assert_eq!(
            m.unstage_disk(&staging, DiskAfterUnstage::TakeOffline)
                .await
                .unwrap(),
            Change::Changed
        );
        m.unstage_smb("pv2", &share_staging).await.unwrap();
        assert_eq!(node.host.entry(STAGING), None, "{at}");
        assert_eq!(node.host.entry(STAGING_2), None, "{at}");
        assert!(!node.host.disk(1).unwrap().online, "{at}");
        assert!(node.host.smb_mappings().is_empty(), "{at}");
    }
}

#[tokio::test]
async fn a_repeat_right_after_a_call_returned_looks_again() {
    let node = Node::with_disk(ProxyRelease::LATEST).await;
    node.stage(STAGING).await;
    node.take_rpcs();
    for round in 0..20 {
        node.stage(STAGING).await;
        assert!(
            !node.take_rpcs().is_empty(),
            "repeat {round} joined a call that had ended"
        );
    }
}

#[tokio::test]
async fn a_format_lost_before_it_reached_the_host_waits_only_its_deadline_and_grace() {
    let node = Node::with_disk(ProxyRelease::LATEST).await;
    let mounter = Mounter::builder(node.mounter.proxy().clone(), node.state_dir())
        .poll_interval(Duration::from_millis(10))
        .format_deadline(Duration::from_millis(50))
        .format_grace(Duration::from_millis(1_000))
        .build()
        .unwrap();
    // The first format outlives its deadline, then fails on the host: it
    // never formatted anything.
    node.host
        .delay_call(Op::FormatVolume, 1, Duration::from_millis(200));
    node.host.fail_call(
        Op::FormatVolume,
        1,
        WindowsError::new(WindowsError::IO_DEVICE),
    );
    let staging = path(STAGING);
    let error = mounter.stage_disk(&page83(), &staging).await.unwrap_err();
    assert!(matches!(error, Error::Timeout { .. }), "{error}");
    let error = mounter.stage_disk(&page83(), &staging).await.unwrap_err();
    assert!(matches!(error, Error::InProgress { .. }), "{error}");
    let text = error.to_string();
    assert!(
        text.contains(" UTC") && text.contains("formats it from"),
        "the error says when the stage goes ahead: {text}"
    );
    // Past the deadline and the grace, the stage formats.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let staged = mounter.stage_disk(&page83(), &staging).await.unwrap();
    assert!(staged.formatted);
    assert_eq!(node.host_calls(Op::FormatVolume), 2);
}

#[tokio::test]
async fn the_last_unstage_of_a_share_removes_its_mapping_once_the_rule_is_known() {
    for (release, first, later) in [
        (ProxyRelease::LATEST, 2, 1),
        (ProxyRelease::new(1, 1, 1).unwrap(), 2, 2),
    ] {
        let node = node_with_share_read_as(release, LinkReading::Holder).await;
        let m = &node.mounter;
        for removals in [first, later, later] {
            let (a, b) = (path(STAGING), path(STAGING_2));
            m.stage_smb("pv1", &share("a"), &creds(), &a).await.unwrap();
            m.stage_smb("pv2", &share("b"), &creds(), &b).await.unwrap();
            let before = node.host.calls_of(Op::RemoveSmbGlobalMapping);
            m.unstage_smb("pv1", &a).await.unwrap();
            m.unstage_smb("pv2", &b).await.unwrap();
            assert!(node.host.smb_mappings().is_empty(), "{release}");
            assert_eq!(
                node.host.calls_of(Op::RemoveSmbGlobalMapping) - before,
                removals,
                "{release}"
            );
        }
    }
}

#[tokio::test]
async fn stats_and_expand_answer_only_for_the_volume_staged_there() {
    let host = FakeHost::builder()
        .disk(1, PAGE83, 10 * GIB)
        .disk(2, "Google  pvc-2", 10 * GIB);
    let node = Node::on(ProxyRelease::LATEST, host).await;
    let other = DiskSelector::page83("Google  pvc-2");
    let (staging, target, m) = (path(STAGING), path(TARGET), &node.mounter);
    node.stage_and_publish(STAGING, TARGET).await;
    for at in [&staging, &target] {
        let error = m.stats(&other, at).await.unwrap_err();
        assert!(matches!(error, Error::NotFound { .. }), "{at}: {error}");
        let error = m.expand(&other, at, None).await.unwrap_err();
        assert!(matches!(error, Error::NotFound { .. }), "{at}: {error}");
        m.stats(&page83(), at).await.unwrap();
        // The same disk named another way is the same volume.
        m.stats(&DiskSelector::lun(1), at).await.unwrap();
    }
    let unknown = DiskSelector::page83("Google  no-such-disk");
    let error = m.stats(&unknown, &staging).await.unwrap_err();
    assert!(matches!(error, Error::NotFound { .. }), "{error}");
}

#[tokio::test]
async fn a_link_no_record_names_is_a_leftover_under_either_reading() {
    // A lost journal leaves live links at the mounter's own paths: v1.3
    // names for them the volume that holds them, earlier releases where
    // they lead. Either way they are links, cleared, never their targets.
    for (release, reading) in link_readings() {
        let node = node_with_share_read_as(release, reading).await;
        let elsewhere = path(r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\pd\elsewhere");
        node.host.mkdir(&elsewhere).await.unwrap();
        node.host.rmdir(&path(STAGING), false).await.ok();
        node.host
            .create_symlink(&elsewhere, &path(STAGING))
            .await
            .unwrap();
        let at = format!("{release} {reading:?}");
        assert!(
            matches!(
                node.mounter.inspect(&path(STAGING)).await.unwrap(),
                PathState::Link {
                    target: None,
                    volume: None,
                    reachable: true
                }
            ),
            "{at}"
        );
        let staged = node.mounter.stage_disk(&page83(), &path(STAGING)).await;
        let staged = staged.unwrap_or_else(|e| panic!("{at}: {e}"));
        assert_eq!(
            node.host.entry(STAGING),
            Some(PathEntry::MountPoint(staged.volume.clone())),
            "{at}"
        );
        assert_eq!(
            node.host
                .entry(r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\pd\elsewhere"),
            Some(PathEntry::Directory),
            "{at}: the link's target stays"
        );
        // The same at a pod's target.
        node.host
            .create_symlink(&elsewhere, &path(TARGET))
            .await
            .unwrap();
        let published = node.mounter.publish(&path(STAGING), &path(TARGET)).await;
        assert_eq!(published.unwrap(), Change::Changed, "{at}");
        assert_eq!(
            node.host.entry(TARGET),
            Some(PathEntry::Symlink(STAGING.into())),
            "{at}"
        );
        // No probe link is left behind.
        assert_eq!(node.host.entry(&format!("{STAGING}.volume-probe")), None);
        assert_eq!(node.host.entry(&format!("{TARGET}.volume-probe")), None);
    }
}
