//! A `metrics` recorder for the tests: it logs every update in order, so a
//! test can ask what a counter adds up to, which value a gauge was set to
//! last, and which label values were ever used.

use std::sync::{Arc, Mutex};

use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
    SharedString, Unit,
};

/// A metric's name and the unit it was described with.
type Described = (String, Option<Unit>);

/// One update of one series.
#[derive(Clone, Debug)]
pub struct Update {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub change: Change,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Change {
    Add(u64),
    Set(f64),
    Sample(f64),
}

/// The recorder; clones share the log. Install it for the current thread
/// with [`metrics::set_default_local_recorder`] (a current-thread runtime
/// keeps every task of the test on that thread).
#[derive(Clone, Default)]
pub struct LogRecorder {
    log: Arc<Mutex<Vec<Update>>>,
    units: Arc<Mutex<Vec<Described>>>,
}

impl LogRecorder {
    pub fn updates(&self) -> Vec<Update> {
        self.log.lock().unwrap().clone()
    }

    /// Updates of `name` whose labels include `labels`.
    fn of<'a>(&self, name: &str, labels: &'a [(&'a str, &'a str)]) -> Vec<Change> {
        self.updates()
            .into_iter()
            .filter(|u| u.name == name)
            .filter(|u| {
                labels
                    .iter()
                    .all(|(k, v)| u.labels.iter().any(|(lk, lv)| lk == k && lv == v))
            })
            .map(|u| u.change)
            .collect()
    }

    /// What the counter `name` adds up to over the series matching `labels`.
    pub fn count(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        self.of(name, labels)
            .into_iter()
            .map(|c| match c {
                Change::Add(n) => n,
                other => panic!("{name} is no counter: {other:?}"),
            })
            .sum()
    }

    /// The value the gauge `name` was set to last.
    pub fn gauge(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.of(name, labels)
            .into_iter()
            .rev()
            .find_map(|c| match c {
                Change::Set(v) => Some(v),
                _ => None,
            })
    }

    /// The samples of the histogram `name`.
    pub fn samples(&self, name: &str, labels: &[(&str, &str)]) -> Vec<f64> {
        self.of(name, labels)
            .into_iter()
            .filter_map(|c| match c {
                Change::Sample(v) => Some(v),
                _ => None,
            })
            .collect()
    }

    /// The unit each metric was described with.
    pub fn unit(&self, name: &str) -> Option<Unit> {
        let units = self.units.lock().unwrap();
        units.iter().find(|(n, _)| n == name).and_then(|d| d.1)
    }

    fn handle(&self, key: &Key) -> Arc<Series> {
        Arc::new(Series {
            log: self.log.clone(),
            name: key.name().to_owned(),
            labels: key
                .labels()
                .map(|l| (l.key().to_owned(), l.value().to_owned()))
                .collect(),
        })
    }

    fn describe(&self, name: KeyName, unit: Option<Unit>) {
        self.units
            .lock()
            .unwrap()
            .push((name.as_str().to_owned(), unit));
    }
}

/// One series' handle: each update goes to the log.
struct Series {
    log: Arc<Mutex<Vec<Update>>>,
    name: String,
    labels: Vec<(String, String)>,
}

impl Series {
    fn push(&self, change: Change) {
        self.log.lock().unwrap().push(Update {
            name: self.name.clone(),
            labels: self.labels.clone(),
            change,
        });
    }
}

impl CounterFn for Series {
    fn increment(&self, value: u64) {
        self.push(Change::Add(value));
    }
    fn absolute(&self, _: u64) {
        panic!("the SDK only increments counters");
    }
}

impl GaugeFn for Series {
    fn increment(&self, _: f64) {
        panic!("the SDK only sets gauges");
    }
    fn decrement(&self, _: f64) {
        panic!("the SDK only sets gauges");
    }
    fn set(&self, value: f64) {
        self.push(Change::Set(value));
    }
}

impl HistogramFn for Series {
    fn record(&self, value: f64) {
        self.push(Change::Sample(value));
    }
}

impl Recorder for LogRecorder {
    fn describe_counter(&self, name: KeyName, unit: Option<Unit>, _: SharedString) {
        self.describe(name, unit);
    }
    fn describe_gauge(&self, name: KeyName, unit: Option<Unit>, _: SharedString) {
        self.describe(name, unit);
    }
    fn describe_histogram(&self, name: KeyName, unit: Option<Unit>, _: SharedString) {
        self.describe(name, unit);
    }
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.handle(key))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(self.handle(key))
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(self.handle(key))
    }
}
