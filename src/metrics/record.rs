//! Recording through the `metrics` facade (the `metrics` feature).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use ::metrics::{counter, gauge, histogram, SharedString};

use super::*;
use crate::capability::Operation;
use crate::error::{outcome, Result};
use crate::group::ApiGroup;
use crate::transport::ProxyChannel;
use crate::version::ApiVersion;

/// One call being measured. Dropped before [`finish`](Self::finish), as
/// when the caller stops waiting (a `select!`, its own timeout, a cancelled
/// CSI request), it records the call as `cancelled`.
pub(crate) struct CallTimer<'a> {
    started: Instant,
    group: ApiGroup,
    operation: Operation,
    /// Asked only when the call ends, so that it names the version serving
    /// the group then.
    version: &'a (dyn Fn() -> CallVersion + Sync),
    finished: bool,
}

impl<'a> CallTimer<'a> {
    pub fn start(
        group: ApiGroup,
        operation: Operation,
        version: &'a (dyn Fn() -> CallVersion + Sync),
    ) -> Self {
        Self {
            started: Instant::now(),
            group,
            operation,
            version,
            finished: false,
        }
    }

    /// Records the call with the outcome of `result`.
    pub fn finish<T>(mut self, result: &Result<T>) {
        self.finished = true;
        self.record(outcome(result));
    }

    fn record(&self, outcome: &'static str) {
        let seconds = self.started.elapsed().as_secs_f64();
        let version = (self.version)().label();
        let (group, method) = (self.group.as_str(), self.operation.name());
        counter!(CALLS_TOTAL, "group" => group, "version" => version.clone(),
            "method" => method, "outcome" => outcome)
        .increment(1);
        histogram!(CALL_DURATION_SECONDS, "group" => group, "version" => version,
            "method" => method)
        .record(seconds);
    }
}

impl Drop for CallTimer<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.record("cancelled");
        }
    }
}

/// What served a call, for its `version` label.
pub(crate) enum CallVersion {
    Negotiated(Option<ApiVersion>),
    /// A backend given directly (a mock).
    Direct,
}

impl CallVersion {
    fn label(self) -> SharedString {
        match self {
            CallVersion::Negotiated(version) => version_label(version),
            CallVersion::Direct => SharedString::const_str("direct"),
        }
    }
}

/// A negotiation of `group` ended so: `served`, `not_served` or `failed`.
pub(crate) fn negotiated(group: ApiGroup, result: &'static str) {
    counter!(NEGOTIATIONS_TOTAL, "group" => group.as_str(), "result" => result).increment(1);
}

/// The version serving `group` changed.
pub(crate) fn version_changed(group: ApiGroup, from: Option<ApiVersion>, to: Option<ApiVersion>) {
    counter!(VERSION_CHANGES_TOTAL, "group" => group.as_str(),
        "from" => version_label(from), "to" => version_label(to))
    .increment(1);
}

/// The gauges of one group: which version serves it, and whether it is
/// served. Set at each negotiation of the group, and cleared as soon as the
/// connection in use ends, even if no call notices.
pub(crate) struct GroupGauges {
    group: ApiGroup,
    shown: Arc<Mutex<Shown>>,
}

/// What the gauges show now.
#[derive(Default)]
struct Shown {
    /// Counts the connections shown; a watcher of an older connection must
    /// not clear what a newer one shows.
    connection: u64,
    version: Option<ApiVersion>,
}

impl GroupGauges {
    pub fn new(group: ApiGroup) -> Self {
        Self {
            group,
            shown: Arc::default(),
        }
    }

    /// The group is served by `version` over `channel`, or not served.
    pub fn show(&self, served: Option<(ApiVersion, &ProxyChannel)>) {
        let mut shown = lock(&self.shown);
        shown.connection += 1;
        set(self.group, &mut shown, served.map(|(version, _)| version));
        let Some((_, channel)) = served else {
            return;
        };
        let (group, watched, connection) = (self.group, self.shown.clone(), shown.connection);
        let ended = channel.ended();
        tokio::spawn(async move {
            ended.await;
            let mut shown = lock(&watched);
            if shown.connection == connection {
                set(group, &mut shown, None);
            }
        });
    }
}

fn lock(shown: &Mutex<Shown>) -> std::sync::MutexGuard<'_, Shown> {
    // The gauges are only numbers: a panic elsewhere leaves them usable.
    shown.lock().unwrap_or_else(PoisonError::into_inner)
}

fn set(group: ApiGroup, shown: &mut Shown, version: Option<ApiVersion>) {
    let name = group.as_str();
    if let Some(old) = shown.version.filter(|&old| Some(old) != version) {
        gauge!(API_VERSION, "group" => name, "version" => version_label(Some(old))).set(0.0);
    }
    if let Some(new) = version {
        gauge!(API_VERSION, "group" => name, "version" => version_label(Some(new))).set(1.0);
    }
    gauge!(GROUP_SERVED, "group" => name).set(if version.is_some() { 1.0 } else { 0.0 });
    shown.version = version;
}

/// A version's name without allocating for the versions CSI Proxy has;
/// `none` for no version.
fn version_label(version: Option<ApiVersion>) -> SharedString {
    const KNOWN: [(ApiVersion, &str); 7] = [
        (ApiVersion::V1ALPHA1, "v1alpha1"),
        (ApiVersion::V1ALPHA2, "v1alpha2"),
        (ApiVersion::V1BETA1, "v1beta1"),
        (ApiVersion::V1BETA2, "v1beta2"),
        (ApiVersion::V1BETA3, "v1beta3"),
        (ApiVersion::V1, "v1"),
        (ApiVersion::V2ALPHA1, "v2alpha1"),
    ];
    let Some(version) = version else {
        return SharedString::const_str("none");
    };
    match KNOWN.iter().find(|(known, _)| *known == version) {
        Some((_, name)) => SharedString::const_str(name),
        None => SharedString::from_owned(version.to_string()),
    }
}
