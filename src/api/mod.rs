//! The stable, version-agnostic API: one trait per group, in the newest
//! wire names, with Rust types. The traits (`<group>.rs`) are generated
//! from the RPC catalogue (`catalogue/<group>.rs`); each group's values
//! are in `<group>_types.rs`.
//!
//! Every method has a default body that fails with
//! [`crate::Error::NotImplemented`], so a mock only
//! implements what a test needs. The traits are object safe: the SDK hands
//! out `Arc<dyn ...Api>`, and its futures are `Send`.

use crate::capability::Operation;
use crate::error::{Error, Result};

mod disk;
mod disk_types;
mod filesystem;
mod iscsi;
mod iscsi_types;
mod path;
mod path_key;
mod smb;
mod smb_types;
mod system;
mod system_types;
mod types;
mod volume;
mod volume_types;

pub use disk::DiskApi;
pub(crate) use disk_types::{disk_by_page83, no_disk_with_page83, PROXY_NO_SUCH_PAGE83};
pub use disk_types::{DiskIds, DiskLocation};
pub use filesystem::FilesystemApi;
pub use iscsi::IscsiApi;
pub(crate) use iscsi_types::check_target;
pub use iscsi_types::{IscsiAuth, TargetPortal, DEFAULT_ISCSI_PORT};
pub(crate) use path::quoted;
pub use path::{WindowsPath, MAX_PATH};
pub(crate) use path_key::same_object_key;
pub use smb::SmbApi;
pub(crate) use smb_types::share_root;
pub use smb_types::{SmbMapping, SmbRemotePath};
pub use system::SystemApi;
pub use system_types::{ServiceInfo, ServiceStatus, StartType};
pub(crate) use types::check_name;
pub use types::{Secret, VolumeId};
pub use volume::VolumeApi;
pub(crate) use volume_types::list_volumes_operation;
pub use volume_types::VolumeStats;

/// What a trait method's default answers: the backend (a mock, usually)
/// does not implement `operation`.
pub(crate) fn not_implemented<T>(operation: Operation) -> Result<T> {
    Err(Error::NotImplemented { operation })
}
