//! What a command's failure tells the user and the script that ran it: a
//! kind, what Windows said went wrong where the SDK can tell, one line,
//! and the exit code.

use csi_proxy_client::{ApiGroup, Code, Error, ErrorKind, HostCause, Operation};
use serde_json::{json, Value};

use crate::cli::Confirm;

/// A failure for the user.
pub struct Failure {
    pub kind: &'static str,
    pub message: String,
    /// What Windows said went wrong, for a host failure whose cause the
    /// SDK knows ([`HostCause::as_str`]: `logon_failure`, ...).
    pub cause: Option<&'static str>,
    pub code: u8,
    /// With `--json`, the document the command had to print besides the
    /// error (what `probe` found), so that the output stays one document.
    pub document: Option<Value>,
}

/// What a command ends with.
pub type Outcome<T = ()> = Result<T, Failure>;

impl Failure {
    fn new(kind: &'static str, message: impl Into<String>, code: u8) -> Self {
        Self {
            kind,
            message: message.into(),
            cause: None,
            code,
            document: None,
        }
    }

    /// Bad usage or input: nothing was sent.
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new("usage", message, 2)
    }

    /// A group asked for is not served.
    pub fn not_served(message: impl Into<String>) -> Self {
        Self::new("not_served", message, 3)
    }

    /// This failure, printed with `--json` inside `document` (an object)
    /// as its `error` field.
    pub fn in_document(mut self, document: Value) -> Self {
        self.document = Some(document);
        self
    }

    /// The line for standard error: the message, and the cause if known.
    pub fn line(&self) -> String {
        match self.cause {
            Some(cause) => format!("{} (cause: {cause})", self.message),
            None => self.message.clone(),
        }
    }

    /// What `--json` prints: one document, with the failure as `error`
    /// (its `cause` only when there is one).
    pub fn to_json(&self) -> Value {
        let mut error =
            json!({ "kind": self.kind, "message": self.message, "exit_code": self.code });
        if let Some(cause) = self.cause {
            error["cause"] = json!(cause);
        }
        match &self.document {
            Some(Value::Object(fields)) => {
                let mut fields = fields.clone();
                fields.insert("error".into(), error);
                Value::Object(fields)
            }
            _ => json!({ "error": error }),
        }
    }
}

/// A failure of the SDK: its kind (a host failure that says the thing
/// named does not exist being `not_found`), the exit code that kind has,
/// and the cause of a host failure.
impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        let kind = match e.kind() {
            ErrorKind::Host if names_nothing(&e) => ErrorKind::NotFound,
            kind => kind,
        };
        let code = match kind {
            ErrorKind::InvalidArgument | ErrorKind::Configuration => 2,
            ErrorKind::NotServed | ErrorKind::UntrustedServer | ErrorKind::Unsupported => 3,
            _ => 1,
        };
        Failure {
            cause: e.host_cause().map(HostCause::as_str),
            ..Failure::new(kind.as_str(), e.to_string(), code)
        }
    }
}

/// Whether a host failure says that what the call names does not exist:
/// the proxy's `NotFound` status; Windows' "file or path not found" or
/// "no such share" ([`HostCause::PathNotFound`],
/// [`HostCause::NetworkNameNotFound`]); or, from the disk and volume
/// groups and `smb unmap`, whose proxies say so only in words, a text that
/// the disk, volume or mapping was not found ("disk 7 not found",
/// PowerShell's "No MSFT_Disk objects found with property 'Number' ...").
/// A failure with another cause is not: "the network path was not found"
/// is a server that does not answer.
fn names_nothing(e: &Error) -> bool {
    let Error::Host {
        operation,
        code,
        message,
        ..
    } = e
    else {
        return false;
    };
    if *code == Code::NotFound {
        return true;
    }
    match e.host_cause() {
        Some(cause) => matches!(
            cause,
            HostCause::PathNotFound | HostCause::NetworkNameNotFound
        ),
        None => {
            let text = message.to_lowercase();
            let names = matches!(operation.group(), ApiGroup::Disk | ApiGroup::Volume)
                || *operation == Operation::RemoveSmbGlobalMapping;
            names && (text.contains("not found") || text.contains("objects found with property"))
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
