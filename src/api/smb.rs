//! The smb group.

use std::fmt;

use super::define::group_trait;
use super::path::WindowsPath;
use super::types::{check_name, Secret};
use crate::capability::Operation;
use crate::error::{Error, Result};

/// A remote SMB path, `\\server\share` or below it (`/` is accepted for
/// `\`).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct SmbRemotePath(String);

impl SmbRemotePath {
    /// Normalizes `/` to `\` and checks for `\\server\share[\...]`.
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

/// The smb group's RPCs, each defined once: its method, its arguments,
/// its answer, its [`Operation`] and the checks its arguments get before
/// anything is sent. `smb_rpcs!(m)` hands the list to the macro `m`:
/// [`group_trait`](super::define) makes the trait of it, and the client
/// its handle.
macro_rules! smb_rpcs {
    ($then:ident) => {
        $then! {
            /// The SMB group: global mappings of remote shares.
            ///
            /// ```
            /// use std::sync::{Arc, Mutex};
            /// use csi_proxy_client::{api::{Secret, SmbApi, SmbMapping, SmbRemotePath}, async_trait, Result};
            ///
            /// /// Remembers the shares mapped.
            /// #[derive(Default)]
            /// struct Recorder(Mutex<Vec<String>>);
            ///
            /// #[async_trait]
            /// impl SmbApi for Recorder {
            ///     async fn new_smb_global_mapping(&self, mapping: &SmbMapping) -> Result<()> {
            ///         self.0.lock().unwrap().push(mapping.remote_path.to_string());
            ///         Ok(())
            ///     }
            /// }
            ///
            /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<()> {
            /// let smb = Arc::new(Recorder::default());
            /// let share = SmbRemotePath::new("//files/share")?;
            /// smb.new_smb_global_mapping(&SmbMapping::new(share, "user", Secret::new("pw"))).await?;
            /// assert_eq!(smb.0.lock().unwrap()[0], r"\\files\share");
            /// # Ok(()) }
            /// ```
            trait SmbApi;

            /// Maps the share of `mapping.remote_path` globally (its root from CSI
            /// Proxy v1.1.2, the path itself before; again, if an existing mapping
            /// is no longer valid), and links `mapping.local_path` to the remote
            /// path if given. The mapping is made before the link: when the link is
            /// refused, the mapping stays.
            fn new_smb_global_mapping(&self, mapping: &SmbMapping) -> ()
                = Operation::NewSmbGlobalMapping,
                check mapping.validate();

            /// Removes the global mapping of the share that holds `remote_path` (of
            /// `remote_path` itself before CSI Proxy v1.1.2). A mapping that does
            /// not exist is an error.
            fn remove_smb_global_mapping(&self, remote_path: &SmbRemotePath) -> ()
                = Operation::RemoveSmbGlobalMapping;
        }
    };
}
pub(crate) use smb_rpcs;

smb_rpcs!(group_trait);
