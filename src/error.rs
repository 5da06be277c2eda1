//! The crate's one error type, and what became of the request it answers
//! ([`Delivery`]).
//!
//! The vocabulary layer's top: it names groups, versions, operations,
//! Windows' causes and server owners, and nothing above them (the test
//! `tests/it/layers.rs` checks it).

mod connection;
mod delivery;
mod kind;
mod parse;
mod words;

use std::sync::Arc;
use std::time::Duration;

use crate::capability::Operation;
use crate::group::ApiGroup;
use crate::host_cause::HostCause;
use crate::server_owner::ServerOwner;
use crate::version::ApiVersion;

pub use connection::ConnectionError;
pub use delivery::Delivery;
pub use kind::ErrorKind;
#[cfg(feature = "csi")]
pub(crate) use words::code_name;
pub(crate) use words::in_words;
use words::{code_text, size_text, tried_text};

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
        owner: ServerOwner,
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
    /// `false`, nothing reached the proxy, or the proxy refused it
    /// unprocessed. [`Error::delivery`] tells the two apart.
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

    /// A destructive step (a partition, a format, a removal, an offline)
    /// was refused because nothing proves that its object is the
    /// plugin's: neither the mounter's journal nor the host's own answer
    /// says so. Nothing was changed. In CSI, `FAILED_PRECONDITION`: an
    /// operator must look at the node (docs/security.md says what the
    /// node layer may destroy, and the proof each step needs).
    #[error("{what} is not proven to be the plugin's: {why}; nothing was changed")]
    NotOurs {
        /// What would have been destroyed, in words (`volume \\?\Volume{..}\ of disk at LUN 3`).
        what: String,
        /// Why it is not taken as the plugin's, in words.
        why: String,
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

impl Error {
    /// What Windows said went wrong, for an [`Error::Host`] whose Windows
    /// error code or message names one of the causes a driver acts on
    /// ([`HostCause`]); `None` for every other error.
    pub fn host_cause(&self) -> Option<HostCause> {
        match self {
            Error::Host {
                os_code, message, ..
            } => HostCause::classify(*os_code, message),
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

    /// Every error shape, with what became of its request: the one table
    /// the call policy and the mounter read.
    #[test]
    fn each_error_says_what_became_of_its_request() {
        let op = Operation::FormatVolume;
        let io = || -> BoxedSource { Arc::new(std::io::Error::other("broken pipe")) };
        let transport = |maybe_sent, source| Error::Transport {
            address: "p".into(),
            operation: Some(op),
            maybe_sent,
            source,
        };
        // As the transport builds them: the channel's failure, in the
        // status tonic makes of it.
        let through_status = |connection: ConnectionError| -> BoxedSource {
            Arc::new(Status::from_error(Box::new(connection)))
        };
        let refused = || ConnectionError::refused(h2::Error::from(h2::Reason::REFUSED_STREAM));
        let words = || "x".to_owned();
        let cases = [
            (transport(true, io()), Delivery::MayHaveRun),
            (
                transport(
                    true,
                    through_status(ConnectionError::during_call(h2::Error::from(
                        h2::Reason::INTERNAL_ERROR,
                    ))),
                ),
                Delivery::MayHaveRun,
            ),
            (transport(false, io()), Delivery::NotSent),
            (
                transport(false, through_status(ConnectionError::ended())),
                Delivery::NotSent,
            ),
            (
                transport(
                    false,
                    through_status(ConnectionError::not_sent(h2::Error::from(
                        h2::Reason::CANCEL,
                    ))),
                ),
                Delivery::NotSent,
            ),
            (
                transport(false, through_status(refused())),
                Delivery::RefusedUnprocessed,
            ),
            // `maybe_sent` is the transport's word: a refusal it did not
            // report as unsent is not read as one.
            (
                transport(true, through_status(refused())),
                Delivery::MayHaveRun,
            ),
            (
                Error::Timeout {
                    operation: op,
                    after: Duration::from_secs(1),
                },
                Delivery::MayHaveRun,
            ),
            (Error::invalid_response(op, "garbled"), Delivery::MayHaveRun),
            (
                Error::host(op, Code::Unknown, "not ready"),
                Delivery::Answered,
            ),
            (Error::NotFound { what: words() }, Delivery::Answered),
            (
                Error::Conflict {
                    path: words(),
                    found: words(),
                },
                Delivery::Answered,
            ),
            (
                Error::NotStaged {
                    path: words(),
                    found: words(),
                },
                Delivery::Answered,
            ),
            (
                Error::Ambiguous {
                    what: words(),
                    candidates: vec![],
                },
                Delivery::Answered,
            ),
            (
                Error::NotOurs {
                    what: words(),
                    why: words(),
                },
                Delivery::Answered,
            ),
            (
                Error::HostBusy {
                    group: ApiGroup::Volume,
                    running: 4,
                },
                Delivery::RefusedUnprocessed,
            ),
            (
                Error::NotServed {
                    group: ApiGroup::Volume,
                    tried: vec![],
                },
                Delivery::NotSent,
            ),
            (
                Error::UntrustedServer {
                    group: ApiGroup::Volume,
                    address: words(),
                    owner: ServerOwner::Uid(7),
                },
                Delivery::NotSent,
            ),
            (
                Error::Unsupported {
                    operation: op,
                    served: ApiVersion::V1BETA1,
                    needed: ApiVersion::V1,
                },
                Delivery::NotSent,
            ),
            (Error::NotImplemented { operation: op }, Delivery::NotSent),
            (Error::invalid_argument("path", "x"), Delivery::NotSent),
            (
                Error::PermissionDenied {
                    address: words(),
                    source: io(),
                },
                Delivery::NotSent,
            ),
            (
                Error::connect_failed("p", std::io::Error::other("no")),
                Delivery::NotSent,
            ),
            (
                Error::connect_timeout("p", Duration::from_secs(1)),
                Delivery::NotSent,
            ),
            (
                Error::Configuration {
                    setting: words(),
                    reason: words(),
                },
                Delivery::NotSent,
            ),
            (Error::InProgress { what: words() }, Delivery::NotSent),
            (Error::disk_not_grown(1, 1, 2), Delivery::NotSent),
        ];
        for (error, delivery) in cases {
            assert_eq!(error.delivery(), delivery, "{error:?}");
            assert_eq!(
                error.may_have_run(),
                delivery == Delivery::MayHaveRun,
                "{error:?}"
            );
            // A transport failure's `maybe_sent` says the same.
            if let Error::Transport { maybe_sent, .. } = &error {
                assert_eq!(*maybe_sent, error.may_have_run(), "{error:?}");
            }
        }
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
