//! Choosing the backend: the host itself (`Backend::Host`), or for each
//! group whichever of CSI Proxy and the host is there
//! (`Backend::Automatic`). The host backend runs on Windows, with the
//! feature `host-process`: under Wine in CI. Elsewhere, asking for it is a
//! configuration error and `Automatic` is CSI Proxy alone.

use crate::common::scenario::seeded_host;
use crate::common::TestNode;
use csi_proxy_client::testing::FakeProxy;
use csi_proxy_client::{health::ServedBy, ApiGroup, ApiVersion as V, Backend, CsiProxy, Error};

/// A proxy that serves disk v1 only.
async fn disk_only(node: &TestNode) -> FakeProxy {
    let mut fake = FakeProxy::for_host(node.transport(), &seeded_host());
    fake.serve_all([(ApiGroup::Disk, V::V1)]).await.unwrap();
    fake
}

#[cfg(not(all(windows, feature = "host-process")))]
#[tokio::test]
async fn the_host_backend_is_a_configuration_error_where_the_build_lacks_it() {
    match CsiProxy::builder().backend(Backend::Host).connect().await {
        Err(Error::Configuration { setting, reason }) => {
            assert_eq!(setting, "backend");
            assert!(reason.contains("host-process"), "{reason}");
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[cfg(not(all(windows, feature = "host-process")))]
#[tokio::test]
async fn automatic_is_csi_proxy_alone_where_the_build_lacks_the_host() {
    let node = TestNode::new();
    let _fake = disk_only(&node).await;
    let proxy = CsiProxy::builder()
        .transport(node.transport())
        .backend(Backend::Automatic)
        .connect()
        .await
        .unwrap();
    let report = proxy.report();
    assert_eq!(
        report.group(ApiGroup::Disk).unwrap().served_by,
        Some(ServedBy::CsiProxy)
    );
    assert_eq!(report.group(ApiGroup::Filesystem).unwrap().served_by, None);
    let health = proxy.health();
    assert!(!health.group(ApiGroup::Filesystem).unwrap().is_served());
}

#[cfg(all(windows, feature = "host-process"))]
mod on_windows {

    use csi_proxy_client::{api::SmbRemotePath, Operation};

    use super::*;
    use csi_proxy_client::api::WindowsPath;

    /// A fresh directory under the kubelet directory.
    fn fresh_dir(name: &str) -> WindowsPath {
        let dir = format!(r"C:\var\lib\kubelet\{name}-{}", std::process::id());
        let _ = std::fs::remove_dir_all(&dir);
        WindowsPath::new(dir).unwrap()
    }

    #[tokio::test]
    async fn the_host_serves_every_group_through_the_same_handles() {
        let proxy = CsiProxy::builder()
            .backend(Backend::Host)
            .connect()
            .await
            .unwrap();
        for group in ApiGroup::ALL {
            let report = proxy.report().group(group).unwrap();
            assert_eq!(report.served_by, Some(ServedBy::Host));
            let health = proxy.health();
            let health = health.group(group).unwrap();
            assert_eq!(health.served_by, ServedBy::Host);
            assert!(health.is_served());
        }

        let dir = fresh_dir("host-handles");
        let fs = proxy.filesystem().unwrap();
        fs.mkdir(&dir).await.unwrap();
        assert!(std::path::Path::new(dir.as_str()).is_dir());
        assert!(fs.path_exists(&dir).await.unwrap());
        fs.rmdir(&dir, true).await.unwrap();
        assert!(!std::path::Path::new(dir.as_str()).exists());
        let spooler = proxy
            .system()
            .unwrap()
            .get_service("Spooler")
            .await
            .unwrap();
        assert_eq!(spooler.display_name, "Print Spooler");

        // SMB goes to the host's WMI for real: Wine has no SMB provider, and
        // a Windows host without this mapping has nothing to remove. Either
        // way, a host error of that operation, never a panic or a success.
        let share = SmbRemotePath::new(r"\\csi-host-test\share").unwrap();
        match proxy.smb().unwrap().remove_smb_global_mapping(&share).await {
            Err(Error::Host { operation, .. }) => {
                assert_eq!(operation, Operation::RemoveSmbGlobalMapping)
            }
            other => panic!("{other:?}"),
        }
        // iSCSI and disk too: Wine has no storage provider; a Windows host
        // answers with its portals and disks.
        match proxy.iscsi().unwrap().list_target_portals().await {
            Ok(_) => {}
            Err(Error::Host { operation, .. }) => {
                assert_eq!(operation, Operation::ListTargetPortals)
            }
            Err(other) => panic!("{other:?}"),
        }
        match proxy.disk().unwrap().list_disk_ids().await {
            Ok(_) => {}
            Err(Error::Host { operation, .. }) => assert_eq!(operation, Operation::ListDiskIds),
            Err(other) => panic!("{other:?}"),
        }
        // A plain directory is no mount folder, on any host.
        let plain = fresh_dir("host-not-mounted");
        fs.mkdir(&plain).await.unwrap();
        let volume = proxy.volume().unwrap();
        match volume.get_volume_id_from_target_path(&plain).await {
            Err(Error::Host { message, .. }) => assert!(message.contains("no volume is mounted")),
            other => panic!("{other:?}"),
        }
        fs.rmdir(&plain, true).await.unwrap();
    }

    #[tokio::test]
    async fn a_group_left_out_of_the_configuration_has_no_handle() {
        let proxy = CsiProxy::builder()
            .backend(Backend::Host)
            .groups([ApiGroup::Filesystem])
            .connect()
            .await
            .unwrap();
        assert!(proxy.report().group(ApiGroup::Volume).is_none());
        match proxy.volume() {
            Err(Error::NotServed { group, .. }) => assert_eq!(group, ApiGroup::Volume),
            Ok(_) => panic!("volume was not configured"),
            Err(other) => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn automatic_takes_from_the_host_what_the_proxy_does_not_serve() {
        // What Kubernetes sets in a HostProcess container; Wine's process is
        // elevated. Every test of this binary wants it set.
        std::env::set_var("CONTAINER_SANDBOX_MOUNT_POINT", r"C:\hpc");
        let node = TestNode::new();
        let _fake = disk_only(&node).await;
        let proxy = CsiProxy::builder()
            .transport(node.transport())
            .backend(Backend::Automatic)
            .require(ApiGroup::Filesystem)
            .connect()
            .await
            .unwrap();
        let by = |g| proxy.report().group(g).unwrap().served_by;
        assert_eq!(by(ApiGroup::Disk), Some(ServedBy::CsiProxy));
        assert_eq!(by(ApiGroup::Filesystem), Some(ServedBy::Host));
        assert_eq!(by(ApiGroup::Iscsi), Some(ServedBy::Host));
        assert_eq!(by(ApiGroup::Smb), Some(ServedBy::Host));
        assert_eq!(by(ApiGroup::System), Some(ServedBy::Host));
        assert_eq!(by(ApiGroup::Volume), Some(ServedBy::Host));
        assert_eq!(proxy.version(ApiGroup::Disk), Some(V::V1));
        let ids = proxy.disk().unwrap().list_disk_ids().await.unwrap();
        assert!(!ids.is_empty());
        let dir = fresh_dir("host-automatic");
        proxy.filesystem().unwrap().mkdir(&dir).await.unwrap();
        assert!(std::path::Path::new(dir.as_str()).is_dir());
        std::fs::remove_dir(dir.as_str()).unwrap();
    }
}
