//! What a CSI node service answers for each [`Error`]: the gRPC code, and
//! whether the same call may succeed later (the table is on the `From`
//! implementation below, where the API docs show it), and the code the CSI
//! spec gives a condition in each node call ([`Error::csi_code_for`]).

use std::fmt;

use tonic::{Code, Status};

use crate::error::{Error, ErrorKind};
use crate::host_cause::HostCause;

/// A call of the CSI Node service, for the code an error answers in it:
/// [`Error::csi_code_for`] and [`Error::csi_status_for`]. The CSI spec
/// lists, per call, the codes a plugin answers for its conditions, and
/// they differ between calls: something else at the path is
/// `ALREADY_EXISTS` in a stage or a publish ("volume published but is
/// incompatible") but is not listed for an unstage or an unpublish, and a
/// path that does not hold the request's volume is `NOT_FOUND` in
/// `NodeGetVolumeStats` and `NodeExpandVolume`.
///
/// ```
/// use csi_proxy_client::api::WindowsPath;
/// use csi_proxy_client::mount::Mounter;
/// use csi_proxy_client::{CsiNodeCall, Status};
///
/// /// A `NodeUnpublishVolume` handler's work: its errors answered with the
/// /// codes the spec gives `NodeUnpublishVolume`.
/// async fn node_unpublish_volume(mounter: &Mounter, target: &WindowsPath) -> Result<(), Status> {
///     let call = CsiNodeCall::UnpublishVolume;
///     mounter.unpublish(target).await.map_err(|e| e.csi_status_for(call))?;
///     Ok(())
/// }
/// assert_eq!(CsiNodeCall::UnpublishVolume.to_string(), "NodeUnpublishVolume");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CsiNodeCall {
    /// `NodeStageVolume`.
    StageVolume,
    /// `NodeUnstageVolume`.
    UnstageVolume,
    /// `NodePublishVolume`.
    PublishVolume,
    /// `NodeUnpublishVolume`.
    UnpublishVolume,
    /// `NodeGetVolumeStats`.
    GetVolumeStats,
    /// `NodeExpandVolume`.
    ExpandVolume,
}

impl CsiNodeCall {
    /// Every call, in the order of a volume's life.
    pub const ALL: [CsiNodeCall; 6] = [
        CsiNodeCall::StageVolume,
        CsiNodeCall::PublishVolume,
        CsiNodeCall::GetVolumeStats,
        CsiNodeCall::ExpandVolume,
        CsiNodeCall::UnpublishVolume,
        CsiNodeCall::UnstageVolume,
    ];

    /// The RPC's name in the CSI spec: `NodeStageVolume`, ...
    pub fn rpc(self) -> &'static str {
        match self {
            CsiNodeCall::StageVolume => "NodeStageVolume",
            CsiNodeCall::UnstageVolume => "NodeUnstageVolume",
            CsiNodeCall::PublishVolume => "NodePublishVolume",
            CsiNodeCall::UnpublishVolume => "NodeUnpublishVolume",
            CsiNodeCall::GetVolumeStats => "NodeGetVolumeStats",
            CsiNodeCall::ExpandVolume => "NodeExpandVolume",
        }
    }

    /// Whether the spec lists `ALREADY_EXISTS` for the call ("volume
    /// published but is incompatible"): stage and publish only.
    fn may_answer_already_exists(self) -> bool {
        matches!(self, CsiNodeCall::StageVolume | CsiNodeCall::PublishVolume)
    }

    /// Whether the call names a path that must hold the request's volume
    /// (`volume_path`), where the spec's answer for "not there" is
    /// `NOT_FOUND`.
    fn asks_a_volume_path(self) -> bool {
        matches!(
            self,
            CsiNodeCall::GetVolumeStats | CsiNodeCall::ExpandVolume
        )
    }
}

impl fmt::Display for CsiNodeCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.rpc())
    }
}

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
            ErrorKind::NotStaged => Code::FailedPrecondition,
            ErrorKind::NotOurs | ErrorKind::Ambiguous => Code::FailedPrecondition,
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
    /// [`HostCause`] (`Internal` without one).
    pub fn csi_code(&self) -> Code {
        match self {
            Error::Host { code, .. } if !matches!(code, Code::Unknown | Code::Ok) => *code,
            _ => match self.host_cause() {
                Some(cause) => cause.csi_code(),
                None => self.kind().csi_code(),
            },
        }
    }

    /// The gRPC code a CSI node service answers for this error in `call`:
    /// the code the CSI spec's table of errors for that call gives the
    /// condition, and [`csi_code`](Error::csi_code) for everything the
    /// tables leave to the general error scheme. Only these differ:
    ///
    /// | error | `NodeStageVolume`, `NodePublishVolume` | `NodeUnstageVolume`, `NodeUnpublishVolume` | `NodeGetVolumeStats`, `NodeExpandVolume` |
    /// |---|---|---|---|
    /// | [`Conflict`](Error::Conflict) (something else at the path) | `ALREADY_EXISTS` ("volume published but is incompatible") | `FAILED_PRECONDITION` (the spec lists no `ALREADY_EXISTS` there) | `NOT_FOUND` ("volume does not exist on the specified `volume_path`") |
    /// | [`NotStaged`](Error::NotStaged) (nothing staged at the staging path) | `FAILED_PRECONDITION` (in a publish: "stage first") | `FAILED_PRECONDITION` | `NOT_FOUND` |
    /// | [`Host`](Error::Host) whose own code is `AlreadyExists` | `ALREADY_EXISTS` | `FAILED_PRECONDITION` | `FAILED_PRECONDITION` |
    ///
    /// Every other error answers its [`csi_code`](Error::csi_code) in every
    /// call, and [`is_retryable`](Error::is_retryable) does not depend on
    /// the call. `Status::from(error)` (and `?` in a handler) answers
    /// [`csi_code`](Error::csi_code), which is `ALREADY_EXISTS` for a
    /// conflict: a handler of unstage, unpublish, stats or expand converts
    /// with [`csi_status_for`](Error::csi_status_for) instead.
    ///
    /// ```
    /// use csi_proxy_client::{Code, CsiNodeCall, Error};
    ///
    /// let conflict = Error::Conflict {
    ///     path: r"C:\var\lib\kubelet\pods\p1\volumes\pv1\mount".into(),
    ///     found: "a folder with files in it".into(),
    /// };
    /// assert_eq!(conflict.csi_code_for(CsiNodeCall::PublishVolume), Code::AlreadyExists);
    /// assert_eq!(conflict.csi_code_for(CsiNodeCall::UnpublishVolume), Code::FailedPrecondition);
    ///
    /// let not_staged = Error::NotStaged {
    ///     path: r"C:\var\lib\kubelet\plugins\pd\pv1\globalmount".into(),
    ///     found: "no volume is mounted there".into(),
    /// };
    /// assert_eq!(not_staged.csi_code(), Code::FailedPrecondition);
    /// assert_eq!(not_staged.csi_code_for(CsiNodeCall::GetVolumeStats), Code::NotFound);
    /// let status = not_staged.csi_status_for(CsiNodeCall::PublishVolume);
    /// assert_eq!(status.code(), Code::FailedPrecondition);
    /// assert!(status.message().starts_with("nothing is staged at"));
    /// ```
    pub fn csi_code_for(&self, call: CsiNodeCall) -> Code {
        match self.kind() {
            ErrorKind::Conflict | ErrorKind::NotStaged if call.asks_a_volume_path() => {
                Code::NotFound
            }
            _ => match self.csi_code() {
                Code::AlreadyExists if !call.may_answer_already_exists() => {
                    Code::FailedPrecondition
                }
                code => code,
            },
        }
    }

    /// The status a CSI node service answers for this error in `call`: the
    /// code of [`csi_code_for`](Error::csi_code_for), and the same message
    /// as `Status::from(error)` (the error's text and its causes in words,
    /// secrets masked, no `Debug` output).
    pub fn csi_status_for(&self, call: CsiNodeCall) -> Status {
        status(self, self.csi_code_for(call))
    }

    /// Whether the same call may succeed later without anything else
    /// changing: the proxy may come back, a connection may hold, a deadline
    /// may be met, an unclear answer may be clear the next time. `false`
    /// for what needs a change first (an argument, the deployment, the
    /// proxy's version) and for host failures, which repeat, unless the
    /// proxy said otherwise (`Unavailable`, `ResourceExhausted`, `Aborted`)
    /// or Windows' cause passes by itself ([`HostCause::is_retryable`]:
    /// an unreachable server, a stale mapping, a path in use).
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Host { code, .. } if !matches!(code, Code::Unknown | Code::Ok) => matches!(
                code,
                Code::Unavailable | Code::ResourceExhausted | Code::Aborted
            ),
            Error::Host { .. } => self.host_cause().is_some_and(HostCause::is_retryable),
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
/// | [`Host`](Error::Host) with `Unknown` and a [`HostCause`] | the cause's | the cause's | Windows named what went wrong (a logon failure, an unreachable server, ...) |
/// | [`Conflict`](Error::Conflict) | `AlreadyExists` | no | something else is at the path; it was left alone (`FailedPrecondition` in an unstage or unpublish: [`Error::csi_code_for`]) |
/// | [`NotStaged`](Error::NotStaged) | `FailedPrecondition` | no | a publish found nothing staged at its staging path: stage first (`NotFound` in stats and expand: [`Error::csi_code_for`]) |
/// | [`Ambiguous`](Error::Ambiguous) | `FailedPrecondition` | no | a lookup that must find one thing found several |
/// | [`InProgress`](Error::InProgress) | `Aborted` | yes | an earlier attempt may still run on the host |
/// | [`HostBusy`](Error::HostBusy) | `Unavailable` | yes | the host backend has its limit of calls of the group running |
/// | [`Host`](Error::Host) with another code | that code | for `Unavailable`, `ResourceExhausted`, `Aborted` | the proxy chose the code |
///
///
/// `NotServed` and `Timeout` are worth the CO's retry (the proxy may start,
/// the host may finish); `Unsupported` is not: the node's proxy lacks the
/// call until it is upgraded. The message, which kubelet shows in the
/// pod's events, is the error's text and its causes in words, each once
/// (never a `Debug` output), with any secret of the request already
/// masked.
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
        status(&error, error.csi_code())
    }
}

/// `error`'s status with `code`: its text and its causes in words, each
/// once, with no `Debug` output of any of them.
fn status(error: &Error, code: Code) -> Status {
    Status::new(code, crate::error::in_words(error))
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
            (
                Error::NotStaged {
                    path: "p".into(),
                    found: "no volume is mounted there".into(),
                },
                Code::FailedPrecondition,
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
    fn each_node_call_answers_the_specs_code() {
        use CsiNodeCall::*;
        let conflict = Error::Conflict {
            path: "p".into(),
            found: "another volume".into(),
        };
        let not_staged = Error::NotStaged {
            path: "p".into(),
            found: "no volume is mounted there".into(),
        };
        let host_exists = Error::host(Operation::Mkdir, Code::AlreadyExists, "x");
        let (fp, ae, nf) = (
            Code::FailedPrecondition,
            Code::AlreadyExists,
            Code::NotFound,
        );
        // In the order of CsiNodeCall::ALL: stage, publish, stats, expand,
        // unpublish, unstage.
        let table = [
            (&conflict, [ae, ae, nf, nf, fp, fp]),
            (&not_staged, [fp, fp, nf, nf, fp, fp]),
            (&host_exists, [ae, ae, fp, fp, fp, fp]),
        ];
        assert_eq!(
            CsiNodeCall::ALL,
            [
                StageVolume,
                PublishVolume,
                GetVolumeStats,
                ExpandVolume,
                UnpublishVolume,
                UnstageVolume
            ]
        );
        for (error, codes) in table {
            for (call, code) in CsiNodeCall::ALL.into_iter().zip(codes) {
                assert_eq!(error.csi_code_for(call), code, "{error} in {call}");
                let status = error.csi_status_for(call);
                assert_eq!(status.code(), code);
                assert_eq!(status.message(), Status::from(error.clone()).message());
            }
        }
        // Everything else answers its own code in every call.
        let others = [
            Error::NotFound {
                what: "disk".into(),
            },
            Error::invalid_argument("path", "x"),
            Error::Ambiguous {
                what: "disk".into(),
                candidates: vec![],
            },
            Error::InProgress { what: "x".into() },
            Error::NotOurs {
                what: "disk".into(),
                why: "x".into(),
            },
            Error::host(Operation::Mkdir, Code::Unknown, "Access is denied."),
            Error::host(Operation::Mkdir, Code::Unknown, "x"),
            Error::Timeout {
                operation: Operation::Mkdir,
                after: Duration::from_secs(1),
            },
        ];
        for error in others {
            for call in CsiNodeCall::ALL {
                assert_eq!(
                    error.csi_code_for(call),
                    error.csi_code(),
                    "{error} in {call}"
                );
            }
        }
        assert_eq!(ExpandVolume.to_string(), "NodeExpandVolume");
        assert_eq!(GetVolumeStats.rpc(), "NodeGetVolumeStats");
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
