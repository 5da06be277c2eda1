//! The conformance scenario: what a CSI node plugin does on a node, from
//! finding a disk to cleaning up, for every group. It runs against any
//! `CsiProxy`; each step must succeed, unless the negotiated version lacks
//! the operation, in which case it must fail with `Unsupported` (and the
//! scenario carries on without it).

use std::future::Future;

use csi_proxy_client::testing::FakeHost;
use csi_proxy_client::{
    ApiGroup, CsiProxy, Error, IscsiAuth, Operation, Secret, ServiceStatus, SmbMapping,
    SmbRemotePath, StartType, TargetPortal, VolumeId, WindowsPath,
};

const GIB: u64 = 1 << 30;
pub const PAGE83: &str = "Google  pd-data";
pub const PORTAL: &str = "10.0.0.5";
pub const ONE_WAY_IQN: &str = "iqn.2026-11.example:one-way";
pub const MUTUAL_IQN: &str = "iqn.2026-11.example:mutual";

/// The node the scenario expects.
pub fn seeded_host() -> FakeHost {
    let portal = TargetPortal::new(PORTAL);
    FakeHost::builder()
        .disk(1, PAGE83, 10 * GIB)
        .disk(2, "Google  pd-other", 5 * GIB)
        .smb_share(r"\\files\share", "smb-user", "smb-pw")
        .iscsi_target(
            portal.clone(),
            ONE_WAY_IQN,
            &[("iscsi-lun-0", 2 * GIB)],
            Some(("chap-user", "chap-secret")),
            None,
        )
        .iscsi_target(
            portal,
            MUTUAL_IQN,
            &[("iscsi-lun-1", 3 * GIB)],
            Some(("chap-user", "chap-secret")),
            Some("mutual-secret"),
        )
        .service(
            "csiproxy",
            "CSI Proxy",
            StartType::Automatic,
            ServiceStatus::Running,
        )
        .bios_serial_number("BIOS-42")
        .build()
}

fn path(p: &str) -> WindowsPath {
    WindowsPath::new(p).unwrap()
}

/// Runs steps and keeps track of which were unsupported.
pub struct Scenario<'a> {
    proxy: &'a CsiProxy,
    pub unsupported: Vec<Operation>,
    pub succeeded: Vec<Operation>,
}

impl<'a> Scenario<'a> {
    pub fn new(proxy: &'a CsiProxy) -> Self {
        Self {
            proxy,
            unsupported: Vec::new(),
            succeeded: Vec::new(),
        }
    }

    /// Whether the negotiated version of `op`'s group can do `op` (a backend
    /// without a wire version can do everything).
    fn can(&self, op: Operation) -> bool {
        self.proxy
            .version(op.group())
            .is_none_or(|v| op.support(v).is_available())
    }

    /// One step: it succeeds exactly when the version can do it.
    pub async fn step<T>(
        &mut self,
        op: Operation,
        call: impl Future<Output = Result<T, Error>>,
    ) -> Option<T> {
        let version = self.proxy.version(op.group());
        match call.await {
            Ok(value) => {
                assert!(
                    self.can(op),
                    "{op} succeeded on {version:?}, which lacks it"
                );
                self.succeeded.push(op);
                Some(value)
            }
            Err(Error::Unsupported {
                operation,
                served,
                needed,
            }) => {
                assert_eq!(operation, op);
                assert_eq!(Some(served), version);
                assert!(
                    !self.can(op),
                    "{op} is unsupported on {version:?}, which has it"
                );
                assert_eq!(Some(needed), op.available_since());
                self.unsupported.push(op);
                None
            }
            Err(other) => panic!("{op} on {version:?} failed: {other}"),
        }
    }

    /// The whole node flow. Returns the operations that were unsupported.
    pub async fn run(mut self, host: Option<&FakeHost>) -> Vec<Operation> {
        use Operation as O;
        let p = self.proxy;
        let (disk, fs, volume) = (
            p.disk().unwrap(),
            p.filesystem().unwrap(),
            p.volume().unwrap(),
        );

        // ---- find the disk, by page83 and by LUN, and bring it online ----
        let number = self
            .step(O::GetDiskNumberByName, disk.get_disk_number_by_name(PAGE83))
            .await;
        let number = number.unwrap_or(1);
        assert_eq!(number, 1);
        if let Some(locations) = self
            .step(O::ListDiskLocations, disk.list_disk_locations())
            .await
        {
            let by_lun = locations
                .iter()
                .find(|(_, l)| l.lun_id == "1")
                .map(|(&n, _)| n);
            assert_eq!(by_lun, Some(number));
        }
        if let Some(ids) = self.step(O::ListDiskIds, disk.list_disk_ids()).await {
            assert_eq!(ids[&number].page83, PAGE83);
        }
        self.step(O::SetDiskState, disk.set_disk_state(number, true))
            .await;
        if let Some(online) = self
            .step(O::GetDiskState, disk.get_disk_state(number))
            .await
        {
            assert!(online);
        }
        if let Some(size) = self
            .step(O::GetDiskStats, disk.get_disk_stats(number))
            .await
        {
            assert_eq!(size, 10 * GIB);
        }
        self.step(O::Rescan, disk.rescan()).await;

        // ---- partition (twice: idempotent), format ----
        self.step(O::PartitionDisk, disk.partition_disk(number))
            .await;
        self.step(O::PartitionDisk, disk.partition_disk(number))
            .await;
        let volumes = self
            .step(
                O::ListVolumesOnDisk,
                volume.list_volumes_on_disk(number, None),
            )
            .await
            .unwrap();
        assert_eq!(volumes.len(), 1, "one data partition");
        let id: VolumeId = volumes[0].clone();
        if let Some(on_partition) = self
            .step(
                O::ListVolumesOnPartition,
                volume.list_volumes_on_disk(number, Some(2)),
            )
            .await
        {
            assert_eq!(on_partition, std::slice::from_ref(&id));
        }
        assert_eq!(
            self.step(O::IsVolumeFormatted, volume.is_volume_formatted(&id))
                .await,
            Some(false)
        );
        self.step(O::FormatVolume, volume.format_volume(&id)).await;
        assert_eq!(
            self.step(O::IsVolumeFormatted, volume.is_volume_formatted(&id))
                .await,
            Some(true)
        );

        // ---- mount at the staging path, inspect, resize ----
        let staging = path(r"\var\lib\kubelet\plugins\fake.csi\pv-1\globalmount");
        self.step(O::Mkdir, fs.mkdir(&staging)).await;
        self.step(O::MountVolume, volume.mount_volume(&id, &staging))
            .await;
        self.step(O::MountVolume, volume.mount_volume(&id, &staging))
            .await;
        assert_eq!(
            self.step(O::IsSymlink, fs.is_symlink(&staging)).await,
            Some(true)
        );
        if let Some(found) = self
            .step(
                O::GetVolumeIdFromTargetPath,
                volume.get_volume_id_from_target_path(&staging),
            )
            .await
        {
            assert_eq!(found, id);
        }
        if let Some(found) = self
            .step(
                O::GetDiskNumberFromVolumeId,
                volume.get_disk_number_from_volume_id(&id),
            )
            .await
        {
            assert_eq!(found, number);
        }
        let before = self
            .step(O::GetVolumeStats, volume.get_volume_stats(&id))
            .await;
        self.step(O::ResizeVolume, volume.resize_volume(&id, 0))
            .await;
        if let Some(after) = self
            .step(O::GetVolumeStats, volume.get_volume_stats(&id))
            .await
        {
            assert!(after.total_bytes >= before.unwrap().total_bytes);
            assert!(after.used_bytes > 0 && after.used_bytes < after.total_bytes);
        }
        self.step(O::WriteVolumeCache, volume.write_volume_cache(&id))
            .await;

        // ---- publish to a pod with a symlink, then tear everything down ----
        let pod_dir = path(r"C:\var\lib\kubelet\pods\uid-1\volumes\fake.csi");
        let publish = path(r"C:\var\lib\kubelet\pods\uid-1\volumes\fake.csi\pv-1");
        self.step(O::Mkdir, fs.mkdir(&pod_dir)).await;
        self.step(O::CreateSymlink, fs.create_symlink(&staging, &publish))
            .await;
        assert_eq!(
            self.step(O::PathExists, fs.path_exists(&publish)).await,
            Some(true)
        );
        assert_eq!(
            self.step(O::IsSymlink, fs.is_symlink(&publish)).await,
            Some(true)
        );
        if let Some(found) = self
            .step(
                O::GetClosestVolumeIdFromTargetPath,
                volume.get_closest_volume_id_from_target_path(&publish),
            )
            .await
        {
            assert_eq!(found, id);
        }
        self.step(O::Rmdir, fs.rmdir(&publish, false)).await;
        assert_eq!(
            self.step(O::PathExists, fs.path_exists(&publish)).await,
            Some(false)
        );
        self.step(O::UnmountVolume, volume.unmount_volume(&id, &staging))
            .await;
        assert_eq!(
            self.step(O::IsSymlink, fs.is_symlink(&staging)).await,
            Some(false)
        );
        self.step(O::Rmdir, fs.rmdir(&staging, false)).await;
        self.step(
            O::Mkdir,
            fs.mkdir(&path(r"C:\var\lib\kubelet\pods\uid-1\volumes\scratch\a")),
        )
        .await;
        self.step(O::RmdirContents, fs.rmdir_contents(&pod_dir))
            .await;

        // ---- SMB: map with a local link, use it, unmap ----
        let smb = p.smb().unwrap();
        let share = SmbRemotePath::new("//files/share/pv-2").unwrap();
        let link = path(r"C:\var\lib\kubelet\pods\uid-1\volumes\smb\pv-2");
        self.step(
            O::Mkdir,
            fs.mkdir(&path(r"C:\var\lib\kubelet\pods\uid-1\volumes\smb")),
        )
        .await;
        let mapping = SmbMapping::new(share.clone(), "smb-user", Secret::new("smb-pw"))
            .with_local_path(link.clone());
        self.step(O::NewSmbGlobalMapping, smb.new_smb_global_mapping(&mapping))
            .await;
        assert_eq!(
            self.step(O::PathExists, fs.path_exists(&link)).await,
            Some(true)
        );
        self.step(
            O::RemoveSmbGlobalMapping,
            smb.remove_smb_global_mapping(&share),
        )
        .await;
        // The link is still there (the proxy's `os.Lstat` sees it), but it
        // no longer leads anywhere.
        assert_eq!(
            self.step(O::PathExists, fs.path_exists(&link)).await,
            Some(true)
        );
        assert_eq!(
            self.step(O::IsSymlink, fs.is_symlink(&link)).await,
            Some(false)
        );
        self.step(O::Rmdir, fs.rmdir(&link, false)).await;

        // ---- iSCSI: portal, discovery, CHAP login, disks, logout ----
        let iscsi = p.iscsi().unwrap();
        let portal = TargetPortal::new(PORTAL);
        self.step(O::AddTargetPortal, iscsi.add_target_portal(&portal))
            .await;
        assert_eq!(
            self.step(O::ListTargetPortals, iscsi.list_target_portals())
                .await,
            Some(vec![portal.clone()])
        );
        let iqns = self
            .step(
                O::DiscoverTargetPortal,
                iscsi.discover_target_portal(&portal),
            )
            .await
            .unwrap();
        assert_eq!(iqns, [ONE_WAY_IQN, MUTUAL_IQN]);
        let mutual = self
            .step(
                O::SetMutualChapSecret,
                iscsi.set_mutual_chap_secret(&Secret::new("mutual-secret")),
            )
            .await;
        let (iqn, auth) = if mutual.is_some() {
            (
                MUTUAL_IQN,
                IscsiAuth::MutualChap {
                    username: "chap-user".into(),
                    secret: Secret::new("chap-secret"),
                },
            )
        } else {
            (
                ONE_WAY_IQN,
                IscsiAuth::OneWayChap {
                    username: "chap-user".into(),
                    secret: Secret::new("chap-secret"),
                },
            )
        };
        self.step(O::ConnectTarget, iscsi.connect_target(&portal, iqn, &auth))
            .await;
        let disks = self
            .step(O::GetTargetDisks, iscsi.get_target_disks(&portal, iqn))
            .await
            .unwrap();
        assert_eq!(disks.len(), 1);
        let locations = self
            .step(O::ListDiskLocations, disk.list_disk_locations())
            .await
            .unwrap();
        assert!(
            locations.contains_key(&disks[0]),
            "the target's disk appeared"
        );
        self.step(O::DisconnectTarget, iscsi.disconnect_target(&portal, iqn))
            .await;
        let locations = self
            .step(O::ListDiskLocations, disk.list_disk_locations())
            .await
            .unwrap();
        assert!(
            !locations.contains_key(&disks[0]),
            "the target's disk went away"
        );
        self.step(O::RemoveTargetPortal, iscsi.remove_target_portal(&portal))
            .await;

        // ---- services ----
        let system = p.system().unwrap();
        assert_eq!(
            self.step(O::GetBiosSerialNumber, system.get_bios_serial_number())
                .await
                .as_deref(),
            Some("BIOS-42")
        );
        self.step(O::StopService, system.stop_service("csiproxy", false))
            .await;
        let service = self
            .step(O::GetService, system.get_service("csiproxy"))
            .await
            .unwrap();
        assert_eq!(service.status, ServiceStatus::Stopped);
        self.step(O::StartService, system.start_service("csiproxy"))
            .await;
        let service = self
            .step(O::GetService, system.get_service("csiproxy"))
            .await
            .unwrap();
        assert_eq!(
            (service.status, service.display_name.as_str()),
            (ServiceStatus::Running, "CSI Proxy")
        );

        // The host really changed (when the test can see it).
        if let Some(host) = host {
            assert!(host.disk(number).unwrap().partitioned);
            assert!(host.volume(&id).unwrap().formatted);
            assert!(host.volume(&id).unwrap().mounts.is_empty());
            assert!(host.smb_mappings().is_empty());
            assert!(host.iscsi_sessions().is_empty());
        }

        self.unsupported.sort();
        self.unsupported.dedup();
        self.unsupported
    }
}

/// The operations the scenario cannot do at the versions `proxy` negotiated.
pub fn expected_unsupported(proxy: &CsiProxy) -> Vec<Operation> {
    let mut ops: Vec<_> = Operation::ALL
        .iter()
        .copied()
        .filter(|op| {
            proxy
                .version(op.group())
                .is_some_and(|v| !op.support(v).is_available())
        })
        .collect();
    ops.sort();
    ops
}

/// Every group at its newest stable version, except `group` at `version`.
pub fn versions_with(
    group: ApiGroup,
    version: csi_proxy_client::ApiVersion,
) -> Vec<(ApiGroup, csi_proxy_client::ApiVersion)> {
    ApiGroup::ALL
        .iter()
        .map(|&g| {
            if g == group {
                (g, version)
            } else {
                let newest = *g
                    .versions()
                    .iter()
                    .filter(|v| !v.is_preview())
                    .max()
                    .unwrap();
                (g, newest)
            }
        })
        .collect()
}
