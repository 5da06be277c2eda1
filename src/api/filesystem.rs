//! The filesystem group.

use super::declare::define_group_traits;

/// The filesystem group's one declaration (see `api::declare`).
macro_rules! filesystem_group {
    ($then:ident $(($($extra:tt)*))?) => { $then! { ($($($extra)*)?)
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
        /// use csi_proxy_client::{async_trait, FilesystemApi, Result, WindowsPath};
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
        pub trait FilesystemApi, backend FilesystemBackend {
            /// Whether `path` exists.
            fn path_exists(&self, path: &crate::api::WindowsPath) -> bool = PathExists;

            /// Creates the directory `path` and any missing parents.
            fn mkdir(&self, path: &crate::api::WindowsPath) -> () = Mkdir;

            /// Removes the directory `path`; with `force`, everything below it too
            /// (without it, a non-empty directory is an error).
            fn rmdir(&self, path: &crate::api::WindowsPath, force: bool) -> () = Rmdir;

            /// Removes everything below `path` but keeps `path`. Needs v2alpha1; not
            /// emulated, since older versions cannot list a directory.
            fn rmdir_contents(&self, path: &crate::api::WindowsPath) -> () = RmdirContents;

            /// Creates a directory symlink at `link` that points at the existing
            /// directory `target` (`LinkPath` before v1beta2; on the wire, `link` is
            /// `target_path` and `target` is `source_path`).
            fn create_symlink(
                &self,
                target: &crate::api::WindowsPath,
                link: &crate::api::WindowsPath,
            ) -> () = CreateSymlink;

            /// Whether `path` is a symlink or a mounted folder whose target exists
            /// (`IsMountPoint` before v1beta2). It is an error if `path` does not
            /// exist.
            fn is_symlink(&self, path: &crate::api::WindowsPath) -> bool = IsSymlink;
        }
    } };
}
pub(crate) use filesystem_group;

filesystem_group!(define_group_traits);
