//! A node's reboot storm: a share's volumes side by side, and reconcile
//! beside the calls kubelet makes.

use std::time::Duration;

use super::{
    creds, host_with_share, path, share, Node, GIB, PAGE83, SHARE_ROOT as ROOT, STAGING, STAGING_2,
    TARGET,
};
use csi_proxy_client::mount::{DiskAfterUnstage, PathState};
use csi_proxy_client::testing::ProxyRelease;
use csi_proxy_client::Operation as Op;

const STAGING_3: &str = r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\pd\pv3\globalmount";

/// A raw disk, and a share with `folders` folders `v0`, `v1`, … and a
/// staging folder's parent for each (`…\pd\s<n>`), plus `pv3`'s.
async fn node_with_share_and_folders(release: ProxyRelease, folders: usize) -> Node {
    let mut host = host_with_share()
        .disk(1, PAGE83, 10 * GIB)
        .share_folder(r"\\files\share\c")
        .dir(r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\pd\pv3");
    for n in 0..folders {
        host = host
            .share_folder(&format!(r"\\files\share\v{n}"))
            .dir(&format!(
                r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\pd\s{n}"
            ));
    }
    Node::on(release, host).await
}

/// The go-aheads of every held call, once all of them are held.
async fn when_all_held(
    held: Vec<tokio::sync::oneshot::Receiver<(Op, tokio::sync::oneshot::Sender<()>)>>,
) -> Vec<tokio::sync::oneshot::Sender<()>> {
    let mut goes = Vec::new();
    for call in held {
        goes.push(call.await.unwrap().1);
    }
    goes
}

/// Waits until the host has received `count` calls of `op`.
async fn until_calls(node: &Node, op: Op, count: usize) {
    tokio::time::timeout(Duration::from_secs(10), async {
        while node.host_calls(op) < count {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the host never received {count} calls of {op:?}"));
}

fn staging_of(n: usize) -> String {
    format!(r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\pd\s{n}\globalmount")
}

/// `work`'s answer, when it is one that must not wait for a call held on
/// the host: one that waits would wait for good (or for the held call's
/// deadline, minutes), so the bound only turns that hang into a failure;
/// it times nothing.
async fn beside_the_held<F: std::future::Future>(what: &str, work: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(60), work)
        .await
        .unwrap_or_else(|_| panic!("{what}"))
}

#[tokio::test]
async fn a_share_s_volumes_link_beside_each_other_once_its_mapping_works() {
    for release in ["v1.1.1".parse().unwrap(), ProxyRelease::LATEST] {
        let node = node_with_share_and_folders(release, 0).await;
        let m = node.mounter.clone();
        m.stage_smb("pv1", &share("a"), &creds(), &path(STAGING))
            .await
            .unwrap();
        // The second volume's mapping call is held on the host.
        let held = node.host.hold_call_of(Op::NewSmbGlobalMapping, 1);
        let slow = tokio::spawn({
            let m = m.clone();
            async move {
                m.stage_smb("pv2", &share("b"), &creds(), &path(STAGING_2))
                    .await
            }
        });
        let (_, go) = held.await.unwrap();
        // A third volume of the share does not queue behind it: it is
        // staged while that call is still held.
        let (c, staging_3, login) = (share("c"), path(STAGING_3), creds());
        let third = m.stage_smb("pv3", &c, &login, &staging_3);
        let waited = format!("{release}: the third volume waited for the second");
        beside_the_held(&waited, third).await.unwrap();
        assert!(!slow.is_finished(), "{release}");
        go.send(()).unwrap();
        slow.await.unwrap().unwrap();
        for (staging, folder) in [(STAGING, "a"), (STAGING_2, "b"), (STAGING_3, "c")] {
            let found = m.inspect(&path(staging)).await.unwrap();
            assert!(
                matches!(&found, PathState::SmbLink { remote, reachable: true } if *remote == share(folder)),
                "{release}: {found:?}"
            );
        }
    }
}

#[tokio::test]
async fn an_unstage_beside_a_stage_never_removes_the_mapping_the_stage_links_through() {
    let node = node_with_share_and_folders(ProxyRelease::LATEST, 0).await;
    let m = node.mounter.clone();
    m.stage_smb("pv1", &share("a"), &creds(), &path(STAGING))
        .await
        .unwrap();
    node.host
        .delay_call(Op::NewSmbGlobalMapping, 1, Duration::from_secs(2));
    let second = tokio::spawn({
        let m = m.clone();
        async move {
            m.stage_smb("pv2", &share("b"), &creds(), &path(STAGING_2))
                .await
        }
    });
    until_calls(&node, Op::NewSmbGlobalMapping, 2).await;
    // pv2's lease is recorded before its mapping call: pv1's unstage is
    // not the last, and leaves the mapping.
    m.unstage_smb("pv1", &path(STAGING)).await.unwrap();
    assert_eq!(node.host.smb_mappings(), vec![ROOT.to_owned()]);
    second.await.unwrap().unwrap();
    let found = m.inspect(&path(STAGING_2)).await.unwrap();
    assert!(
        matches!(
            found,
            PathState::SmbLink {
                reachable: true,
                ..
            }
        ),
        "{found:?}"
    );
    m.unstage_smb("pv2", &path(STAGING_2)).await.unwrap();
    assert!(node.host.smb_mappings().is_empty());
}

#[tokio::test]
async fn a_storm_of_one_share_s_volumes_makes_one_mapping_and_the_last_unstage_removes_it() {
    const VOLUMES: usize = 48;
    for release in ["v1.1.1".parse().unwrap(), ProxyRelease::LATEST] {
        let mut node = node_with_share_and_folders(release, VOLUMES).await;
        for nth in 1..=VOLUMES {
            // Every mapping call takes a moment, as PowerShell's do.
            node.host
                .delay_call(Op::NewSmbGlobalMapping, nth, Duration::from_millis(50));
        }
        let stages: Vec<_> = (0..VOLUMES)
            .map(|n| {
                let m = node.mounter.clone();
                tokio::spawn(async move {
                    let (remote, staging) = (share(&format!("v{n}")), path(&staging_of(n)));
                    m.stage_smb(&format!("pv-{n}"), &remote, &creds(), &staging)
                        .await
                })
            })
            .collect();
        for stage in stages {
            stage.await.unwrap().unwrap();
        }
        let mappings = node.host.smb_mappings();
        match release == ProxyRelease::LATEST {
            true => assert_eq!(mappings, vec![ROOT.to_owned()], "{release}"),
            false => assert_eq!(mappings.len(), VOLUMES, "{release} maps each path"),
        }
        // Every lease outlives the driver.
        node.restart_driver().await;
        let unstages: Vec<_> = (0..VOLUMES)
            .map(|n| {
                let m = node.mounter.clone();
                tokio::spawn(async move {
                    m.unstage_smb(&format!("pv-{n}"), &path(&staging_of(n)))
                        .await
                })
            })
            .collect();
        for unstage in unstages {
            unstage.await.unwrap().unwrap();
        }
        assert!(node.host.smb_mappings().is_empty(), "{release}");
        for n in 0..VOLUMES {
            let found = node.mounter.inspect(&path(&staging_of(n))).await.unwrap();
            assert_eq!(found, PathState::Absent, "{release}");
        }
    }
}

#[tokio::test]
async fn a_stage_need_not_wait_for_reconcile_to_finish_other_records() {
    let mut node = node_with_share_and_folders(ProxyRelease::LATEST, 0).await;
    node.stage(STAGING).await;
    node.fail_next_offline();
    node.mounter
        .unstage_disk(&path(STAGING), DiskAfterUnstage::TakeOffline)
        .await
        .unwrap_err();
    node.restart_driver().await;
    // Reconcile's offline of that disk is held on the host.
    let held = node.host.hold_call_of(Op::SetDiskState, 1);
    let reconcile = tokio::spawn({
        let m = node.mounter.clone();
        async move { m.reconcile(|_| true).await }
    });
    let (_, go) = held.await.unwrap();
    // Another path is staged and published while it is held.
    let (b, staging_2, login) = (share("b"), path(STAGING_2), creds());
    let stage = node.mounter.stage_smb("pv2", &b, &login, &staging_2);
    let waited = "the stage of another path waited for reconcile";
    beside_the_held(waited, stage).await.unwrap();
    let target = path(TARGET);
    let publish = node.mounter.publish(&staging_2, &target);
    beside_the_held(waited, publish).await.unwrap();
    assert!(!reconcile.is_finished());
    go.send(()).unwrap();
    let report = reconcile.await.unwrap().unwrap();
    assert_eq!(report.unstages_finished, vec![path(STAGING)]);
    assert!(!node.host.disk(1).unwrap().online);
}

#[tokio::test]
async fn reconcile_settles_many_records_side_by_side() {
    const VOLUMES: usize = 24;
    let mut node = node_with_share_and_folders(ProxyRelease::LATEST, VOLUMES).await;
    for n in 0..VOLUMES {
        let (remote, staging) = (share(&format!("v{n}")), path(&staging_of(n)));
        node.mounter
            .stage_smb(&format!("pv-{n}"), &remote, &creds(), &staging)
            .await
            .unwrap();
    }
    node.restart_driver().await;
    let before = node.host_calls(Op::RemoveSmbGlobalMapping);
    // The first links' removals are held on the host: settled one at a
    // time, the next would never come while the first is held.
    const SIDE_BY_SIDE: usize = 4;
    let held: Vec<_> = (1..=SIDE_BY_SIDE)
        .map(|nth| node.host.hold_call_of(Op::Rmdir, nth))
        .collect();
    let reconcile = tokio::spawn({
        let m = node.mounter.clone();
        async move { m.reconcile(|volume| volume.ends_with('0')).await }
    });
    let all_held = when_all_held(held);
    let goes = beside_the_held("reconcile settled its records one at a time", all_held).await;
    for go in goes {
        go.send(()).unwrap();
    }
    let report = reconcile.await.unwrap().unwrap();
    let dropped = VOLUMES - (0..VOLUMES).filter(|n| n % 10 == 0).count();
    assert_eq!(report.leases_dropped.len(), dropped, "{report:?}");
    assert!(report.failed.is_empty(), "{report:?}");
    // Live volumes keep the share's mapping.
    assert_eq!(node.host.smb_mappings(), vec![ROOT.to_owned()]);
    assert_eq!(node.host_calls(Op::RemoveSmbGlobalMapping), before);
}

#[tokio::test]
async fn after_a_reboot_a_share_s_volumes_are_staged_again_without_asking_each_other() {
    const VOLUMES: usize = 16;
    let mut node = node_with_share_and_folders(ProxyRelease::LATEST, VOLUMES).await;
    let stage_all = |node: &Node| {
        let stages: Vec<_> = (0..VOLUMES)
            .map(|n| {
                let m = node.mounter.clone();
                tokio::spawn(async move {
                    let (remote, staging) = (share(&format!("v{n}")), path(&staging_of(n)));
                    m.stage_smb(&format!("pv-{n}"), &remote, &creds(), &staging)
                        .await
                })
            })
            .collect::<Vec<_>>();
        async move {
            for stage in stages {
                stage.await.unwrap().unwrap();
            }
        }
    };
    stage_all(&node).await;
    // The mapping is gone; every staging link is refused.
    node.host.reboot();
    node.restart_driver().await;
    let looks = node.host_calls(Op::IsSymlink);
    stage_all(&node).await;
    // Each volume looks at its own link, and through the new one; one
    // of them asks the others whether the share still answers.
    let asked = node.host_calls(Op::IsSymlink) - looks;
    assert!(asked <= 3 * VOLUMES, "{asked} looks for {VOLUMES} volumes");
    assert_eq!(node.host.smb_mappings(), vec![ROOT.to_owned()]);
    for n in 0..VOLUMES {
        let found = node.mounter.inspect(&path(&staging_of(n))).await.unwrap();
        assert!(
            matches!(
                found,
                PathState::SmbLink {
                    reachable: true,
                    ..
                }
            ),
            "{found:?}"
        );
    }
}

#[tokio::test]
async fn volumes_that_arrive_before_the_share_is_mapped_go_beside_each_other_once_it_is() {
    const VOLUMES: usize = 8;
    let node = node_with_share_and_folders(ProxyRelease::LATEST, VOLUMES).await;
    // The first call maps the share; the second (a volume beside the
    // others) is held on the host.
    let held = node.host.hold_call_of(Op::NewSmbGlobalMapping, 2);
    let (done, mut finished) = tokio::sync::mpsc::unbounded_channel();
    for n in 0..VOLUMES {
        let (m, done) = (node.mounter.clone(), done.clone());
        tokio::spawn(async move {
            let (remote, staging) = (share(&format!("v{n}")), path(&staging_of(n)));
            let staged = (m.stage_smb(&format!("pv-{n}"), &remote, &creds(), &staging)).await;
            let _ = done.send(staged);
        });
    }
    let others = async {
        for _ in 0..VOLUMES - 1 {
            finished.recv().await.unwrap().unwrap();
        }
    };
    let (_, go) = held.await.unwrap();
    beside_the_held(
        "the volumes queued behind the one whose call is held",
        others,
    )
    .await;
    go.send(()).unwrap();
    finished.recv().await.unwrap().unwrap();
    assert_eq!(node.host.smb_mappings(), vec![ROOT.to_owned()]);
}
