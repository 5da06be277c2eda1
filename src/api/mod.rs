//! The stable, version-agnostic API: one trait per group, in the newest
//! wire names, with Rust types.
//!
//! Every method has a default body that fails with
//! [`Error::NotImplemented`](crate::Error::NotImplemented), so a mock only
//! implements what a test needs. The traits are object safe: the SDK hands
//! out `Arc<dyn ...Api>`, and its futures are `Send`.

mod declare;
mod disk;
mod filesystem;
mod iscsi;
mod path;
mod smb;
mod system;
mod types;
mod volume;

pub(crate) use declare::{impl_group_api, to_backend};
pub(crate) use disk::{
    disk_by_page83, disk_group, no_disk_with_page83, DiskBackend, PROXY_NO_SUCH_PAGE83,
};
pub use disk::{DiskApi, DiskIds, DiskLocation};
pub use filesystem::FilesystemApi;
pub(crate) use filesystem::{filesystem_group, FilesystemBackend};
pub(crate) use iscsi::{iscsi_group, IscsiBackend};
pub use iscsi::{IscsiApi, IscsiAuth, TargetPortal, DEFAULT_ISCSI_PORT};
pub(crate) use path::quoted;
pub use path::{WindowsPath, MAX_PATH};
#[cfg(any(feature = "testing", all(windows, feature = "host-process")))]
pub(crate) use smb::share_root;
pub(crate) use smb::{smb_group, SmbBackend};
pub use smb::{SmbApi, SmbMapping, SmbRemotePath};
pub(crate) use system::{system_group, SystemBackend};
pub use system::{ServiceInfo, ServiceStatus, StartType, SystemApi};
pub(crate) use types::check_name;
pub use types::{Secret, VolumeId};
pub(crate) use volume::{volume_group, VolumeBackend};
pub use volume::{VolumeApi, VolumeStats};
