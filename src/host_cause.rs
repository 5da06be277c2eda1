//! What Windows said went wrong in a host failure: the few causes a node
//! plugin acts on, read from the Windows error code where the backend has
//! one and from Windows' own message text where only text came back (CSI
//! Proxy reports host failures as text).

use tonic::Code;

/// A cause of an [`Error::Host`](crate::Error::Host) that a driver acts on,
/// from [`Error::host_cause`](crate::Error::host_cause).
///
/// Read from the Windows error code when the backend did the work itself
/// (`os_code`: a Win32 code, or an `HRESULT` wrapping one), otherwise from
/// the text CSI Proxy passed on: Windows' standard English message for the
/// code, or the code itself written as `error 1219`, `(1219)` or
/// `0x800704C3`. A failure none of these name has no cause
/// (`None`), and keeps the code and retry answer of its
/// [`ErrorKind`](crate::ErrorKind).
///
/// ```
/// use csi_proxy_client::{Code, Error, HostCause, Operation};
///
/// let error = Error::host(
///     Operation::NewSmbGlobalMapping,
///     Code::Unknown,
///     "New-SmbGlobalMapping: The user name or password is incorrect.",
/// );
/// assert_eq!(error.host_cause(), Some(HostCause::LogonFailure));
/// assert_eq!(error.csi_code(), Code::PermissionDenied);
/// assert!(!error.is_retryable());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HostCause {
    /// 1219: a mapping to the same server exists under other credentials;
    /// Windows allows one user name per server.
    CredentialConflict,
    /// 1326: the user name or password is wrong.
    LogonFailure,
    /// 53: the server cannot be reached (name not resolved, host down).
    NetworkPathNotFound,
    /// 64: the server dropped the connection.
    NetworkNameDeleted,
    /// 67: the server has no share by that name.
    NetworkNameNotFound,
    /// 85 (or 1202): the local name of a mapping is taken by a stale one,
    /// as a mapping left Disconnected after a restart is.
    StaleMapping,
    /// 5 or 65: access denied (to the object, or to the network share).
    AccessDenied,
    /// The access path is already in use: the folder is the mount point of
    /// a volume already (older proxies answer so for the same volume too).
    PathInUse,
    /// 19: the disk is read-only (write protected).
    WriteProtected,
    /// The partition cannot grow by that little (less than 1 MB): nothing
    /// to grow, in the words of proxies before v1.2.
    NothingToGrow,
    /// 2 or 3: the file or path does not exist.
    PathNotFound,
    /// 145: the folder has files in it.
    DirectoryNotEmpty,
    /// 8, 14 or 1450: the host is out of memory or system resources, as
    /// when leaked SMB mappings pile up.
    OutOfResources,
}

/// Each cause's Win32 codes, the first its own.
const CODES: &[(HostCause, &[u32])] = &[
    (HostCause::CredentialConflict, &[1219]),
    (HostCause::LogonFailure, &[1326]),
    (HostCause::NetworkPathNotFound, &[53]),
    (HostCause::NetworkNameDeleted, &[64]),
    (HostCause::NetworkNameNotFound, &[67]),
    (HostCause::StaleMapping, &[85, 1202]),
    (HostCause::AccessDenied, &[5, 65]),
    (HostCause::WriteProtected, &[19]),
    (HostCause::PathNotFound, &[2, 3]),
    (HostCause::DirectoryNotEmpty, &[145]),
    (HostCause::OutOfResources, &[8, 14, 1450]),
];

/// Windows' standard texts (lower-cased), and the proxies' own words, for
/// each cause. The more particular texts come first: "network access is
/// denied" before "access is denied".
const TEXTS: &[(&str, HostCause)] = &[
    (
        "multiple connections to a server",
        HostCause::CredentialConflict,
    ),
    (
        "user name or password is incorrect",
        HostCause::LogonFailure,
    ),
    ("network path was not found", HostCause::NetworkPathNotFound),
    (
        "network name is no longer available",
        HostCause::NetworkNameDeleted,
    ),
    (
        "network name cannot be found",
        HostCause::NetworkNameNotFound,
    ),
    (
        "local device name is already in use",
        HostCause::StaleMapping,
    ),
    (
        "remembered connection to another network resource",
        HostCause::StaleMapping,
    ),
    ("network access is denied", HostCause::AccessDenied),
    ("access is denied", HostCause::AccessDenied),
    ("access path is already in use", HostCause::PathInUse),
    ("media is write protected", HostCause::WriteProtected),
    ("extent is less than the minimum", HostCause::NothingToGrow),
    ("size not supported", HostCause::NothingToGrow),
    ("cannot find the file specified", HostCause::PathNotFound),
    ("cannot find the path specified", HostCause::PathNotFound),
    ("because it does not exist", HostCause::PathNotFound),
    ("directory is not empty", HostCause::DirectoryNotEmpty),
    ("not enough memory resources", HostCause::OutOfResources),
    ("insufficient system resources", HostCause::OutOfResources),
    ("not enough storage is available", HostCause::OutOfResources),
];

/// The facility of an `HRESULT` that wraps a Win32 code
/// (`HRESULT_FROM_WIN32`).
const WIN32_FACILITY: u32 = 0x8007_0000;

impl HostCause {
    /// The cause of a host failure with Windows error `os_code` (if the
    /// backend had one) and `message`.
    pub(crate) fn classify(os_code: Option<i32>, message: &str) -> Option<Self> {
        os_code
            .and_then(win32_code)
            .and_then(Self::of_code)
            .or_else(|| Self::of_text(message))
    }

    /// The cause of Win32 error `code`, if it is one of them.
    pub fn of_code(code: u32) -> Option<Self> {
        CODES
            .iter()
            .find(|(_, codes)| codes.contains(&code))
            .map(|&(cause, _)| cause)
    }

    /// The cause a message names: Windows' text, or a code written in it.
    fn of_text(message: &str) -> Option<Self> {
        // PowerShell's output, as older proxies pass it on, wraps lines and
        // may escape the line ends: words are compared one space apart.
        let text = message
            .to_lowercase()
            .replace("\\r", " ")
            .replace("\\n", " ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        TEXTS
            .iter()
            .find(|(words, _)| text.contains(words))
            .map(|&(_, cause)| cause)
            .or_else(|| {
                CODES.iter().find_map(|&(cause, codes)| {
                    codes
                        .iter()
                        .any(|&code| names_code(&text, code))
                        .then_some(cause)
                })
            })
    }

    /// The Win32 code of the cause, if it has one (the first, where
    /// several mean the same).
    pub fn win32_code(self) -> Option<u32> {
        CODES
            .iter()
            .find(|&&(cause, _)| cause == self)
            .map(|(_, codes)| codes[0])
    }

    /// One word for it, for logs and metric labels.
    pub fn as_str(self) -> &'static str {
        match self {
            HostCause::CredentialConflict => "credential_conflict",
            HostCause::LogonFailure => "logon_failure",
            HostCause::NetworkPathNotFound => "network_path_not_found",
            HostCause::NetworkNameDeleted => "network_name_deleted",
            HostCause::NetworkNameNotFound => "network_name_not_found",
            HostCause::StaleMapping => "stale_mapping",
            HostCause::AccessDenied => "access_denied",
            HostCause::PathInUse => "path_in_use",
            HostCause::WriteProtected => "write_protected",
            HostCause::NothingToGrow => "nothing_to_grow",
            HostCause::PathNotFound => "path_not_found",
            HostCause::DirectoryNotEmpty => "directory_not_empty",
            HostCause::OutOfResources => "out_of_resources",
        }
    }

    /// The gRPC code a CSI node service answers for it.
    ///
    /// | cause | code | retryable |
    /// |---|---|---|
    /// | `CredentialConflict`, `WriteProtected`, `DirectoryNotEmpty` | `FailedPrecondition` | no: another mapping, the disk's attribute, or the folder's content must change first |
    /// | `LogonFailure`, `AccessDenied` | `PermissionDenied` | no: the secret or the rights must change |
    /// | `NetworkPathNotFound`, `NetworkNameDeleted` | `Unavailable` | yes: the server may come back |
    /// | `NetworkNameNotFound`, `PathNotFound` | `NotFound` | no |
    /// | `StaleMapping`, `PathInUse` | `Aborted` | yes: the retry finds the old state gone, or the running operation done |
    /// | `NothingToGrow` | `Internal` | no (the mounter treats it as success) |
    /// | `OutOfResources` | `ResourceExhausted` | yes |
    pub fn csi_code(self) -> Code {
        match self {
            HostCause::CredentialConflict
            | HostCause::WriteProtected
            | HostCause::DirectoryNotEmpty => Code::FailedPrecondition,
            HostCause::LogonFailure | HostCause::AccessDenied => Code::PermissionDenied,
            HostCause::NetworkPathNotFound | HostCause::NetworkNameDeleted => Code::Unavailable,
            HostCause::NetworkNameNotFound | HostCause::PathNotFound => Code::NotFound,
            HostCause::StaleMapping | HostCause::PathInUse => Code::Aborted,
            HostCause::NothingToGrow => Code::Internal,
            HostCause::OutOfResources => Code::ResourceExhausted,
        }
    }

    /// Whether the same call may succeed later without anything else
    /// changing (see the table on [`csi_code`](Self::csi_code)).
    pub fn is_retryable(self) -> bool {
        matches!(
            self.csi_code(),
            Code::Unavailable | Code::Aborted | Code::ResourceExhausted
        )
    }
}

impl std::fmt::Display for HostCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// The Win32 code in `os_code`: itself when positive, the low word of an
/// `HRESULT` that wraps one (`HRESULT_FROM_WIN32`).
pub(crate) fn win32_code(os_code: i32) -> Option<u32> {
    let bits = os_code as u32;
    match os_code {
        1.. => Some(bits),
        _ if bits & 0xFFFF_0000 == WIN32_FACILITY => Some(bits & 0xFFFF),
        _ => None,
    }
}

/// Whether lower-cased `text` writes Win32 code `code` the ways host
/// layers do: `error 1219`, `error code 1219`, `(1219)`, `0x800704c3`. A
/// bare `(2)` is too common in command output to mean error 2: only codes
/// of two digits or more count in parentheses.
fn names_code(text: &str, code: u32) -> bool {
    let hresult = format!("0x{:08x}", WIN32_FACILITY | code);
    let mut written = vec![format!("error {code}"), format!("error code {code}")];
    if code >= 10 {
        written.push(format!("({code})"));
    }
    written.iter().any(|written| {
        text.match_indices(written.as_str()).any(|(at, _)| {
            // Not the start of a longer number: "error 53" is not "error 530".
            !text[at + written.len()..].starts_with(|c: char| c.is_ascii_digit())
        })
    }) || text.contains(&hresult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_win_over_text_and_hresults_unwrap() {
        assert_eq!(
            HostCause::classify(Some(1219), "anything"),
            Some(HostCause::CredentialConflict)
        );
        let hresult = (WIN32_FACILITY | 1326) as i32;
        assert_eq!(
            HostCause::classify(Some(hresult), ""),
            Some(HostCause::LogonFailure)
        );
        // A WMI HRESULT that wraps no Win32 code says nothing; the text may.
        let wbem = 0x8004_1002_u32 as i32;
        assert_eq!(HostCause::classify(Some(wbem), "no such thing"), None);
        assert_eq!(
            HostCause::classify(Some(wbem), "Access is denied."),
            Some(HostCause::AccessDenied)
        );
    }

    #[test]
    fn windows_texts_and_written_codes_are_read() {
        let cases = [
            ("Multiple connections to a server or shared resource by the same user, using more than one user name, are not allowed.", HostCause::CredentialConflict),
            ("The network path was not found.", HostCause::NetworkPathNotFound),
            ("The network name cannot be found.", HostCause::NetworkNameNotFound),
            ("Network access is denied.", HostCause::AccessDenied),
            ("The requested access path is already in use.", HostCause::PathInUse),
            ("Resize-Partition : Size Not Supported", HostCause::NothingToGrow),
            ("failed with error 64", HostCause::NetworkNameDeleted),
            ("WinError (1219)", HostCause::CredentialConflict),
            ("hr=0x80070043", HostCause::NetworkNameNotFound),
            ("Not enough memory resources are available to process this command.", HostCause::OutOfResources),
        ];
        for (text, cause) in cases {
            assert_eq!(HostCause::classify(None, text), Some(cause), "{text}");
        }
        // A longer number is not the code, nor is a small one in brackets.
        assert_eq!(HostCause::classify(None, "error 530"), None);
        assert_eq!(HostCause::classify(None, "attempt (2) of 3"), None);
        // Wrapped and escaped PowerShell output reads as one line.
        assert_eq!(
            HostCause::classify(None, r"output: The user name or\r\npassword is  incorrect."),
            Some(HostCause::LogonFailure)
        );
        assert_eq!(HostCause::classify(None, "disk 2 not found"), None);
    }

    #[test]
    fn every_cause_has_a_code_a_word_and_a_retry_answer() {
        for &(cause, codes) in CODES {
            assert_eq!(cause.win32_code(), Some(codes[0]));
            for &code in codes {
                assert_eq!(HostCause::of_code(code), Some(cause));
            }
        }
        assert!(HostCause::NetworkPathNotFound.is_retryable());
        assert!(!HostCause::CredentialConflict.is_retryable());
        assert_eq!(HostCause::PathInUse.csi_code(), Code::Aborted);
        assert_eq!(HostCause::LogonFailure.to_string(), "logon_failure");
    }
}
