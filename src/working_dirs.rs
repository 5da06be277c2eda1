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

#[cfg(any(feature = "testing", all(windows, feature = "host-process")))]
/// Whether `path` lies under one of `dirs`: a case-insensitive prefix
/// match, as naive as the proxy's own (so `C:\var\lib\kubeletx` passes
/// too, there as here).
pub(crate) fn contains(dirs: &[String], path: &str) -> bool {
    let path = path.to_lowercase();
    dirs.iter().any(|dir| path.starts_with(&dir.to_lowercase()))
}

#[cfg(any(feature = "testing", all(windows, feature = "host-process")))]
/// The proxy's answer to a path outside `dirs`: a host error, as the
/// proxy sends it.
pub(crate) fn check(dirs: &[String], operation: Operation, path: &WindowsPath) -> Result<()> {
    if contains(dirs, path.as_str()) {
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
