//! The crate's one error type.

use std::sync::Arc;
use std::time::Duration;

use crate::capability::Operation;
use crate::group::ApiGroup;
use crate::version::ApiVersion;

/// A gRPC status code, as in [`Error::Host`]: tonic's own type. tonic is
/// part of this crate's public API (the generated clients in
/// [`wire`](crate::wire) and [`ProxyChannel`](crate::transport::ProxyChannel)), so a
/// tonic major release means a major release of this crate.
pub use tonic::Code;

/// The gRPC status a CSI node service answers: `Status::from(error)` (or
/// `?` in a tonic handler) turns an [`Error`] into one, with the code of
/// [`Error::csi_code`]. tonic's own type, re-exported so that a driver
/// needs no tonic dependency of its own to name it.
pub use tonic::Status;

/// The label of a call's result in spans and metrics: `ok`, or the
/// [`ErrorKind`] of its error.
pub(crate) fn outcome<T>(result: &Result<T>) -> &'static str {
    result.as_ref().map_or_else(|e| e.kind().as_str(), |_| "ok")
}

/// The source of a transport failure, shared so that [`Error`] is `Clone`.
pub type BoxedSource = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong when talking to CSI Proxy.
///
/// Each variant is something a caller can act on; match on the variant,
/// not on the message text.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The node serves no acceptable version of a group: no pipe or socket
    /// answered. `tried` lists every address that was tried, in order.
    #[error("CSI Proxy does not serve the {group} API: nothing answered at {}", tried.join(", "))]
    NotServed {
        /// The group that is missing.
        group: ApiGroup,
        /// Every pipe or socket tried, in the order tried.
        tried: Vec<String>,
    },

    /// No acceptable version of a group is served by a trusted owner: the
    /// only endpoints that answered belong to someone the client's
    /// [`ServerTrust`](crate::transport::ServerTrust) does not admit (a process
    /// squatting a pipe name the proxy does not serve, or a proxy run under
    /// an account not named there). Nothing was sent to them. Like
    /// [`Error::NotServed`], it is waited for while the proxy is away.
    #[error(
        "no trusted server for the {group} API: {address} is served by {owner}, which is not \
         trusted to be CSI Proxy (nothing was sent; see ServerTrust)"
    )]
    UntrustedServer {
        /// The group.
        group: ApiGroup,
        /// The newest endpoint with an untrusted server.
        address: String,
        /// Who serves it.
        owner: crate::transport::ServerOwner,
    },

    /// The negotiated wire version lacks an operation. Nothing was sent.
    #[error(
        "{} {} needs CSI Proxy API {needed} or newer, but the node serves {served}",
        operation.group(),
        operation.name()
    )]
    Unsupported {
        /// The operation; [`Operation::group`] and [`Operation::name`] name it.
        operation: Operation,
        /// The version that was negotiated.
        served: ApiVersion,
        /// The oldest version of the group that has the operation.
        needed: ApiVersion,
    },

    /// A backend (typically a test mock) does not implement an operation.
    #[error("{} {} is not implemented by this backend", operation.group(), operation.name())]
    NotImplemented {
        /// The operation.
        operation: Operation,
    },

    /// The proxy ran the operation and reported a failure on the host.
    /// CSI Proxy reports almost every host failure with code
    /// [`Code::Unknown`] and a free-text message; match on the code, not on
    /// the text, which changes between proxy releases.
    #[error("{} {} failed on the host ({code:?}): {message}", operation.group(), operation.name())]
    Host {
        /// The operation.
        operation: Operation,
        /// The gRPC status code.
        code: Code,
        /// The proxy's message.
        message: String,
        /// The Windows error behind it, when the SDK did the work itself
        /// (the `host-process` backend): a Win32 error code (`ERROR_*`,
        /// positive) or a COM/WMI `HRESULT` (negative, such as
        /// `0x80041002u32 as i32`, `WBEM_E_NOT_FOUND`). `None` for the
        /// proxy's answers, which carry only text. For a failed WMI method
        /// call it is the Win32 code of the provider's error object
        /// (`MSFT_WmiError`) where it gives one, else the call's `HRESULT`.
        os_code: Option<i32>,
        /// The WMI method's own `ReturnValue`, when the host backend's call
        /// of a method answered one that is not success: the Storage
        /// provider's codes (1 "Not Supported" to 5 "Invalid Parameter",
        /// and its 4xxxx codes, documented per method). Not a Windows error
        /// code, so never in `os_code` (where 5 would read as "access
        /// denied"). `None` for everything else.
        return_value: Option<u32>,
    },

    /// The answer could not be understood: a message that does not decode
    /// or is larger than the limit, a broken gRPC frame, no `grpc-status`,
    /// an answer that is not gRPC at all (an HTTP error page), or values
    /// that make no sense (a disk number that is not a number, an unknown
    /// enum value). The status, if any, was made by the client, not sent
    /// by the proxy: the call may have had its effect on the host, so for
    /// a call that changes the host the outcome is unknown.
    #[error("{} {}: malformed response{}: {reason}", operation.group(), operation.name(),
        if operation.is_mutating() { " (the outcome is unknown: the operation may have run)" } else { "" })]
    InvalidResponse {
        /// The operation.
        operation: Operation,
        /// What was wrong.
        reason: String,
    },

    /// Something looked up does not exist.
    #[error("no {what}")]
    NotFound {
        /// What was looked for.
        what: String,
    },

    /// An argument or setting was rejected before anything was sent.
    #[error("invalid {what}: {reason}")]
    InvalidArgument {
        /// What was wrong: `path`, `version`, `pipe name`, ...
        what: &'static str,
        /// Why it was rejected.
        reason: String,
    },

    /// The proxy could not be reached at an address that exists: access was
    /// denied. CSI Proxy's pipes only let administrators (or `SYSTEM`) in.
    #[error("access to {address} was denied (CSI Proxy's pipes need an administrator or SYSTEM): {source}")]
    PermissionDenied {
        /// The pipe or socket.
        address: String,
        /// What the operating system said.
        #[source]
        source: BoxedSource,
    },

    /// The connection to the proxy could not be made, failed or broke.
    ///
    /// `maybe_sent` tells whether the request may have reached the proxy.
    /// When it is `true` for a call that changes the host, the outcome is
    /// unknown: check the host's state before trying again. When it is
    /// `false`, nothing reached the proxy.
    #[error("{}transport error at {address}{}: {source}",
        operation.map(|op| format!("{} {}: ", op.group(), op.name())).unwrap_or_default(),
        if *maybe_sent { " (the request may have reached the proxy)" } else { "" })]
    Transport {
        /// The pipe or socket.
        address: String,
        /// The call, or `None` while connecting.
        operation: Option<Operation>,
        /// Whether the request may have reached the proxy.
        maybe_sent: bool,
        /// What failed underneath: an I/O, HTTP/2 or gRPC error.
        #[source]
        source: BoxedSource,
    },

    /// A call did not finish within its deadline. The host operation may
    /// still go on, and finish, after the client gave up: CSI Proxy does not
    /// cancel host work.
    #[error("{} {} timed out after {after:?}", operation.group(), operation.name())]
    Timeout {
        /// The call.
        operation: Operation,
        /// The deadline that passed.
        after: Duration,
    },

    /// The client is set up in a way that cannot work: an endpoint's path
    /// holds a file or a directory instead of a socket, or the transport
    /// does not exist on this platform (named pipes off Windows). Nothing
    /// was sent, and waiting will not help: fix the setting or the
    /// deployment it names.
    #[error("misconfigured {setting}: {reason}")]
    Configuration {
        /// The setting, or the endpoint path, that is wrong.
        setting: String,
        /// What is wrong with it, and what to set instead.
        reason: String,
    },

    /// Connecting to an endpoint (opening it, waiting for a busy pipe, and
    /// the HTTP/2 handshake) took longer than the connect timeout.
    #[error("connecting to {address} timed out after {after:?}")]
    ConnectTimeout {
        /// The pipe or socket.
        address: String,
        /// The connect timeout that passed.
        after: Duration,
    },

    /// Something unexpected is at a path the caller meant to use: another
    /// volume, a link to somewhere else, a directory with files in it. It
    /// was left as it is (see [`mount`](crate::mount)).
    #[error("{path}: {found}; it was left as it is")]
    Conflict {
        /// The path, as Windows writes it.
        path: String,
        /// What is there, in words.
        found: String,
    },

    /// A call that needs a staged volume found none at the staging path:
    /// no volume is mounted there, or the share linked there does not
    /// answer. Nothing was changed. In CSI, the volume is not staged: a
    /// `NodePublishVolume` before its `NodeStageVolume` succeeded (kubelet
    /// may publish after a failed unstage, kubernetes #100182), answered
    /// with `FAILED_PRECONDITION` ([`Error::csi_code_for`] gives each node
    /// call's code). Stage the volume first.
    #[error("nothing is staged at {path}: {found}; stage the volume first")]
    NotStaged {
        /// The staging path, as Windows writes it.
        path: String,
        /// What is there instead, in words.
        found: String,
    },

    /// A lookup that must find one thing found several.
    #[error("more than one {what}: {}", candidates.join(", "))]
    Ambiguous {
        /// What was looked for.
        what: String,
        /// What matched.
        candidates: Vec<String>,
    },

    /// An earlier attempt at the same change may still be running on the
    /// host (it outlived its caller's deadline, or the proxy restarted
    /// while it ran): it is not started again until it is seen done or
    /// its time is up. Retry later.
    #[error("{what} may still be running on the host; not starting it again yet")]
    InProgress {
        /// The change, in words.
        what: String,
    },

    /// The host backend ([`Backend::Host`](crate::Backend::Host)) has as
    /// many calls of the group running as it admits at once, typically
    /// because some are stuck in a Windows provider that does not answer:
    /// the call was refused at once, and nothing was done. Retry later;
    /// [`CsiProxy::health`](crate::CsiProxy::health) says when calls are
    /// stuck.
    #[error(
        "the host is busy with {running} {group} calls already; nothing was done, retry later"
    )]
    HostBusy {
        /// The group.
        group: ApiGroup,
        /// The calls of the group running on the host.
        running: usize,
    },
}

/// What kind of failure an [`Error`] is: the one classification from
/// which its CSI code ([`Error::csi_code`]; per node call,
/// [`Error::csi_code_for`]), [`Error::is_retryable`], the
/// `outcome` label of spans and metrics, and csiproxyctl's `kind` and exit
/// code all follow.
///
/// ```
/// use csi_proxy_client::{Error, ErrorKind};
///
/// let error = Error::ConnectTimeout { address: "pipe".into(), after: std::time::Duration::from_secs(5) };
/// assert_eq!(error.kind(), ErrorKind::Transport);
/// assert_eq!(error.kind().as_str(), "transport");
/// assert!(error.is_retryable());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`Error::NotServed`].
    NotServed,
    /// [`Error::UntrustedServer`].
    UntrustedServer,
    /// [`Error::Transport`] and [`Error::ConnectTimeout`]: the connection
    /// to the proxy failed, or was not made in time.
    Transport,
    /// [`Error::Timeout`]: a call's deadline passed.
    Timeout,
    /// [`Error::Unsupported`].
    Unsupported,
    /// [`Error::Configuration`].
    Configuration,
    /// [`Error::PermissionDenied`].
    PermissionDenied,
    /// [`Error::InvalidArgument`].
    InvalidArgument,
    /// [`Error::NotFound`].
    NotFound,
    /// [`Error::NotImplemented`].
    NotImplemented,
    /// [`Error::InvalidResponse`].
    InvalidResponse,
    /// [`Error::Host`].
    Host,
    /// [`Error::Conflict`].
    Conflict,
    /// [`Error::NotStaged`].
    NotStaged,
    /// [`Error::Ambiguous`].
    Ambiguous,
    /// [`Error::InProgress`].
    InProgress,
    /// [`Error::HostBusy`].
    HostBusy,
}

impl ErrorKind {
    /// One word for it, for spans, metric labels and csiproxyctl's JSON:
    /// never the message, which may echo request data (paths, secrets).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::NotServed => "not_served",
            ErrorKind::UntrustedServer => "untrusted_server",
            ErrorKind::Transport => "transport",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Configuration => "configuration",
            ErrorKind::PermissionDenied => "permission_denied",
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::NotFound => "not_found",
            ErrorKind::NotImplemented => "not_implemented",
            ErrorKind::InvalidResponse => "invalid_response",
            ErrorKind::Host => "host",
            ErrorKind::Conflict => "conflict",
            ErrorKind::NotStaged => "not_staged",
            ErrorKind::Ambiguous => "ambiguous",
            ErrorKind::InProgress => "in_progress",
            ErrorKind::HostBusy => "host_busy",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Error {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::NotServed { .. } => ErrorKind::NotServed,
            Error::UntrustedServer { .. } => ErrorKind::UntrustedServer,
            Error::Transport { .. } | Error::ConnectTimeout { .. } => ErrorKind::Transport,
            Error::Timeout { .. } => ErrorKind::Timeout,
            Error::Unsupported { .. } => ErrorKind::Unsupported,
            Error::Configuration { .. } => ErrorKind::Configuration,
            Error::PermissionDenied { .. } => ErrorKind::PermissionDenied,
            Error::InvalidArgument { .. } => ErrorKind::InvalidArgument,
            Error::NotFound { .. } => ErrorKind::NotFound,
            Error::NotImplemented { .. } => ErrorKind::NotImplemented,
            Error::InvalidResponse { .. } => ErrorKind::InvalidResponse,
            Error::Host { .. } => ErrorKind::Host,
            Error::Conflict { .. } => ErrorKind::Conflict,
            Error::NotStaged { .. } => ErrorKind::NotStaged,
            Error::Ambiguous { .. } => ErrorKind::Ambiguous,
            Error::InProgress { .. } => ErrorKind::InProgress,
            Error::HostBusy { .. } => ErrorKind::HostBusy,
        }
    }

    /// What Windows said went wrong, for an [`Error::Host`] whose Windows
    /// error code or message names one of the causes a driver acts on
    /// ([`HostCause`](crate::HostCause)); `None` for every other error.
    pub fn host_cause(&self) -> Option<crate::HostCause> {
        match self {
            Error::Host {
                os_code, message, ..
            } => crate::HostCause::classify(*os_code, message),
            _ => None,
        }
    }

    /// An [`Error::Host`] as CSI Proxy reports one: `operation` failed on
    /// the host with `code` (usually [`Code::Unknown`]) and `message`, with
    /// no Windows error code. For mocks and fakes that fail the way the
    /// proxy does.
    ///
    /// ```
    /// use csi_proxy_client::{Code, Error, Operation};
    ///
    /// let error = Error::host(Operation::MountVolume, Code::Unknown, "The device is not ready.");
    /// assert_eq!(error.csi_code(), Code::Internal);
    /// assert!(!error.is_retryable());
    /// ```
    pub fn host(operation: Operation, code: Code, message: impl Into<String>) -> Self {
        Error::Host {
            operation,
            code,
            message: message.into(),
            os_code: None,
            return_value: None,
        }
    }

    pub(crate) fn invalid_argument(what: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidArgument {
            what,
            reason: reason.into(),
        }
    }

    pub(crate) fn invalid_response(operation: Operation, reason: impl Into<String>) -> Self {
        Error::InvalidResponse {
            operation,
            reason: reason.into(),
        }
    }

    /// A failure to connect to `address`: nothing was sent.
    pub(crate) fn connect_failed(
        address: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Error::Transport {
            address: address.into(),
            operation: None,
            maybe_sent: false,
            source: Arc::new(source),
        }
    }

    pub(crate) fn connect_timeout(address: impl Into<String>, after: Duration) -> Self {
        Error::ConnectTimeout {
            address: address.into(),
            after,
        }
    }

    /// Whether this is a transport failure of a request that certainly did
    /// not reach the proxy (or that it refused unprocessed).
    pub(crate) fn certainly_not_sent(&self) -> bool {
        matches!(
            self,
            Error::Transport {
                maybe_sent: false,
                ..
            }
        )
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
