//! The stable, version-agnostic API: one trait per group, in the newest
//! wire names, with Rust types.
//!
//! Every method has a default body that fails with
//! [`crate::Error::NotImplemented`], so a mock only
//! implements what a test needs. The traits are object safe: the SDK hands
//! out `Arc<dyn ...Api>`, and its futures are `Send`.

use crate::capability::Operation;
use crate::error::{Error, Result};

mod define;
mod disk;
mod filesystem;
mod iscsi;
mod path;
mod smb;
mod system;
mod types;
mod volume;

pub(crate) use disk::{disk_by_page83, no_disk_with_page83, PROXY_NO_SUCH_PAGE83};
pub use disk::{DiskApi, DiskIds, DiskLocation};
pub use filesystem::FilesystemApi;
pub(crate) use iscsi::check_target;
pub use iscsi::{IscsiApi, IscsiAuth, TargetPortal, DEFAULT_ISCSI_PORT};
pub(crate) use path::quoted;
pub use path::{WindowsPath, MAX_PATH};
pub(crate) use smb::share_root;
pub use smb::{SmbApi, SmbMapping, SmbRemotePath};
pub use system::{ServiceInfo, ServiceStatus, StartType, SystemApi};
pub(crate) use types::check_name;
pub use types::{Secret, VolumeId};
pub(crate) use volume::list_volumes_operation;
pub use volume::{VolumeApi, VolumeStats};

/// What a trait method's default answers: the backend (a mock, usually)
/// does not implement `operation`.
pub(crate) fn not_implemented<T>(operation: Operation) -> Result<T> {
    Err(Error::NotImplemented { operation })
}
