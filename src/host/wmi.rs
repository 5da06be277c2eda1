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

use windows::core::BSTR;
use windows::Win32::System::Wmi::{IWbemContext, WBEM_GENERIC_FLAG_TYPE};
use wmi::{IWbemClassWrapper, Variant, WMIConnection, WMIError};

use super::in_flight::InFlight;
use super::on_host::{host_error, on_host};
use crate::capability::Operation;
use crate::error::{Error, Result};
use crate::group::ApiGroup;
use crate::host_cause::win32_code;

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
            // WMI takes every integer type up to 32 bits as VT_I4 (a
            // `uint32` above 2^31 as its bits), and 64-bit ones as decimal
            // text: a `uint64` parameter is given as
            // [`WmiValue::uint64`], text already.
            WmiValue::Int(v) => {
                i32::try_from(v).map_or(Variant::String(v.to_string()), Variant::I4)
            }
            WmiValue::UInt(v) => match u32::try_from(v) {
                Ok(bits) => Variant::I4(bits as i32),
                Err(_) => Variant::String(v.to_string()),
            },
            WmiValue::Real(v) => Variant::R8(v),
            WmiValue::String(v) | WmiValue::Other(v) => Variant::String(v),
            WmiValue::Array(items) => {
                Variant::Array(items.into_iter().map(Variant::from).collect())
            }
        }
    }
}

impl WmiValue {
    /// A `uint64` parameter, as WMI takes one: decimal text.
    pub fn uint64(value: u64) -> Self {
        Self::String(value.to_string())
    }
}

/// The name under which a query's objects carry their path.
pub(crate) const PATH: &str = "__PATH";

/// A failed WMI request.
#[derive(Debug)]
pub(crate) struct WmiFailure {
    /// The `HRESULT` it failed with, when it was a COM call's failure.
    pub hresult: Option<i32>,
    /// What failed, in words.
    pub message: String,
    /// The error object the provider left for a failed method call
    /// (`MSFT_WmiError`, or another `__ExtendedStatus`): where the SMB and
    /// iSCSI providers put the Windows error behind a bare `HRESULT`.
    pub error_object: Option<WmiObject>,
}

impl WmiFailure {
    /// A failure with `hresult` and the provider's `error_object`.
    #[cfg(test)]
    pub fn with_error_object(hresult: i32, error_object: WmiObject) -> Self {
        Self {
            hresult: Some(hresult),
            message: format!("HRESULT {:#X}", hresult as u32),
            error_object: Some(error_object),
        }
    }

    /// The Windows error code it stands for: the Win32 code the error
    /// object names, else the Win32 code an `HRESULT` of `0x8007xxxx`
    /// wraps, else the `HRESULT`.
    pub fn os_code(&self) -> Option<i32> {
        let named = self.error_object.as_ref().and_then(win32_code_of);
        named.or_else(|| {
            let hresult = self.hresult?;
            Some(win32_code(hresult).map_or(hresult, |code| code as i32))
        })
    }

    /// What the provider said went wrong, in its words, if it said it.
    fn provider_message(&self) -> Option<&str> {
        let object = self.error_object.as_ref()?;
        ["error_WindowsErrorMessage", "Message", "Description"]
            .into_iter()
            .find_map(|name| string(object, name).filter(|m| !m.trim().is_empty()))
    }
}

impl From<WMIError> for WmiFailure {
    fn from(error: WMIError) -> Self {
        let hresult = match &error {
            WMIError::HResultError { hres } => Some(*hres),
            _ => None,
        };
        Self {
            hresult,
            message: error.to_string(),
            error_object: None,
        }
    }
}

/// The Win32 code an error object names: `MSFT_WmiError`'s `error_Code`
/// when its `error_Type` says it is a Win32 code, or an `HRESULT` that
/// wraps one. Other kinds (MI result codes) are not Win32 codes.
fn win32_code_of(object: &WmiObject) -> Option<i32> {
    let code = object.get("error_Code").and_then(unsigned)?;
    // 0 names no error: the HRESULT says more.
    let code = u32::try_from(code).ok().filter(|&c| c != 0)?;
    match string(object, "error_Type")?.to_ascii_lowercase().as_str() {
        "win32" => Some(code as i32),
        "hresult" if (code as i32) < 0 => win32_code(code as i32).map(|code| code as i32),
        _ => None,
    }
}

/// What the groups ask of WMI.
pub(crate) trait Wmi: Send + Sync + 'static {
    /// The objects that the WQL `query` selects in `namespace`.
    fn query(
        &self,
        namespace: &str,
        query: &str,
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
    ) -> std::result::Result<WmiObject, WmiFailure>;
}

/// The host's WMI, one connection per request (each runs on a blocking
/// thread of its own; the `wmi` crate sets COM up for it).
pub(crate) struct OsWmi;

impl Wmi for OsWmi {
    fn query(
        &self,
        namespace: &str,
        query: &str,
    ) -> std::result::Result<Vec<WmiObject>, WmiFailure> {
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
    ) -> std::result::Result<WmiObject, WmiFailure> {
        // The crate's connection sets COM up on this thread and makes the
        // input; the call goes through services of our own, because the
        // crate drops the error object a failed call leaves.
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
        let services = com::services(namespace).map_err(|e| com::failure(&e))?;
        com::forget_error_object();
        let mut output = None;
        // SAFETY: live services and input; `output` receives an owned
        // object or stays `None`.
        let called = unsafe {
            services.ExecMethod(
                &BSTR::from(target),
                &BSTR::from(method),
                WBEM_GENERIC_FLAG_TYPE(0),
                None::<&IWbemContext>,
                input.as_ref().map(|input| &input.inner),
                Some(&mut output),
                None,
            )
        };
        match (called, output) {
            (Err(error), _) => Err(com::failure(&error)),
            (Ok(()), Some(output)) => Ok(properties(&IWbemClassWrapper::new(output))?),
            (Ok(()), None) => Ok(WmiObject::new()),
        }
    }
}

/// WMI through COM directly, where the `wmi` crate hides what is needed.
mod com {
    use windows::core::{Interface, BSTR, PCWSTR};
    use windows::Win32::System::Com::{
        CoCreateInstance, CoSetProxyBlanket, IErrorInfo, SetErrorInfo, CLSCTX_INPROC_SERVER,
        EOAC_NONE, RPC_C_AUTHN_LEVEL_CALL, RPC_C_IMP_LEVEL_IMPERSONATE,
    };
    use windows::Win32::System::Rpc::{RPC_C_AUTHN_WINNT, RPC_C_AUTHZ_NONE};
    use windows::Win32::System::Wmi::{
        IWbemClassObject, IWbemContext, IWbemLocator, IWbemServices, WbemLocator,
        WBEM_FLAG_CONNECT_USE_MAX_WAIT,
    };
    use wmi::IWbemClassWrapper;

    use super::{WmiFailure, WmiObject};

    /// Services of `namespace` on this host, as this process; COM must be
    /// set up on the thread.
    pub fn services(namespace: &str) -> windows::core::Result<IWbemServices> {
        // SAFETY: COM calls with owned arguments; each result is checked.
        unsafe {
            let locator: IWbemLocator = CoCreateInstance(&WbemLocator, None, CLSCTX_INPROC_SERVER)?;
            let none = BSTR::new();
            let services = locator.ConnectServer(
                &BSTR::from(namespace),
                &none,
                &none,
                &none,
                WBEM_FLAG_CONNECT_USE_MAX_WAIT.0,
                &none,
                None::<&IWbemContext>,
            )?;
            CoSetProxyBlanket(
                &services,
                RPC_C_AUTHN_WINNT,
                RPC_C_AUTHZ_NONE,
                PCWSTR::null(),
                RPC_C_AUTHN_LEVEL_CALL,
                RPC_C_IMP_LEVEL_IMPERSONATE,
                None,
                EOAC_NONE,
            )?;
            Ok(services)
        }
    }

    /// A failed COM call as the seam reports it, with the error object
    /// the provider left on the thread, if any (WMI leaves an
    /// `__ExtendedStatus` there, which `windows` keeps with the error).
    pub fn failure(error: &windows::core::Error) -> WmiFailure {
        let info = error.as_ptr();
        // SAFETY: `as_ptr` gives the error's own `IErrorInfo` or null,
        // valid while `error` lives; it is only borrowed here.
        let info = unsafe { windows::core::IUnknown::from_raw_borrowed(&info) };
        let object = info.and_then(|info| info.cast::<IWbemClassObject>().ok());
        // The system has no text for most WMI codes, and an error object
        // may carry an empty one: the code is always in the message.
        let code = error.code();
        let text = Some(error.message())
            .filter(|t| !t.trim().is_empty())
            .unwrap_or_else(|| code.message());
        WmiFailure {
            hresult: Some(code.0),
            message: format!("HRESULT {:#010X}: {}", code.0 as u32, text.trim()),
            error_object: object.map(|o| error_details(&IWbemClassWrapper::new(o))),
        }
    }

    /// What an error object says of the failure, property by property: one
    /// that cannot be read does not hide the others.
    fn error_details(object: &IWbemClassWrapper) -> WmiObject {
        let names = [
            "error_Code",
            "error_Type",
            "error_WindowsErrorMessage",
            "Message",
            "Description",
        ];
        let read = names.into_iter().filter_map(|name| {
            let value = object.get_property(name).ok()?;
            Some((name.to_owned(), value.into()))
        });
        read.collect()
    }

    /// Forgets any error object an earlier call left on this thread, so
    /// that the next failure's is its own.
    pub fn forget_error_object() {
        // SAFETY: no object: clears the thread's error information.
        let _ = unsafe { SetErrorInfo(0, None::<&IErrorInfo>) };
    }
}

/// The properties of `object`, as the seam gives them.
fn properties(object: &IWbemClassWrapper) -> std::result::Result<WmiObject, WmiFailure> {
    let mut properties = WmiObject::new();
    for name in object.list_properties()? {
        let value = object.get_property(&name)?;
        properties.insert(name, value.into());
    }
    Ok(properties)
}

/// A group's way to WMI: the namespace it asks in, and its host calls in
/// flight (bounded, see [`InFlight`]).
pub(crate) struct WmiGroup {
    wmi: Arc<dyn Wmi>,
    namespace: &'static str,
    in_flight: Arc<InFlight>,
}

impl WmiGroup {
    /// `group`'s requests to `wmi`, in `namespace`.
    pub fn new(wmi: Arc<dyn Wmi>, group: ApiGroup, namespace: &'static str) -> Self {
        Self {
            wmi,
            namespace,
            in_flight: InFlight::of_process(group),
        }
    }

    /// The group's host calls in flight, which its calls that are not
    /// WMI's count in too.
    pub fn in_flight(&self) -> &Arc<InFlight> {
        &self.in_flight
    }

    /// Runs `work` for `op` on `object` (a disk, a volume, a share...;
    /// empty for the whole group) on a blocking thread (see `on_host`),
    /// with its requests.
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
        on_host(&self.in_flight, op, object, move || {
            work(Requests {
                wmi: &*wmi,
                namespace,
                op,
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

/// A WMI failure of `operation`, with the Windows error behind it (see
/// [`WmiFailure::os_code`]) and the provider's words when it gave some.
pub(crate) fn wmi_error(operation: Operation, failure: WmiFailure) -> Error {
    let message = match failure.provider_message() {
        Some(said) => format!("WMI: {}: {}", failure.message, said.trim()),
        None => format!("WMI: {}", failure.message),
    };
    host_error(operation, message, failure.os_code())
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
/// fails `operation`, with the value as the error's `return_value` (a
/// method's own code, not a Windows error code).
pub(crate) fn check_return(operation: Operation, call: &str, output: &WmiObject) -> Result<()> {
    match output.get("ReturnValue").map(unsigned) {
        Some(Some(0)) => Ok(()),
        Some(Some(code)) => Err(Error::Host {
            operation,
            code: crate::error::Code::Unknown,
            message: format!("{call} failed with return value {code}"),
            os_code: None,
            return_value: Some(u32::try_from(code).unwrap_or(u32::MAX)),
        }),
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
    fn integers_go_as_wmi_takes_them() {
        let port = Variant::from(WmiValue::UInt(3260));
        assert!(matches!(port, Variant::I4(3260)), "{port:?}");
        // A `uint32` above 2^31 (a registry hive's handle) as its bits.
        let hive = Variant::from(WmiValue::UInt(0x8000_0002));
        assert!(
            matches!(hive, Variant::I4(v) if v as u32 == 0x8000_0002),
            "{hive:?}"
        );
        let negative = Variant::from(WmiValue::Int(-1));
        assert!(matches!(negative, Variant::I4(-1)), "{negative:?}");
        // A `uint64`, small or not, as decimal text.
        for size in [512, 3 << 30] {
            let text = Variant::from(WmiValue::uint64(size));
            assert!(
                matches!(&text, Variant::String(t) if *t == size.to_string()),
                "{text:?}"
            );
        }
        let big = Variant::from(WmiValue::UInt(1 << 40));
        assert!(
            matches!(&big, Variant::String(t) if t == "1099511627776"),
            "{big:?}"
        );
    }

    #[test]
    fn a_return_value_is_the_methods_own_code_never_a_windows_error() {
        let output =
            |code: u64| WmiObject::from([("ReturnValue".to_owned(), WmiValue::UInt(code))]);
        let op = Operation::Rescan;
        assert!(check_return(op, "C.M", &output(0)).is_ok());
        // 5 is the Storage provider's "Invalid Parameter": not access denied.
        for code in [5, 40001, 0x8004_1001] {
            let error = check_return(op, "C.M", &output(code)).unwrap_err();
            match &error {
                Error::Host {
                    os_code,
                    return_value,
                    ..
                } => assert_eq!((*os_code, *return_value), (None, Some(code as u32))),
                other => panic!("{other:?}"),
            }
            assert_eq!(error.host_cause(), None, "{error}");
        }
        assert!(check_return(op, "C.M", &WmiObject::new()).is_err());
    }

    fn error_object(kind: &str, code: u64, said: &str) -> WmiObject {
        WmiObject::from([
            ("error_Type".to_owned(), WmiValue::String(kind.to_owned())),
            ("error_Code".to_owned(), WmiValue::UInt(code)),
            (
                "error_WindowsErrorMessage".to_owned(),
                WmiValue::String(said.to_owned()),
            ),
            (
                "Message".to_owned(),
                WmiValue::String("Access is denied.".to_owned()),
            ),
        ])
    }

    #[test]
    fn the_windows_error_comes_from_the_providers_error_object() {
        const WBEM_E_FAILED: i32 = 0x8004_1001_u32 as i32;
        let said = "The user name or password is incorrect.";
        let failure =
            WmiFailure::with_error_object(WBEM_E_FAILED, error_object("Win32", 1326, said));
        let error = wmi_error(Operation::NewSmbGlobalMapping, failure);
        match &error {
            Error::Host {
                os_code, message, ..
            } => {
                assert_eq!(*os_code, Some(1326));
                assert!(message.contains(said), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(error.host_cause(), Some(crate::HostCause::LogonFailure));

        // An HRESULT that wraps a Win32 code gives that code.
        let wrapped = error_object("HRESULT", 0x8007_0035, "");
        assert_eq!(
            WmiFailure::with_error_object(WBEM_E_FAILED, wrapped).os_code(),
            Some(53)
        );
        // 0 names no error: the HRESULT stays.
        let none = error_object("Win32", 0, "");
        assert_eq!(
            WmiFailure::with_error_object(WBEM_E_FAILED, none).os_code(),
            Some(WBEM_E_FAILED)
        );
        // An MI result code is no Win32 code: the HRESULT stays.
        let mi = error_object("MI", 4, "");
        assert_eq!(
            WmiFailure::with_error_object(WBEM_E_FAILED, mi).os_code(),
            Some(WBEM_E_FAILED)
        );
        // No error object: the HRESULT, or the Win32 code it wraps.
        let bare = WmiFailure::from(WMIError::HResultError {
            hres: 0x8007_0005_u32 as i32,
        });
        assert_eq!(bare.os_code(), Some(5));
        let bare = WmiFailure::from(WMIError::HResultError {
            hres: WBEM_E_FAILED,
        });
        assert_eq!(bare.os_code(), Some(WBEM_E_FAILED));
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
