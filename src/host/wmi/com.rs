//! WMI through COM: one connection per request, semisynchronous calls.
//!
//! A query runs with `WBEM_FLAG_RETURN_IMMEDIATELY` and its objects are
//! waited for with `IEnumWbemClassObject::Next`; a method call runs with
//! `WBEM_FLAG_RETURN_IMMEDIATELY` and its output is waited for with
//! `IWbemCallResult::GetResultObject`: both in slices (see `wait`), so
//! that a request WMI does not answer is given up, and released. Wine's
//! WMI ignores the flag and answers at once: a method call then gives its
//! output straight away, which is taken as it is. A WMI that refuses a
//! semisynchronous method call (`WBEM_E_INVALID_PARAMETER`) gets the call
//! again synchronously, and every later one of the process, with a
//! warning in the log once: such a call cannot be given up.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use windows::core::{Interface, BSTR, HRESULT, PCWSTR};
use windows::Win32::Foundation::{CO_E_NOTINITIALIZED, RPC_E_TOO_LATE};
use windows::Win32::System::Com::{
    CoCreateInstance, CoIncrementMTAUsage, CoInitializeSecurity, CoSetProxyBlanket, IErrorInfo,
    SetErrorInfo, CLSCTX_INPROC_SERVER, EOAC_NONE, RPC_C_AUTHN_LEVEL_CALL,
    RPC_C_AUTHN_LEVEL_DEFAULT, RPC_C_IMP_LEVEL_IMPERSONATE,
};
use windows::Win32::System::Rpc::{RPC_C_AUTHN_WINNT, RPC_C_AUTHZ_NONE};
use windows::Win32::System::Wmi::{
    IEnumWbemClassObject, IWbemCallResult, IWbemClassObject, IWbemContext, IWbemLocator,
    IWbemServices, WbemLocator, WBEM_E_INVALID_PARAMETER, WBEM_FLAG_CONNECT_USE_MAX_WAIT,
    WBEM_FLAG_FORWARD_ONLY, WBEM_FLAG_RETURN_IMMEDIATELY, WBEM_FLAG_RETURN_WBEM_COMPLETE,
    WBEM_GENERIC_FLAG_TYPE, WBEM_S_TIMEDOUT,
};
use wmi::{IWbemClassWrapper, Variant};

use super::failure::WmiFailure;
use super::value::{properties, with_path, WmiObject, WmiValue};
use super::wait::{Rows, Step};

/// Services of `namespace` on this host, as this process: the one
/// connection of a request.
pub fn services(namespace: &str) -> Result<IWbemServices, WmiFailure> {
    let none = BSTR::new();
    // SAFETY: COM calls with owned arguments; each result is checked.
    let connected = unsafe {
        locator().and_then(|locator| {
            let services = locator.ConnectServer(
                &BSTR::from(namespace),
                &none,
                &none,
                &none,
                // Connecting waits 2 minutes at most.
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
        })
    };
    connected.map_err(|e| failure(&e))
}

/// WMI's locator, setting COM up for the process first if no one has.
fn locator() -> windows::core::Result<IWbemLocator> {
    // SAFETY: creates an object of a known class; the result is checked.
    let create = || unsafe { CoCreateInstance(&WbemLocator, None, CLSCTX_INPROC_SERVER) };
    match create() {
        Err(error) if error.code() == CO_E_NOTINITIALIZED => {
            set_up_com()?;
            create()
        }
        created => created,
    }
}

/// Sets COM up for the process, as the `wmi` crate does: the process's
/// multithreaded apartment, which every thread that has not set COM up
/// joins, kept for the process's life; and the process's COM security
/// (default authentication, impersonation), unless something in the
/// process has set it already.
fn set_up_com() -> windows::core::Result<()> {
    // SAFETY: no arguments; the apartment is never left, as intended.
    unsafe { CoIncrementMTAUsage() }?;
    // SAFETY: no descriptor, services or list: COM's defaults.
    let secured = unsafe {
        CoInitializeSecurity(
            None,
            -1,
            None,
            None,
            RPC_C_AUTHN_LEVEL_DEFAULT,
            RPC_C_IMP_LEVEL_IMPERSONATE,
            None,
            EOAC_NONE,
            None,
        )
    };
    match secured {
        Err(error) if error.code() != RPC_E_TOO_LATE => Err(error),
        _ => Ok(()),
    }
}

/// Starts `query` in `services`; its objects come as WMI finds them.
pub fn query(services: &IWbemServices, query: &str) -> Result<QueryRows, WmiFailure> {
    forget_error_object();
    // SAFETY: live services and owned strings; the result is checked.
    let started = unsafe {
        services.ExecQuery(
            &BSTR::from("WQL"),
            &BSTR::from(query),
            WBEM_FLAG_RETURN_IMMEDIATELY | WBEM_FLAG_FORWARD_ONLY,
            None::<&IWbemContext>,
        )
    };
    started.map(QueryRows).map_err(|e| failure(&e))
}

/// The objects of a query under way.
pub struct QueryRows(IEnumWbemClassObject);

impl Rows for QueryRows {
    type Row = WmiObject;

    fn next(&mut self, wait: Duration) -> Step<WmiObject> {
        let mut objects = [None; 1];
        let mut returned = 0;
        forget_error_object();
        // SAFETY: a live enumerator, room for one object, and its count.
        let answer = unsafe { self.0.Next(millis(wait), &mut objects, &mut returned) };
        let [object] = objects;
        match object.filter(|_| returned > 0) {
            _ if answer.is_err() => Step::Failed(failure(&answer.into())),
            Some(object) => match with_path(&IWbemClassWrapper::new(object)) {
                Ok(found) => Step::Row(found),
                Err(failure) => Step::Failed(failure),
            },
            None if answer == HRESULT(WBEM_S_TIMEDOUT.0) => Step::Pending,
            // `WBEM_S_FALSE`: no more objects.
            None => Step::Done,
        }
    }
}

/// The input of `method` of `class`, with `params`; `None` for a method
/// without input parameters.
pub fn input(
    services: &IWbemServices,
    class: &str,
    method: &str,
    params: Vec<(&'static str, WmiValue)>,
) -> Result<Option<IWbemClassWrapper>, WmiFailure> {
    // The class's definition comes from WMI's repository, not from the
    // provider: it is read synchronously.
    let mut definition = None;
    forget_error_object();
    // SAFETY: live services; `definition` receives an owned object.
    let read = unsafe {
        services.GetObject(
            &BSTR::from(class),
            WBEM_FLAG_RETURN_WBEM_COMPLETE,
            None::<&IWbemContext>,
            Some(&mut definition),
            None,
        )
    };
    read.map_err(|e| failure(&e))?;
    let Some(definition) = definition else {
        return Err(WmiFailure::from(wmi::WMIError::NullPointerResult));
    };
    let Some(signature) = IWbemClassWrapper::new(definition).get_method(method)? else {
        return Ok(None);
    };
    let input = signature.spawn_instance()?;
    for (name, value) in params {
        input.put_property(name, Variant::from(value))?;
    }
    Ok(Some(input))
}

/// Starts `method` on `target` (a class, or an instance's path) in
/// `services` with `input`. `input` may hold secrets: they go to WMI
/// only.
pub fn call(
    services: &IWbemServices,
    target: &str,
    method: &str,
    input: Option<&IWbemClassWrapper>,
) -> Result<CallOutput, WmiFailure> {
    let exec = |semisynchronous| exec_method(services, target, method, input, semisynchronous);
    semisynchronous_first(&SYNCHRONOUS_CALLS, method, exec).map_err(|e| failure(&e))
}

/// Set once WMI refused a semisynchronous method call: every later call
/// of the process is synchronous.
static SYNCHRONOUS_CALLS: AtomicBool = AtomicBool::new(false);

/// `exec(true)` (semisynchronous), unless `synchronous` is set; when WMI
/// refuses that form, sets `synchronous` (warning once) and makes the
/// call again as `exec(false)`. Any other failure is the call's.
fn semisynchronous_first<T>(
    synchronous: &AtomicBool,
    method: &str,
    mut exec: impl FnMut(bool) -> windows::core::Result<T>,
) -> windows::core::Result<T> {
    if !synchronous.load(Ordering::Relaxed) {
        match exec(true) {
            Err(error) if refuses_semisynchronous(error.code()) => {
                if !synchronous.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        %method,
                        error = %error,
                        "WMI refuses semisynchronous method calls: they are made \
                         synchronously from now on, and a call WMI does not answer \
                         can no longer be given up"
                    );
                }
            }
            called => return called,
        }
    }
    exec(false)
}

/// Whether a method call's failure is WMI refusing the semisynchronous
/// form (its flag with both the output and the call result asked for).
fn refuses_semisynchronous(code: HRESULT) -> bool {
    code == HRESULT(WBEM_E_INVALID_PARAMETER.0)
}

/// `ExecMethod`, semisynchronous (`WBEM_FLAG_RETURN_IMMEDIATELY`) or not.
fn exec_method(
    services: &IWbemServices,
    target: &str,
    method: &str,
    input: Option<&IWbemClassWrapper>,
    semisynchronous: bool,
) -> windows::core::Result<CallOutput> {
    let (mut output, mut pending) = (None, None);
    forget_error_object();
    let flags = match semisynchronous {
        true => WBEM_FLAG_RETURN_IMMEDIATELY,
        false => WBEM_GENERIC_FLAG_TYPE(0),
    };
    // SAFETY: live services and input; `output` and `pending` receive
    // owned objects or stay `None`. Semisynchronous, both are given: WMI
    // fills the call result (and no output), an implementation that makes
    // the call synchronously (Wine's) the output; synchronous, only the
    // output.
    unsafe {
        services.ExecMethod(
            &BSTR::from(target),
            &BSTR::from(method),
            flags,
            None::<&IWbemContext>,
            input.map(|input| &input.inner),
            Some(&mut output),
            match semisynchronous {
                true => Some(&mut pending),
                false => None,
            },
        )
    }?;
    Ok(match pending {
        Some(pending) => CallOutput::Pending(pending),
        None => CallOutput::Ready(output),
    })
}

/// The output of a method call: under way, there already (or none), or
/// given.
pub enum CallOutput {
    Pending(IWbemCallResult),
    Ready(Option<IWbemClassObject>),
    Given,
}

impl Rows for CallOutput {
    type Row = WmiObject;

    fn next(&mut self, wait: Duration) -> Step<WmiObject> {
        let output = match std::mem::replace(self, Self::Given) {
            Self::Given | Self::Ready(None) => return Step::Done,
            Self::Ready(Some(output)) => output,
            Self::Pending(pending) => {
                let mut output = std::ptr::null_mut();
                forget_error_object();
                // SAFETY: a live call result, and room for an owned
                // object. Called through its table: its wrapper takes
                // `WBEM_S_TIMEDOUT`, a success, with no object for an
                // error.
                let answer = unsafe {
                    (pending.vtable().GetResultObject)(pending.as_raw(), millis(wait), &mut output)
                };
                // SAFETY: null, or the reference to an object the call
                // handed over, which `output` now owns.
                let output =
                    (!output.is_null()).then(|| unsafe { IWbemClassObject::from_raw(output) });
                match output {
                    // Its failure, with the error object WMI left.
                    _ if answer.is_err() => return Step::Failed(failure(&answer.into())),
                    Some(output) => output,
                    None if answer == HRESULT(WBEM_S_TIMEDOUT.0) => {
                        *self = Self::Pending(pending);
                        return Step::Pending;
                    }
                    None => return Step::Done,
                }
            }
        };
        match properties(&IWbemClassWrapper::new(output)) {
            Ok(output) => Step::Row(output),
            Err(failure) => Step::Failed(failure),
        }
    }
}

/// `wait` as WMI takes a timeout: in milliseconds, at least one.
fn millis(wait: Duration) -> i32 {
    i32::try_from(wait.as_millis()).unwrap_or(i32::MAX).max(1)
}

/// A failed COM call as the seam reports it, with the error object the
/// provider left on the thread, if any (WMI leaves an `__ExtendedStatus`
/// there, which `windows` keeps with the error).
fn failure(error: &windows::core::Error) -> WmiFailure {
    let info = error.as_ptr();
    // SAFETY: `as_ptr` gives the error's own `IErrorInfo` or null, valid
    // while `error` lives; it is only borrowed here.
    let info = unsafe { windows::core::IUnknown::from_raw_borrowed(&info) };
    let object = info.and_then(|info| info.cast::<IWbemClassObject>().ok());
    // The system has no text for most WMI codes, and an error object may
    // carry an empty one: the code is always in the message.
    let code = error.code();
    let text = Some(error.message())
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| code.message());
    WmiFailure {
        hresult: Some(code.0),
        message: format!("HRESULT {:#010X}: {}", code.0 as u32, text.trim()),
        error_object: object.map(|o| error_details(&IWbemClassWrapper::new(o))),
        gave_up_after: None,
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

/// Forgets any error object an earlier call left on this thread, so that
/// the next failure's is its own.
fn forget_error_object() {
    // SAFETY: no object: clears the thread's error information.
    let _ = unsafe { SetErrorInfo(0, None::<&IErrorInfo>) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use windows::core::Error;
    use windows::Win32::Foundation::E_ACCESSDENIED;
    use windows::Win32::System::Wmi::{WBEM_E_ACCESS_DENIED, WBEM_E_FAILED};

    #[test]
    fn only_wmis_refusal_of_the_semisynchronous_form_falls_back() {
        assert!(refuses_semisynchronous(HRESULT(WBEM_E_INVALID_PARAMETER.0)));
        assert!(!refuses_semisynchronous(HRESULT(WBEM_E_FAILED.0)));
        assert!(!refuses_semisynchronous(E_ACCESSDENIED));
        assert!(!refuses_semisynchronous(HRESULT(WBEM_S_TIMEDOUT.0)));
    }

    /// A WMI that refuses the semisynchronous form, and records the forms
    /// it was asked in.
    fn refusing(
        asked: &mut Vec<bool>,
    ) -> impl FnMut(bool) -> windows::core::Result<&'static str> + '_ {
        |semisynchronous| {
            asked.push(semisynchronous);
            match semisynchronous {
                true => Err(Error::from(HRESULT(WBEM_E_INVALID_PARAMETER.0))),
                false => Ok("output"),
            }
        }
    }

    #[test]
    fn a_refused_semisynchronous_call_is_made_again_synchronously_and_so_is_every_later_one() {
        let synchronous = AtomicBool::new(false);
        let mut asked = Vec::new();
        let answer = semisynchronous_first(&synchronous, "Format", refusing(&mut asked));
        assert_eq!(answer.unwrap(), "output");
        assert_eq!(asked, [true, false]);
        assert!(synchronous.load(Ordering::Relaxed));

        // The next call is not offered in the refused form at all.
        asked.clear();
        let answer = semisynchronous_first(&synchronous, "Format", refusing(&mut asked));
        assert_eq!(answer.unwrap(), "output");
        assert_eq!(asked, [false]);
    }

    #[test]
    fn another_failure_is_the_calls_own_and_changes_no_form() {
        let synchronous = AtomicBool::new(false);
        let mut asked = Vec::new();
        let denied = HRESULT(WBEM_E_ACCESS_DENIED.0);
        let answer = semisynchronous_first(&synchronous, "Format", |semisynchronous| {
            asked.push(semisynchronous);
            Err::<(), _>(Error::from(denied))
        });
        assert_eq!(answer.unwrap_err().code(), denied);
        assert_eq!(asked, [true], "not made again");
        assert!(!synchronous.load(Ordering::Relaxed));
    }

    /// The synchronous form reaches the host's own WMI (Wine's) and gives
    /// the method's output, as the fallback takes it.
    #[test]
    fn the_synchronous_form_reaches_the_hosts_wmi() {
        use crate::host::wmi::{string, unsigned, Limit, WmiValue};

        let services = services(r"ROOT\CIMV2").unwrap();
        let params = vec![
            ("hDefKey", WmiValue::UInt(0x8000_0002)), // HKEY_LOCAL_MACHINE
            (
                "sSubKeyName",
                WmiValue::String(r"Software\Microsoft\Windows NT\CurrentVersion".into()),
            ),
            ("sValueName", WmiValue::String("CurrentVersion".into())),
        ];
        let input = input(&services, "StdRegProv", "GetStringValue", params).unwrap();
        let synchronous = AtomicBool::new(true);
        let mut forms = Vec::new();
        let mut output = semisynchronous_first(&synchronous, "GetStringValue", |semi| {
            forms.push(semi);
            exec_method(
                &services,
                "StdRegProv",
                "GetStringValue",
                input.as_ref(),
                semi,
            )
        })
        .unwrap();
        assert_eq!(forms, [false]);
        assert!(matches!(output, CallOutput::Ready(Some(_))));
        let limit = Limit::within(std::time::Duration::from_secs(60));
        let rows = crate::host::wmi::wait::collect(&mut output, &limit).unwrap();
        let output = rows.first().expect("the method's output");
        assert_eq!(
            output.get("ReturnValue").and_then(unsigned),
            Some(0),
            "{output:?}"
        );
        assert!(
            string(output, "sValue").is_some_and(|v| v.contains('.')),
            "{output:?}"
        );
    }
}
