//! What a command's failure tells the user and the script that ran it: a
//! kind, one line, and the exit code.

use csi_proxy_client::Error;

use crate::cli::Confirm;

/// A failure for the user.
pub struct Failure {
    pub kind: &'static str,
    pub message: String,
    pub code: u8,
}

/// What a command ends with.
pub type Outcome<T = ()> = Result<T, Failure>;

impl Failure {
    /// Bad usage or input: nothing was sent.
    pub fn usage(message: impl Into<String>) -> Self {
        Self {
            kind: "usage",
            message: message.into(),
            code: 2,
        }
    }

    /// A group asked for is not served.
    pub fn not_served(message: impl Into<String>) -> Self {
        Self {
            kind: "not_served",
            message: message.into(),
            code: 3,
        }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        let code = match e {
            Error::InvalidArgument { .. } | Error::Configuration { .. } => 2,
            Error::NotServed { .. } | Error::UntrustedServer { .. } | Error::Unsupported { .. } => {
                3
            }
            _ => 1,
        };
        let kind = match e {
            Error::NotServed { .. } => "not_served",
            Error::UntrustedServer { .. } => "untrusted_server",
            Error::Unsupported { .. } => "unsupported",
            Error::InvalidArgument { .. } => "invalid_argument",
            Error::Configuration { .. } => "configuration",
            Error::Host { .. } => "host",
            Error::NotFound { .. } => "not_found",
            Error::Transport { .. } | Error::ConnectTimeout { .. } => "transport",
            Error::Timeout { .. } => "timeout",
            Error::PermissionDenied { .. } => "permission_denied",
            Error::InvalidResponse { .. } => "invalid_response",
            _ => "other",
        };
        Failure {
            kind,
            message: e.to_string(),
            code,
        }
    }
}

/// `Ok` when the user confirmed `what`, a change of the host.
pub fn confirmed(confirm: &Confirm, what: &str) -> Outcome {
    if confirm.yes {
        Ok(())
    } else {
        Err(Failure::usage(format!(
            "{what} changes the host; add --yes to do it"
        )))
    }
}
