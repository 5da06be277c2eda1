//! The seam between the groups served through WMI and WMI itself.
//!
//! All a group asks of WMI is a query, or a method call, in a namespace.
//! [`OsWmi`] does them through the `wmi` crate; the tests answer them from
//! recorded objects shaped as Microsoft documents each class, and check
//! the queries and calls made. What a group makes of the answers (status
//! codes, return values, missing objects) is therefore tested without a
//! Windows storage stack.

use std::collections::BTreeMap;
use std::sync::Arc;

use wmi::{IWbemClassWrapper, Variant, WMIConnection, WMIError};

use super::in_flight::InFlight;
use super::on_host::{host_error, on_host};
use crate::capability::Operation;
use crate::error::{Error, Result};

/// A WMI object: its properties by name. Objects a query returns also
/// carry their path, as `__PATH`, for instance methods.
pub(crate) type WmiObject = BTreeMap<String, WmiValue>;

/// A property's or a parameter's value. The seam's own type: the `wmi`
/// crate's `Variant` may hold COM pointers, which stay on the thread that
/// made the request.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum WmiValue {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Real(f64),
    String(String),
    Array(Vec<WmiValue>),
    /// An embedded object or an interface, which no group reads: its
    /// description.
    Other(String),
}

impl From<Variant> for WmiValue {
    fn from(value: Variant) -> Self {
        match value {
            Variant::Empty | Variant::Null => Self::Null,
            Variant::Bool(v) => Self::Bool(v),
            Variant::I1(v) => Self::Int(v.into()),
            Variant::I2(v) => Self::Int(v.into()),
            Variant::I4(v) => Self::Int(v.into()),
            Variant::I8(v) => Self::Int(v),
            Variant::UI1(v) => Self::UInt(v.into()),
            Variant::UI2(v) => Self::UInt(v.into()),
            Variant::UI4(v) => Self::UInt(v.into()),
            Variant::UI8(v) => Self::UInt(v),
            Variant::R4(v) => Self::Real(v.into()),
            Variant::R8(v) => Self::Real(v),
            Variant::String(v) => Self::String(v),
            Variant::Array(items) => Self::Array(items.into_iter().map(Self::from).collect()),
            other => Self::Other(format!("{other:?}")),
        }
    }
}

impl From<WmiValue> for Variant {
    fn from(value: WmiValue) -> Self {
        match value {
            WmiValue::Null => Variant::Null,
            WmiValue::Bool(v) => Variant::Bool(v),
            // WMI takes integers up to 32 bits as VT_I4 and converts them to
            // the parameter's type; a value VT_I4 cannot hold goes as
            // decimal text, as WMI takes 64-bit integers (a `uint64` size of
            // 3 GiB, say, which VT_I4 would make negative).
            WmiValue::Int(v) => i32::try_from(v).map_or(Variant::I8(v), Variant::I4),
            WmiValue::UInt(v) => match i32::try_from(v) {
                Ok(small) => Variant::I4(small),
                Err(_) => Variant::UI8(v),
            },
            WmiValue::Real(v) => Variant::R8(v),
            WmiValue::String(v) | WmiValue::Other(v) => Variant::String(v),
            WmiValue::Array(items) => {
                Variant::Array(items.into_iter().map(Variant::from).collect())
            }
        }
    }
}

/// The name under which a query's objects carry their path.
pub(crate) const PATH: &str = "__PATH";

/// What the groups ask of WMI.
pub(crate) trait Wmi: Send + Sync + 'static {
    /// The objects that the WQL `query` selects in `namespace`.
    fn query(&self, namespace: &str, query: &str) -> std::result::Result<Vec<WmiObject>, WMIError>;

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
    ) -> std::result::Result<WmiObject, WMIError>;
}

/// The host's WMI, one connection per request (each runs on a blocking
/// thread of its own; the `wmi` crate sets COM up for it).
pub(crate) struct OsWmi;

impl Wmi for OsWmi {
    fn query(&self, namespace: &str, query: &str) -> std::result::Result<Vec<WmiObject>, WMIError> {
        let connection = WMIConnection::with_namespace_path(namespace)?;
        let mut objects = Vec::new();
        for object in connection.exec_query(query)? {
            let object = object?;
            let mut properties = properties(&object)?;
            // A query of some properties only gives objects no path.
            if let Ok(Variant::String(path)) = object.get_property(PATH) {
                properties.insert(PATH.to_owned(), WmiValue::String(path));
            }
            objects.push(properties);
        }
        Ok(objects)
    }

    fn call(
        &self,
        namespace: &str,
        class: &str,
        target: &str,
        method: &str,
        params: Vec<(&'static str, WmiValue)>,
    ) -> std::result::Result<WmiObject, WMIError> {
        let connection = WMIConnection::with_namespace_path(namespace)?;
        let signature = connection.get_object(class)?.get_method(method)?;
        let input = match signature {
            Some(signature) => {
                let input = signature.spawn_instance()?;
                for (name, value) in params {
                    input.put_property(name, Variant::from(value))?;
                }
                Some(input)
            }
            None => None,
        };
        match connection.exec_method(target, method, input.as_ref())? {
            Some(output) => properties(&output),
            None => Ok(WmiObject::new()),
        }
    }
}

/// The properties of `object`, as the seam gives them.
fn properties(object: &IWbemClassWrapper) -> std::result::Result<WmiObject, WMIError> {
    let mut properties = WmiObject::new();
    for name in object.list_properties()? {
        let value = object.get_property(&name)?;
        properties.insert(name, value.into());
    }
    Ok(properties)
}

/// Runs `work` for `op` on `object` on a blocking thread (see `on_host`),
/// with its requests to `wmi` in `namespace`.
pub(crate) async fn on_wmi<T, F>(
    in_flight: &Arc<InFlight>,
    op: Operation,
    object: impl std::fmt::Display,
    namespace: &'static str,
    wmi: &Arc<dyn Wmi>,
    work: F,
) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce(Requests<'_>) -> Result<T> + Send + 'static,
{
    let wmi = wmi.clone();
    on_host(in_flight, op, object, move || {
        work(Requests {
            wmi: &*wmi,
            namespace,
            op,
        })
    })
    .await
}

/// One operation's requests to WMI in one namespace: their failures are
/// that operation's errors.
pub(crate) struct Requests<'a> {
    pub wmi: &'a dyn Wmi,
    pub namespace: &'static str,
    pub op: Operation,
}

impl Requests<'_> {
    /// The objects `query` selects.
    pub fn query(&self, query: &str) -> Result<Vec<WmiObject>> {
        (self.wmi.query(self.namespace, query)).map_err(|e| wmi_error(self.op, e))
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
        let output = (self.wmi.call(self.namespace, class, target, method, params))
            .map_err(|e| wmi_error(self.op, e))?;
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

/// A WMI failure of `operation`, with its `HRESULT` when there is one.
pub(crate) fn wmi_error(operation: Operation, error: WMIError) -> Error {
    let code = match &error {
        WMIError::HResultError { hres } => Some(*hres),
        _ => None,
    };
    host_error(operation, format!("WMI: {error}"), code)
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

/// The `ReturnValue` of a method's output: `0` is success; any other value
/// fails `operation` with that code.
pub(crate) fn check_return(operation: Operation, call: &str, output: &WmiObject) -> Result<()> {
    match output.get("ReturnValue").map(unsigned) {
        Some(Some(0)) => Ok(()),
        Some(Some(code)) => Err(host_error(
            operation,
            format!("{call} failed with return value {code}"),
            // A code that is an `HRESULT` keeps its bits.
            u32::try_from(code).ok().map(|c| c as i32),
        )),
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
    fn integers_go_as_vt_i4_while_it_holds_them_and_as_text_after() {
        let port = Variant::from(WmiValue::UInt(3260));
        assert!(matches!(port, Variant::I4(3260)), "{port:?}");
        // A 3 GiB size: negative as VT_I4, so it goes as decimal text.
        let size = Variant::from(WmiValue::UInt(3 << 30));
        assert!(matches!(size, Variant::UI8(v) if v == 3 << 30), "{size:?}");
        let negative = Variant::from(WmiValue::Int(-1));
        assert!(matches!(negative, Variant::I4(-1)), "{negative:?}");
    }

    #[test]
    fn a_return_value_keeps_its_code_even_when_it_is_an_hresult() {
        let output =
            |code: u64| WmiObject::from([("ReturnValue".to_owned(), WmiValue::UInt(code))]);
        let op = Operation::Rescan;
        assert!(check_return(op, "C.M", &output(0)).is_ok());
        for (code, expected) in [(5, 5), (0x8004_1001, 0x8004_1001_u32 as i32)] {
            match check_return(op, "C.M", &output(code)) {
                Err(Error::Host { os_code, .. }) => assert_eq!(os_code, Some(expected)),
                other => panic!("{other:?}"),
            }
        }
        assert!(check_return(op, "C.M", &WmiObject::new()).is_err());
    }

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
