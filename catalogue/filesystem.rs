//! The filesystem group's RPCs, one method each (the form: `catalogue/README.md`).

use crate::adapter::fields::{LegacyError, LookedPath, PathText};
use crate::adapter::filesystem::path_context;
use crate::api::WindowsPath;

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
#[group(Filesystem, operations = FilesystemOperation)]
#[layout(
    ContextFilesystem,
    wire = crate::wire::filesystem::v1beta1,
    doc = "v1alpha1, v1beta1: requests with a `PathContext`, answers with an
           `error` field."
)]
#[layout(
    PlainFilesystem,
    wire = crate::wire::filesystem::v2alpha1,
    doc = "v1beta2, v1, v2alpha1: neither a `PathContext` nor an `error` field."
)]
trait FilesystemApi {
    /// Whether `path` exists.
    #[operation(
        PathExists,
        name = "PathExists",
        effect = Reads,
        doc = "Whether a path exists.",
        since(V1ALPHA1 = Native("PathExists"))
    )]
    #[wire(
        ContextFilesystem,
        request = PathExistsRequest { path: PathText(path) },
        client_only(context = path_context(path)),
        response = PathExistsResponse { error: LegacyError, exists }
    )]
    #[wire(
        PlainFilesystem,
        request = PathExistsRequest { path: PathText(path) },
        response = PathExistsResponse { exists }
    )]
    async fn path_exists(&self, path: &WindowsPath) -> Result<bool>;

    /// Creates the directory `path` and any missing parents.
    #[operation(
        Mkdir,
        name = "Mkdir",
        effect = Mutates,
        doc = "Create a directory.",
        since(V1ALPHA1 = Native("Mkdir"))
    )]
    #[wire(
        ContextFilesystem,
        request = MkdirRequest { path: PathText(path) },
        client_only(context = path_context(path)),
        response = MkdirResponse { error: LegacyError }
    )]
    #[wire(
        PlainFilesystem,
        request = MkdirRequest { path: PathText(path) },
        response = MkdirResponse {}
    )]
    async fn mkdir(&self, path: &WindowsPath) -> Result<()>;

    /// Removes the directory `path`; with `force`, everything below it too
    /// (without it, a non-empty directory is an error).
    #[operation(
        Rmdir,
        name = "Rmdir",
        effect = Mutates,
        doc = "Remove a directory.",
        since(V1ALPHA1 = Native("Rmdir"))
    )]
    #[wire(
        ContextFilesystem,
        request = RmdirRequest { path: PathText(path), force },
        client_only(context = path_context(path)),
        response = RmdirResponse { error: LegacyError }
    )]
    #[wire(
        PlainFilesystem,
        request = RmdirRequest { path: PathText(path), force },
        response = RmdirResponse {}
    )]
    async fn rmdir(&self, path: &WindowsPath, force: bool) -> Result<()>;

    /// Removes everything below `path` but keeps `path`. Needs v2alpha1; not
    /// emulated, since older versions cannot list a directory.
    #[operation(
        RmdirContents,
        name = "RmdirContents",
        effect = Mutates,
        doc = "Remove what a directory holds.",
        since(V1ALPHA1 = No, V2ALPHA1 = Native("RmdirContents"))
    )]
    #[wire(ContextFilesystem, absent)]
    #[wire(
        PlainFilesystem,
        request = RmdirContentsRequest { path: PathText(path) },
        response = RmdirContentsResponse {}
    )]
    async fn rmdir_contents(&self, path: &WindowsPath) -> Result<()>;

    /// Creates a directory symlink at `link` that points at the existing
    /// directory `target` (`LinkPath` before v1beta2; on the wire, `link` is
    /// `target_path` and `target` is `source_path`).
    #[operation(
        CreateSymlink,
        name = "CreateSymlink",
        effect = Mutates,
        doc = "Create a directory symlink.",
        since(V1ALPHA1 = Native("LinkPath"), V1BETA2 = Native("CreateSymlink"))
    )]
    #[wire(
        ContextFilesystem,
        request = LinkPathRequest { source_path: PathText(target), target_path: PathText(link) },
        response = LinkPathResponse { error: LegacyError }
    )]
    #[wire(
        PlainFilesystem,
        request = CreateSymlinkRequest { source_path: PathText(target), target_path: PathText(link) },
        response = CreateSymlinkResponse {}
    )]
    async fn create_symlink(&self, target: &WindowsPath, link: &WindowsPath) -> Result<()>;

    /// Whether `path` is a symlink or a mounted folder whose target exists
    /// (`IsMountPoint` before v1beta2). It is an error if `path` does not
    /// exist.
    ///
    /// The SDK's mounter also asks it of a share's root, `\\server\share\`,
    /// once before it first maps the share: a path only the SDK makes
    /// ([`WindowsPath::new`] refuses UNC paths), sent in no other call. CSI
    /// Proxy checks no `IsSymlink` path on any release (its `IsMountPoint`
    /// neither), and its host side looks with `Lstat`: as SYSTEM, `false` for
    /// a share that answers on the node (through a mapping, or the computer
    /// account), and Windows' error (1326, 5, 53, 67, 64) for one that does
    /// not. A backend of its own answers so too, or with any other error when
    /// it cannot tell: the mounter then takes a mapping it finds as someone
    /// else's (`docs/security.md`).
    #[operation(
        IsSymlink,
        name = "IsSymlink",
        effect = Reads,
        doc = "Whether a path is a symlink or mount point.",
        since(V1ALPHA1 = Native("IsMountPoint"), V1BETA2 = Native("IsSymlink"))
    )]
    #[wire(
        ContextFilesystem,
        request = IsMountPointRequest { path: LookedPath(path) },
        response = IsMountPointResponse { error: LegacyError, is_mount_point }
    )]
    #[wire(
        PlainFilesystem,
        request = IsSymlinkRequest { path: LookedPath(path) },
        response = IsSymlinkResponse { is_symlink }
    )]
    async fn is_symlink(&self, path: &WindowsPath) -> Result<bool>;
}
