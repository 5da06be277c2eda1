//! The handles `CsiProxy` gives out: each group trait implemented by running
//! every call through the group's [`Lookout`] and its call policy, which
//! add deadlines, retries and looking for the proxy around whichever
//! adapter is current. Each method is one call of [`Handle::run`] with its
//! operation, whose deadline and retry rules apply.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;

use super::lookout::Lookout;
use super::options::CallOptions;
use crate::adapter::FromConnection;
use crate::api::{
    DiskApi, DiskIds, DiskLocation, FilesystemApi, IscsiApi, IscsiAuth, Secret, ServiceInfo,
    SmbApi, SmbMapping, SmbRemotePath, SystemApi, TargetPortal, VolumeApi, VolumeId, VolumeStats,
    WindowsPath,
};
use crate::capability::Operation as Op;
use crate::error::Result;

/// A group's lookout with the options of the calls made through it.
pub(crate) struct Handle<A: ?Sized> {
    pub lookout: Arc<Lookout<A>>,
    pub options: CallOptions,
}

impl<A: ?Sized + FromConnection + Send + Sync + 'static> Handle<A> {
    /// Runs `call` on the group's current adapter as `operation`.
    async fn run<T, F, Fut>(&self, operation: Op, call: F) -> Result<T>
    where
        F: Fn(Arc<A>) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        self.lookout.run(operation, self.options, call).await
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl DiskApi for Handle<dyn DiskApi> {
    async fn list_disk_locations(&self) -> Result<BTreeMap<u32, DiskLocation>> {
        self.run(Op::ListDiskLocations, |api| async move {
            api.list_disk_locations().await
        })
        .await
    }

    async fn partition_disk(&self, disk: u32) -> Result<()> {
        self.run(Op::PartitionDisk, |api| async move {
            api.partition_disk(disk).await
        })
        .await
    }

    async fn rescan(&self) -> Result<()> {
        self.run(Op::Rescan, |api| async move { api.rescan().await })
            .await
    }

    async fn list_disk_ids(&self) -> Result<BTreeMap<u32, DiskIds>> {
        self.run(
            Op::ListDiskIds,
            |api| async move { api.list_disk_ids().await },
        )
        .await
    }

    async fn get_disk_stats(&self, disk: u32) -> Result<u64> {
        self.run(Op::GetDiskStats, |api| async move {
            api.get_disk_stats(disk).await
        })
        .await
    }

    async fn set_disk_state(&self, disk: u32, online: bool) -> Result<()> {
        self.run(Op::SetDiskState, |api| async move {
            api.set_disk_state(disk, online).await
        })
        .await
    }

    async fn get_disk_state(&self, disk: u32) -> Result<bool> {
        self.run(Op::GetDiskState, |api| async move {
            api.get_disk_state(disk).await
        })
        .await
    }

    async fn get_disk_number_by_name(&self, page83: &str) -> Result<u32> {
        self.run(Op::GetDiskNumberByName, |api| async move {
            api.get_disk_number_by_name(page83).await
        })
        .await
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl VolumeApi for Handle<dyn VolumeApi> {
    async fn list_volumes_on_disk(
        &self,
        disk: u32,
        partition: Option<u32>,
    ) -> Result<Vec<VolumeId>> {
        let operation = if partition.is_some() {
            Op::ListVolumesOnPartition
        } else {
            Op::ListVolumesOnDisk
        };
        self.run(operation, |api| async move {
            api.list_volumes_on_disk(disk, partition).await
        })
        .await
    }

    async fn mount_volume(&self, volume: &VolumeId, target: &WindowsPath) -> Result<()> {
        self.run(Op::MountVolume, |api| async move {
            api.mount_volume(volume, target).await
        })
        .await
    }

    async fn unmount_volume(&self, volume: &VolumeId, target: &WindowsPath) -> Result<()> {
        self.run(Op::UnmountVolume, |api| async move {
            api.unmount_volume(volume, target).await
        })
        .await
    }

    async fn is_volume_formatted(&self, volume: &VolumeId) -> Result<bool> {
        self.run(Op::IsVolumeFormatted, |api| async move {
            api.is_volume_formatted(volume).await
        })
        .await
    }

    async fn format_volume(&self, volume: &VolumeId) -> Result<()> {
        self.run(Op::FormatVolume, |api| async move {
            api.format_volume(volume).await
        })
        .await
    }

    async fn resize_volume(&self, volume: &VolumeId, size_bytes: u64) -> Result<()> {
        self.run(Op::ResizeVolume, |api| async move {
            api.resize_volume(volume, size_bytes).await
        })
        .await
    }

    async fn get_volume_stats(&self, volume: &VolumeId) -> Result<VolumeStats> {
        self.run(Op::GetVolumeStats, |api| async move {
            api.get_volume_stats(volume).await
        })
        .await
    }

    async fn get_disk_number_from_volume_id(&self, volume: &VolumeId) -> Result<u32> {
        self.run(Op::GetDiskNumberFromVolumeId, |api| async move {
            api.get_disk_number_from_volume_id(volume).await
        })
        .await
    }

    async fn get_volume_id_from_target_path(&self, target: &WindowsPath) -> Result<VolumeId> {
        self.run(Op::GetVolumeIdFromTargetPath, |api| async move {
            api.get_volume_id_from_target_path(target).await
        })
        .await
    }

    async fn write_volume_cache(&self, volume: &VolumeId) -> Result<()> {
        self.run(Op::WriteVolumeCache, |api| async move {
            api.write_volume_cache(volume).await
        })
        .await
    }

    async fn get_closest_volume_id_from_target_path(&self, path: &WindowsPath) -> Result<VolumeId> {
        self.run(Op::GetClosestVolumeIdFromTargetPath, |api| async move {
            api.get_closest_volume_id_from_target_path(path).await
        })
        .await
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl FilesystemApi for Handle<dyn FilesystemApi> {
    async fn path_exists(&self, path: &WindowsPath) -> Result<bool> {
        self.run(
            Op::PathExists,
            |api| async move { api.path_exists(path).await },
        )
        .await
    }

    async fn mkdir(&self, path: &WindowsPath) -> Result<()> {
        self.run(Op::Mkdir, |api| async move { api.mkdir(path).await })
            .await
    }

    async fn rmdir(&self, path: &WindowsPath, force: bool) -> Result<()> {
        self.run(Op::Rmdir, |api| async move { api.rmdir(path, force).await })
            .await
    }

    async fn rmdir_contents(&self, path: &WindowsPath) -> Result<()> {
        self.run(Op::RmdirContents, |api| async move {
            api.rmdir_contents(path).await
        })
        .await
    }

    async fn create_symlink(&self, target: &WindowsPath, link: &WindowsPath) -> Result<()> {
        self.run(Op::CreateSymlink, |api| async move {
            api.create_symlink(target, link).await
        })
        .await
    }

    async fn is_symlink(&self, path: &WindowsPath) -> Result<bool> {
        self.run(
            Op::IsSymlink,
            |api| async move { api.is_symlink(path).await },
        )
        .await
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl SmbApi for Handle<dyn SmbApi> {
    async fn new_smb_global_mapping(&self, mapping: &SmbMapping) -> Result<()> {
        self.run(Op::NewSmbGlobalMapping, |api| async move {
            api.new_smb_global_mapping(mapping).await
        })
        .await
    }

    async fn remove_smb_global_mapping(&self, remote_path: &SmbRemotePath) -> Result<()> {
        self.run(Op::RemoveSmbGlobalMapping, |api| async move {
            api.remove_smb_global_mapping(remote_path).await
        })
        .await
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl IscsiApi for Handle<dyn IscsiApi> {
    async fn add_target_portal(&self, portal: &TargetPortal) -> Result<()> {
        self.run(Op::AddTargetPortal, |api| async move {
            api.add_target_portal(portal).await
        })
        .await
    }

    async fn discover_target_portal(&self, portal: &TargetPortal) -> Result<Vec<String>> {
        self.run(Op::DiscoverTargetPortal, |api| async move {
            api.discover_target_portal(portal).await
        })
        .await
    }

    async fn remove_target_portal(&self, portal: &TargetPortal) -> Result<()> {
        self.run(Op::RemoveTargetPortal, |api| async move {
            api.remove_target_portal(portal).await
        })
        .await
    }

    async fn list_target_portals(&self) -> Result<Vec<TargetPortal>> {
        self.run(Op::ListTargetPortals, |api| async move {
            api.list_target_portals().await
        })
        .await
    }

    async fn connect_target(
        &self,
        portal: &TargetPortal,
        iqn: &str,
        auth: &IscsiAuth,
    ) -> Result<()> {
        self.run(Op::ConnectTarget, |api| async move {
            api.connect_target(portal, iqn, auth).await
        })
        .await
    }

    async fn disconnect_target(&self, portal: &TargetPortal, iqn: &str) -> Result<()> {
        self.run(Op::DisconnectTarget, |api| async move {
            api.disconnect_target(portal, iqn).await
        })
        .await
    }

    async fn get_target_disks(&self, portal: &TargetPortal, iqn: &str) -> Result<Vec<u32>> {
        self.run(Op::GetTargetDisks, |api| async move {
            api.get_target_disks(portal, iqn).await
        })
        .await
    }

    async fn set_mutual_chap_secret(&self, secret: &Secret) -> Result<()> {
        self.run(Op::SetMutualChapSecret, |api| async move {
            api.set_mutual_chap_secret(secret).await
        })
        .await
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl SystemApi for Handle<dyn SystemApi> {
    async fn get_bios_serial_number(&self) -> Result<String> {
        self.run(Op::GetBiosSerialNumber, |api| async move {
            api.get_bios_serial_number().await
        })
        .await
    }

    async fn start_service(&self, name: &str) -> Result<()> {
        self.run(Op::StartService, |api| async move {
            api.start_service(name).await
        })
        .await
    }

    async fn stop_service(&self, name: &str, force: bool) -> Result<()> {
        self.run(Op::StopService, |api| async move {
            api.stop_service(name, force).await
        })
        .await
    }

    async fn get_service(&self, name: &str) -> Result<ServiceInfo> {
        self.run(
            Op::GetService,
            |api| async move { api.get_service(name).await },
        )
        .await
    }
}
