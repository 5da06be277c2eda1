//! Leases are held per volume and path: an unstage at a path the journal
//! does not record for the volume releases nothing the volume holds at
//! another path (a kubelet that changed its staging path format across
//! an upgrade, a CO bug), and answers OK only when nothing of the volume
//! is at that path.

use super::iscsi::{lun, node_with_target};
use super::smb::node_with_share;
use super::{creds, path, releases, share, STAGING, STAGING_2};
use csi_proxy_client::mount::{Change, DiskAfterUnstage, PathState};
use csi_proxy_client::testing::ProxyRelease;
use csi_proxy_client::Error;

/// Where kubelet never staged anything.
const ELSEWHERE: &str = r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\pd\moved\globalmount";

#[tokio::test]
async fn a_share_s_unstage_at_an_unrecorded_path_keeps_the_lease_and_the_mapping() {
    for release in releases() {
        let node = node_with_share(release).await;
        let m = &node.mounter;
        m.stage_smb("pv1", &share("a"), &creds(), &path(STAGING))
            .await
            .unwrap();
        let mapped = node.host.smb_mappings();
        for unstaged in [
            m.unstage_smb("pv1", &path(ELSEWHERE)).await,
            m.unstage("pv1", &path(ELSEWHERE), DiskAfterUnstage::TakeOffline)
                .await,
        ] {
            assert_eq!(unstaged.unwrap(), Change::Unchanged, "{release}");
        }
        assert_eq!(node.host.smb_mappings(), mapped, "{release}");
        assert!(
            matches!(
                m.inspect(&path(STAGING)).await.unwrap(),
                PathState::SmbLink {
                    reachable: true,
                    ..
                }
            ),
            "{release}"
        );
        // The lease is still the volume's: its own unstage ends it.
        assert_eq!(
            m.unstage_smb("pv1", &path(STAGING)).await.unwrap(),
            Change::Changed
        );
        assert_eq!(m.inspect(&path(STAGING)).await.unwrap(), PathState::Absent);
    }
}

#[tokio::test]
async fn an_iscsi_unstage_at_an_unrecorded_path_keeps_the_session_under_the_mounted_volume() {
    for release in ["v1.1.1".parse().unwrap(), ProxyRelease::LATEST] {
        let node = node_with_target(release).await;
        let m = &node.mounter;
        m.stage_iscsi("pv-a", &lun(0), &path(STAGING))
            .await
            .unwrap();
        for unstaged in [
            m.unstage_iscsi("pv-a", &path(ELSEWHERE), DiskAfterUnstage::TakeOffline)
                .await,
            m.unstage("pv-a", &path(ELSEWHERE), DiskAfterUnstage::TakeOffline)
                .await,
        ] {
            assert_eq!(unstaged.unwrap(), Change::Unchanged, "{release}");
        }
        assert_eq!(node.host.iscsi_sessions().len(), 1, "{release}");
        assert!(matches!(
            m.inspect(&path(STAGING)).await.unwrap(),
            PathState::VolumeMount { .. }
        ));
        m.unstage_iscsi("pv-a", &path(STAGING), DiskAfterUnstage::KeepOnline)
            .await
            .unwrap();
        assert!(node.host.iscsi_sessions().is_empty(), "{release}");
    }
}

#[tokio::test]
async fn a_share_volume_s_unstage_at_another_share_volume_s_path_is_refused() {
    for release in releases() {
        let node = node_with_share(release).await;
        let m = &node.mounter;
        m.stage_smb("pv1", &share("a"), &creds(), &path(STAGING))
            .await
            .unwrap();
        m.stage_smb("pv2", &share("b"), &creds(), &path(STAGING_2))
            .await
            .unwrap();
        let mapped = node.host.smb_mappings();
        // pv2 named at pv1's path, and a volume staged nowhere likewise.
        for volume in ["pv2", "pv3"] {
            for unstaged in [
                m.unstage_smb(volume, &path(STAGING)).await,
                m.unstage(volume, &path(STAGING), DiskAfterUnstage::TakeOffline)
                    .await,
            ] {
                assert!(
                    matches!(unstaged, Err(Error::Conflict { .. })),
                    "{release} {volume}: {unstaged:?}"
                );
            }
        }
        assert_eq!(node.host.smb_mappings(), mapped, "{release}");
        for staging in [STAGING, STAGING_2] {
            assert!(matches!(
                m.inspect(&path(staging)).await.unwrap(),
                PathState::SmbLink {
                    reachable: true,
                    ..
                }
            ));
        }
    }
}
