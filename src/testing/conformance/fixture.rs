//! What the host holds when a suite starts: the facts the checks compare
//! against. The defaults describe the host [`Fixture::fake_host`] seeds; on
//! a real node, fill them in from what was set aside for the suite.

use crate::api::{Secret, ServiceStatus, SmbRemotePath, StartType, TargetPortal, WindowsPath};
use crate::testing::FakeHost;

const GIB: u64 = 1 << 30;

/// The facts of every group's suite.
#[derive(Clone, Debug)]
pub struct Fixture {
    /// For [`disk`](super::disk()).
    pub disk: DiskFixture,
    /// For [`volume`](super::volume()).
    pub volume: VolumeFixture,
    /// For [`filesystem`](super::filesystem()).
    pub filesystem: FilesystemFixture,
    /// For [`smb`](super::smb()).
    pub smb: SmbFixture,
    /// For [`iscsi`](super::iscsi()).
    pub iscsi: IscsiFixture,
    /// For [`system`](super::system()).
    pub system: SystemFixture,
}

/// A data disk the suite may bring online and partition.
#[derive(Clone, Debug)]
pub struct DiskFixture {
    /// Its disk number.
    pub number: u32,
    /// Its SCSI page 0x83 identifier, as `ListDiskIDs` reports it.
    pub page83: String,
    /// Its LUN, as `ListDiskLocations` reports it.
    pub lun: String,
    /// Its size, as `GetDiskStats` reports it.
    pub size_bytes: u64,
}

/// A disk with one data partition whose volume is neither formatted nor
/// mounted (what the disk suite leaves its disk as), and a place to mount
/// it.
#[derive(Clone, Debug)]
pub struct VolumeFixture {
    /// The disk's number.
    pub disk: u32,
    /// The data partition's number.
    pub partition: u32,
    /// An empty directory under the kubelet directory.
    pub mount_point: WindowsPath,
}

/// A directory under the kubelet directory that the suite may fill and
/// empty.
#[derive(Clone, Debug)]
pub struct FilesystemFixture {
    /// The directory; it exists, and the suite leaves it empty.
    pub root: WindowsPath,
}

/// An SMB share and its credentials.
#[derive(Clone, Debug)]
pub struct SmbFixture {
    /// The share, `\\server\share`, not mapped when the suite starts.
    pub share: SmbRemotePath,
    /// A user the share accepts.
    pub username: String,
    /// That user's password.
    pub password: Secret,
    /// Where to link the mapping: a path that does not exist, under the
    /// kubelet directory, whose parent does.
    pub local_path: WindowsPath,
}

/// An iSCSI portal with two targets that use CHAP, one of them mutual.
#[derive(Clone, Debug)]
pub struct IscsiFixture {
    /// The portal, not registered when the suite starts.
    pub portal: TargetPortal,
    /// A target that checks the initiator's CHAP secret.
    pub one_way: IscsiTargetFixture,
    /// A target that also expects the initiator's mutual CHAP secret to be
    /// `mutual_secret`.
    pub mutual: IscsiTargetFixture,
    /// The mutual CHAP secret `mutual` expects.
    pub mutual_secret: Secret,
}

/// An iSCSI target with one LUN.
#[derive(Clone, Debug)]
pub struct IscsiTargetFixture {
    /// Its IQN.
    pub iqn: String,
    /// The CHAP user it accepts.
    pub chap_username: String,
    /// That user's secret.
    pub chap_secret: Secret,
}

/// The BIOS and a service the suite may stop and start.
#[derive(Clone, Debug)]
pub struct SystemFixture {
    /// The BIOS serial number.
    pub bios_serial_number: String,
    /// A running service.
    pub service: ServiceFixture,
}

/// A Windows service.
#[derive(Clone, Debug)]
pub struct ServiceFixture {
    /// Its name.
    pub name: String,
    /// Its display name.
    pub display_name: String,
}

fn path(p: &str) -> WindowsPath {
    WindowsPath::new(p).expect("a well-formed fixture path")
}

impl Default for Fixture {
    /// The host [`Fixture::fake_host`] seeds.
    fn default() -> Self {
        let target = |iqn: &str| IscsiTargetFixture {
            iqn: iqn.to_owned(),
            chap_username: "chap-user".into(),
            chap_secret: Secret::new("chap-secret"),
        };
        Self {
            disk: DiskFixture {
                number: 1,
                page83: "Google  pd-data".into(),
                lun: "1".into(),
                size_bytes: 10 * GIB,
            },
            volume: VolumeFixture {
                disk: 2,
                partition: 2,
                // Without a drive, as drivers often pass it.
                mount_point: path(r"\var\lib\kubelet\plugins\fake.csi\pv-2\globalmount"),
            },
            filesystem: FilesystemFixture {
                root: path(r"C:\var\lib\kubelet\pods\uid-1\volumes\fake.csi"),
            },
            smb: SmbFixture {
                share: SmbRemotePath::new(r"\\files\share").expect("a well-formed share"),
                username: "smb-user".into(),
                password: Secret::new("smb-pw"),
                local_path: path(r"C:\var\lib\kubelet\pods\uid-1\volumes\smb\pv-3"),
            },
            iscsi: IscsiFixture {
                portal: TargetPortal::new("10.0.0.5"),
                one_way: target("iqn.2026-11.example:one-way"),
                mutual: target("iqn.2026-11.example:mutual"),
                mutual_secret: Secret::new("mutual-secret"),
            },
            system: SystemFixture {
                bios_serial_number: "BIOS-42".into(),
                service: ServiceFixture {
                    name: "csiproxy".into(),
                    display_name: "CSI Proxy".into(),
                },
            },
        }
    }
}

impl Fixture {
    /// A [`FakeHost`] that holds what this fixture says (and a second disk
    /// for the volume suite).
    pub fn fake_host(&self) -> FakeHost {
        let Self {
            disk,
            volume,
            filesystem,
            smb,
            iscsi,
            system,
        } = self;
        let mut builder = FakeHost::builder()
            .disk(disk.number, &disk.page83, disk.size_bytes)
            .partitioned_disk(volume.disk, "Google  pd-other", 5 * GIB)
            .dir(volume.mount_point.as_str())
            .dir(filesystem.root.as_str())
            .smb_share(smb.share.as_str(), &smb.username, smb.password.expose())
            .iscsi_target(
                iscsi.portal.clone(),
                &iscsi.one_way.iqn,
                &[("iscsi-lun-0", 2 * GIB)],
                chap_of(&iscsi.one_way),
                None,
            )
            .iscsi_target(
                iscsi.portal.clone(),
                &iscsi.mutual.iqn,
                &[("iscsi-lun-1", 3 * GIB)],
                chap_of(&iscsi.mutual),
                Some(iscsi.mutual_secret.expose()),
            );
        if let Some(parent) = parent_of(&smb.local_path) {
            builder = builder.dir(parent);
        }
        builder
            .service(
                &system.service.name,
                &system.service.display_name,
                StartType::Automatic,
                ServiceStatus::Running,
            )
            .bios_serial_number(&system.bios_serial_number)
            .build()
    }
}

/// The CHAP user and secret `target` accepts, as the fake host takes them.
fn chap_of(target: &IscsiTargetFixture) -> Option<(&str, &str)> {
    Some((&target.chap_username, target.chap_secret.expose()))
}

/// The directory that holds `path`.
fn parent_of(path: &WindowsPath) -> Option<&str> {
    path.as_str().rsplit_once('\\').map(|(parent, _)| parent)
}
