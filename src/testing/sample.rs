//! Any operation called with fixed, valid arguments, so that one loop can
//! sweep every operation of every version: to see what goes on the wire,
//! or what comes back from a server that answers anything (see
//! [`ScriptedServer`](super::ScriptedServer)).
//!
//! ```
//! use csi_proxy_client::testing::{sample, FakeHost};
//! use csi_proxy_client::Operation;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let proxy = FakeHost::default().proxy();
//! for &op in Operation::ALL {
//!     // The fake host has none of the sample disks, shares or targets.
//!     let _ = sample::call(&proxy, op).await;
//! }
//! # }
//! ```

use crate::api::{
    IscsiAuth, Secret, SmbMapping, SmbRemotePath, TargetPortal, VolumeId, WindowsPath,
};
use crate::capability::Operation;
use crate::client::CsiProxy;
use crate::error::Result;

/// The disk the samples name.
pub const DISK: u32 = 3;

/// A plugin's staging path.
pub fn path() -> WindowsPath {
    WindowsPath::new(r"C:\var\lib\kubelet\plugins\sample\globalmount").unwrap()
}

/// A pod's volume path.
pub fn pod_path() -> WindowsPath {
    WindowsPath::new(r"C:\var\lib\kubelet\pods\uid\volumes\sample").unwrap()
}

/// A volume ID.
pub fn volume() -> VolumeId {
    VolumeId::new(r"\\?\Volume{11111111-2222-3333-4444-555555555555}\").unwrap()
}

/// An SMB share path (below the share's root).
pub fn share() -> SmbRemotePath {
    SmbRemotePath::new(r"\\files\share\dir").unwrap()
}

/// An iSCSI portal.
pub fn portal() -> TargetPortal {
    TargetPortal::new("10.0.0.5")
}

/// An iSCSI target at [`portal`].
pub const IQN: &str = "iqn.2026-11.example:target";

/// Calls `op` on `proxy` with the samples, and drops what it returned on
/// success.
pub async fn call(proxy: &CsiProxy, op: Operation) -> Result<()> {
    use Operation as O;
    match op {
        O::ListDiskLocations => proxy.disk()?.list_disk_locations().await.map(drop),
        O::PartitionDisk => proxy.disk()?.partition_disk(DISK).await,
        O::Rescan => proxy.disk()?.rescan().await,
        O::ListDiskIds => proxy.disk()?.list_disk_ids().await.map(drop),
        O::GetDiskStats => proxy.disk()?.get_disk_stats(DISK).await.map(drop),
        O::SetDiskState => proxy.disk()?.set_disk_state(DISK, true).await,
        O::GetDiskState => proxy.disk()?.get_disk_state(DISK).await.map(drop),
        O::GetDiskNumberByName => proxy
            .disk()?
            .get_disk_number_by_name("pd-1")
            .await
            .map(drop),
        O::PathExists => proxy.filesystem()?.path_exists(&path()).await.map(drop),
        O::Mkdir => proxy.filesystem()?.mkdir(&path()).await,
        O::Rmdir => proxy.filesystem()?.rmdir(&path(), true).await,
        O::RmdirContents => proxy.filesystem()?.rmdir_contents(&path()).await,
        O::CreateSymlink => {
            proxy
                .filesystem()?
                .create_symlink(&path(), &pod_path())
                .await
        }
        O::IsSymlink => proxy.filesystem()?.is_symlink(&pod_path()).await.map(drop),
        O::NewSmbGlobalMapping => {
            let mapping = SmbMapping::new(share(), "user", Secret::new("pw"));
            proxy.smb()?.new_smb_global_mapping(&mapping).await
        }
        O::RemoveSmbGlobalMapping => proxy.smb()?.remove_smb_global_mapping(&share()).await,
        O::ListVolumesOnDisk => proxy
            .volume()?
            .list_volumes_on_disk(DISK, None)
            .await
            .map(drop),
        O::ListVolumesOnPartition => proxy
            .volume()?
            .list_volumes_on_disk(DISK, Some(2))
            .await
            .map(drop),
        O::MountVolume => proxy.volume()?.mount_volume(&volume(), &path()).await,
        O::UnmountVolume => proxy.volume()?.unmount_volume(&volume(), &path()).await,
        O::IsVolumeFormatted => proxy
            .volume()?
            .is_volume_formatted(&volume())
            .await
            .map(drop),
        O::FormatVolume => proxy.volume()?.format_volume(&volume()).await,
        O::ResizeVolume => proxy.volume()?.resize_volume(&volume(), 1 << 30).await,
        O::GetVolumeStats => proxy.volume()?.get_volume_stats(&volume()).await.map(drop),
        O::GetDiskNumberFromVolumeId => proxy
            .volume()?
            .get_disk_number_from_volume_id(&volume())
            .await
            .map(drop),
        O::GetVolumeIdFromTargetPath => proxy
            .volume()?
            .get_volume_id_from_target_path(&path())
            .await
            .map(drop),
        O::WriteVolumeCache => proxy.volume()?.write_volume_cache(&volume()).await,
        O::GetClosestVolumeIdFromTargetPath => proxy
            .volume()?
            .get_closest_volume_id_from_target_path(&path())
            .await
            .map(drop),
        O::AddTargetPortal => proxy.iscsi()?.add_target_portal(&portal()).await,
        O::DiscoverTargetPortal => proxy
            .iscsi()?
            .discover_target_portal(&portal())
            .await
            .map(drop),
        O::RemoveTargetPortal => proxy.iscsi()?.remove_target_portal(&portal()).await,
        O::ListTargetPortals => proxy.iscsi()?.list_target_portals().await.map(drop),
        O::ConnectTarget => {
            let auth = IscsiAuth::OneWayChap {
                username: "chap-user".into(),
                secret: Secret::new("chap-secret-1"),
            };
            proxy.iscsi()?.connect_target(&portal(), IQN, &auth).await
        }
        O::DisconnectTarget => proxy.iscsi()?.disconnect_target(&portal(), IQN).await,
        O::GetTargetDisks => proxy
            .iscsi()?
            .get_target_disks(&portal(), IQN)
            .await
            .map(drop),
        O::SetMutualChapSecret => {
            proxy
                .iscsi()?
                .set_mutual_chap_secret(&Secret::new("mutual-1"))
                .await
        }
        O::GetBiosSerialNumber => proxy.system()?.get_bios_serial_number().await.map(drop),
        O::StartService => proxy.system()?.start_service("csiproxy").await,
        O::StopService => proxy.system()?.stop_service("csiproxy", false).await,
        O::GetService => proxy.system()?.get_service("csiproxy").await.map(drop),
    }
}
