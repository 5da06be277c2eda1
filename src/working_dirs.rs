//! CSI Proxy's working-directory check: the filesystem group only touches
//! paths under the kubelet directory and the proxy's `--working-dir`s.
//! Shared by the backends that stand in for the proxy's server layer (the
//! fake host, and the host backend, which is the last check when no proxy
//! is there).

#[cfg(any(feature = "testing", all(windows, feature = "host-process")))]
use crate::{
    api::WindowsPath,
    capability::Operation,
    error::{Error, Result},
};

/// The working directory of a default CSI Proxy installation, and of the
/// host backend unless told otherwise.
pub(crate) const KUBELET_DIR: &str = r"C:\var\lib\kubelet";

/// How a path is compared with the working directories.
#[cfg(any(feature = "testing", all(windows, feature = "host-process")))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rule {
    /// A case-insensitive prefix match, as naive as the proxy's own (so
    /// `C:\var\lib\kubeletx` passes too): the fake host's, which must be
    /// no kinder than the proxy, and no stricter.
    Prefix,
    /// By whole path components, without case: the host backend's, which
    /// stands for the proxy's check where no proxy is, and is held to what
    /// the check means.
    #[cfg_attr(not(all(windows, feature = "host-process")), allow(dead_code))]
    Components,
}

/// What follows folder `dir` in `path`, compared by whole components
/// without case: `Some("")` for `dir` itself, `Some(r"\x")` below it,
/// `None` anywhere else (`C:\var\lib\kubeletx` is not below
/// `C:\var\lib\kubelet`).
pub(crate) fn rest_below(path: &str, dir: &str) -> Option<String> {
    let (path, dir) = (path.to_lowercase(), dir.to_lowercase());
    let rest = path.strip_prefix(dir.trim_end_matches('\\'))?;
    (rest.is_empty() || rest.starts_with('\\')).then(|| rest.to_owned())
}

#[cfg(any(feature = "testing", all(windows, feature = "host-process")))]
/// Whether `path` lies under (or is) one of `dirs`, compared by `rule`.
pub(crate) fn contains(dirs: &[String], path: &str, rule: Rule) -> bool {
    let path = path.to_lowercase();
    dirs.iter().any(|dir| {
        let dir = dir.to_lowercase();
        match rule {
            Rule::Prefix => path.starts_with(&dir),
            Rule::Components => rest_below(&path, &dir).is_some(),
        }
    })
}

#[cfg(any(feature = "testing", all(windows, feature = "host-process")))]
/// The proxy's answer to a path outside `dirs`: a host error, as the
/// proxy sends it.
pub(crate) fn check(
    dirs: &[String],
    rule: Rule,
    operation: Operation,
    path: &WindowsPath,
) -> Result<()> {
    if contains(dirs, path.as_str(), rule) {
        return Ok(());
    }
    Err(Error::host(
        operation,
        tonic::Code::Unknown,
        format!(
            "path {path} is not within the working directories ({})",
            dirs.join(", ")
        ),
    ))
}

#[cfg(all(test, feature = "testing"))]
mod tests {
    use super::*;

    #[test]
    fn the_host_backend_compares_whole_components_and_the_fake_as_the_proxy() {
        let dirs = [r"C:\var\lib\kubelet".to_owned()];
        let under = r"C:\var\lib\kubelet\pods\p1";
        let beside = r"C:\var\lib\kubeletx\pods";
        assert!(contains(&dirs, under, Rule::Components));
        assert!(contains(&dirs, r"c:\VAR\lib\kubelet", Rule::Components));
        assert!(!contains(&dirs, beside, Rule::Components));
        assert!(!contains(&dirs, r"C:\var\lib", Rule::Components));
        // The proxy's own check lets the neighbour through: so does the
        // fake host, never kinder and never stricter.
        assert!(contains(&dirs, beside, Rule::Prefix));
        assert!(contains(&dirs, under, Rule::Prefix));
    }
}
