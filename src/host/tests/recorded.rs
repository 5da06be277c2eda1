//! A WMI that answers from recorded objects: what the groups served
//! through WMI are tested against, since no Windows storage stack runs
//! here. It evaluates the subset of WQL the groups write (`SELECT ... FROM
//! Class [WHERE P = 'literal' [AND Q = n]]`, and `ASSOCIATORS OF {path}
//! WHERE AssocClass = A ResultClass = C ...`), runs each method the test
//! gives it, and logs every request, so a test checks both what was asked
//! and what was made of the answer. The queries are read in `wql`, the
//! classes' types are held in `schema`.

mod schema;
mod wql;

use std::collections::HashMap;
use std::sync::Mutex;

use wmi::WMIError;

use crate::host::wmi::{Limit, Wmi, WmiFailure, WmiObject, WmiValue, PATH};
use schema::{check_params, check_recorded};
use wql::{has, parse, Query};

/// `WBEM_E_INVALID_QUERY`: the stand-in does not understand the query.
const WBEM_E_INVALID_QUERY: i32 = 0x8004_1017_u32 as i32;
/// `WBEM_E_INVALID_NAMESPACE`.
const WBEM_E_INVALID_NAMESPACE: i32 = 0x8004_100E_u32 as i32;
/// `WBEM_E_INVALID_METHOD`: no behaviour was given for the method.
const WBEM_E_INVALID_METHOD: i32 = 0x8004_1055_u32 as i32;
/// `WBEM_E_INVALID_PARAMETER`: a parameter the method does not have.
const WBEM_E_INVALID_PARAMETER: i32 = 0x8004_1008_u32 as i32;
/// `WBEM_E_TYPE_MISMATCH`: a parameter of another type than declared.
const WBEM_E_TYPE_MISMATCH: i32 = 0x8004_1005_u32 as i32;
/// `WBEM_E_FAILED`: what a provider's failed method answers, its reason
/// in the error object.
const WBEM_E_FAILED: i32 = 0x8004_1001_u32 as i32;

/// One method's behaviour: it may change the store, and answers with the
/// output parameters or a failure. Its arguments: the store, the target
/// (the class, or an instance's path) and the input parameters.
pub(crate) type Method = Box<
    dyn Fn(&mut Store, &str, &HashMap<&str, WmiValue>) -> Result<WmiObject, WmiFailure>
        + Send
        + Sync,
>;

/// The recorded objects, by class, and the associations between them.
#[derive(Default)]
pub(crate) struct Store {
    objects: HashMap<String, Vec<WmiObject>>,
    /// (association class, from path, to path), each way.
    links: Vec<(String, String, String)>,
}

impl Store {
    /// Records `object` as an instance of `class`; it must be typed as
    /// WMI gives the class's objects.
    pub fn add(&mut self, class: &str, object: WmiObject) {
        check_recorded(class, &object);
        self.objects
            .entry(class.to_owned())
            .or_default()
            .push(object);
    }

    /// The instances of `class`.
    pub fn of(&mut self, class: &str) -> &mut Vec<WmiObject> {
        self.objects.entry(class.to_owned()).or_default()
    }

    /// The object at `path`, of any class.
    pub fn at(&mut self, path: &str) -> Option<&mut WmiObject> {
        let at = |o: &&mut WmiObject| matches!(o.get(PATH), Some(WmiValue::String(p)) if p == path);
        self.objects.values_mut().flatten().find(at)
    }

    /// Removes the object at `path` and its associations; whether there
    /// was one.
    pub fn remove(&mut self, path: &str) -> bool {
        let mut found = false;
        for objects in self.objects.values_mut() {
            let before = objects.len();
            objects.retain(|o| !matches!(o.get(PATH), Some(WmiValue::String(p)) if p == path));
            found |= objects.len() != before;
        }
        self.links
            .retain(|(_, from, to)| from != path && to != path);
        found
    }

    /// Associates the objects at `a` and `b` through `association`.
    pub fn link(&mut self, association: &str, a: &str, b: &str) {
        self.links
            .push((association.to_owned(), a.to_owned(), b.to_owned()));
        self.links
            .push((association.to_owned(), b.to_owned(), a.to_owned()));
    }

    /// The objects of `class` associated with `path` through `association`.
    pub fn associated(&self, path: &str, association: &str, class: &str) -> Vec<WmiObject> {
        let linked: Vec<&String> = (self.links.iter())
            .filter(|(a, from, _)| a == association && from == path)
            .map(|(_, _, to)| to)
            .collect();
        let objects = self.objects.get(class).into_iter().flatten();
        objects
            .filter(|o| matches!(o.get(PATH), Some(WmiValue::String(p)) if linked.contains(&p)))
            .cloned()
            .collect()
    }
}

/// The recorded objects of one namespace.
#[derive(Default)]
pub(crate) struct RecordedWmi {
    namespace: String,
    store: Mutex<Store>,
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
        self.store.lock().unwrap().add(class, object);
        self
    }

    /// Gives `class` the method `name`.
    pub fn with_method(mut self, class: &str, name: &str, method: Method) -> Self {
        self.methods
            .insert((class.to_owned(), name.to_owned()), method);
        self
    }

    /// Works on the store directly, as the host would behind WMI's back.
    pub fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        self.store.lock().unwrap()
    }

    /// The instances of `class` now.
    pub fn objects(&self, class: &str) -> Vec<WmiObject> {
        self.store().of(class).clone()
    }

    /// Every request so far, in order, and forgets them.
    pub fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }

    fn check_namespace(&self, namespace: &str) -> Result<(), WmiFailure> {
        if namespace.eq_ignore_ascii_case(&self.namespace) {
            Ok(())
        } else {
            Err(WmiFailure::from(WMIError::HResultError {
                hres: WBEM_E_INVALID_NAMESPACE,
            }))
        }
    }
}

impl Wmi for RecordedWmi {
    fn query(&self, namespace: &str, query: &str, _: &Limit) -> Result<Vec<WmiObject>, WmiFailure> {
        self.log.lock().unwrap().push(format!("query {query}"));
        self.check_namespace(namespace)?;
        let invalid = WmiFailure::from(WMIError::HResultError {
            hres: WBEM_E_INVALID_QUERY,
        });
        let mut store = self.store();
        match parse(query).ok_or(invalid)? {
            Query::Select { class, conditions } => {
                let selected = |o: &&WmiObject| conditions.iter().all(|(p, v)| has(o, p, v));
                Ok(store.of(&class).iter().filter(selected).cloned().collect())
            }
            Query::Associators {
                path,
                association,
                class,
            } => Ok(store.associated(&path, &association, &class)),
        }
    }

    fn call(
        &self,
        namespace: &str,
        class: &str,
        target: &str,
        method: &str,
        params: Vec<(&'static str, WmiValue)>,
        _: &Limit,
    ) -> Result<WmiObject, WmiFailure> {
        let shown: Vec<String> = params.iter().map(|(n, v)| format!("{n}={v:?}")).collect();
        self.log
            .lock()
            .unwrap()
            .push(format!("call {target} {method}({})", shown.join(", ")));
        self.check_namespace(namespace)?;
        check_params(class, method, &params)?;
        let behaviour = self
            .methods
            .get(&(class.to_owned(), method.to_owned()))
            .ok_or(WmiFailure::from(WMIError::HResultError {
                hres: WBEM_E_INVALID_METHOD,
            }))?;
        let params: HashMap<&str, WmiValue> = params.into_iter().collect();
        behaviour(&mut self.store(), target, &params)
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
pub(crate) fn returned(code: u64) -> WmiObject {
    object([("ReturnValue", WmiValue::UInt(code))])
}

/// A string value.
pub(crate) fn text(value: &str) -> WmiValue {
    WmiValue::String(value.to_owned())
}

/// How a provider's method fails for a Windows error: `WBEM_E_FAILED`,
/// with the Win32 code and its text in an `MSFT_WmiError` (the SMB and
/// iSCSI providers fail this way, not with a return value).
pub(crate) fn failed_with_win32(code: u32, text: &str) -> WmiFailure {
    let error = object([
        ("CIMStatusCode", WmiValue::UInt(1)),
        ("Message", WmiValue::String(text.to_owned())),
        (
            "MessageID",
            WmiValue::String(format!("Windows System Error {code}")),
        ),
        ("error_Category", WmiValue::UInt(0)),
        ("error_Code", WmiValue::UInt(code.into())),
        ("error_Type", WmiValue::String("Win32".to_owned())),
        (
            "error_WindowsErrorMessage",
            WmiValue::String(text.to_owned()),
        ),
    ]);
    WmiFailure::with_error_object(WBEM_E_FAILED, error)
}

/// What WMI answers for an object or a path that is not there.
pub(crate) fn not_found() -> WmiFailure {
    WmiFailure::from(WMIError::HResultError {
        hres: 0x8004_1002_u32 as i32, // WBEM_E_NOT_FOUND
    })
}

/// An instance's path, as WMI writes it: the class and its key.
pub(crate) fn instance_path(namespace: &str, class: &str, key: &str, value: &str) -> String {
    let value = value.replace('\\', "\\\\").replace('"', "\\\"");
    format!(r#"\\HOST\{namespace}:{class}.{key}="{value}""#)
}
