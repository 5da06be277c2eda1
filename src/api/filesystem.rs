//! The filesystem group.

use super::define::group_trait;
use super::WindowsPath;
use crate::capability::Operation;

/// The filesystem group's RPCs, each defined once: its method, its arguments,
/// its answer, its [`Operation`] and the checks its arguments get before
/// anything is sent. `filesystem_rpcs!(m)` hands the list to the macro `m`:
/// [`group_trait`](super::define) makes the trait of it, and the client
/// its handle.
macro_rules! filesystem_rpcs {
    ($then:ident) => {
        $then! {
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
            trait FilesystemApi;

            /// Whether `path` exists.
            fn path_exists(&self, path: &WindowsPath) -> bool = Operation::PathExists;

            /// Creates the directory `path` and any missing parents.
            fn mkdir(&self, path: &WindowsPath) -> () = Operation::Mkdir;

            /// Removes the directory `path`; with `force`, everything below it too
            /// (without it, a non-empty directory is an error).
            fn rmdir(&self, path: &WindowsPath, force: bool) -> () = Operation::Rmdir;

            /// Removes everything below `path` but keeps `path`. Needs v2alpha1; not
            /// emulated, since older versions cannot list a directory.
            fn rmdir_contents(&self, path: &WindowsPath) -> () = Operation::RmdirContents;

            /// Creates a directory symlink at `link` that points at the existing
            /// directory `target` (`LinkPath` before v1beta2; on the wire, `link` is
            /// `target_path` and `target` is `source_path`).
            fn create_symlink(&self, target: &WindowsPath, link: &WindowsPath) -> ()
                = Operation::CreateSymlink;

            /// Whether `path` is a symlink or a mounted folder whose target exists
            /// (`IsMountPoint` before v1beta2). It is an error if `path` does not
            /// exist.
            fn is_symlink(&self, path: &WindowsPath) -> bool = Operation::IsSymlink;
        }
    };
}
pub(crate) use filesystem_rpcs;

filesystem_rpcs!(group_trait);
