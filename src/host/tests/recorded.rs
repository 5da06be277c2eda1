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

use crate::host::wmi::{Limit, Wmi, WmiFailure, WmiObject, WmiValue, PATH};

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

/// A parameter's CIM type, as its class declares it.
#[derive(Clone, Copy, Debug)]
enum Cim {
    Boolean,
    String,
    UInt16,
    /// A character: as a parameter, a number; read, a one-letter string.
    Char16,
    UInt32,
    /// Given as decimal text, as WMI maps it.
    UInt64,
    /// `uint16[]`: an array of numbers.
    UInt16Array,
    /// `string[]`.
    TextArray,
}

use Cim::{Boolean, Char16, String as Text, TextArray, UInt16, UInt16Array, UInt32, UInt64};

/// The properties the groups read, typed as Microsoft documents each
/// class: a recorded object must hold them as the backend's seam gives
/// them (the `wmi` crate reads each by its type: a `uint64`, which WMI
/// sends as text, as a number; a `char16` as a one-letter string; a
/// `uint16[]` as an array, empty for none; a missing value as null), so
/// that no test passes on a kinder shape than Windows'.
const PROPERTIES: &[(&str, Declared)] = &[
    (
        "MSFT_Disk",
        &[
            ("Number", UInt32),
            ("Location", Text),
            ("Path", Text),
            ("SerialNumber", Text),
            ("UniqueId", Text),
            ("Size", UInt64),
            ("AllocatedSize", UInt64),
            ("IsOffline", Boolean),
            ("IsReadOnly", Boolean),
            ("PartitionStyle", UInt16),
            ("OperationalStatus", UInt16Array),
        ],
    ),
    (
        "MSFT_Partition",
        &[
            ("DiskNumber", UInt32),
            ("PartitionNumber", UInt32),
            ("Size", UInt64),
            ("Offset", UInt64),
            ("DriveLetter", Char16),
            ("GptType", Text),
            ("AccessPaths", TextArray),
            ("IsOffline", Boolean),
        ],
    ),
    (
        "MSFT_Volume",
        &[
            ("UniqueId", Text),
            ("FileSystemType", UInt16),
            ("FileSystem", Text),
            ("Size", UInt64),
            ("SizeRemaining", UInt64),
            ("DriveLetter", Char16),
            ("OperationalStatus", UInt16Array),
        ],
    ),
    (
        "MSFT_iSCSITargetPortal",
        &[
            ("TargetPortalAddress", Text),
            ("TargetPortalPortNumber", UInt16),
            ("IsHeaderDigest", Boolean),
            ("IsDataDigest", Boolean),
        ],
    ),
    (
        "MSFT_iSCSITarget",
        &[
            ("NodeAddress", Text),
            ("IsConnected", Boolean),
            ("IsDiscovered", Boolean),
        ],
    ),
    (
        "MSFT_iSCSISession",
        &[
            ("SessionIdentifier", Text),
            ("IsPersistent", Boolean),
            ("IsConnected", Boolean),
        ],
    ),
    ("MSFT_iSCSIConnection", &[("ConnectionIdentifier", Text)]),
    (
        "MSFT_SmbGlobalMapping",
        &[
            ("RemotePath", Text),
            ("LocalPath", Text),
            ("Status", UInt32),
        ],
    ),
];

/// Panics, naming it, at a property of `object` that is not typed as
/// `class` declares it: a defect of the test that recorded it.
fn check_recorded(class: &str, object: &WmiObject) {
    let declared = PROPERTIES.iter().find(|(c, _)| *c == class);
    for (name, value) in object {
        let cim = declared.and_then(|(_, props)| props.iter().find(|(n, _)| n == name));
        if let Some((_, cim)) = cim {
            assert!(
                is_read_as(value, *cim),
                "recorded {class}.{name} is {value:?}: the seam reads a {cim:?} otherwise"
            );
        }
    }
}

/// A method's input parameters and their types.
type Declared = &'static [(&'static str, Cim)];

/// The input parameters of the methods the groups call, as Microsoft
/// documents each class: the stand-in refuses a parameter a method does
/// not have, or one of another type, as WMI does, and a method it does not
/// know.
const PARAMETERS: &[(&str, &str, Declared)] = &[
    ("MSFT_Disk", "Initialize", &[("PartitionStyle", UInt16)]),
    (
        "MSFT_Disk",
        "CreatePartition",
        &[
            ("Size", UInt64),
            ("UseMaximumSize", Boolean),
            ("Offset", UInt64),
            ("Alignment", UInt32),
            ("DriveLetter", Char16),
            ("AssignDriveLetter", Boolean),
            ("MbrType", UInt16),
            ("GptType", Text),
            ("IsHidden", Boolean),
            ("IsActive", Boolean),
        ],
    ),
    ("MSFT_Disk", "Refresh", &[]),
    ("MSFT_Disk", "Online", &[]),
    ("MSFT_Disk", "Offline", &[]),
    ("MSFT_Partition", "Online", &[]),
    ("MSFT_Partition", "GetSupportedSize", &[]),
    ("MSFT_Partition", "Resize", &[("Size", UInt64)]),
    ("MSFT_StorageSetting", "UpdateHostStorageCache", &[]),
    (
        "MSFT_Volume",
        "Format",
        &[
            ("FileSystem", Text),
            ("FileSystemLabel", Text),
            ("AllocationUnitSize", UInt32),
            ("Full", Boolean),
            ("Force", Boolean),
            ("Compress", Boolean),
            ("ShortFileNameSupport", Boolean),
            ("SetIntegrityStreams", Boolean),
            ("UseLargeFRS", Boolean),
            ("DisableHeatGathering", Boolean),
        ],
    ),
    ("MSFT_Volume", "Flush", &[]),
    (
        "MSFT_iSCSITargetPortal",
        "New",
        &[
            ("TargetPortalAddress", Text),
            ("TargetPortalPortNumber", UInt16),
            ("InitiatorInstanceName", Text),
            ("InitiatorPortalAddress", Text),
            ("AuthenticationType", Text),
            ("ChapUsername", Text),
            ("ChapSecret", Text),
            ("IsHeaderDigest", Boolean),
            ("IsDataDigest", Boolean),
        ],
    ),
    (
        "MSFT_iSCSITargetPortal",
        "Remove",
        &[
            ("InitiatorInstanceName", Text),
            ("InitiatorPortalAddress", Text),
            ("TargetPortalAddress", Text),
            ("TargetPortalPortNumber", UInt16),
        ],
    ),
    (
        "MSFT_iSCSITarget",
        "Connect",
        &[
            ("NodeAddress", Text),
            ("TargetPortalAddress", Text),
            ("TargetPortalPortNumber", UInt16),
            ("InitiatorPortalAddress", Text),
            ("IsDataDigest", Boolean),
            ("IsHeaderDigest", Boolean),
            ("IsPersistent", Boolean),
            ("ReportToPnP", Boolean),
            ("AuthenticationType", Text),
            ("IsMultipathEnabled", Boolean),
            ("InitiatorInstanceName", Text),
            ("ChapUsername", Text),
            ("ChapSecret", Text),
        ],
    ),
    (
        "MSFT_iSCSITarget",
        "Disconnect",
        &[("SessionIdentifier", Text)],
    ),
    ("MSFT_iSCSISession", "Unregister", &[]),
    (
        "MSFT_iSCSISession",
        "SetCHAPSecret",
        &[("ChapSecret", Text)],
    ),
    (
        "MSFT_SmbGlobalMapping",
        "Create",
        &[
            ("RemotePath", Text),
            ("Credential", Text),
            ("RequirePrivacy", Boolean),
            ("RequireIntegrity", Boolean),
            ("UseWriteThrough", Boolean),
        ],
    ),
    ("MSFT_SmbGlobalMapping", "Remove", &[("Force", Boolean)]),
];

/// Whether `value` is what the seam gives for a property of type `cim`.
fn is_read_as(value: &WmiValue, cim: Cim) -> bool {
    let fits = |max: u64| matches!(value, WmiValue::UInt(v) if *v <= max);
    match (cim, value) {
        (UInt16Array, WmiValue::Array(items)) => items.iter().all(|i| is_read_as(i, UInt16)),
        (TextArray, WmiValue::Array(items)) => items.iter().all(|i| is_read_as(i, Text)),
        (UInt16Array | TextArray, _) => false,
        (_, WmiValue::Null) => true,
        (Boolean, v) => matches!(v, WmiValue::Bool(_)),
        (Text, v) => matches!(v, WmiValue::String(_)),
        (Char16, WmiValue::String(c)) => c.chars().count() == 1,
        (Char16, _) => false,
        (UInt16, _) => fits(u16::MAX.into()),
        (UInt32, _) => fits(u32::MAX.into()),
        (UInt64, _) => fits(u64::MAX),
    }
}

/// Whether `value` is what WMI takes for a parameter of type `cim`.
fn is_of(value: &WmiValue, cim: Cim) -> bool {
    let fits = |max: u64| crate::host::wmi::unsigned(value).is_some_and(|v| v <= max);
    match (cim, value) {
        (_, WmiValue::Null) => true,
        (Boolean, v) => matches!(v, WmiValue::Bool(_)),
        (Text, v) => matches!(v, WmiValue::String(_)),
        (UInt16 | Char16, _) => fits(u16::MAX.into()),
        (UInt32, _) => fits(u32::MAX.into()),
        (UInt64, WmiValue::String(text)) => text.parse::<u64>().is_ok(),
        (UInt64, _) => false,
        (UInt16Array, WmiValue::Array(items)) => items.iter().all(|i| is_of(i, UInt16)),
        (TextArray, WmiValue::Array(items)) => items.iter().all(|i| is_of(i, Text)),
        (UInt16Array | TextArray, _) => false,
    }
}

/// The failure WMI answers for `params` of `class.method`, if any.
fn check_params(class: &str, method: &str, params: &[(&str, WmiValue)]) -> Result<(), WmiFailure> {
    let hresult = |hres| Err(WmiFailure::from(WMIError::HResultError { hres }));
    let Some((_, _, declared)) = PARAMETERS
        .iter()
        .find(|(c, m, _)| *c == class && *m == method)
    else {
        return hresult(WBEM_E_INVALID_METHOD);
    };
    for (name, value) in params {
        match declared.iter().find(|(n, _)| n == name) {
            None => return hresult(WBEM_E_INVALID_PARAMETER),
            Some((_, cim)) if !is_of(value, *cim) => return hresult(WBEM_E_TYPE_MISMATCH),
            Some(_) => {}
        }
    }
    Ok(())
}

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

/// Whether `object` has `value` as `property`: strings (and a `char16`,
/// read as a one-letter string) compared without regard to case, as WMI
/// compares them.
fn has(object: &WmiObject, property: &str, value: &WmiValue) -> bool {
    match (object.get(property), value) {
        (Some(WmiValue::String(a)), WmiValue::String(b)) => a.eq_ignore_ascii_case(b),
        (Some(a), b) => {
            crate::host::wmi::unsigned(a).is_some()
                && crate::host::wmi::unsigned(a) == crate::host::wmi::unsigned(b)
        }
        (None, _) => false,
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

#[test]
#[should_panic(expected = "recorded MSFT_Volume.Size is String(\"1024\")")]
fn an_object_typed_otherwise_than_the_seam_reads_it_is_refused() {
    // A `uint64` as text, as WMI sends it: the seam reads it as a number.
    let raw = object([("Size", WmiValue::String("1024".into()))]);
    Store::default().add("MSFT_Volume", raw);
}

#[test]
#[should_panic(expected = "recorded MSFT_Disk.OperationalStatus is Null")]
fn a_null_array_is_refused_as_the_seam_reads_it_empty() {
    let raw = object([("OperationalStatus", WmiValue::Null)]);
    Store::default().add("MSFT_Disk", raw);
}

#[test]
fn parameters_are_held_to_their_declared_types() {
    let class = "MSFT_Partition";
    let sized = |size| vec![("Size", size)];
    assert!(check_params(class, "Resize", &sized(WmiValue::uint64(1 << 30))).is_ok());
    for (params, code) in [
        (sized(WmiValue::UInt(1 << 30)), WBEM_E_TYPE_MISMATCH),
        (
            vec![("Bytes", WmiValue::uint64(1))],
            WBEM_E_INVALID_PARAMETER,
        ),
    ] {
        let refused = check_params(class, "Resize", &params).unwrap_err();
        assert_eq!(refused.hresult, Some(code), "{params:?}");
    }
    let unknown = check_params(class, "Shrink", &[]).unwrap_err();
    assert_eq!(unknown.hresult, Some(WBEM_E_INVALID_METHOD));
}
