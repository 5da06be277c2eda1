//! The smb group's values (its trait is generated, in `smb.rs`).

use std::fmt;

use super::path::WindowsPath;
use super::types::{check_name, Secret};
use crate::error::{Error, Result};

/// A remote SMB path, `\\server\share` or below it (`/` is accepted for
/// `\`).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct SmbRemotePath(String);

impl SmbRemotePath {
    /// Normalizes `/` to `\` and checks for `\\server\share[\...]`, with
    /// no `.` or `..` component.
    pub fn new(path: impl AsRef<str>) -> Result<Self> {
        let raw = path.as_ref();
        let path = raw.replace('/', "\\");
        let reject = |why: &str| {
            Err(Error::invalid_argument(
                "SMB remote path",
                format!("{}: {why}", super::quoted(raw)),
            ))
        };
        let Some(rest) = path.strip_prefix("\\\\") else {
            return reject(r"must start with \\server\share");
        };
        let mut parts = rest.split('\\');
        let server = parts.next().unwrap_or("");
        let share = parts.next().unwrap_or("");
        if server.is_empty() || share.is_empty() || server == "?" || server == "." {
            return reject(r"must name a server and a share, \\server\share");
        }
        if path.chars().any(char::is_control) {
            return reject("contains a control character");
        }
        // `.` and `..` would name another folder than the one the path
        // reads, possibly on another share's root.
        if (parts.chain([server, share])).any(|part| part == "." || part == "..") {
            return reject("must not contain '.' or '..' components");
        }
        Ok(Self(path))
    }

    /// The normalized path.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The share's root, `\\server\share`, lower-cased, of a remote path
/// that starts so: what CSI Proxy from v1.1.2 (and the host backend) maps,
/// looks up and removes, whatever folder below it the path names.
pub(crate) fn share_root(remote: &str) -> Option<String> {
    let rest = remote.strip_prefix("\\\\")?;
    let mut parts = rest.split('\\');
    let (server, share) = (parts.next()?, parts.next()?);
    Some(format!("\\\\{server}\\{share}").to_lowercase())
}

impl fmt::Debug for SmbRemotePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for SmbRemotePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.0)
    }
}

/// A global SMB mapping to create. Its `Debug` output hides the password.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmbMapping {
    /// The share (or a folder in it). CSI Proxy from v1.1.2 (and the host
    /// backend) maps the share's root, `\\server\share`; earlier releases
    /// map this exact path, under the same wire versions (the
    /// [`mount`](crate::mount) layer's leases hold under both rules).
    pub remote_path: SmbRemotePath,
    /// Where to link the remote path locally, if anywhere; it must lie in
    /// the proxy's working directories.
    pub local_path: Option<WindowsPath>,
    /// The user to connect as.
    pub username: String,
    /// The user's password.
    pub password: Secret,
}

impl SmbMapping {
    /// A mapping of `remote_path` for `username`, with no local link.
    pub fn new(remote_path: SmbRemotePath, username: impl Into<String>, password: Secret) -> Self {
        Self {
            remote_path,
            local_path: None,
            username: username.into(),
            password,
        }
    }

    /// Also link `local_path` to the remote path.
    pub fn with_local_path(mut self, local_path: WindowsPath) -> Self {
        self.local_path = Some(local_path);
        self
    }

    pub(crate) fn validate(&self) -> Result<()> {
        check_name("SMB user name", &self.username)
    }
}
