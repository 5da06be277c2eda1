//! A WMI that answers from recorded objects: what the groups served
//! through WMI are tested against, since no Windows storage stack runs
//! here. It evaluates the subset of WQL the groups write (`SELECT * FROM
//! Class [WHERE Property = 'literal']`), runs each method the test gives
//! it, and logs every request, so a test checks both what was asked and
//! what was made of the answer.

use std::collections::HashMap;
use std::sync::Mutex;

use wmi::WMIError;

use crate::host::wmi::{Wmi, WmiObject, WmiValue, PATH};

/// `WBEM_E_INVALID_QUERY`: the stand-in does not understand the query.
const WBEM_E_INVALID_QUERY: i32 = 0x8004_1017_u32 as i32;
/// `WBEM_E_INVALID_NAMESPACE`.
const WBEM_E_INVALID_NAMESPACE: i32 = 0x8004_100E_u32 as i32;
/// `WBEM_E_INVALID_METHOD`: no behaviour was given for the method.
const WBEM_E_INVALID_METHOD: i32 = 0x8004_1055_u32 as i32;

/// One method's behaviour: it may change the objects of its class, and
/// answers with the output parameters or a failure.
pub(crate) type Method = Box<
    dyn Fn(&mut Vec<WmiObject>, &str, &HashMap<&str, WmiValue>) -> Result<WmiObject, WMIError>
        + Send
        + Sync,
>;

/// The recorded objects of one namespace, by class.
#[derive(Default)]
pub(crate) struct RecordedWmi {
    namespace: String,
    objects: Mutex<HashMap<String, Vec<WmiObject>>>,
    methods: HashMap<(String, String), Method>,
    log: Mutex<Vec<String>>,
}

impl RecordedWmi {
    /// A WMI that serves `namespace` only.
    pub fn new(namespace: &str) -> Self {
        Self {
            namespace: namespace.to_owned(),
            ..Self::default()
        }
    }

    /// Records `object` as an instance of `class`.
    pub fn with_object(self, class: &str, object: WmiObject) -> Self {
        self.objects
            .lock()
            .unwrap()
            .entry(class.to_owned())
            .or_default()
            .push(object);
        self
    }

    /// Gives `class` the method `name`.
    pub fn with_method(mut self, class: &str, name: &str, method: Method) -> Self {
        self.methods
            .insert((class.to_owned(), name.to_owned()), method);
        self
    }

    /// The instances of `class` now.
    pub fn objects(&self, class: &str) -> Vec<WmiObject> {
        let objects = self.objects.lock().unwrap();
        objects.get(class).cloned().unwrap_or_default()
    }

    /// Every request so far, in order, and forgets them.
    pub fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }

    fn check_namespace(&self, namespace: &str) -> Result<(), WMIError> {
        if namespace.eq_ignore_ascii_case(&self.namespace) {
            Ok(())
        } else {
            Err(WMIError::HResultError {
                hres: WBEM_E_INVALID_NAMESPACE,
            })
        }
    }
}

/// `SELECT * FROM Class [WHERE Property = 'literal']`: the class, and the
/// condition with its literal unescaped.
fn parse(query: &str) -> Option<(&str, Option<(&str, String)>)> {
    let rest = query.strip_prefix("SELECT * FROM ")?;
    let Some((class, condition)) = rest.split_once(" WHERE ") else {
        return Some((rest, None));
    };
    let (property, literal) = condition.split_once(" = ")?;
    let literal = literal.strip_prefix('\'')?.strip_suffix('\'')?;
    let mut value = String::new();
    let mut chars = literal.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => value.push(chars.next()?),
            // An unescaped quote would have ended the literal.
            '\'' => return None,
            c => value.push(c),
        }
    }
    Some((class, Some((property, value))))
}

impl Wmi for RecordedWmi {
    fn query(&self, namespace: &str, query: &str) -> Result<Vec<WmiObject>, WMIError> {
        self.log.lock().unwrap().push(format!("query {query}"));
        self.check_namespace(namespace)?;
        let (class, condition) = parse(query).ok_or(WMIError::HResultError {
            hres: WBEM_E_INVALID_QUERY,
        })?;
        // WMI compares strings without regard to case.
        let selected = |object: &WmiObject| match &condition {
            None => true,
            Some((property, value)) => {
                matches!(object.get(*property), Some(WmiValue::String(s)) if s.eq_ignore_ascii_case(value))
            }
        };
        Ok(self.objects(class).into_iter().filter(selected).collect())
    }

    fn call(
        &self,
        namespace: &str,
        class: &str,
        target: &str,
        method: &str,
        params: Vec<(&'static str, WmiValue)>,
    ) -> Result<WmiObject, WMIError> {
        let shown: Vec<String> = params.iter().map(|(n, v)| format!("{n}={v:?}")).collect();
        self.log
            .lock()
            .unwrap()
            .push(format!("call {target} {method}({})", shown.join(", ")));
        self.check_namespace(namespace)?;
        let behaviour = self
            .methods
            .get(&(class.to_owned(), method.to_owned()))
            .ok_or(WMIError::HResultError {
                hres: WBEM_E_INVALID_METHOD,
            })?;
        let params: HashMap<&str, WmiValue> = params.into_iter().collect();
        let mut objects = self.objects.lock().unwrap();
        behaviour(
            objects.entry(class.to_owned()).or_default(),
            target,
            &params,
        )
    }
}

/// An object of `properties`, for recording.
pub(crate) fn object<const N: usize>(properties: [(&str, WmiValue); N]) -> WmiObject {
    properties
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect()
}

/// The output of a method that returned `code`.
pub(crate) fn returned(code: u32) -> WmiObject {
    object([("ReturnValue", WmiValue::UInt(code.into()))])
}

/// An instance's path, as WMI writes it: the class and its key.
pub(crate) fn instance_path(namespace: &str, class: &str, key: &str, value: &str) -> String {
    let value = value.replace('\\', "\\\\").replace('"', "\\\"");
    format!(r#"\\HOST\{namespace}:{class}.{key}="{value}""#)
}

/// Removes the object whose path is `target`; whether there was one.
pub(crate) fn remove_at(objects: &mut Vec<WmiObject>, target: &str) -> bool {
    let before = objects.len();
    objects.retain(|o| !matches!(o.get(PATH), Some(WmiValue::String(p)) if p == target));
    objects.len() != before
}

#[test]
fn the_stand_in_reads_the_queries_the_groups_write() {
    let query = format!(
        "SELECT * FROM C WHERE P = {}",
        crate::host::wmi::wql_string(r"\\a\b'c")
    );
    assert_eq!(
        parse(&query),
        Some(("C", Some(("P", r"\\a\b'c".to_owned()))))
    );
    assert_eq!(parse("SELECT * FROM C"), Some(("C", None)));
    assert_eq!(parse("SELECT * FROM C WHERE P = 'a'b'"), None);
}
