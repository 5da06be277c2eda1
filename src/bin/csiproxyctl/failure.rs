//! What a command's failure tells the user and the script that ran it: a
//! kind, one line, and the exit code.

use csi_proxy_client::{Error, ErrorKind};
use serde_json::{json, Value};

use crate::cli::Confirm;

/// A failure for the user.
pub struct Failure {
    pub kind: &'static str,
    pub message: String,
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

    /// What `--json` prints: one document, with the failure as `error`.
    pub fn to_json(&self) -> Value {
        let error = json!({ "kind": self.kind, "message": self.message, "exit_code": self.code });
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

/// A failure of the SDK: its kind, and the exit code that kind has.
impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        let kind = e.kind();
        let code = match kind {
            ErrorKind::InvalidArgument | ErrorKind::Configuration => 2,
            ErrorKind::NotServed | ErrorKind::UntrustedServer | ErrorKind::Unsupported => 3,
            _ => 1,
        };
        Failure::new(kind.as_str(), e.to_string(), code)
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
