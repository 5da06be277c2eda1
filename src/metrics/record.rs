//! Recording through the `metrics` facade (the `metrics` feature).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Instant;

use ::metrics::{counter, gauge, histogram, Counter, Histogram, Recorder, SharedString};

use super::*;
use crate::capability::Operation;
use crate::error::{outcome, Result};
use crate::group::ApiGroup;
use crate::version::ApiVersion;

/// One call being measured. Dropped before [`finish`](Self::finish), as
/// when the caller stops waiting (a `select!`, its own timeout, a cancelled
/// CSI request), it records the call as `cancelled`.
pub(crate) struct CallTimer<'a> {
    started: Instant,
    series: &'a CallSeries,
    operation: Operation,
    /// Asked only when the call ends, so that it names the version serving
    /// the group then.
    version: &'a (dyn Fn() -> CallVersion + Sync),
    finished: bool,
}

impl<'a> CallTimer<'a> {
    pub fn start(
        series: &'a CallSeries,
        operation: Operation,
        version: &'a (dyn Fn() -> CallVersion + Sync),
    ) -> Self {
        Self {
            started: Instant::now(),
            series,
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
        let key = (self.operation, (self.version)(), outcome);
        self.series.record(key, seconds);
    }
}

impl Drop for CallTimer<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.record("cancelled");
        }
    }
}

/// The call series of one group, registered once each: a call then costs a
/// lookup, not building, hashing and registering its labels (which the
/// `metrics` facade would do on every call, recorder or not).
pub(crate) struct CallSeries {
    group: ApiGroup,
    registered: RwLock<HashMap<SeriesKey, Registered, BuildHasherDefault<SmallKeyHasher>>>,
}

/// Method, version and outcome of a call.
type SeriesKey = (Operation, CallVersion, &'static str);

/// A multiply-rotate hash (rustc's `FxHash`) for the few small keys the SDK
/// makes itself, which need no protection from chosen keys: a fraction of
/// SipHash's cost per call.
#[derive(Default)]
struct SmallKeyHasher(u64);

impl SmallKeyHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for SmallKeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(n.into());
    }

    fn write_u32(&mut self, n: u32) {
        self.add(n.into());
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A series' handles, and the recorder they belong to.
struct Registered {
    recorder: usize,
    calls: Counter,
    duration: Histogram,
}

impl Registered {
    /// One call that took `seconds`.
    fn observe(&self, seconds: f64) {
        self.calls.increment(1);
        self.duration.record(seconds);
    }
}

impl CallSeries {
    pub fn new(group: ApiGroup) -> Self {
        Self {
            group,
            registered: RwLock::default(),
        }
    }

    fn record(&self, key: SeriesKey, seconds: f64) {
        // Handles registered with another recorder (none was installed
        // then, or a test's local one) are registered again.
        let recorder = ::metrics::with_recorder(|r| r as *const dyn Recorder as *const () as usize);
        let registered = self
            .registered
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(series) = registered.get(&key).filter(|s| s.recorder == recorder) {
            return series.observe(seconds);
        }
        drop(registered);
        let series = self.register(key, recorder);
        series.observe(seconds);
        let mut registered = self
            .registered
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        registered.insert(key, series);
    }

    fn register(&self, (operation, version, outcome): SeriesKey, recorder: usize) -> Registered {
        let version = version.label();
        let (group, method) = (self.group.as_str(), operation.name());
        Registered {
            recorder,
            calls: counter!(CALLS_TOTAL, "group" => group, "version" => version.clone(),
                "method" => method, "outcome" => outcome),
            duration: histogram!(CALL_DURATION_SECONDS, "group" => group, "version" => version,
                "method" => method),
        }
    }
}

/// What served a call, for its `version` label.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum CallVersion {
    Negotiated(Option<ApiVersion>),
    /// A backend given directly (a mock, or the host).
    Direct(crate::served_by::ServedBy),
}

impl CallVersion {
    fn label(self) -> SharedString {
        match self {
            CallVersion::Negotiated(version) => version_label(version),
            CallVersion::Direct(by) => SharedString::const_str(by.as_str()),
        }
    }
}

/// A negotiation of `group` ended so: `served`, `not_served`,
/// `untrusted_server` or `failed`.
pub(crate) fn negotiated(group: ApiGroup, result: &'static str) {
    counter!(NEGOTIATIONS_TOTAL, "group" => group.as_str(), "result" => result).increment(1);
}

/// Negotiation passed over the endpoint of `group` `version`, for `why`.
pub(crate) fn passed_over(group: ApiGroup, version: ApiVersion, why: PassedOver) {
    counter!(UNTRUSTED_SERVERS_TOTAL, "group" => group.as_str(),
        "version" => version_label(Some(version)), "reason" => why.as_str())
    .increment(1);
}

/// The version serving `group` changed.
pub(crate) fn version_changed(group: ApiGroup, from: Option<ApiVersion>, to: Option<ApiVersion>) {
    counter!(VERSION_CHANGES_TOTAL, "group" => group.as_str(),
        "from" => version_label(from), "to" => version_label(to))
    .increment(1);
}

/// The gauges of one group: which version serves it, and whether it is
/// served. They follow the group's state, which changes at each look and
/// as soon as the connection in use ends, even if no call notices.
#[derive(Clone)]
pub(crate) struct GroupGauges {
    group: ApiGroup,
    shown: Arc<Mutex<Shown>>,
}

/// What the gauges show now.
#[derive(Default)]
struct Shown {
    version: Option<ApiVersion>,
}

impl GroupGauges {
    pub fn new(group: ApiGroup) -> Self {
        Self {
            group,
            shown: Arc::default(),
        }
    }

    /// The group is served by `version`, or not served.
    pub fn show(&self, version: Option<ApiVersion>) {
        set(self.group, &mut lock(&self.shown), version);
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
    let Some(version) = version else {
        return SharedString::const_str("none");
    };
    match crate::registry::version_name(version) {
        Some(name) => SharedString::const_str(name),
        None => SharedString::from_owned(version.to_string()),
    }
}
