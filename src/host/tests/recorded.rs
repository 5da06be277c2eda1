//! A WMI that answers from recorded objects: what the groups served
//! through WMI are tested against, since no Windows storage stack runs
//! here. It evaluates the subset of WQL the groups write (`SELECT ... FROM
//! Class [WHERE P = 'literal' [AND Q = n]]`, and `ASSOCIATORS OF {path}
//! WHERE AssocClass = A ResultClass = C ...`), runs each method the test
//! gives it, and logs every request, so a test checks both what was asked
//! and what was made of the answer.

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

/// One method's behaviour: it may change the store, and answers with the
/// output parameters or a failure. Its arguments: the store, the target
/// (the class, or an instance's path) and the input parameters.
pub(crate) type Method = Box<
    dyn Fn(&mut Store, &str, &HashMap<&str, WmiValue>) -> Result<WmiObject, WMIError> + Send + Sync,
>;

/// The recorded objects, by class, and the associations between them.
#[derive(Default)]
pub(crate) struct Store {
    objects: HashMap<String, Vec<WmiObject>>,
    /// (association class, from path, to path), each way.
    links: Vec<(String, String, String)>,
}

impl Store {
    /// Records `object` as an instance of `class`.
    pub fn add(&mut self, class: &str, object: WmiObject) {
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

/// What a query asks for.
#[derive(Debug, PartialEq)]
enum Query {
    /// `SELECT ... FROM class [WHERE p = v [AND ...]]`.
    Select {
        class: String,
        conditions: Vec<(String, WmiValue)>,
    },
    /// `ASSOCIATORS OF {path} WHERE AssocClass = a ResultClass = c ...`.
    Associators {
        path: String,
        association: String,
        class: String,
    },
}

/// A WQL literal: a quoted string (with backslash escapes) or a number.
fn literal(text: &str) -> Option<WmiValue> {
    let Some(quoted) = text.strip_prefix('\'') else {
        return text.parse().ok().map(WmiValue::UInt);
    };
    let quoted = quoted.strip_suffix('\'')?;
    let mut value = String::new();
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => value.push(chars.next()?),
            // An unescaped quote would have ended the literal.
            '\'' => return None,
            c => value.push(c),
        }
    }
    Some(WmiValue::String(value))
}

fn parse(query: &str) -> Option<Query> {
    if let Some(rest) = query.strip_prefix("ASSOCIATORS OF {") {
        let (path, rest) = rest.split_once("} WHERE ")?;
        let mut words = rest.split(' ');
        let mut keys = HashMap::new();
        while let (Some(key), Some("="), Some(value)) = (words.next(), words.next(), words.next()) {
            keys.insert(key, value);
        }
        return Some(Query::Associators {
            path: path.to_owned(),
            association: keys.get("AssocClass")?.to_string(),
            class: keys.get("ResultClass")?.to_string(),
        });
    }
    let rest = query.strip_prefix("SELECT ")?;
    let (_, rest) = rest.split_once(" FROM ")?;
    let Some((class, condition)) = rest.split_once(" WHERE ") else {
        return Some(Query::Select {
            class: rest.to_owned(),
            conditions: Vec::new(),
        });
    };
    let mut conditions = Vec::new();
    for term in condition.split(" AND ") {
        let (property, value) = term.split_once(" = ")?;
        conditions.push((property.to_owned(), literal(value)?));
    }
    Some(Query::Select {
        class: class.to_owned(),
        conditions,
    })
}

/// Whether `object` has `value` as `property`: strings compared without
/// regard to case, as WMI compares them, and a `char16` with its letter.
fn has(object: &WmiObject, property: &str, value: &WmiValue) -> bool {
    match (object.get(property), value) {
        (Some(WmiValue::String(a)), WmiValue::String(b)) => a.eq_ignore_ascii_case(b),
        // A `char16` (a drive letter) against a one-letter string.
        (Some(WmiValue::UInt(code)), WmiValue::String(b)) => {
            let letter = char::from_u32(*code as u32).map(|c| c.to_string());
            letter.is_some_and(|l| l.eq_ignore_ascii_case(b))
        }
        (Some(a), b) => {
            crate::host::wmi::unsigned(a).is_some()
                && crate::host::wmi::unsigned(a) == crate::host::wmi::unsigned(b)
        }
        (None, _) => false,
    }
}

impl Wmi for RecordedWmi {
    fn query(&self, namespace: &str, query: &str) -> Result<Vec<WmiObject>, WMIError> {
        self.log.lock().unwrap().push(format!("query {query}"));
        self.check_namespace(namespace)?;
        let invalid = WMIError::HResultError {
            hres: WBEM_E_INVALID_QUERY,
        };
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

/// What WMI answers for an object or a path that is not there.
pub(crate) fn not_found() -> WMIError {
    WMIError::HResultError {
        hres: 0x8004_1002_u32 as i32, // WBEM_E_NOT_FOUND
    }
}

/// An instance's path, as WMI writes it: the class and its key.
pub(crate) fn instance_path(namespace: &str, class: &str, key: &str, value: &str) -> String {
    let value = value.replace('\\', "\\\\").replace('"', "\\\"");
    format!(r#"\\HOST\{namespace}:{class}.{key}="{value}""#)
}

#[test]
fn the_stand_in_reads_the_queries_the_groups_write() {
    let text = |s: &str| WmiValue::String(s.to_owned());
    let query = format!(
        "SELECT * FROM C WHERE P = {} AND N = 3260",
        crate::host::wmi::wql_string(r"\\a\b'c")
    );
    let conditions = vec![
        ("P".to_owned(), text(r"\\a\b'c")),
        ("N".to_owned(), WmiValue::UInt(3260)),
    ];
    let class = "C".to_owned();
    assert_eq!(parse(&query), Some(Query::Select { class, conditions }));
    let everything = Query::Select {
        class: "C".to_owned(),
        conditions: Vec::new(),
    };
    assert_eq!(parse("SELECT A, B FROM C"), Some(everything));
    assert_eq!(parse("SELECT * FROM C WHERE P = 'a'b'"), None);
    let associators = r#"ASSOCIATORS OF {\\H\ns:C.K="v"} WHERE AssocClass = A ResultClass = R ResultRole = r Role = s"#;
    let expected = Query::Associators {
        path: r#"\\H\ns:C.K="v""#.to_owned(),
        association: "A".to_owned(),
        class: "R".to_owned(),
    };
    assert_eq!(parse(associators), Some(expected));
}
