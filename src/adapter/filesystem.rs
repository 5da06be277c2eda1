//! Filesystem adapters.
//!
//! - [`ContextFilesystem`]: v1alpha1, v1beta1 — requests carry a
//!   `PathContext` (so `Rmdir.force` is field 3), responses a legacy
//!   `error` field ahead of the payload; `LinkPath` and `IsMountPoint`.
//! - [`PlainFilesystem`]: v1beta2, v1, v2alpha1.

use super::fields::{PathText, Plain};
use super::layout::wire_adapter;
use crate::api::{FilesystemApi, WindowsPath};
use crate::wire::filesystem::v1beta1 as context;

/// Which root an old proxy should check `path` against.
fn path_context(path: &WindowsPath) -> i32 {
    if path.is_under_pods() {
        context::PathContext::Pod as i32
    } else {
        context::PathContext::Plugin as i32
    }
}

/// The context layout's table (see `super::layout`).
macro_rules! context_filesystem {
    ($then:ident $($carry:tt)*) => {
        $then! { $($carry)* {
            /// v1alpha1, v1beta1.
            ContextFilesystem: FilesystemApi in crate::wire::filesystem::v1beta1;

            fn path_exists(path: &WindowsPath) -> bool
                = PathExists: PathExistsRequest {
                    path: path as PathText;
                    context: path_context(path)
                }
                -> PathExistsResponse { exists: Plain<bool> } with legacy error => (exists);
            fn mkdir(path: &WindowsPath) -> ()
                = Mkdir: MkdirRequest { path: path as PathText; context: path_context(path) }
                -> MkdirResponse {} with legacy error => ();
            fn rmdir(path: &WindowsPath, force: bool) -> ()
                = Rmdir: RmdirRequest {
                    path: path as PathText,
                    force: force as Plain<bool>;
                    context: path_context(path)
                }
                -> RmdirResponse {} with legacy error => ();
            fn rmdir_contents(path: &WindowsPath) -> () = absent RmdirContents;
            fn create_symlink(target: &WindowsPath, link: &WindowsPath) -> ()
                = CreateSymlink: LinkPathRequest {
                    source_path: target as PathText,
                    target_path: link as PathText
                }
                -> LinkPathResponse {} with legacy error => ();
            fn is_symlink(path: &WindowsPath) -> bool
                = IsSymlink: IsMountPointRequest { path: path as PathText }
                -> IsMountPointResponse { is_mount_point: Plain<bool> } with legacy error
                => (is_mount_point);
        } }
    };
}
#[cfg(feature = "testing")] // for the fake proxy
pub(crate) use context_filesystem;

/// The plain layout's table (see `super::layout`).
macro_rules! plain_filesystem {
    ($then:ident $($carry:tt)*) => {
        $then! { $($carry)* {
            /// v1beta2, v1, v2alpha1.
            PlainFilesystem: FilesystemApi in crate::wire::filesystem::v2alpha1;

            fn path_exists(path: &WindowsPath) -> bool
                = PathExists: PathExistsRequest { path: path as PathText }
                -> PathExistsResponse { exists: Plain<bool> } => (exists);
            fn mkdir(path: &WindowsPath) -> ()
                = Mkdir: MkdirRequest { path: path as PathText } -> MkdirResponse {} => ();
            fn rmdir(path: &WindowsPath, force: bool) -> ()
                = Rmdir: RmdirRequest { path: path as PathText, force: force as Plain<bool> }
                -> RmdirResponse {} => ();
            fn rmdir_contents(path: &WindowsPath) -> ()
                = RmdirContents: RmdirContentsRequest { path: path as PathText }
                -> RmdirContentsResponse {} => ();
            fn create_symlink(target: &WindowsPath, link: &WindowsPath) -> ()
                = CreateSymlink: CreateSymlinkRequest {
                    source_path: target as PathText,
                    target_path: link as PathText
                }
                -> CreateSymlinkResponse {} => ();
            fn is_symlink(path: &WindowsPath) -> bool
                = IsSymlink: IsSymlinkRequest { path: path as PathText }
                -> IsSymlinkResponse { is_symlink: Plain<bool> } => (is_symlink);
        } }
    };
}
#[cfg(feature = "testing")] // for the fake proxy
pub(crate) use plain_filesystem;

context_filesystem!(wire_adapter);
plain_filesystem!(wire_adapter);
