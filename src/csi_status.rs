//! What a CSI node service answers for each [`Error`]: the gRPC code, and
//! whether the same call may succeed later (the table is on the `From`
//! implementation below, where the API docs show it).

use tonic::{Code, Status};

use crate::error::{Error, ErrorKind};

impl ErrorKind {
    /// The gRPC code a CSI node service answers for an error of this kind;
    /// for [`ErrorKind::Host`], that of a host failure with code `Unknown`
    /// (the proxy's usual report).
    pub fn csi_code(self) -> Code {
        match self {
            ErrorKind::NotServed | ErrorKind::UntrustedServer | ErrorKind::Transport => {
                Code::Unavailable
            }
            ErrorKind::Timeout => Code::DeadlineExceeded,
            ErrorKind::Unsupported | ErrorKind::Configuration | ErrorKind::PermissionDenied => {
                Code::FailedPrecondition
            }
            ErrorKind::InvalidArgument => Code::InvalidArgument,
            ErrorKind::NotFound => Code::NotFound,
            ErrorKind::NotImplemented => Code::Unimplemented,
            ErrorKind::InvalidResponse | ErrorKind::Host => Code::Internal,
            ErrorKind::Conflict => Code::AlreadyExists,
            ErrorKind::Ambiguous => Code::FailedPrecondition,
            ErrorKind::InProgress => Code::Aborted,
            ErrorKind::HostBusy => Code::Unavailable,
        }
    }

    /// Whether an error of this kind may go away by itself (see
    /// [`Error::is_retryable`]); for [`ErrorKind::Host`], that of a host
    /// failure with code `Unknown`.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            ErrorKind::NotServed
                | ErrorKind::UntrustedServer
                | ErrorKind::Transport
                | ErrorKind::Timeout
                | ErrorKind::InvalidResponse
                | ErrorKind::InProgress
                | ErrorKind::HostBusy
        )
    }
}

impl Error {
    /// The gRPC code a CSI node service answers for this error (see the
    /// table in the docs of [`From<Error> for tonic::Status`](#impl-From%3CError%3E-for-Status)):
    /// that of its [`kind`](Error::kind), or for a host failure the code
    /// the proxy gave, or for one with code `Unknown` that of its
    /// [`HostCause`](crate::HostCause) (`Internal` without one).
    pub fn csi_code(&self) -> Code {
        match self {
            Error::Host { code, .. } if !matches!(code, Code::Unknown | Code::Ok) => *code,
            _ => match self.host_cause() {
                Some(cause) => cause.csi_code(),
                None => self.kind().csi_code(),
            },
        }
    }

    /// Whether the same call may succeed later without anything else
    /// changing: the proxy may come back, a connection may hold, a deadline
    /// may be met, an unclear answer may be clear the next time. `false`
    /// for what needs a change first (an argument, the deployment, the
    /// proxy's version) and for host failures, which repeat, unless the
    /// proxy said otherwise (`Unavailable`, `ResourceExhausted`, `Aborted`)
    /// or Windows' cause passes by itself ([`HostCause::is_retryable`](crate::HostCause::is_retryable):
    /// an unreachable server, a stale mapping, a path in use).
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Host { code, .. } if !matches!(code, Code::Unknown | Code::Ok) => matches!(
                code,
                Code::Unavailable | Code::ResourceExhausted | Code::Aborted
            ),
            Error::Host { .. } => self
                .host_cause()
                .is_some_and(crate::HostCause::is_retryable),
            _ => self.kind().is_retryable(),
        }
    }
}

/// The status a CSI node service answers for `error`: [`Error::csi_code`]
/// and the error's text (secrets masked), with its causes.
///
/// | error | code | retrying may help | why |
/// |---|---|---|---|
/// | [`NotServed`](Error::NotServed) | `Unavailable` | yes | the proxy (or this group's pipe) is not there now; it may start, or be mounted, later |
/// | [`UntrustedServer`](Error::UntrustedServer) | `Unavailable` | yes | only a server the client does not trust answered (a pipe squatter); the proxy itself may still start |
/// | [`Transport`](Error::Transport) | `Unavailable` | yes | the connection failed; CSI calls are idempotent, so the CO's retry is safe even when the outcome was unknown |
/// | [`ConnectTimeout`](Error::ConnectTimeout) | `Unavailable` | yes | the proxy did not answer in time; it may be starting or overloaded |
/// | [`Timeout`](Error::Timeout) | `DeadlineExceeded` | yes | the call ran out of time; the host may still finish the work, which the retry then finds done |
/// | [`Unsupported`](Error::Unsupported) | `FailedPrecondition` | no | the node's CSI Proxy is too old for the call: unlike `NotServed` and `Timeout`, nothing changes until the proxy is upgraded |
/// | [`Configuration`](Error::Configuration) | `FailedPrecondition` | no | the plugin is deployed or set up wrongly; waiting does not fix it |
/// | [`PermissionDenied`](Error::PermissionDenied) | `FailedPrecondition` | no | the plugin may not open the proxy's pipe (it needs an administrator or SYSTEM): a deployment fault, not the CO's |
/// | [`InvalidArgument`](Error::InvalidArgument) | `InvalidArgument` | no | the request was rejected before anything was sent |
/// | [`NotFound`](Error::NotFound) | `NotFound` | no | what the call names does not exist |
/// | [`NotImplemented`](Error::NotImplemented) | `Unimplemented` | no | a backend (a test mock) lacks the operation |
/// | [`InvalidResponse`](Error::InvalidResponse) | `Internal` | yes | the answer could not be understood; the outcome is unknown, and a retry of an idempotent CSI call is how to learn it |
/// | [`Host`](Error::Host) with `Unknown` (almost every host failure) | `Internal` | no | the host operation failed; the same call would fail the same way |
/// | [`Host`](Error::Host) with `Unknown` and a [`HostCause`](crate::HostCause) | the cause's | the cause's | Windows named what went wrong (a logon failure, an unreachable server, ...) |
/// | [`Conflict`](Error::Conflict) | `AlreadyExists` | no | something else is at the path; it was left alone |
/// | [`Ambiguous`](Error::Ambiguous) | `FailedPrecondition` | no | a lookup that must find one thing found several |
/// | [`InProgress`](Error::InProgress) | `Aborted` | yes | an earlier attempt may still run on the host |
/// | [`HostBusy`](Error::HostBusy) | `Unavailable` | yes | the host backend has its limit of calls of the group running |
/// | [`Host`](Error::Host) with another code | that code | for `Unavailable`, `ResourceExhausted`, `Aborted` | the proxy chose the code |
///
///
/// `NotServed` and `Timeout` are worth the CO's retry (the proxy may start,
/// the host may finish); `Unsupported` is not: the node's proxy lacks the
/// call until it is upgraded. The message is the error's text and its
/// causes, with any secret of the request already masked.
///
/// ```
/// use csi_proxy_client::{ApiGroup, Error};
///
/// let error = Error::NotServed { group: ApiGroup::Smb, tried: vec![] };
/// assert!(error.is_retryable());
/// let status = tonic::Status::from(error);
/// assert_eq!(status.code(), tonic::Code::Unavailable);
/// ```
impl From<Error> for Status {
    fn from(error: Error) -> Self {
        let code = error.csi_code();
        let mut message = error.to_string();
        let mut cause = std::error::Error::source(&error);
        while let Some(inner) = cause {
            let text = inner.to_string();
            if !message.contains(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            cause = inner.source();
        }
        Status::new(code, message)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::capability::Operation;
    use crate::group::ApiGroup;
    use crate::version::ApiVersion;

    #[test]
    fn every_variant_has_its_code_and_retry_answer() {
        let op = Operation::Mkdir;
        let io = || Arc::new(std::io::Error::other("broken pipe"));
        let cases = [
            (
                Error::NotServed {
                    group: ApiGroup::Smb,
                    tried: vec![],
                },
                Code::Unavailable,
                true,
            ),
            (
                Error::Transport {
                    address: "p".into(),
                    operation: Some(op),
                    maybe_sent: true,
                    source: io(),
                },
                Code::Unavailable,
                true,
            ),
            (
                Error::connect_timeout("p", Duration::from_secs(1)),
                Code::Unavailable,
                true,
            ),
            (
                Error::Timeout {
                    operation: op,
                    after: Duration::from_secs(1),
                },
                Code::DeadlineExceeded,
                true,
            ),
            (
                Error::Unsupported {
                    operation: op,
                    served: ApiVersion::V1ALPHA1,
                    needed: ApiVersion::V1,
                },
                Code::FailedPrecondition,
                false,
            ),
            (
                Error::Configuration {
                    setting: "transport".into(),
                    reason: "x".into(),
                },
                Code::FailedPrecondition,
                false,
            ),
            (
                Error::PermissionDenied {
                    address: "p".into(),
                    source: io(),
                },
                Code::FailedPrecondition,
                false,
            ),
            (
                Error::invalid_argument("path", "x"),
                Code::InvalidArgument,
                false,
            ),
            (
                Error::NotFound {
                    what: "disk".into(),
                },
                Code::NotFound,
                false,
            ),
            (
                Error::NotImplemented { operation: op },
                Code::Unimplemented,
                false,
            ),
            (Error::invalid_response(op, "x"), Code::Internal, true),
            (
                Error::Host {
                    operation: op,
                    code: Code::Unknown,
                    message: "x".into(),
                    os_code: None,
                    return_value: None,
                },
                Code::Internal,
                false,
            ),
            (
                Error::Host {
                    operation: op,
                    code: Code::ResourceExhausted,
                    message: "x".into(),
                    os_code: None,
                    return_value: None,
                },
                Code::ResourceExhausted,
                true,
            ),
            (
                Error::Host {
                    operation: op,
                    code: Code::AlreadyExists,
                    message: "x".into(),
                    os_code: None,
                    return_value: None,
                },
                Code::AlreadyExists,
                false,
            ),
        ];
        for (error, code, retryable) in cases {
            assert_eq!(error.csi_code(), code, "{error}");
            assert_eq!(error.is_retryable(), retryable, "{error}");
            let text = error.to_string();
            let status = Status::from(error);
            assert_eq!(status.code(), code);
            assert!(status.message().starts_with(&text), "{}", status.message());
        }
    }

    #[test]
    fn the_status_carries_the_causes_once() {
        let error = Error::Transport {
            address: "p".into(),
            operation: None,
            maybe_sent: false,
            source: Arc::new(std::io::Error::other("broken pipe")),
        };
        let status = Status::from(error);
        assert_eq!(
            status.message().matches("broken pipe").count(),
            1,
            "{}",
            status.message()
        );
    }
}
