//! The seam between the groups served through WMI and WMI itself.
//!
//! All a group asks of WMI is a query, or a method call, in a namespace,
//! within a [`Limit`]. [`OsWmi`] does them through COM (`com`), waiting
//! for WMI in slices (`wait`) so that a request a hung provider never
//! answers is given up once its caller stops waiting; the tests answer
//! them from recorded objects shaped as Microsoft documents each class,
//! and check the queries and calls made. What a group makes of the
//! answers (status codes, return values, missing objects) is therefore
//! tested without a Windows storage stack.

mod com;
mod failure;
mod value;
pub(super) mod wait;

use std::sync::Arc;
use std::time::Duration;

use super::in_flight::InFlight;
use super::on_host::{host_error, on_host};
use crate::capability::Operation;
use crate::error::{Error, Result};
use crate::group::ApiGroup;

pub(crate) use failure::{check_return, wmi_error, WmiFailure};
pub(crate) use value::{WmiObject, WmiValue, PATH};
pub(crate) use wait::Limit;

/// What the groups ask of WMI. Each request waits for WMI within `limit`
/// (see [`wait::collect`]): past it, the request is given up
/// ([`WmiFailure::gave_up`]), and none is started
/// ([`Limit::check`]).
pub(crate) trait Wmi: Send + Sync + 'static {
    /// The objects that the WQL `query` selects in `namespace`.
    fn query(
        &self,
        namespace: &str,
        query: &str,
        limit: &Limit,
    ) -> std::result::Result<Vec<WmiObject>, WmiFailure>;

    /// Calls `method` of `class` on `target` (the class itself for a
    /// static method, an instance's `__PATH` otherwise) with `params`;
    /// returns the output parameters, `ReturnValue` among them. `params`
    /// may hold secrets: an implementation never logs them, nor puts them
    /// in an error.
    fn call(
        &self,
        namespace: &str,
        class: &str,
        target: &str,
        method: &str,
        params: Vec<(&'static str, WmiValue)>,
        limit: &Limit,
    ) -> std::result::Result<WmiObject, WmiFailure>;
}

/// The host's WMI: one connection per request, each on a blocking thread
/// of its own. The process's first request sets COM up (see
/// `docs/host-process.md`).
pub(crate) struct OsWmi;

impl Wmi for OsWmi {
    fn query(
        &self,
        namespace: &str,
        query: &str,
        limit: &Limit,
    ) -> std::result::Result<Vec<WmiObject>, WmiFailure> {
        limit.check()?;
        let services = com::services(namespace)?;
        wait::collect(&mut com::query(&services, query)?, limit)
    }

    fn call(
        &self,
        namespace: &str,
        class: &str,
        target: &str,
        method: &str,
        params: Vec<(&'static str, WmiValue)>,
        limit: &Limit,
    ) -> std::result::Result<WmiObject, WmiFailure> {
        limit.check()?;
        // One connection for the method's input and for the call: the
        // `wmi` crate's would drop the error object a failed call leaves.
        let services = com::services(namespace)?;
        let input = com::input(&services, class, method, params)?;
        let mut output = com::call(&services, target, method, input.as_ref())?;
        let output = wait::collect(&mut output, limit)?.into_iter().next();
        Ok(output.unwrap_or_default())
    }
}

/// A group's way to WMI: the namespace it asks in, and its host calls in
/// flight (bounded, see [`InFlight`]).
pub(crate) struct WmiGroup {
    wmi: Arc<dyn Wmi>,
    namespace: &'static str,
    in_flight: Arc<InFlight>,
    /// How long a change goes on after its caller left, if not its
    /// default deadline (tests).
    mutation_grace: Option<Duration>,
}

impl WmiGroup {
    /// `group`'s requests to `wmi`, in `namespace`.
    pub fn new(wmi: Arc<dyn Wmi>, group: ApiGroup, namespace: &'static str) -> Self {
        Self {
            wmi,
            namespace,
            in_flight: InFlight::of_process(group),
            mutation_grace: None,
        }
    }

    /// The same, with another grace for changes whose caller left.
    #[cfg(test)]
    pub fn with_mutation_grace(mut self, grace: Duration) -> Self {
        self.mutation_grace = Some(grace);
        self
    }

    /// The group's host calls in flight, which its calls that are not
    /// WMI's count in too.
    pub fn in_flight(&self) -> &Arc<InFlight> {
        &self.in_flight
    }

    /// Runs `work` for `op` on `object` (a disk, a volume, a share...;
    /// empty for the whole group) on a blocking thread (see `on_host`),
    /// with its requests. They wait for WMI while the caller waits, and a
    /// change ([`Operation::is_mutating`]) for its default deadline
    /// (`Effect::default_deadline`: 2 minutes, 10 for a format or a
    /// resize)
    /// after: then a request WMI has not answered is given up within a
    /// [`wait::SLICE`], no other is started, and the thread goes back.
    pub async fn run<T, F>(
        &self,
        op: Operation,
        object: impl std::fmt::Display,
        work: F,
    ) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(Requests<'_>) -> Result<T> + Send + 'static,
    {
        let (wmi, namespace) = (self.wmi.clone(), self.namespace);
        // Dropped with this future when the caller stops waiting.
        // A change may still be under way in its provider: it keeps its
        // object in progress a while longer (see `wait`).
        let grace = if op.is_mutating() {
            self.mutation_grace
                .unwrap_or(op.effect().default_deadline())
        } else {
            Duration::ZERO
        };
        let (limit, _caller_waits) = Limit::while_caller_waits(grace);
        on_host(&self.in_flight, op, object, move || {
            work(Requests {
                wmi: &*wmi,
                namespace,
                op,
                limit: &limit,
            })
        })
        .await
    }
}

/// One operation's requests to WMI in one namespace: their failures are
/// that operation's errors.
pub(crate) struct Requests<'a> {
    pub wmi: &'a dyn Wmi,
    pub namespace: &'static str,
    pub op: Operation,
    limit: &'a Limit,
}

impl Requests<'_> {
    /// The objects `query` selects.
    pub fn query(&self, query: &str) -> Result<Vec<WmiObject>> {
        (self.wmi.query(self.namespace, query, self.limit)).map_err(|e| wmi_error(self.op, e))
    }

    /// The first object `query` selects; none is an error: `what` not
    /// found.
    pub fn one(&self, query: &str, what: impl std::fmt::Display) -> Result<WmiObject> {
        let found = self.query(query)?.into_iter().next();
        found.ok_or_else(|| self.error(format!("{what} not found")))
    }

    /// Calls `method` of `class` on `target`, which must return 0 or one
    /// of `also_fine`; its output.
    pub fn call_with(
        &self,
        class: &str,
        target: &str,
        method: &str,
        params: Vec<(&'static str, WmiValue)>,
        also_fine: &[u64],
    ) -> Result<WmiObject> {
        let called = self
            .wmi
            .call(self.namespace, class, target, method, params, self.limit);
        let output = called.map_err(|e| wmi_error(self.op, e))?;
        match output.get("ReturnValue").and_then(unsigned) {
            Some(code) if also_fine.contains(&code) => {}
            _ => check_return(self.op, &format!("{class}.{method}"), &output)?,
        }
        Ok(output)
    }

    /// Calls `method` of `class` on `target`, which must return 0.
    pub fn call(
        &self,
        class: &str,
        target: &str,
        method: &str,
        params: Vec<(&'static str, WmiValue)>,
    ) -> Result<()> {
        self.call_with(class, target, method, params, &[]).map(drop)
    }

    /// The objects of `class` associated with `object` through
    /// `association`, in which they play `role` and `object` plays
    /// `object_role`.
    pub fn associated(
        &self,
        object: &WmiObject,
        association: &str,
        class: &str,
        role: &str,
        object_role: &str,
    ) -> Result<Vec<WmiObject>> {
        let path = self.path_of(object)?;
        self.query(&format!(
            "ASSOCIATORS OF {{{path}}} WHERE AssocClass = {association} \
             ResultClass = {class} ResultRole = {role} Role = {object_role}"
        ))
    }

    /// The path of an object a query gave.
    pub fn path_of<'o>(&self, object: &'o WmiObject) -> Result<&'o str> {
        string(object, PATH).ok_or_else(|| self.error("WMI gave an object without a path"))
    }

    /// A failure of the operation that WMI's answers show.
    pub fn error(&self, message: impl Into<String>) -> Error {
        host_error(self.op, message, None)
    }
}

/// `value` as a WQL string literal: quoted, with `\` and `'` escaped by a
/// backslash, WQL's escape character.
pub(crate) fn wql_string(value: &str) -> String {
    let mut literal = String::with_capacity(value.len() + 2);
    literal.push('\'');
    for c in value.chars() {
        if matches!(c, '\\' | '\'') {
            literal.push('\\');
        }
        literal.push(c);
    }
    literal.push('\'');
    literal
}

/// A WMI integer, if `value` is one that is not negative.
pub(crate) fn unsigned(value: &WmiValue) -> Option<u64> {
    match *value {
        WmiValue::UInt(v) => Some(v),
        WmiValue::Int(v) => u64::try_from(v).ok(),
        _ => None,
    }
}

/// A `uint64` property: WMI hands those over as decimal text, or a number.
pub(crate) fn uint64(value: &WmiValue) -> Option<u64> {
    match value {
        WmiValue::String(text) => text.parse().ok(),
        other => unsigned(other),
    }
}

/// The storage namespace: disks, partitions, volumes and iSCSI.
pub(crate) const STORAGE: &str = r"Root\Microsoft\Windows\Storage";

/// The string property `name` of `object`, if it is one.
pub(crate) fn string<'a>(object: &'a WmiObject, name: &str) -> Option<&'a str> {
    match object.get(name) {
        Some(WmiValue::String(value)) => Some(value),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uint64_may_come_as_a_number_or_as_text() {
        assert_eq!(
            uint64(&WmiValue::String("10737418240".into())),
            Some(10_737_418_240)
        );
        assert_eq!(uint64(&WmiValue::UInt(512)), Some(512));
        assert_eq!(uint64(&WmiValue::String("ten".into())), None);
        assert_eq!(uint64(&WmiValue::Null), None);
    }

    #[test]
    fn wql_strings_escape_backslashes_and_quotes() {
        assert_eq!(wql_string(r"\\srv\share"), r"'\\\\srv\\share'");
        assert_eq!(wql_string("it's"), r"'it\'s'");
    }
}
