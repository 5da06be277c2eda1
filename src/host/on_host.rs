//! Running host work off the async runtime, and its failures as errors.

use std::fmt::Display;
use std::io;

use tracing::Instrument;

use crate::capability::Operation;
use crate::error::{Code, Error, Result};

/// Runs `work` on a blocking thread. A caller whose deadline passes stops
/// waiting; the work goes on to its end, as a request already sent to a
/// proxy does.
pub(super) async fn on_host<T, F>(operation: Operation, work: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    let span = tracing::debug_span!(
        "csi_proxy_call",
        group = %operation.group(),
        version = "host",
        method = operation.name(),
        outcome = tracing::field::Empty,
    );
    let result = match tokio::task::spawn_blocking(work)
        .instrument(span.clone())
        .await
    {
        Ok(result) => result,
        Err(failed) => Err(host_error(
            operation,
            format!("the host call did not finish: {failed}"),
            None,
        )),
    };
    span.record("outcome", crate::error::outcome(&result));
    result
}

/// A failure of the host, as the proxy would report it (`Unknown`), with
/// the Windows error code when there is one.
pub(super) fn host_error(
    operation: Operation,
    message: impl Into<String>,
    os_code: Option<i32>,
) -> Error {
    Error::Host {
        operation,
        code: Code::Unknown,
        message: message.into(),
        os_code,
    }
}

/// An I/O failure on `subject` (a path, a service), with its Win32 code.
pub(super) fn io_error(operation: Operation, subject: impl Display, error: io::Error) -> Error {
    host_error(
        operation,
        format!("{subject}: {error}"),
        error.raw_os_error(),
    )
}

/// A failure of a Windows API call on `subject`, with its code: the Win32
/// error for Win32 calls, the `HRESULT` for COM and WMI.
pub(super) fn windows_error(
    operation: Operation,
    subject: impl Display,
    error: windows::core::Error,
) -> Error {
    let code = win32_code(&error).unwrap_or(error.code().0);
    host_error(
        operation,
        format!("{subject}: {}", error.message()),
        Some(code),
    )
}

/// The Win32 error behind `error`, if it is one wrapped as an `HRESULT`
/// (`0x8007xxxx`).
pub(super) fn win32_code(error: &windows::core::Error) -> Option<i32> {
    let hresult = error.code().0 as u32;
    (hresult & 0xFFFF_0000 == 0x8007_0000).then_some((hresult & 0xFFFF) as i32)
}
