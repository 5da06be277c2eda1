//! Filesystem adapters.
//!
//! - [`ContextFilesystem`]: v1alpha1, v1beta1 — requests carry a
//!   `PathContext` (so `Rmdir.force` is field 3), responses a legacy
//!   `error` field ahead of the payload; `LinkPath` and `IsMountPoint`.
//! - [`PlainFilesystem`]: v1beta2, v1, v2alpha1.

mod context_filesystem;
mod plain_filesystem;

pub(crate) use context_filesystem::ContextFilesystem;
pub(crate) use plain_filesystem::PlainFilesystem;

use crate::api::WindowsPath;
use crate::wire::filesystem::v1beta1 as context;

/// Which root an old proxy should check `path` against. Crate-visible:
/// the catalogue names it, and the fake proxy's servers share its imports.
pub(crate) fn path_context(path: &WindowsPath) -> i32 {
    if path.is_under_pods() {
        context::PathContext::Pod as i32
    } else {
        context::PathContext::Plugin as i32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_requests_say_whether_a_path_is_a_pod_s_or_a_plugin_s() {
        let pod = WindowsPath::new(r"C:\var\lib\kubelet\pods\uid\volumes\v").unwrap();
        let plugin = WindowsPath::new(r"C:\var\lib\kubelet\plugins\pods").unwrap();
        let request = ContextFilesystem::mkdir_request(&pod).unwrap();
        assert_eq!(request.context, context::PathContext::Pod as i32);
        let request = ContextFilesystem::rmdir_request(&plugin, true).unwrap();
        assert_eq!(request.context, context::PathContext::Plugin as i32);
        assert!(request.force);
        // The newer layout has no context to say.
        let request = PlainFilesystem::rmdir_request(&plugin, false).unwrap();
        assert_eq!(
            (request.path.as_str(), request.force),
            (plugin.as_str(), false)
        );
    }
}
