//! What kind of failure an error is: the one classification its codes,
//! retries and labels follow.

use super::Error;

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
    /// [`Error::NotOurs`].
    NotOurs,
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
            ErrorKind::NotOurs => "not_ours",
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
            Error::NotOurs { .. } => ErrorKind::NotOurs,
            Error::Ambiguous { .. } => ErrorKind::Ambiguous,
            Error::InProgress { .. } => ErrorKind::InProgress,
            Error::HostBusy { .. } => ErrorKind::HostBusy,
        }
    }
}
