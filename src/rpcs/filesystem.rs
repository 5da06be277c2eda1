//! The filesystem group's RPCs (see [the module](super)).

/// The filesystem group's RPCs, each defined once (see [the module](super)).
macro_rules! filesystem_rpcs {
    ($then:ident $($carry:tt)*) => {
        $then! {
            $($carry)*
            {
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
            trait FilesystemApi: Filesystem => FilesystemOperation;

            /// Whether `path` exists.
            fn path_exists(&self, path: &WindowsPath) -> bool = {
                /// Whether a path exists.
                PathExists = "PathExists", Reads, [V1ALPHA1 => Native("PathExists")]
            };

            /// Creates the directory `path` and any missing parents.
            fn mkdir(&self, path: &WindowsPath) -> () = {
                /// Create a directory.
                Mkdir = "Mkdir", Mutates, [V1ALPHA1 => Native("Mkdir")]
            };

            /// Removes the directory `path`; with `force`, everything below it too
            /// (without it, a non-empty directory is an error).
            fn rmdir(&self, path: &WindowsPath, force: bool) -> () = {
                /// Remove a directory.
                Rmdir = "Rmdir", Mutates, [V1ALPHA1 => Native("Rmdir")]
            };

            /// Removes everything below `path` but keeps `path`. Needs v2alpha1; not
            /// emulated, since older versions cannot list a directory.
            fn rmdir_contents(&self, path: &WindowsPath) -> () = {
                /// Remove what a directory holds.
                RmdirContents = "RmdirContents", Mutates,
                    [V1ALPHA1 => No, V2ALPHA1 => Native("RmdirContents")]
            };

            /// Creates a directory symlink at `link` that points at the existing
            /// directory `target` (`LinkPath` before v1beta2; on the wire, `link` is
            /// `target_path` and `target` is `source_path`).
            fn create_symlink(&self, target: &WindowsPath, link: &WindowsPath) -> () = {
                /// Create a directory symlink.
                CreateSymlink = "CreateSymlink", Mutates,
                    [V1ALPHA1 => Native("LinkPath"), V1BETA2 => Native("CreateSymlink")]
            };

            /// Whether `path` is a symlink or a mounted folder whose target exists
            /// (`IsMountPoint` before v1beta2). It is an error if `path` does not
            /// exist.
            fn is_symlink(&self, path: &WindowsPath) -> bool = {
                /// Whether a path is a symlink or mount point.
                IsSymlink = "IsSymlink", Reads,
                    [V1ALPHA1 => Native("IsMountPoint"), V1BETA2 => Native("IsSymlink")]
            };
            }
        }
    };
}
pub(crate) use filesystem_rpcs;
