//! A node that restarts under the driver.

use super::{mapping, path, KUBELET};
use csi_proxy_client::api::{
    DiskApi, FilesystemApi, IscsiApi, IscsiAuth, SmbApi, TargetPortal, VolumeApi,
};
use csi_proxy_client::testing::{FakeHost, PathEntry};

const STAGING: &str = r"C:\var\lib\kubelet\plugins\pd\globalmount";
const POD_LINK: &str = r"C:\var\lib\kubelet\pods\p1\mount";
const SMB_LINK: &str = r"C:\var\lib\kubelet\plugins\smb\globalmount";

#[tokio::test]
async fn a_reboot_drops_mappings_mounts_and_sessions_but_keeps_links() {
    let portal = TargetPortal::new("10.0.0.5");
    let host = FakeHost::builder()
        .disk(1, "d", 10 << 30)
        .dir(STAGING)
        .dir(r"C:\var\lib\kubelet\pods\p1")
        .dir(r"C:\var\lib\kubelet\plugins\smb")
        .smb_share(r"\\srv\data", "u", "p")
        .share_folder(r"\\srv\data\pv")
        .iscsi_target(
            portal.clone(),
            "iqn.2026-01.example:t",
            &[("lun0", 1 << 30)],
            None,
            None,
        )
        .build();
    // A staged and published disk volume with something written on it.
    host.partition_disk(1).await.unwrap();
    let id = host.list_volumes_on_disk(1, None).await.unwrap().remove(0);
    host.format_volume(&id).await.unwrap();
    let (staging, pod_link) = (path(STAGING), path(POD_LINK));
    host.mount_volume(&id, &staging).await.unwrap();
    host.mkdir(&path(&format!(r"{STAGING}\data\d1")))
        .await
        .unwrap();
    host.create_symlink(&staging, &pod_link).await.unwrap();
    // A staged SMB share, and an iSCSI session with its disk.
    let smb_link = path(SMB_LINK);
    let data = mapping(r"\\srv\data\pv", "u", "p").with_local_path(smb_link.clone());
    host.new_smb_global_mapping(&data).await.unwrap();
    host.add_target_portal(&portal).await.unwrap();
    host.connect_target(&portal, "iqn.2026-01.example:t", &IscsiAuth::None)
        .await
        .unwrap();
    // The node's own disks (0 and 2), the data disk, the session's disk.
    assert_eq!(host.disk_numbers(), [0, 1, 2, 3]);

    host.reboot();

    assert!(host.smb_mappings().is_empty());
    assert!(host.iscsi_sessions().is_empty());
    assert_eq!(host.registered_portals(), [portal], "portals are kept");
    assert_eq!(host.disk_numbers(), [0, 1, 2], "the session's disk went");
    // Links stay; the SMB one leads nowhere: with no mapping, Windows
    // refuses the share to the proxy (a logon failure).
    assert!(matches!(host.entry(SMB_LINK), Some(PathEntry::Symlink(_))));
    let refused = host.is_symlink(&smb_link).await.unwrap_err();
    assert_eq!(
        refused.host_cause(),
        Some(csi_proxy_client::HostCause::LogonFailure)
    );
    // The mount point is an empty folder: the link to it finds no volume
    // of its own (v1.3 names the one that holds the link, `C:`'s).
    assert_eq!(host.entry(STAGING), Some(PathEntry::Directory));
    assert_eq!(host.entry(&format!(r"{STAGING}\data")), None);
    assert!(host.volume(&id).unwrap().mounts.is_empty());
    assert!(matches!(host.entry(POD_LINK), Some(PathEntry::Symlink(_))));
    let through_link = host.get_volume_id_from_target_path(&pod_link).await;
    assert_ne!(through_link.ok(), Some(id.clone()));
    // The disk is as it was: partitioned, its volume formatted.
    assert!(host.disk(1).unwrap().partitioned);
    assert!(host.is_volume_formatted(&id).await.unwrap());

    // Staged again: the volume's content is back, the links work.
    host.mount_volume(&id, &staging).await.unwrap();
    assert_eq!(
        host.entry(&format!(r"{STAGING}\data\d1")),
        Some(PathEntry::Directory)
    );
    assert_eq!(
        host.get_volume_id_from_target_path(&staging).await.unwrap(),
        id
    );
    assert!(host.is_symlink(&pod_link).await.unwrap());
    host.new_smb_global_mapping(&mapping(r"\\srv\data\pv", "u", "p"))
        .await
        .unwrap();
    assert!(host.is_symlink(&smb_link).await.unwrap());
    assert!(host.path_exists(&path(KUBELET)).await.unwrap());
}
