//! The filesystem group.

use async_trait::async_trait;

use super::{not_implemented, WindowsPath};
use crate::capability::Operation;
use crate::error::Result;

/// The filesystem group: directories and directory symlinks on the host.
///
/// The proxy only works under the kubelet directory and its
/// `--working-dir`s. On v1alpha1 and v1beta1 the request also says whether
/// a path belongs to a plugin or a pod (old proxies checked it against
/// different roots); the SDK sends "pod" for paths under the kubelet's
/// pods directory, `C:\var\lib\kubelet\pods\` (in any case), and "plugin"
/// for every other path, such as a static volume named `pods` under the
/// plugins directory.
///
/// ```
/// use std::sync::Arc;
/// use csi_proxy_client::{api::{FilesystemApi, WindowsPath}, async_trait, Result};
///
/// /// Every path exists.
/// struct Everything;
///
/// #[async_trait]
/// impl FilesystemApi for Everything {
///     async fn path_exists(&self, _path: &WindowsPath) -> Result<bool> {
///         Ok(true)
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<()> {
/// let fs: Arc<dyn FilesystemApi> = Arc::new(Everything);
/// assert!(fs.path_exists(&WindowsPath::new(r"\var\lib\kubelet")?).await?);
/// # Ok(()) }
/// ```
#[async_trait]
// The defaults answer `NotImplemented`, whatever the arguments.
#[allow(unused_variables)]
pub trait FilesystemApi: Send + Sync {
    /// Whether `path` exists.
    async fn path_exists(&self, path: &WindowsPath) -> Result<bool> {
        not_implemented(Operation::PathExists)
    }

    /// Creates the directory `path` and any missing parents.
    async fn mkdir(&self, path: &WindowsPath) -> Result<()> {
        not_implemented(Operation::Mkdir)
    }

    /// Removes the directory `path`; with `force`, everything below it too
    /// (without it, a non-empty directory is an error).
    async fn rmdir(&self, path: &WindowsPath, force: bool) -> Result<()> {
        not_implemented(Operation::Rmdir)
    }

    /// Removes everything below `path` but keeps `path`. Needs v2alpha1; not
    /// emulated, since older versions cannot list a directory.
    async fn rmdir_contents(&self, path: &WindowsPath) -> Result<()> {
        not_implemented(Operation::RmdirContents)
    }

    /// Creates a directory symlink at `link` that points at the existing
    /// directory `target` (`LinkPath` before v1beta2; on the wire, `link` is
    /// `target_path` and `target` is `source_path`).
    async fn create_symlink(&self, target: &WindowsPath, link: &WindowsPath) -> Result<()> {
        not_implemented(Operation::CreateSymlink)
    }

    /// Whether `path` is a symlink or a mounted folder whose target exists
    /// (`IsMountPoint` before v1beta2). It is an error if `path` does not
    /// exist.
    async fn is_symlink(&self, path: &WindowsPath) -> Result<bool> {
        not_implemented(Operation::IsSymlink)
    }
}
