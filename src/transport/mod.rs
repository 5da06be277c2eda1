//! Where CSI Proxy listens, and how a gRPC channel is opened to it.
//!
//! CSI Proxy serves each (group, version) on its own endpoint named
//! `csi-proxy-<group>-<version>`: a Windows named pipe under `\\.\pipe\`, or,
//! for tests and development, a Unix domain socket of that name in a
//! directory. [`Transport`] names those endpoints and opens them.

mod channel;
mod connect;
mod driver;
mod exchange;
mod failure;
#[cfg(windows)]
mod pipe;
mod stream;
mod trust;

use std::fmt;
#[cfg(unix)]
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::group::ApiGroup;
use crate::version::ApiVersion;

pub use channel::{ProxyChannel, DEFAULT_MAX_RESPONSE_SIZE};
#[cfg(test)]
pub(crate) use connect::faults;
pub(crate) use connect::{connect, ConnectFailure, ConnectOptions, Timeouts};
pub use exchange::ResponseBody;
pub(crate) use failure::{ChannelFailure, PeerStatus};
pub(crate) use stream::Inner as StreamInner;
pub(crate) use stream::IoStream;
#[cfg(windows)]
pub(crate) use trust::owner_of_handle;
pub use trust::ServerTrust;
#[cfg(windows)]
pub(crate) use trust::{current_user_sid, sid_text, SecurityAttributes};
pub(crate) use trust::{report_suspect, report_untrusted};

pub use crate::error::ConnectionError;
pub use crate::server_owner::ServerOwner;

/// The source of a transport failure ([`Error::Transport`]), shared so
/// that [`Error`] is `Clone`.
pub use crate::error::BoxedSource;

/// The prefix of every local Windows named pipe.
pub const LOCAL_PIPE_PREFIX: &str = r"\\.\pipe\";

/// The name of the endpoint of one group-version, without its directory or
/// pipe prefix: `csi-proxy-disk-v1`.
pub fn endpoint_name(group: ApiGroup, version: ApiVersion) -> String {
    format!("csi-proxy-{group}-{version}")
}

/// The longest endpoint name any group-version has, for length checks.
fn longest_endpoint_name() -> usize {
    ApiGroup::ALL
        .iter()
        .flat_map(|&g| g.versions().iter().map(move |&v| endpoint_name(g, v).len()))
        .max()
        .unwrap_or(0)
}

/// Where the proxy's endpoints live: Windows named pipes (what CSI Proxy
/// serves) or Unix domain sockets in a directory (what test harnesses and
/// Linux development use).
///
/// ```
/// use csi_proxy_client::{transport::Transport, ApiGroup, ApiVersion};
///
/// let pipes = Transport::named_pipes();
/// assert_eq!(
///     pipes.address(ApiGroup::Disk, ApiVersion::V1),
///     r"\\.\pipe\csi-proxy-disk-v1"
/// );
/// // Remote pipes are refused: the proxy only serves local clients.
/// assert!(Transport::named_pipes_with_prefix(r"\\server\pipe\").is_err());
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Transport {
    kind: Kind,
    /// Who may serve its endpoints.
    trust: ServerTrust,
}

#[derive(Clone, PartialEq, Eq)]
enum Kind {
    NamedPipes {
        /// `\\.\pipe\` followed by an optional name prefix.
        prefix: String,
    },
    #[cfg(unix)]
    UnixSockets { dir: PathBuf },
}

impl Transport {
    /// CSI Proxy's own pipes, `\\.\pipe\csi-proxy-<group>-<version>`.
    /// Connecting through them only works on Windows.
    pub fn named_pipes() -> Self {
        Self {
            kind: Kind::NamedPipes {
                prefix: LOCAL_PIPE_PREFIX.to_owned(),
            },
            trust: ServerTrust::default(),
        }
    }

    /// Named pipes under a custom prefix: `prefix` must start with the local
    /// pipe prefix `\\.\pipe\` and may add a name prefix after it, so that
    /// `\\.\pipe\test7-` gives `\\.\pipe\test7-csi-proxy-disk-v1`. Remote
    /// pipes (`\\host\pipe\...`) are rejected: CSI Proxy refuses remote
    /// clients, and a node plugin must never talk to another host's proxy.
    pub fn named_pipes_with_prefix(prefix: &str) -> Result<Self> {
        let invalid =
            |why: &str| Error::invalid_argument("pipe name", format!("{prefix:?}: {why}"));
        let head = prefix.get(..LOCAL_PIPE_PREFIX.len()).unwrap_or("");
        if !head.eq_ignore_ascii_case(LOCAL_PIPE_PREFIX) {
            if prefix.starts_with(r"\\") {
                return Err(invalid(r"only local pipes (\\.\pipe\...) are allowed"));
            }
            return Err(invalid(r"a pipe name must start with \\.\pipe\"));
        }
        let name_prefix = &prefix[LOCAL_PIPE_PREFIX.len()..];
        if name_prefix.contains(['\\', '/']) {
            return Err(invalid(
                "the name after \\\\.\\pipe\\ may not contain a slash",
            ));
        }
        if name_prefix.contains('\0') {
            return Err(invalid("contains a NUL character"));
        }
        // Windows limits a pipe name to 256 characters.
        if prefix.len() + longest_endpoint_name() > 256 {
            return Err(invalid("the pipe names would exceed 256 characters"));
        }
        Ok(Self {
            kind: Kind::NamedPipes {
                prefix: format!("{LOCAL_PIPE_PREFIX}{name_prefix}"),
            },
            trust: ServerTrust::default(),
        })
    }

    /// Unix domain sockets named like the pipes, in `dir`:
    /// `<dir>/csi-proxy-<group>-<version>`. The directory must exist.
    ///
    /// Unix only. For tests that run on Windows too, see
    /// `testing::LocalEndpoints` (feature `testing`).
    #[cfg(unix)]
    #[cfg_attr(docsrs, doc(cfg(unix)))]
    pub fn unix_sockets(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref();
        let invalid = |why: String| Error::invalid_argument("socket directory", why);
        match std::fs::metadata(dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(invalid(format!("{} is not a directory", dir.display()))),
            Err(e) => return Err(invalid(format!("{}: {e}", dir.display()))),
        }
        // A socket path must fit in sockaddr_un (108 bytes on Linux, 104 on
        // the BSDs) with its terminating NUL.
        let longest = dir.as_os_str().len() + 1 + longest_endpoint_name();
        if longest >= 104 {
            return Err(invalid(format!(
                "{} is too long for socket paths ({longest} bytes; at most 103)",
                dir.display()
            )));
        }
        Ok(Self {
            kind: Kind::UnixSockets {
                dir: dir.to_owned(),
            },
            trust: ServerTrust::default(),
        })
    }

    /// The pipe or socket path of one group-version.
    pub fn address(&self, group: ApiGroup, version: ApiVersion) -> String {
        let name = endpoint_name(group, version);
        match &self.kind {
            Kind::NamedPipes { prefix } => format!("{prefix}{name}"),
            #[cfg(unix)]
            Kind::UnixSockets { dir } => dir.join(name).display().to_string(),
        }
    }

    /// The socket directory, for socket transports. Unix only.
    #[cfg(unix)]
    #[cfg_attr(docsrs, doc(cfg(unix)))]
    pub fn socket_dir(&self) -> Option<&Path> {
        match &self.kind {
            Kind::UnixSockets { dir } => Some(dir),
            Kind::NamedPipes { .. } => None,
        }
    }

    /// Whether this transport uses named pipes.
    pub fn is_named_pipes(&self) -> bool {
        matches!(self.kind, Kind::NamedPipes { .. })
    }

    /// Opens one raw connection to `address` (as made by [`Self::address`]).
    /// The same endpoints, served only by an owner `trust` admits (by
    /// default SYSTEM or Administrators for pipes, root or the client's
    /// own user for Unix sockets): see [`ServerTrust`].
    pub fn trusting(mut self, trust: ServerTrust) -> Self {
        self.trust = trust;
        self
    }

    /// Who may serve these endpoints.
    pub fn trust(&self) -> &ServerTrust {
        &self.trust
    }

    pub(crate) async fn open(
        &self,
        address: &str,
        options: &ConnectOptions,
    ) -> std::io::Result<IoStream> {
        match &self.kind {
            #[cfg(windows)]
            Kind::NamedPipes { .. } => pipe::open(address, options.connect_timeout)
                .await
                .map(|p| IoStream(StreamInner::Pipe(p))),
            #[cfg(not(windows))]
            Kind::NamedPipes { .. } => {
                let _ = (address, options);
                Err(Misconfigured::error(NAMED_PIPES_OFF_WINDOWS))
            }
            #[cfg(unix)]
            Kind::UnixSockets { .. } => {
                // Most probes during negotiation are for versions the node
                // does not serve: a stat answers that without a socket.
                match std::fs::metadata(address) {
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(e),
                    Ok(meta) if !std::os::unix::fs::FileTypeExt::is_socket(&meta.file_type()) => {
                        return Err(Misconfigured::error(if meta.is_dir() {
                            "the endpoint's path is a directory, not a socket"
                        } else {
                            "the endpoint's path is a file, not a socket"
                        }));
                    }
                    _ => {}
                }
                let connect = tokio::net::UnixStream::connect(address);
                match tokio::time::timeout(options.connect_timeout, connect).await {
                    Ok(stream) => stream.map(|s| IoStream(StreamInner::Unix(s))),
                    Err(_) => Err(std::io::ErrorKind::TimedOut.into()),
                }
            }
        }
    }

    /// Whether this transport can work on this platform at all: named
    /// pipes exist only on Windows. A configuration error otherwise.
    pub(crate) fn check_usable(&self) -> Result<()> {
        #[cfg(not(windows))]
        if self.is_named_pipes() {
            return Err(Error::Configuration {
                setting: "transport".to_owned(),
                reason: NAMED_PIPES_OFF_WINDOWS.to_owned(),
            });
        }
        Ok(())
    }
}

/// Why named pipes fail off Windows, and what to set instead.
#[cfg(not(windows))]
const NAMED_PIPES_OFF_WINDOWS: &str = "named pipes (the default transport) exist only on Windows; \
     on this platform set a socket directory (CsiProxyBuilder::socket_dir, Transport::unix_sockets)";

/// The marker of an I/O error that says the configuration is wrong (an
/// endpoint path that is no socket, a transport this platform lacks),
/// rather than that the proxy is absent or failing.
#[derive(Debug)]
struct Misconfigured(&'static str);

impl Misconfigured {
    // Windows has no path that could hold the wrong kind of endpoint.
    #[cfg_attr(windows, allow(dead_code))]
    fn error(reason: &'static str) -> std::io::Error {
        std::io::Error::other(Misconfigured(reason))
    }
}

impl fmt::Display for Misconfigured {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for Misconfigured {}

/// If `e` says the configuration is wrong: why.
pub(crate) fn misconfigured(e: &std::io::Error) -> Option<&'static str> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<Misconfigured>())
        .map(|m| m.0)
}

impl Default for Transport {
    /// [`Transport::named_pipes`], what CSI Proxy serves.
    fn default() -> Self {
        Self::named_pipes()
    }
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::NamedPipes { prefix } => f.debug_tuple("NamedPipes").field(prefix).finish(),
            #[cfg(unix)]
            Kind::UnixSockets { dir } => f.debug_tuple("UnixSockets").field(dir).finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipe_names_follow_the_proxy() {
        let t = Transport::named_pipes();
        assert_eq!(
            t.address(ApiGroup::Filesystem, ApiVersion::V2ALPHA1),
            r"\\.\pipe\csi-proxy-filesystem-v2alpha1"
        );
        let t = Transport::named_pipes_with_prefix(r"\\.\PIPE\t1-").unwrap();
        assert_eq!(
            t.address(ApiGroup::System, ApiVersion::V1ALPHA1),
            r"\\.\pipe\t1-csi-proxy-system-v1alpha1"
        );
    }

    #[test]
    fn remote_and_malformed_pipe_names_are_rejected() {
        for bad in [
            r"\\server\pipe\",
            r"\\10.0.0.1\pipe\x",
            r"\\?\pipe\",
            "//./pipe/",
            r"\\.\pipe\a\b",
            r"\\.\pipes\",
            r"C:\pipe\",
            "",
        ] {
            let err = Transport::named_pipes_with_prefix(bad).unwrap_err();
            assert!(matches!(err, Error::InvalidArgument { .. }), "{bad:?}");
        }
        let long = format!(r"\\.\pipe\{}", "x".repeat(240));
        assert!(Transport::named_pipes_with_prefix(&long).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn socket_directory_must_exist_and_fit() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transport::unix_sockets(dir.path()).unwrap();
        assert_eq!(
            t.address(ApiGroup::Disk, ApiVersion::V1BETA2),
            dir.path()
                .join("csi-proxy-disk-v1beta2")
                .display()
                .to_string()
        );
        let missing = dir.path().join("missing");
        assert!(matches!(
            Transport::unix_sockets(&missing),
            Err(Error::InvalidArgument { .. })
        ));
        let file = dir.path().join("file");
        std::fs::write(&file, b"").unwrap();
        assert!(Transport::unix_sockets(&file).is_err());
        let deep = dir.path().join("d".repeat(90));
        std::fs::create_dir(&deep).unwrap();
        assert!(Transport::unix_sockets(&deep).is_err());
    }
}
