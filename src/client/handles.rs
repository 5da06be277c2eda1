//! The handles `CsiProxy` gives out: each group trait implemented by running
//! every call through the group's [`Lookout`] and its call policy, which
//! add deadlines, retries and looking for the proxy around whichever
//! adapter is current.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;

use super::lookout::Lookout;
use super::options::CallOptions;
use crate::api::*;
use crate::capability::Operation as Op;
use crate::error::Result;

/// A group's lookout with the options of the calls made through it.
pub(crate) struct Handle<A: ?Sized> {
    pub lookout: Arc<Lookout<A>>,
    pub options: CallOptions,
}

/// Implements a group trait on [`Handle`]: every method runs the same
/// method of the current adapter through the lookout, as the operation after
/// `=` (an [`Operation`](Op) variant, or an expression of the arguments
/// that gives one), whose deadline and retry rules apply.
macro_rules! handle_impl {
    ($trait:ident { $(
        fn $method:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty = $op:expr;
    )+ }) => {
        #[async_trait]
        impl $trait for Handle<dyn $trait> {
            $(
                async fn $method(&self $(, $arg: $ty)*) -> Result<$ret> {
                    #[allow(unused_imports)]
                    use Op::*;
                    self.lookout
                        .run($op, self.options, |api| async move { api.$method($($arg),*).await })
                        .await
                }
            )+
        }
    };
}

handle_impl!(DiskApi {
    fn list_disk_locations(&self) -> BTreeMap<u32, DiskLocation> = ListDiskLocations;
    fn partition_disk(&self, disk: u32) -> () = PartitionDisk;
    fn rescan(&self) -> () = Rescan;
    fn list_disk_ids(&self) -> BTreeMap<u32, DiskIds> = ListDiskIds;
    fn get_disk_stats(&self, disk: u32) -> u64 = GetDiskStats;
    fn set_disk_state(&self, disk: u32, online: bool) -> () = SetDiskState;
    fn get_disk_state(&self, disk: u32) -> bool = GetDiskState;
    fn get_disk_number_by_name(&self, page83: &str) -> u32 = GetDiskNumberByName;
});

handle_impl!(FilesystemApi {
    fn path_exists(&self, path: &WindowsPath) -> bool = PathExists;
    fn mkdir(&self, path: &WindowsPath) -> () = Mkdir;
    fn rmdir(&self, path: &WindowsPath, force: bool) -> () = Rmdir;
    fn rmdir_contents(&self, path: &WindowsPath) -> () = RmdirContents;
    fn create_symlink(&self, target: &WindowsPath, link: &WindowsPath) -> () = CreateSymlink;
    fn is_symlink(&self, path: &WindowsPath) -> bool = IsSymlink;
});

handle_impl!(SmbApi {
    fn new_smb_global_mapping(&self, mapping: &SmbMapping) -> () = NewSmbGlobalMapping;
    fn remove_smb_global_mapping(&self, remote_path: &SmbRemotePath) -> () = RemoveSmbGlobalMapping;
});

handle_impl!(VolumeApi {
    fn list_volumes_on_disk(&self, disk: u32, partition: Option<u32>) -> Vec<VolumeId> =
        if partition.is_some() { ListVolumesOnPartition } else { ListVolumesOnDisk };
    fn mount_volume(&self, volume: &VolumeId, target: &WindowsPath) -> () = MountVolume;
    fn unmount_volume(&self, volume: &VolumeId, target: &WindowsPath) -> () = UnmountVolume;
    fn is_volume_formatted(&self, volume: &VolumeId) -> bool = IsVolumeFormatted;
    fn format_volume(&self, volume: &VolumeId) -> () = FormatVolume;
    fn resize_volume(&self, volume: &VolumeId, size_bytes: u64) -> () = ResizeVolume;
    fn get_volume_stats(&self, volume: &VolumeId) -> VolumeStats = GetVolumeStats;
    fn get_disk_number_from_volume_id(&self, volume: &VolumeId) -> u32 = GetDiskNumberFromVolumeId;
    fn get_volume_id_from_target_path(&self, target: &WindowsPath) -> VolumeId = GetVolumeIdFromTargetPath;
    fn write_volume_cache(&self, volume: &VolumeId) -> () = WriteVolumeCache;
    fn get_closest_volume_id_from_target_path(&self, path: &WindowsPath) -> VolumeId =
        GetClosestVolumeIdFromTargetPath;
});

handle_impl!(IscsiApi {
    fn add_target_portal(&self, portal: &TargetPortal) -> () = AddTargetPortal;
    fn discover_target_portal(&self, portal: &TargetPortal) -> Vec<String> = DiscoverTargetPortal;
    fn remove_target_portal(&self, portal: &TargetPortal) -> () = RemoveTargetPortal;
    fn list_target_portals(&self) -> Vec<TargetPortal> = ListTargetPortals;
    fn connect_target(&self, portal: &TargetPortal, iqn: &str, auth: &IscsiAuth) -> () = ConnectTarget;
    fn disconnect_target(&self, portal: &TargetPortal, iqn: &str) -> () = DisconnectTarget;
    fn get_target_disks(&self, portal: &TargetPortal, iqn: &str) -> Vec<u32> = GetTargetDisks;
    fn set_mutual_chap_secret(&self, secret: &Secret) -> () = SetMutualChapSecret;
});

handle_impl!(SystemApi {
    fn get_bios_serial_number(&self) -> String = GetBiosSerialNumber;
    fn start_service(&self, name: &str) -> () = StartService;
    fn stop_service(&self, name: &str, force: bool) -> () = StopService;
    fn get_service(&self, name: &str) -> ServiceInfo = GetService;
});
