//! Whether a failed request was sent: the one answer every layer reads
//! (the call policy's retries, the mounter's "was the answer lost?"),
//! given by [`Error::delivery`](crate::Error::delivery).

use std::fmt;

use super::{ConnectionError, Error};

/// What became of the request that a failure answers: whether it reached
/// the server (CSI Proxy, or the backend that serves the group), and
/// whether it may have run there. [`Error::delivery`](crate::Error::delivery)
/// gives it for every error; [`Error::may_have_run`](crate::Error::may_have_run)
/// asks the question that matters before sending a change again.
///
/// ```
/// use csi_proxy_client::{Delivery, Error, Operation};
///
/// let timeout = Error::Timeout { operation: Operation::FormatVolume, after: std::time::Duration::from_secs(5) };
/// assert_eq!(timeout.delivery(), Delivery::MayHaveRun);
/// assert!(timeout.may_have_run()); // look at the volume before formatting again
///
/// let unsupported = Error::NotImplemented { operation: Operation::FormatVolume };
/// assert_eq!(unsupported.delivery(), Delivery::NotSent);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Delivery {
    /// The request never reached the server: the failure came before it
    /// left the client (no proxy, no connection, an endpoint that is not
    /// trusted, an argument or setting refused, an operation the version
    /// lacks, a change the mounter would not start), or the connection
    /// had ended, or failed, before it went. Nothing ran; sending it again
    /// is safe.
    NotSent,
    /// The server received the request and said it did not process it:
    /// HTTP/2's `REFUSED_STREAM`, or a stream above the last one a GOAWAY
    /// let through (RFC 9113 §8.7), or the host backend busy with as many
    /// calls as it admits ([`Error::HostBusy`](crate::Error::HostBusy)).
    /// Nothing ran; it may be sent again, though a server that refuses
    /// twice is likely to go on refusing.
    RefusedUnprocessed,
    /// The request was processed and this failure is its answer: the host
    /// operation failed ([`Error::Host`](crate::Error::Host)), or what
    /// the answers said is not what was wanted (something not found, in
    /// the way, ambiguous). The outcome is known: it is the failure.
    Answered,
    /// The request may have reached the server and run, but its answer
    /// was lost: the connection broke after it went (or the proxy said it
    /// was shutting down), its deadline passed while it was out, or the
    /// answer could not be read. For a call that changes the host the
    /// outcome is unknown: look at the host's state before sending it
    /// again.
    MayHaveRun,
}

impl Delivery {
    /// Whether the request may have run on the host without its answer
    /// coming back: [`Delivery::MayHaveRun`].
    pub fn may_have_run(self) -> bool {
        self == Delivery::MayHaveRun
    }

    /// One word for it, for logs and labels: `not_sent`,
    /// `refused_unprocessed`, `answered` or `may_have_run`.
    pub fn as_str(self) -> &'static str {
        match self {
            Delivery::NotSent => "not_sent",
            Delivery::RefusedUnprocessed => "refused_unprocessed",
            Delivery::Answered => "answered",
            Delivery::MayHaveRun => "may_have_run",
        }
    }
}

impl fmt::Display for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl Error {
    /// What became of the request this error answers: not sent, refused
    /// unprocessed, answered with this failure, or perhaps run with its
    /// answer lost. The one place that says it for every error:
    ///
    /// | error | delivery |
    /// |---|---|
    /// | [`Transport`](Error::Transport) with `maybe_sent: true`, [`Timeout`](Error::Timeout), [`InvalidResponse`](Error::InvalidResponse) | [`MayHaveRun`](Delivery::MayHaveRun) |
    /// | [`Transport`](Error::Transport) with `maybe_sent: false`, over a [`ConnectionError`] the proxy refused (`REFUSED_STREAM`, above a GOAWAY's last stream); [`HostBusy`](Error::HostBusy) | [`RefusedUnprocessed`](Delivery::RefusedUnprocessed) |
    /// | [`Host`](Error::Host), [`NotFound`](Error::NotFound), [`Conflict`](Error::Conflict), [`NotStaged`](Error::NotStaged), [`NotOurs`](Error::NotOurs), [`Ambiguous`](Error::Ambiguous) | [`Answered`](Delivery::Answered) |
    /// | any other [`Transport`](Error::Transport), and every other error | [`NotSent`](Delivery::NotSent) |
    ///
    /// ```
    /// use csi_proxy_client::{Delivery, Error};
    ///
    /// let absent = Error::NotServed { group: csi_proxy_client::ApiGroup::Smb, tried: vec![] };
    /// assert_eq!(absent.delivery(), Delivery::NotSent);
    /// assert!(!absent.may_have_run());
    /// ```
    pub fn delivery(&self) -> Delivery {
        match self {
            Error::Transport {
                maybe_sent: true, ..
            }
            | Error::Timeout { .. }
            | Error::InvalidResponse { .. } => Delivery::MayHaveRun,
            Error::Transport { source, .. } => connection_delivery(&**source)
                .filter(|&delivery| delivery == Delivery::RefusedUnprocessed)
                .unwrap_or(Delivery::NotSent),
            Error::HostBusy { .. } => Delivery::RefusedUnprocessed,
            Error::Host { .. }
            | Error::NotFound { .. }
            | Error::Conflict { .. }
            | Error::NotStaged { .. }
            | Error::NotOurs { .. }
            | Error::Ambiguous { .. } => Delivery::Answered,
            Error::NotServed { .. }
            | Error::UntrustedServer { .. }
            | Error::Unsupported { .. }
            | Error::NotImplemented { .. }
            | Error::InvalidArgument { .. }
            | Error::PermissionDenied { .. }
            | Error::ConnectTimeout { .. }
            | Error::Configuration { .. }
            | Error::InProgress { .. } => Delivery::NotSent,
        }
    }

    /// Whether the request may have run on the host while its answer was
    /// lost ([`Delivery::MayHaveRun`]): for a call that changes the host,
    /// the outcome is unknown, and the host's state says whether to send
    /// it again. `false` when nothing ran ([`Delivery::NotSent`],
    /// [`Delivery::RefusedUnprocessed`]) and when the failure is the
    /// outcome ([`Delivery::Answered`]).
    pub fn may_have_run(&self) -> bool {
        self.delivery().may_have_run()
    }
}

/// What the transport recorded of a request among a failure's causes: the
/// delivery of the first [`ConnectionError`] there, if any.
fn connection_delivery(error: &(dyn std::error::Error + 'static)) -> Option<Delivery> {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if let Some(connection) = error.downcast_ref::<ConnectionError>() {
            return Some(connection.delivery());
        }
        cause = error.source();
    }
    None
}
