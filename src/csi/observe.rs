//! One tracing span, one log line and (feature `metrics`) two metrics per
//! CSI call: its method, the code it answered and how long it took.

use std::future::Future;
use std::time::Instant;

use tracing::Instrument;

use crate::error::code_name;
use crate::{Code, Status};

/// CSI calls the plugin answered, by `method` (`NodeStageVolume`, ...)
/// and `code` (`OK`, `NOT_FOUND`, ..., or `CANCELLED` when kubelet stopped
/// waiting), with the `metrics` feature.
pub const CSI_CALLS_TOTAL: &str = "csi_proxy_client_csi_calls_total";

/// How long those calls took, in seconds, by `method`.
pub const CSI_CALL_DURATION_SECONDS: &str = "csi_proxy_client_csi_call_duration_seconds";

/// Runs `work`, the handler of CSI call `method` for volume `volume_id`
/// (empty: none), in a span `csi_call` with `method`, `volume_id`, and,
/// once it answered, `code` and `duration_ms`; records the metrics.
pub(crate) async fn observed<T>(
    method: &'static str,
    volume_id: &str,
    work: impl Future<Output = Result<T, Status>>,
) -> Result<T, Status> {
    let span = tracing::info_span!(
        "csi_call",
        method,
        volume_id,
        code = tracing::field::Empty,
        duration_ms = tracing::field::Empty,
    );
    let mut call = Call {
        method,
        started: Instant::now(),
        span: span.clone(),
        answered: false,
    };
    let outcome = work.instrument(span).await;
    let code = match &outcome {
        Ok(_) => Code::Ok,
        Err(status) => status.code(),
    };
    call.answered = true;
    call.end(code, outcome.as_ref().err());
    outcome
}

/// A call being answered; dropped unanswered (kubelet cancelled it, or the
/// connection went), it is recorded as `CANCELLED`.
struct Call {
    method: &'static str,
    started: Instant,
    span: tracing::Span,
    answered: bool,
}

impl Call {
    fn end(&self, code: Code, error: Option<&Status>) {
        let elapsed = self.started.elapsed();
        let millis = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        self.span.record("code", code_name(code));
        self.span.record("duration_ms", millis);
        let _in = self.span.enter();
        match error {
            None => tracing::debug!("answered"),
            Some(status) if code == Code::Cancelled => {
                tracing::info!(message = %status.message(), "cancelled")
            }
            Some(status) => tracing::warn!(error = %status.message(), "answered with an error"),
        }
        record(self.method, code, elapsed.as_secs_f64());
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        if !self.answered {
            self.end(Code::Cancelled, None);
        }
    }
}

#[cfg(feature = "metrics")]
fn record(method: &'static str, code: Code, seconds: f64) {
    ::metrics::counter!(CSI_CALLS_TOTAL, "method" => method, "code" => code_name(code))
        .increment(1);
    ::metrics::histogram!(CSI_CALL_DURATION_SECONDS, "method" => method).record(seconds);
}

#[cfg(not(feature = "metrics"))]
fn record(_: &'static str, _: Code, _: f64) {}

/// Describes the two metrics to the installed recorder (their units and
/// help texts), as [`crate::metrics::describe`] does the client's.
#[cfg(feature = "metrics")]
pub(crate) fn describe() {
    use ::metrics::{describe_counter, describe_histogram, Unit};
    describe_counter!(
        CSI_CALLS_TOTAL,
        Unit::Count,
        "CSI calls the node plugin answered, by method and code"
    );
    describe_histogram!(
        CSI_CALL_DURATION_SECONDS,
        Unit::Seconds,
        "Duration of the CSI calls the node plugin answered"
    );
}

#[cfg(not(feature = "metrics"))]
pub(crate) fn describe() {}
