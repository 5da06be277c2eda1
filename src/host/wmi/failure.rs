//! How WMI requests fail, and what their failures are as the crate's errors.

use std::time::Duration;

use wmi::WMIError;

use super::value::WmiObject;
use super::{string, unsigned};
use crate::capability::Operation;
use crate::error::{Code, Error, Result};
use crate::host::on_host::host_error;
use crate::host_cause::win32_code;

/// A failed WMI request.
#[derive(Debug)]
pub(crate) struct WmiFailure {
    /// The `HRESULT` it failed with, when it was a COM call's failure.
    pub hresult: Option<i32>,
    /// What failed, in words.
    pub message: String,
    /// The error object the provider left for a failed method call
    /// (`MSFT_WmiError`, or another `__ExtendedStatus`): where the SMB and
    /// iSCSI providers put the Windows error behind a bare `HRESULT`.
    pub error_object: Option<WmiObject>,
    /// How long the request had waited when it was given up, WMI not
    /// having answered within its limit (see `wait::collect`): it may
    /// still run on the host.
    pub gave_up_after: Option<Duration>,
}

impl WmiFailure {
    /// A failure with `hresult` and the provider's `error_object`.
    #[cfg(test)]
    pub fn with_error_object(hresult: i32, error_object: WmiObject) -> Self {
        Self {
            hresult: Some(hresult),
            message: format!("HRESULT {:#X}", hresult as u32),
            error_object: Some(error_object),
            gave_up_after: None,
        }
    }

    /// A request given up after `waited`, WMI not having answered.
    pub fn gave_up(waited: Duration) -> Self {
        Self {
            hresult: None,
            message: format!("no answer from WMI within {waited:?}: given up"),
            error_object: None,
            gave_up_after: Some(waited),
        }
    }

    /// The Windows error code it stands for: the Win32 code the error
    /// object names, else the Win32 code an `HRESULT` of `0x8007xxxx`
    /// wraps, else the `HRESULT`.
    pub fn os_code(&self) -> Option<i32> {
        let named = self.error_object.as_ref().and_then(win32_code_of);
        named.or_else(|| {
            let hresult = self.hresult?;
            Some(win32_code(hresult).map_or(hresult, |code| code as i32))
        })
    }

    /// What the provider said went wrong, in its words, if it said it.
    fn provider_message(&self) -> Option<&str> {
        let object = self.error_object.as_ref()?;
        ["error_WindowsErrorMessage", "Message", "Description"]
            .into_iter()
            .find_map(|name| string(object, name).filter(|m| !m.trim().is_empty()))
    }
}

impl From<WMIError> for WmiFailure {
    fn from(error: WMIError) -> Self {
        let hresult = match &error {
            WMIError::HResultError { hres } => Some(*hres),
            _ => None,
        };
        Self {
            hresult,
            message: error.to_string(),
            error_object: None,
            gave_up_after: None,
        }
    }
}

/// The Win32 code an error object names: `MSFT_WmiError`'s `error_Code`
/// when its `error_Type` says it is a Win32 code, or an `HRESULT` that
/// wraps one. Other kinds (MI result codes) are not Win32 codes.
fn win32_code_of(object: &WmiObject) -> Option<i32> {
    let code = object.get("error_Code").and_then(unsigned)?;
    // 0 names no error: the HRESULT says more.
    let code = u32::try_from(code).ok().filter(|&c| c != 0)?;
    match string(object, "error_Type")?.to_ascii_lowercase().as_str() {
        "win32" => Some(code as i32),
        "hresult" if (code as i32) < 0 => win32_code(code as i32).map(|code| code as i32),
        _ => None,
    }
}

/// A WMI failure of `operation`, with the Windows error behind it (see
/// [`WmiFailure::os_code`]) and the provider's words when it gave some. A
/// request given up, WMI not having answered in time, is
/// [`Error::Timeout`]: the host may still do the work.
pub(crate) fn wmi_error(operation: Operation, failure: WmiFailure) -> Error {
    if let Some(after) = failure.gave_up_after {
        return Error::Timeout { operation, after };
    }
    let message = match failure.provider_message() {
        Some(said) => format!("WMI: {}: {}", failure.message, said.trim()),
        None => format!("WMI: {}", failure.message),
    };
    host_error(operation, message, failure.os_code())
}

/// The `ReturnValue` of a method's output: `0` is success; any other value
/// fails `operation`, with the value as the error's `return_value` (a
/// method's own code, not a Windows error code).
pub(crate) fn check_return(operation: Operation, call: &str, output: &WmiObject) -> Result<()> {
    match output.get("ReturnValue").map(unsigned) {
        Some(Some(0)) => Ok(()),
        Some(Some(code)) => Err(Error::Host {
            operation,
            code: Code::Unknown,
            message: format!("{call} failed with return value {code}"),
            os_code: None,
            return_value: Some(u32::try_from(code).unwrap_or(u32::MAX)),
        }),
        Some(None) | None => Err(host_error(
            operation,
            format!(
                "{call} returned no ReturnValue: {:?}",
                output.get("ReturnValue")
            ),
            None,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::wmi::WmiValue;

    #[test]
    fn a_return_value_is_the_methods_own_code_never_a_windows_error() {
        let output =
            |code: u64| WmiObject::from([("ReturnValue".to_owned(), WmiValue::UInt(code))]);
        let op = Operation::Rescan;
        assert!(check_return(op, "C.M", &output(0)).is_ok());
        // 5 is the Storage provider's "Invalid Parameter": not access denied.
        for code in [5, 40001, 0x8004_1001] {
            let error = check_return(op, "C.M", &output(code)).unwrap_err();
            match &error {
                Error::Host {
                    os_code,
                    return_value,
                    ..
                } => assert_eq!((*os_code, *return_value), (None, Some(code as u32))),
                other => panic!("{other:?}"),
            }
            assert_eq!(error.host_cause(), None, "{error}");
        }
        assert!(check_return(op, "C.M", &WmiObject::new()).is_err());
    }

    fn error_object(kind: &str, code: u64, said: &str) -> WmiObject {
        WmiObject::from([
            ("error_Type".to_owned(), WmiValue::String(kind.to_owned())),
            ("error_Code".to_owned(), WmiValue::UInt(code)),
            (
                "error_WindowsErrorMessage".to_owned(),
                WmiValue::String(said.to_owned()),
            ),
            (
                "Message".to_owned(),
                WmiValue::String("Access is denied.".to_owned()),
            ),
        ])
    }

    #[test]
    fn the_windows_error_comes_from_the_providers_error_object() {
        const WBEM_E_FAILED: i32 = 0x8004_1001_u32 as i32;
        let said = "The user name or password is incorrect.";
        let failure =
            WmiFailure::with_error_object(WBEM_E_FAILED, error_object("Win32", 1326, said));
        let error = wmi_error(Operation::NewSmbGlobalMapping, failure);
        match &error {
            Error::Host {
                os_code, message, ..
            } => {
                assert_eq!(*os_code, Some(1326));
                assert!(message.contains(said), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            error.host_cause(),
            Some(crate::host_cause::HostCause::LogonFailure)
        );

        // An HRESULT that wraps a Win32 code gives that code.
        let wrapped = error_object("HRESULT", 0x8007_0035, "");
        assert_eq!(
            WmiFailure::with_error_object(WBEM_E_FAILED, wrapped).os_code(),
            Some(53)
        );
        // 0 names no error: the HRESULT stays.
        let none = error_object("Win32", 0, "");
        assert_eq!(
            WmiFailure::with_error_object(WBEM_E_FAILED, none).os_code(),
            Some(WBEM_E_FAILED)
        );
        // An MI result code is no Win32 code: the HRESULT stays.
        let mi = error_object("MI", 4, "");
        assert_eq!(
            WmiFailure::with_error_object(WBEM_E_FAILED, mi).os_code(),
            Some(WBEM_E_FAILED)
        );
        // No error object: the HRESULT, or the Win32 code it wraps.
        let bare = WmiFailure::from(WMIError::HResultError {
            hres: 0x8007_0005_u32 as i32,
        });
        assert_eq!(bare.os_code(), Some(5));
        let bare = WmiFailure::from(WMIError::HResultError {
            hres: WBEM_E_FAILED,
        });
        assert_eq!(bare.os_code(), Some(WBEM_E_FAILED));
    }

    #[test]
    fn a_request_given_up_is_a_timeout_of_its_operation() {
        let op = Operation::GetVolumeStats;
        let error = wmi_error(op, WmiFailure::gave_up(Duration::from_secs(30)));
        match &error {
            Error::Timeout { operation, after } => {
                assert_eq!((*operation, *after), (op, Duration::from_secs(30)));
            }
            other => panic!("{other:?}"),
        }
        assert!(error.is_retryable(), "{error}");
    }
}
