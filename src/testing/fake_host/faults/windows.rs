//! The fake host's Windows errors: Win32 codes, their standard text, and
//! the failures they make.

use std::fmt;

use crate::capability::Operation;
use crate::error::{Code, Error};

/// A Windows error (a Win32 `ERROR_*` code and its text), for the fake
/// host's own failures and for
/// [`FakeHost::fail_call`](crate::testing::FakeHost::fail_call).
///
/// A failure made from it is [`Error::Host`] with code `Unknown`, the text
/// as its message and the code as its `os_code`, as the `host-process`
/// backend reports one. Through a [`FakeProxy`](crate::testing::FakeProxy)
/// only the text reaches the client, as with the real proxy.
///
/// ```
/// use csi_proxy_client::testing::WindowsError;
///
/// let error = WindowsError::new(WindowsError::LOGON_FAILURE);
/// assert_eq!(error.code(), 1326);
/// assert_eq!(error.message(), "The user name or password is incorrect.");
/// let custom = WindowsError::with_message(1450, "Resize-Partition: out of resources");
/// assert_eq!(custom.message(), "Resize-Partition: out of resources");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WindowsError {
    code: u32,
    message: String,
}

impl WindowsError {
    /// 2, `ERROR_FILE_NOT_FOUND`.
    pub const FILE_NOT_FOUND: u32 = 2;
    /// 3, `ERROR_PATH_NOT_FOUND`.
    pub const PATH_NOT_FOUND: u32 = 3;
    /// 5, `ERROR_ACCESS_DENIED`.
    pub const ACCESS_DENIED: u32 = 5;
    /// 8, `ERROR_NOT_ENOUGH_MEMORY` (nodes with hundreds of leaked SMB
    /// mappings report it).
    pub const NOT_ENOUGH_MEMORY: u32 = 8;
    /// 19, `ERROR_WRITE_PROTECT`: the disk is read-only.
    pub const WRITE_PROTECT: u32 = 19;
    /// 21, `ERROR_NOT_READY`.
    pub const NOT_READY: u32 = 21;
    /// 32, `ERROR_SHARING_VIOLATION`.
    pub const SHARING_VIOLATION: u32 = 32;
    /// 53, `ERROR_BAD_NETPATH`: no such SMB server.
    pub const BAD_NETPATH: u32 = 53;
    /// 59, `ERROR_UNEXP_NET_ERR`.
    pub const UNEXPECTED_NETWORK_ERROR: u32 = 59;
    /// 64, `ERROR_NETNAME_DELETED`: the share stopped answering.
    pub const NETNAME_DELETED: u32 = 64;
    /// 65, `ERROR_NETWORK_ACCESS_DENIED`.
    pub const NETWORK_ACCESS_DENIED: u32 = 65;
    /// 67, `ERROR_BAD_NET_NAME`: no such share on the server.
    pub const BAD_NET_NAME: u32 = 67;
    /// 85, `ERROR_ALREADY_ASSIGNED`: a mapping of that name exists.
    pub const ALREADY_ASSIGNED: u32 = 85;
    /// 87, `ERROR_INVALID_PARAMETER`.
    pub const INVALID_PARAMETER: u32 = 87;
    /// 112, `ERROR_DISK_FULL`.
    pub const DISK_FULL: u32 = 112;
    /// 121, `ERROR_SEM_TIMEOUT`.
    pub const SEM_TIMEOUT: u32 = 121;
    /// 145, `ERROR_DIR_NOT_EMPTY`.
    pub const DIR_NOT_EMPTY: u32 = 145;
    /// ERROR_DIRECTORY: a file where a directory is needed.
    pub const DIRECTORY: u32 = 267;
    /// 183, `ERROR_ALREADY_EXISTS`.
    pub const ALREADY_EXISTS: u32 = 183;
    /// 1117, `ERROR_IO_DEVICE`.
    pub const IO_DEVICE: u32 = 1117;
    /// 1219, `ERROR_SESSION_CREDENTIAL_CONFLICT`: the server is already
    /// connected under another user name.
    pub const SESSION_CREDENTIAL_CONFLICT: u32 = 1219;
    /// 1326, `ERROR_LOGON_FAILURE`: wrong user name or password.
    pub const LOGON_FAILURE: u32 = 1326;
    /// 1450, `ERROR_NO_SYSTEM_RESOURCES`.
    pub const NO_SYSTEM_RESOURCES: u32 = 1450;

    /// Error `code` with Windows' standard English text, or
    /// `Unknown Windows error <code>.` for a code this type does not know
    /// (every constant of this type is known).
    pub fn new(code: u32) -> Self {
        let message = match standard_text(code) {
            Some(text) => text.to_owned(),
            None => format!("Unknown Windows error {code}."),
        };
        Self { code, message }
    }

    /// Error `code` with the text `message` (a PowerShell cmdlet's, say).
    pub fn with_message(code: u32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// The Win32 error code.
    pub fn code(&self) -> u32 {
        self.code
    }

    /// The text.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The failure of `operation` it makes: [`Error::Host`], code
    /// `Unknown`, the text as the message and the code as `os_code`.
    pub fn into_error(self, operation: Operation) -> Error {
        Error::Host {
            operation,
            code: Code::Unknown,
            message: self.message,
            // Win32 codes are small and positive; a larger one keeps its bits,
            // as an HRESULT does.
            os_code: Some(self.code as i32),
            return_value: None,
        }
    }
}

impl fmt::Display for WindowsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (Windows error {})", self.message, self.code)
    }
}

impl std::error::Error for WindowsError {}

/// Windows' English text for the codes the fake host knows.
fn standard_text(code: u32) -> Option<&'static str> {
    Some(match code {
        2 => "The system cannot find the file specified.",
        3 => "The system cannot find the path specified.",
        5 => "Access is denied.",
        8 => "Not enough memory resources are available to process this command.",
        19 => "The media is write protected.",
        21 => "The device is not ready.",
        32 => "The process cannot access the file because it is being used by another process.",
        53 => "The network path was not found.",
        59 => "An unexpected network error occurred.",
        64 => "The specified network name is no longer available.",
        65 => "Network access is denied.",
        67 => "The network name cannot be found.",
        85 => "The local device name is already in use.",
        87 => "The parameter is incorrect.",
        112 => "There is not enough space on the disk.",
        121 => "The semaphore timeout period has expired.",
        145 => "The directory is not empty.",
        183 => "Cannot create a file when that file already exists.",
        1117 => "The request could not be performed because of an I/O device error.",
        1219 => {
            "Multiple connections to a server or shared resource by the same user, \
                 using more than one user name, are not allowed. Disconnect all previous \
                 connections to the server or shared resource and try again."
        }
        1326 => "The user name or password is incorrect.",
        1450 => "Insufficient system resources exist to complete the requested service.",
        _ => return None,
    })
}

/// The failure of `operation` that Windows error `code` makes.
pub(in crate::testing::fake_host) fn windows_error(operation: Operation, code: u32) -> Error {
    WindowsError::new(code).into_error(operation)
}

/// WMI's `WBEM_E_FAILED`, "Generic failure": how the SMB provider refuses
/// a mapping over a stale one (aksArc #111, csi-driver-smb #326).
pub(in crate::testing::fake_host) const GENERIC_FAILURE: u32 = 0x8004_1001;
