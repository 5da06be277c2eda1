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
    /// answered. `tried` lists every address that was tried, in order. It
    /// is also the answer of a call whose deadline passed while it waited
    /// for the group (the proxy away, or starting), with what its last
    /// look tried: the proxy was not there, nothing was sent.
    #[error("CSI Proxy does not serve the {group} API: {}", tried_text(tried))]
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
    #[error("{} {} failed on the host{}: {message}", operation.group(), operation.name(), code_text(*code))]
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
    #[error(
        "access to {address} was denied (CSI Proxy's pipes need an administrator or SYSTEM): {}",
        in_words(&**source)
    )]
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
    #[error("{} at {address}: {}{}",
        operation.map_or_else(|| "connecting to CSI Proxy failed".to_owned(),
            |op| format!("{} {} failed", op.group(), op.name())),
        in_words(&**source),
        if *maybe_sent { "; the request may have reached CSI Proxy, so it may have run" } else { "" })]
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

    /// A call did not finish within its deadline while its request was
    /// out. The host operation may still go on, and finish, after the
    /// client gave up: CSI Proxy does not cancel host work. (A call that
    /// spent its deadline waiting for a proxy that was not there is
    /// [`Error::NotServed`]; one whose attempts failed is that failure.)
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
    /// its time is up. Or the node waits for something that is under way
    /// elsewhere (the controller's resize of a disk to reach the node).
    /// Retry later.
    #[error("{what}")]
    InProgress {
        /// What is under way and when to come back, as one sentence for a
        /// node operator (`disk 1 has 10 GiB, 20 GiB were asked for: the
        /// controller's resize has not reached the node yet; retry
        /// later`): the error's whole text.
        what: String,
    },

    /// The host backend ([`Backend::Host`](crate::Backend::Host)) has as
    /// many calls of the group running in this process (whichever client
    /// made them) as it admits at once, typically because some are stuck
    /// in a Windows provider that does not answer: the call was refused at
    /// once, and nothing was done. Retry later;
    /// [`CsiProxy::health`](crate::CsiProxy::health) says when calls are
    /// stuck.
    #[error(
        "the host is busy with {running} {group} calls already; nothing was done, retry later"
    )]
    HostBusy {
        /// The group.
        group: ApiGroup,
        /// The calls of the group running on the host, in this process.
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

    /// An [`Error::InProgress`] of an expand that found `disk` smaller than
    /// the `required` bytes: the controller's resize has not reached the
    /// node yet, and nothing was started.
    pub(crate) fn disk_not_grown(disk: u32, size: u64, required: u64) -> Self {
        Error::InProgress {
            what: format!(
                "disk {disk} has {}, {} were asked for: the controller's resize has not \
                 reached the node yet; retry later",
                size_text(size),
                size_text(required)
            ),
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

/// The endpoints a [`Error::NotServed`] tried, in words.
fn tried_text(tried: &[String]) -> String {
    match tried {
        [] => "no endpoint of it was tried".to_owned(),
        tried => format!("nothing answered at {}", tried.join(", ")),
    }
}

/// A host failure's code, in words: nothing for `Unknown` (how CSI Proxy
/// reports nearly every failure), else its name in the gRPC spec.
fn code_text(code: Code) -> String {
    match code {
        Code::Unknown => String::new(),
        code => format!(" (code {})", code_name(code)),
    }
}

/// A code's name in the gRPC spec, as the CSI spec writes it too.
pub(crate) fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

/// A size in bytes, in words: `10 GiB`, or `10.5 GiB (11274289152 bytes)`
/// when it is not a whole number of its unit (a tenth rounded down).
fn size_text(bytes: u64) -> String {
    for (unit, shift) in [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        let (whole, rest) = (bytes >> shift, bytes % (1 << shift));
        match (whole, rest) {
            (0, _) => continue,
            (whole, 0) => return format!("{whole} {unit}"),
            (whole, rest) => {
                let tenths = (rest * 10) >> shift;
                return format!("{whole}.{tenths} {unit} ({bytes} bytes)");
            }
        }
    }
    format!("{bytes} bytes")
}

/// `error` and its causes in words, as one line: each one's text, joined
/// by `: `, each left out when the text so far already says it. Never a
/// `Debug` output: a gRPC status is its message (tonic's own text of a
/// status ends with its source's `Debug`), an HTTP/2 failure of the
/// connection is what happened to the connection.
pub(crate) fn in_words(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![one_in_words(error)];
    let mut cause = error.source();
    while let Some(inner) = cause {
        let words = one_in_words(inner);
        let said = parts.join(": ");
        match parts.last_mut() {
            _ if words.is_empty() || said.contains(&words) => {}
            // The cause says the same as the last text, and more (a
            // status whose message is its source's text, which names the
            // kind of failure too).
            Some(last) if words.contains(last.as_str()) => *last = words,
            _ => parts.push(words),
        }
        cause = inner.source();
    }
    parts.retain(|part| !part.is_empty());
    parts.join(": ")
}

/// One error's own text, without its causes, in words.
fn one_in_words(error: &(dyn std::error::Error + 'static)) -> String {
    // An error's shared source shows as the `Arc` around it.
    if let Some(shared) = error.downcast_ref::<BoxedSource>() {
        return one_in_words(&**shared);
    }
    if let Some(status) = error.downcast_ref::<Status>() {
        return match status.message() {
            "" => status.code().description().to_owned(),
            message => message.to_owned(),
        };
    }
    if let Some(h2) = error.downcast_ref::<h2::Error>() {
        return h2_in_words(h2);
    }
    if let Some(io) = error.downcast_ref::<std::io::Error>() {
        return io_in_words(io);
    }
    error.to_string()
}

/// An HTTP/2 failure in words: the I/O error under it, or who reset the
/// stream or closed the connection, and why.
fn h2_in_words(error: &h2::Error) -> String {
    if let Some(io) = error.get_io() {
        return io_in_words(io);
    }
    let who = if error.is_remote() {
        "CSI Proxy"
    } else {
        "the client"
    };
    match error.reason() {
        Some(reason) if error.is_go_away() => {
            format!("{reason} (the connection was closed by {who})")
        }
        Some(reason) if error.is_reset() => format!("{reason} (the stream was reset by {who})"),
        Some(reason) => format!("HTTP/2 protocol error: {reason}"),
        None => error.to_string(),
    }
}

/// An I/O error in words: its text, and what kind of failure it is when
/// the text does not say it (`connection closed (broken pipe)`).
fn io_in_words(error: &std::io::Error) -> String {
    let text = error.to_string();
    let kind = error.kind();
    if error.raw_os_error().is_some() || kind == std::io::ErrorKind::Other {
        return text;
    }
    let kind = kind.to_string();
    if text.to_lowercase().contains(&kind) || kind.contains("error") {
        text
    } else {
        format!("{text} ({kind})")
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_their_unit() {
        assert_eq!(size_text(10 << 30), "10 GiB");
        assert_eq!(size_text(3 << 40), "3 TiB");
        assert_eq!(size_text(512), "512 bytes");
        assert_eq!(size_text(1536), "1.5 KiB (1536 bytes)");
        // A tenth rounded down: never a size that looks grown.
        assert_eq!(size_text((20 << 30) - 1), "19.9 GiB (21474836479 bytes)");
    }

    #[test]
    fn in_progress_reads_as_one_sentence() {
        let waiting = Error::disk_not_grown(1, 10 << 30, 20 << 30);
        assert_eq!(
            waiting.to_string(),
            "disk 1 has 10 GiB, 20 GiB were asked for: the controller's resize has not \
             reached the node yet; retry later"
        );
        assert_eq!(waiting.kind(), ErrorKind::InProgress);
        let running = Error::InProgress {
            what: "the operation on x may still be running on the host; retry later".into(),
        };
        assert_eq!(
            running.to_string(),
            "the operation on x may still be running on the host; retry later"
        );
    }

    #[test]
    fn causes_read_in_words() {
        // A status made from an I/O error: its message, once, with the kind.
        let io = std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stream closed");
        let status = Status::from_error(Box::new(io));
        assert_eq!(in_words(&status), "stream closed (broken pipe)");
        // HTTP/2's reasons in words, no byte strings.
        let h2 = h2::Error::from(h2::Reason::REFUSED_STREAM);
        assert_eq!(
            in_words(&h2),
            "HTTP/2 protocol error: refused stream before processing any application logic"
        );
        // An OS error keeps its number, for the operator to look up.
        let os = std::io::Error::from_raw_os_error(32);
        assert!(in_words(&os).contains("(os error 32)"), "{}", in_words(&os));
        // A status with no message says what its code means.
        assert_eq!(
            in_words(&Status::new(Code::Unavailable, "")),
            "The service is currently unavailable"
        );
        let none = Error::NotServed {
            group: ApiGroup::Smb,
            tried: vec![],
        };
        assert_eq!(
            none.to_string(),
            "CSI Proxy does not serve the smb API: no endpoint of it was tried"
        );
    }
}
