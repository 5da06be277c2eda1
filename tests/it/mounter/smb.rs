//! SMB shares: one mapping per share, leased by the volumes that use it.

use super::{
    creds, creds_with, host_with_share, path, releases, share, Node, SHARE_ROOT as ROOT, STAGING,
    STAGING_2, TARGET,
};
use csi_proxy_client::api::SmbRemotePath;
use csi_proxy_client::mount::{Change, DiskAfterUnstage, Mounter, PathState};
use csi_proxy_client::testing::{
    FakeHost, LinkReading, PathEntry, ProxyRelease, SmbMappingStatus, WindowsError,
};
use csi_proxy_client::{Code, Error, HostCause, Operation as Op};

pub(super) async fn node_with_share(release: ProxyRelease) -> Node {
    let host = host_with_share().smb_share(r"\\files\other", "admin", "root-pw");
    Node::on(release, host).await
}

#[tokio::test]
async fn two_volumes_on_one_share_share_one_mapping_until_both_are_unstaged() {
    for release in releases() {
        let node = node_with_share(release).await;
        let m = &node.mounter;
        let (a, b) = (path(STAGING), path(STAGING_2));
        assert_eq!(
            m.stage_smb("pv1", &share("a"), &creds_with("pw"), &a)
                .await
                .unwrap(),
            Change::Changed
        );
        assert_eq!(
            m.stage_smb("pv1", &share("a"), &creds_with("pw"), &a)
                .await
                .unwrap(),
            Change::Unchanged
        );
        m.stage_smb("pv2", &share("b"), &creds_with("pw"), &b)
            .await
            .unwrap();
        let mapped = node.host.smb_mappings();
        if release < "v1.1.2".parse().unwrap() {
            assert_eq!(mapped.len(), 2, "{release} maps each path: {mapped:?}");
        } else {
            assert_eq!(mapped, vec![ROOT.to_owned()], "{release}");
        }
        assert_eq!(
            m.inspect(&a).await.unwrap(),
            PathState::SmbLink {
                remote: share("a"),
                reachable: true
            }
        );
        // A pod publishes the share's staging path like a disk's.
        m.publish(&a, &path(TARGET)).await.unwrap();
        m.unpublish(&path(TARGET)).await.unwrap();

        assert_eq!(m.unstage_smb("pv1", &a).await.unwrap(), Change::Changed);
        assert_eq!(node.host.entry(STAGING), None);
        assert!(
            !node.host.smb_mappings().is_empty(),
            "{release}: pv2 still uses the share"
        );
        assert_eq!(m.unstage_smb("pv1", &a).await.unwrap(), Change::Unchanged);
        m.unstage_smb("pv2", &b).await.unwrap();
        assert!(
            node.host.smb_mappings().is_empty(),
            "{release}: {:?}",
            node.host.smb_mappings()
        );
    }
}

#[tokio::test]
async fn leases_outlive_a_driver_restart() {
    let mut node = node_with_share(ProxyRelease::LATEST).await;
    node.mounter
        .stage_smb("pv1", &share("a"), &creds_with("pw"), &path(STAGING))
        .await
        .unwrap();
    node.mounter
        .stage_smb("pv2", &share("b"), &creds_with("pw"), &path(STAGING_2))
        .await
        .unwrap();
    node.restart_driver().await;
    node.mounter
        .unstage_smb("pv1", &path(STAGING))
        .await
        .unwrap();
    assert_eq!(node.host.smb_mappings().len(), 1);
    node.restart_driver().await;
    node.mounter
        .unstage_smb("pv2", &path(STAGING_2))
        .await
        .unwrap();
    assert!(node.host.smb_mappings().is_empty());
}

#[tokio::test]
async fn a_disconnected_mapping_is_made_again() {
    let node = node_with_share(ProxyRelease::LATEST).await;
    let m = &node.mounter;
    m.stage_smb("pv1", &share("a"), &creds_with("pw"), &path(STAGING))
        .await
        .unwrap();
    node.host
        .set_smb_mapping_status(ROOT, SmbMappingStatus::Disconnected);
    // A new volume on the share: the proxy maps over the stale mapping,
    // Windows refuses (85), the mounter removes it and maps again.
    m.stage_smb("pv2", &share("b"), &creds_with("pw"), &path(STAGING_2))
        .await
        .unwrap();
    assert_eq!(
        node.host.smb_mapping_status(ROOT),
        Some(SmbMappingStatus::Ok)
    );
    // The first volume's link answers again; its stage is a no-op.
    assert_eq!(
        m.stage_smb("pv1", &share("a"), &creds_with("pw"), &path(STAGING))
            .await
            .unwrap(),
        Change::Unchanged
    );
}

#[tokio::test]
async fn a_stage_after_a_broken_link_remaps_and_relinks() {
    let node = node_with_share(ProxyRelease::LATEST).await;
    let m = &node.mounter;
    m.stage_smb("pv1", &share("a"), &creds_with("pw"), &path(STAGING))
        .await
        .unwrap();
    node.host
        .set_smb_mapping_status(ROOT, SmbMappingStatus::Disconnected);
    assert_eq!(
        m.inspect(&path(STAGING)).await.unwrap(),
        PathState::SmbLink {
            remote: share("a"),
            reachable: false
        }
    );
    assert_eq!(
        m.stage_smb("pv1", &share("a"), &creds_with("pw"), &path(STAGING))
            .await
            .unwrap(),
        Change::Changed
    );
    assert_eq!(
        node.host.smb_mapping_status(ROOT),
        Some(SmbMappingStatus::Ok)
    );
}

#[tokio::test]
async fn rotated_credentials_map_the_share_again() {
    let node = node_with_share(ProxyRelease::LATEST).await;
    let m = &node.mounter;
    m.stage_smb("pv1", &share("a"), &creds_with("pw"), &path(STAGING))
        .await
        .unwrap();
    node.host.set_smb_share_password(ROOT, "pw2");
    // The mapping still works with the old password: a stage with the new
    // one uses it as it is, as CSI Proxy does.
    m.stage_smb("pv2", &share("b"), &creds_with("pw2"), &path(STAGING_2))
        .await
        .unwrap();
    let rotated = m
        .rotate_smb_credentials(&share("a"), &creds_with("pw2"))
        .await
        .unwrap();
    assert_eq!(rotated.change, Change::Changed);
    assert_eq!(
        rotated.interrupted,
        vec!["pv1".to_owned(), "pv2".to_owned()]
    );
    assert_eq!(node.host.smb_mappings(), vec![ROOT.to_owned()]);
    let again = m
        .rotate_smb_credentials(&share("a"), &creds_with("pw2"))
        .await
        .unwrap();
    assert_eq!(again.change, Change::Unchanged);
    // A wrong password is Windows' logon failure, and changes nothing.
    let error = m
        .rotate_smb_credentials(&share("a"), &creds_with("wrong"))
        .await
        .unwrap_err();
    assert_eq!(error.host_cause(), Some(HostCause::LogonFailure), "{error}");
}

#[tokio::test]
async fn windows_refusals_are_typed_and_leave_nothing_behind() {
    let node = node_with_share(ProxyRelease::LATEST).await;
    let m = &node.mounter;
    let stage = |remote: &str, password: &str| {
        let remote = SmbRemotePath::new(remote).unwrap();
        let creds = creds_with(password);
        async move {
            m.stage_smb("pv1", &remote, &creds, &path(STAGING))
                .await
                .unwrap_err()
        }
    };
    let cases = [
        (
            stage(r"\\files\share\a", "wrong").await,
            HostCause::LogonFailure,
            Code::PermissionDenied,
            false,
        ),
        (
            stage(r"\\nowhere\share", "pw").await,
            HostCause::NetworkPathNotFound,
            Code::Unavailable,
            true,
        ),
        (
            stage(r"\\files\nosuch", "pw").await,
            HostCause::NetworkNameNotFound,
            Code::NotFound,
            false,
        ),
    ];
    for (error, cause, code, retryable) in cases {
        assert_eq!(error.host_cause(), Some(cause), "{error}");
        assert_eq!(
            (error.csi_code(), error.is_retryable()),
            (code, retryable),
            "{error}"
        );
    }
    // 1219: the server is mapped already, under another user.
    node.host
        .map_smb_outside(r"\\files\other", "admin", "root-pw");
    let error = stage(r"\\files\share\a", "pw").await;
    assert_eq!(
        error.host_cause(),
        Some(HostCause::CredentialConflict),
        "{error}"
    );
    assert_eq!(
        (error.csi_code(), error.is_retryable()),
        (Code::FailedPrecondition, false)
    );
    assert_eq!(node.host.smb_mappings(), vec![r"\\files\other".to_owned()]);
    assert_eq!(node.host.entry(STAGING), None);
}

#[tokio::test]
async fn a_link_refused_after_mapping_takes_the_new_mapping_with_it() {
    let node = node_with_share(ProxyRelease::LATEST).await;
    // A folder whose parent is missing: the proxy maps, then fails to link.
    let outside = path(r"C:\var\lib\kubelet\plugins\missing\pv1");
    let error = node
        .mounter
        .stage_smb("pv1", &share("a"), &creds_with("pw"), &outside)
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Host { .. }), "{error}");
    assert!(
        node.host.smb_mappings().is_empty(),
        "{:?}",
        node.host.smb_mappings()
    );
    assert_eq!(node.host_calls(Op::RemoveSmbGlobalMapping), 1);
}

#[tokio::test]
async fn a_mapping_made_by_someone_else_is_never_removed() {
    let node = node_with_share(ProxyRelease::LATEST).await;
    node.host.map_smb_outside(ROOT, "user", "pw");
    let state = tempfile::tempdir().unwrap();
    let proxy = node.mounter.proxy().clone();
    let mounter = Mounter::builder(proxy, state.path())
        .foreign_smb_share(&share(""))
        .build()
        .unwrap();
    mounter
        .stage_smb("pv1", &share("a"), &creds_with("pw"), &path(STAGING))
        .await
        .unwrap();
    mounter.unstage_smb("pv1", &path(STAGING)).await.unwrap();
    assert_eq!(node.host.smb_mappings(), vec![ROOT.to_owned()]);
    let error = mounter
        .rotate_smb_credentials(&share("a"), &creds_with("pw2"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::NotFound { .. } | Error::Conflict { .. }),
        "{error}"
    );
    assert_eq!(node.host_calls(Op::RemoveSmbGlobalMapping), 0);
}

#[tokio::test]
async fn an_unstage_without_a_lease_removes_the_link_and_keeps_the_mapping() {
    // Before v1.3 the proxy follows the link to the share, where no volume
    // is (from v1.3 see `a_link_no_journal_knows_is_left_alone_on_v1_3`).
    let node = node_with_share("v1.1.1".parse().unwrap()).await;
    node.mounter
        .stage_smb("pv1", &share("a"), &creds_with("pw"), &path(STAGING))
        .await
        .unwrap();
    // A volume staged before the journal: its link, no lease.
    let other = tempfile::tempdir().unwrap();
    let old_driver = node.other_driver(other.path()).await;
    assert_eq!(
        old_driver.unstage_smb("pv1", &path(STAGING)).await.unwrap(),
        Change::Changed
    );
    assert_eq!(node.host.entry(STAGING), None);
    assert_eq!(node.host.smb_mappings(), vec![format!(r"{ROOT}\a")]);
    // A mapping already gone is no failure for its owner.
    node.host.reboot();
    node.mounter
        .unstage_smb("pv1", &path(STAGING))
        .await
        .unwrap();
    assert!(node.host.smb_mappings().is_empty());
    assert!(matches!(
        node.host.entry(STAGING),
        None | Some(PathEntry::Directory)
    ));
}

#[tokio::test]
async fn a_link_no_journal_knows_is_cleared_on_v1_3_under_either_reading() {
    // v1.3 names, for a link, the volume that holds it (or, under the
    // other reading, none): either way a link no record names is a link,
    // removed, never its target.
    for reading in [LinkReading::Holder, LinkReading::Target] {
        let node = node_with_share(ProxyRelease::LATEST).await;
        node.host.set_link_reading(reading);
        node.mounter
            .stage_smb("pv1", &share("a"), &creds_with("pw"), &path(STAGING))
            .await
            .unwrap();
        let other = tempfile::tempdir().unwrap();
        let old_driver = node.other_driver(other.path()).await;
        assert_eq!(
            old_driver.unstage_smb("pv1", &path(STAGING)).await.unwrap(),
            Change::Changed,
            "{reading:?}"
        );
        assert_eq!(node.host.entry(STAGING), None, "{reading:?}");
        assert_eq!(node.host.smb_mappings(), vec![ROOT.to_owned()]);
        // Its own driver, which recorded it, removes the mapping.
        node.mounter
            .unstage_smb("pv1", &path(STAGING))
            .await
            .unwrap();
        assert!(node.host.smb_mappings().is_empty(), "{reading:?}");
    }
}

#[tokio::test]
async fn one_unstage_works_out_whether_a_disk_or_a_share_is_staged() {
    let host = FakeHost::builder()
        .disk(1, super::PAGE83, 10 * super::GIB)
        .smb_share(ROOT, "user", "pw")
        .share_folder(r"\\files\share\b");
    let node = Node::on(ProxyRelease::LATEST, host).await;
    let (m, disk_at, share_at) = (&node.mounter, path(STAGING), path(STAGING_2));
    node.stage(STAGING).await;
    m.stage_smb("pv-s", &share("b"), &creds_with("pw"), &share_at)
        .await
        .unwrap();
    let offline = DiskAfterUnstage::TakeOffline;
    assert_eq!(
        m.unstage("pv-d", &disk_at, offline).await.unwrap(),
        Change::Changed
    );
    assert!(!node.host.disk(1).unwrap().online, "the disk's unstage");
    assert_eq!(
        m.unstage("pv-s", &share_at, offline).await.unwrap(),
        Change::Changed
    );
    assert!(node.host.smb_mappings().is_empty(), "the share's unstage");
    for (volume, at) in [("pv-d", &disk_at), ("pv-s", &share_at)] {
        assert_eq!(
            m.unstage(volume, at, offline).await.unwrap(),
            Change::Unchanged
        );
    }
    assert_eq!(node.host.entry(STAGING), None);
    assert_eq!(node.host.entry(STAGING_2), None);
}

// ---- Mappings the mounter did not make (issue 62) ----------------------
//
// Before it first maps a share, the mounter asks `IsSymlink` of the
// share's root: only a share Windows refused makes the next mapping its
// own. Anything else in place is someone else's, used and never removed.

#[tokio::test]
async fn a_mapping_in_place_before_the_first_stage_is_never_removed() {
    for release in releases() {
        let node = node_with_share(release).await;
        // An administrator's mapping of the share's root, made before the
        // plugin's first stage, with no `foreign_smb_share` named.
        node.host.map_smb_outside(ROOT, "user", "pw");
        let m = &node.mounter;
        m.stage_smb("pv1", &share("a"), &creds_with("pw"), &path(STAGING))
            .await
            .unwrap();
        m.stage_smb("pv2", &share("b"), &creds_with("pw"), &path(STAGING_2))
            .await
            .unwrap();
        m.unstage_smb("pv1", &path(STAGING)).await.unwrap();
        m.unstage_smb("pv2", &path(STAGING_2)).await.unwrap();
        assert!(
            node.host.smb_mappings().contains(&ROOT.to_owned()),
            "{release}: {:?}",
            node.host.smb_mappings()
        );
        assert_eq!(node.host.smb_mapping_user(ROOT).as_deref(), Some("user"));
        // Not the mounter's: nothing of the share is removed (before
        // v1.1.2 the volumes' own paths were mapped beside it, and are
        // left too: a leak, never a removal of someone else's).
        assert_eq!(node.host_calls(Op::RemoveSmbGlobalMapping), 0, "{release}");
        // Nor rotated under its owner.
        m.stage_smb("pv1", &share("a"), &creds_with("pw"), &path(STAGING))
            .await
            .unwrap();
        let rotated = m
            .rotate_smb_credentials(&share("a"), &creds_with("pw2"))
            .await;
        assert!(matches!(rotated, Err(Error::Conflict { .. })), "{release}");
    }
}

#[tokio::test]
async fn a_share_refused_before_its_first_mapping_is_the_mounters() {
    let node = node_with_share(ProxyRelease::LATEST).await;
    let m = &node.mounter;
    m.stage_smb("pv1", &share("a"), &creds_with("pw"), &path(STAGING))
        .await
        .unwrap();
    // The share's root was looked at before the mapping was made.
    assert_eq!(node.host_calls(Op::IsSymlink), 3);
    m.unstage_smb("pv1", &path(STAGING)).await.unwrap();
    assert!(node.host.smb_mappings().is_empty());
}

#[tokio::test]
async fn a_look_at_the_share_that_tells_nothing_leaves_the_mapping_someone_elses() {
    let node = node_with_share(ProxyRelease::LATEST).await;
    // The look at the share's root (the stage's second `IsSymlink`, after
    // the one at the staging path) fails for a reason that is not the
    // share's.
    let odd = WindowsError::new(WindowsError::INVALID_PARAMETER);
    node.host.fail_call(Op::IsSymlink, 2, odd);
    let m = &node.mounter;
    m.stage_smb("pv1", &share("a"), &creds_with("pw"), &path(STAGING))
        .await
        .unwrap();
    m.unstage_smb("pv1", &path(STAGING)).await.unwrap();
    assert_eq!(node.host.smb_mappings(), vec![ROOT.to_owned()]);
    assert_eq!(node.host_calls(Op::RemoveSmbGlobalMapping), 0);
}

#[tokio::test]
async fn a_broken_mapping_someone_else_made_fails_the_stage_and_is_left() {
    let node = node_with_share(ProxyRelease::LATEST).await;
    node.host.map_smb_outside(ROOT, "user", "pw");
    node.host
        .set_smb_mapping_status(ROOT, SmbMappingStatus::Disconnected);
    let m = &node.mounter;
    let error = m
        .stage_smb("pv1", &share("a"), &creds_with("pw"), &path(STAGING))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::NotOurs { .. }), "{error}");
    assert_eq!(error.csi_code(), Code::FailedPrecondition);
    assert!(error.to_string().contains(ROOT), "{error}");
    assert_eq!(
        node.host.smb_mapping_status(ROOT),
        Some(SmbMappingStatus::Disconnected)
    );
    assert_eq!(node.host_calls(Op::RemoveSmbGlobalMapping), 0);
    assert_eq!(node.host.entry(STAGING), None);
    // Once its owner repairs it, the stage uses it, and leaves it.
    node.host.set_smb_mapping_status(ROOT, SmbMappingStatus::Ok);
    m.stage_smb("pv1", &share("a"), &creds_with("pw"), &path(STAGING))
        .await
        .unwrap();
    m.unstage_smb("pv1", &path(STAGING)).await.unwrap();
    assert_eq!(node.host.smb_mappings(), vec![ROOT.to_owned()]);
    assert_eq!(node.host_calls(Op::RemoveSmbGlobalMapping), 0);
}

/// An earlier build's unkeyed fingerprint of `username` and `password`
/// with `salt` (salted SHA-256, stretched 10,000 rounds), as its journals
/// hold it: `salt:hash` in hex.
fn legacy_fingerprint(salt: [u8; 16], username: &str, password: &str) -> String {
    use sha2::{Digest, Sha256};
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let mut digest = Sha256::new();
    digest.update(salt);
    digest.update((username.len() as u64).to_le_bytes());
    digest.update(username);
    digest.update(password);
    let mut hash: [u8; 32] = digest.finalize().into();
    for _ in 1..10_000 {
        hash = Sha256::new()
            .chain_update(salt)
            .chain_update(hash)
            .finalize()
            .into();
    }
    format!("{}:{}", hex(&salt), hex(&hash))
}

#[tokio::test]
async fn an_earlier_builds_fingerprint_gives_way_to_a_keyed_one_once_matched() {
    let mut node = node_with_share(ProxyRelease::LATEST).await;
    node.mounter
        .stage_smb("pv1", &share("a"), &creds(), &path(STAGING))
        .await
        .unwrap();
    // The driver stops (its journal file closed: Windows replaces no file
    // that is open), and an earlier build's journal takes its place: the
    // same records in format 1, the fingerprint unkeyed.
    let elsewhere = tempfile::tempdir().unwrap();
    node.mounter = node.other_driver(elsewhere.path()).await;
    let legacy = legacy_fingerprint([9; 16], "user", "pw");
    let journal = node.state_dir().join("mounter-journal");
    std::fs::write(
        &journal,
        format!(
            "csi-proxy-client mounter journal 1\n\
             link\t{STAGING}\tsmb\t{ROOT}\\a\n\
             share\t{ROOT}\t1\t{legacy}\n\
             mapped\t{ROOT}\t{ROOT}\\a\n\
             lease\t{ROOT}\tpv1\t{STAGING}\t{ROOT}\\a\n"
        ),
    )
    .unwrap();
    node.restart_driver().await;
    let rotated = node
        .mounter
        .rotate_smb_credentials(&share("a"), &creds())
        .await
        .unwrap();
    assert_eq!(rotated.change, Change::Unchanged, "the credentials match");
    // The journal's last word on the share: a keyed fingerprint.
    let text = std::fs::read_to_string(&journal).unwrap();
    let share_row = text.lines().rev().find(|line| line.contains("\tshare\t"));
    assert!(
        share_row.is_some_and(|row| row.contains("\t1\tk1:") && !row.contains(&legacy)),
        "{text}"
    );
    // Still the mounter's, and matched under the key from now on.
    let again = node
        .mounter
        .rotate_smb_credentials(&share("a"), &creds())
        .await
        .unwrap();
    assert_eq!(again.change, Change::Unchanged);
}

/// A first stage cut short by the driver's death just before its mapping
/// call works leaves the share recorded, not as the mounter's: the retry
/// looks at the share again, so the mapping it makes is the mounter's,
/// and the last unstage removes it.
#[tokio::test]
async fn a_stage_cut_short_before_its_mapping_still_owns_the_mapping_its_retry_makes() {
    for release in releases() {
        let node = node_with_share(release).await;
        let state = tempfile::tempdir().unwrap();
        let staging = path(STAGING);
        // The driver: a runtime of its own on a thread of its own, killed
        // with every task on it.
        let (kill, killed) = tokio::sync::oneshot::channel::<()>();
        let driver = std::thread::spawn({
            let (client, state, staging) = (
                node.client_builder(),
                state.path().to_owned(),
                staging.clone(),
            );
            move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(async move {
                    let m = super::mounter(client.connect().await.unwrap(), &state);
                    let (folder, credentials) = (share("a"), creds());
                    let stage = m.stage_smb("pv1", &folder, &credentials, &staging);
                    tokio::select! {
                        _ = stage => panic!("the stage ended before its mapping"),
                        _ = killed => {}
                    }
                });
                drop(runtime);
            }
        });
        // Every call before the mapping goes on; at the mapping the driver
        // dies, and the call never works.
        let mut held = node.host.hold_call(1);
        loop {
            let (operation, go) = (&mut held).await.unwrap();
            held = node.host.hold_call(1);
            if operation == Op::NewSmbGlobalMapping {
                kill.send(()).unwrap();
                tokio::task::spawn_blocking(|| driver.join().unwrap())
                    .await
                    .unwrap();
                drop(go);
                break;
            }
            go.send(()).unwrap();
        }
        drop(held);
        assert!(node.host.smb_mappings().is_empty(), "{release}");

        let m = node.other_driver(state.path()).await;
        let staged = m.stage_smb("pv1", &share("a"), &creds(), &staging).await;
        assert_eq!(staged.unwrap(), Change::Changed, "{release}");
        assert_eq!(node.host.smb_mappings().len(), 1, "{release}");
        m.unstage_smb("pv1", &staging).await.unwrap();
        assert!(
            node.host.smb_mappings().is_empty(),
            "{release}: the retry's mapping is the mounter's"
        );
    }
}
