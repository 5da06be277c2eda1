//! Running host work off the async runtime, and its failures as errors.

use std::fmt::Display;
use std::io;
use std::sync::Arc;

use tracing::Instrument;

use super::in_flight::{Admitted, InFlight};
use crate::capability::Operation;
use crate::error::{Code, Error, Result};

/// Runs `work` on a blocking thread, if `in_flight` admits it (see
/// [`InFlight::admit`]; `object` is what it works on). A caller whose
/// deadline passes stops waiting; the work goes on to its end, as a
/// request already sent to a proxy does, and counts as stuck until then.
pub(super) async fn on_host<T, F>(
    in_flight: &Arc<InFlight>,
    operation: Operation,
    object: impl Display,
    work: F,
) -> Result<T>
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
    let result = run_admitted(in_flight, operation, object.to_string(), work)
        .instrument(span.clone())
        .await;
    span.record("outcome", crate::error::outcome(&result));
    result
}

async fn run_admitted<T, F>(
    in_flight: &Arc<InFlight>,
    operation: Operation,
    object: String,
    work: F,
) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    let admitted = Arc::new(in_flight.admit(operation, &object)?);
    // Dropped before the work's end only when the caller stops waiting.
    let waiting = AbandonUnlessDone(Some(admitted.clone()));
    let joined = tokio::task::spawn_blocking(move || {
        let result = work();
        drop(admitted);
        result
    })
    .await;
    waiting.done();
    match joined {
        Ok(result) => result,
        Err(failed) => Err(host_error(
            operation,
            format!("the host call did not finish: {failed}"),
            None,
        )),
    }
}

/// Marks its call stuck when dropped before [`AbandonUnlessDone::done`].
struct AbandonUnlessDone(Option<Arc<Admitted>>);

impl AbandonUnlessDone {
    fn done(mut self) {
        self.0 = None;
    }
}

impl Drop for AbandonUnlessDone {
    fn drop(&mut self) {
        if let Some(admitted) = &self.0 {
            admitted.abandon();
        }
    }
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
        return_value: None,
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
    let hresult = error.code().0;
    (hresult < 0)
        .then(|| crate::host_cause::win32_code(hresult))
        .flatten()
        .map(|code| code as i32)
}
