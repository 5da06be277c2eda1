//! The system group on the host: the BIOS serial number from WMI's
//! `Win32_BIOS`, and services through the service control manager.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use windows::core::{HSTRING, PCWSTR, PWSTR};
use windows::Win32::System::Services::{
    CloseServiceHandle, ControlService, EnumDependentServicesW, OpenSCManagerW, OpenServiceW,
    QueryServiceConfigW, QueryServiceStatus, StartServiceW, ENUM_SERVICE_STATUSW,
    QUERY_SERVICE_CONFIGW, SC_HANDLE, SC_MANAGER_CONNECT, SERVICE_ACTIVE, SERVICE_CONTROL_STOP,
    SERVICE_ENUMERATE_DEPENDENTS, SERVICE_QUERY_CONFIG, SERVICE_QUERY_STATUS, SERVICE_RUNNING,
    SERVICE_START, SERVICE_START_PENDING, SERVICE_STATUS, SERVICE_STATUS_CURRENT_STATE,
    SERVICE_STOP, SERVICE_STOPPED, SERVICE_STOP_PENDING,
};

use super::on_host::{host_error, on_host, win32_code, windows_error};
use super::wmi::{Wmi, WmiGroup, WmiObject, WmiValue};
use crate::api::{ServiceInfo, ServiceStatus, StartType, SystemApi};
use crate::capability::Operation as Op;
use crate::error::Result;
use crate::group::ApiGroup;

/// How long a start or stop waits for the service, as the proxy does.
const SERVICE_WAIT: Duration = Duration::from_secs(30);
/// How often a start or stop looks at the service while it waits.
const SERVICE_POLL: Duration = Duration::from_millis(100);
/// `ERROR_SERVICE_ALREADY_RUNNING`: a start of a running service.
const ERROR_SERVICE_ALREADY_RUNNING: i32 = 1056;
/// `ERROR_SERVICE_NOT_ACTIVE`: a stop of a stopped service.
const ERROR_SERVICE_NOT_ACTIVE: i32 = 1062;
/// `ERROR_SERVICE_CANNOT_ACCEPT_CTRL`: a stop of a service that is
/// stopping, or still starting.
const ERROR_SERVICE_CANNOT_ACCEPT_CTRL: i32 = 1061;

/// The system group, served by the host.
pub(crate) struct HostSystem {
    wmi: WmiGroup,
}

impl HostSystem {
    /// The group, with the BIOS read through `wmi`.
    pub fn new(wmi: Arc<dyn Wmi>) -> Self {
        Self {
            wmi: WmiGroup::new(wmi, ApiGroup::System, r"ROOT\CIMV2"),
        }
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl SystemApi for HostSystem {
    async fn get_bios_serial_number(&self) -> Result<String> {
        let op = Op::GetBiosSerialNumber;
        self.wmi
            .run(op, "", |wmi| {
                serial_number(wmi.query("SELECT SerialNumber FROM Win32_BIOS")?)
            })
            .await
    }

    /// Waits until it runs; a running service is left as it is.
    async fn start_service(&self, name: &str) -> Result<()> {
        let op = Op::StartService;
        let name = name.to_owned();
        on_host(self.wmi.in_flight(), op, name.clone(), move || {
            let service = Service::open(op, &name, SERVICE_START | SERVICE_QUERY_STATUS)?;
            // SAFETY: a handle open for SERVICE_START, no arguments.
            match unsafe { StartServiceW(service.handle, None) } {
                Err(e) if win32_code(&e) == Some(ERROR_SERVICE_ALREADY_RUNNING) => {}
                other => other.map_err(|e| windows_error(op, &name, e))?,
            }
            service.wait_for(op, SERVICE_RUNNING)
        })
        .await
    }

    /// Waits until it has stopped; with `force`, the running services that
    /// depend on it are stopped first. A stopped service is left as it is.
    async fn stop_service(&self, name: &str, force: bool) -> Result<()> {
        let op = Op::StopService;
        let name = name.to_owned();
        on_host(self.wmi.in_flight(), op, name.clone(), move || {
            let access = SERVICE_STOP | SERVICE_QUERY_STATUS | SERVICE_ENUMERATE_DEPENDENTS;
            let service = Service::open(op, &name, access)?;
            if force {
                for dependent in service.running_dependents(op)? {
                    Service::open(op, &dependent, SERVICE_STOP | SERVICE_QUERY_STATUS)?.stop(op)?;
                }
            }
            service.stop(op)
        })
        .await
    }

    async fn get_service(&self, name: &str) -> Result<ServiceInfo> {
        let op = Op::GetService;
        let name = name.to_owned();
        on_host(self.wmi.in_flight(), op, name.clone(), move || {
            let service = Service::open(op, &name, SERVICE_QUERY_CONFIG | SERVICE_QUERY_STATUS)?;
            let (display_name, start_type) = service.config(op)?;
            Ok(ServiceInfo {
                display_name,
                start_type,
                status: status_of(service.status(op)?),
            })
        })
        .await
    }
}

/// The serial number of the first `Win32_BIOS` row.
fn serial_number(rows: Vec<WmiObject>) -> Result<String> {
    let op = Op::GetBiosSerialNumber;
    let row = rows.into_iter().next();
    match row.as_ref().and_then(|r| r.get("SerialNumber")) {
        Some(WmiValue::String(serial)) => Ok(serial.clone()),
        // The class documents a null serial number as possible.
        Some(WmiValue::Null) => Ok(String::new()),
        Some(other) => Err(host_error(
            op,
            format!("Win32_BIOS.SerialNumber is not a string: {other:?}"),
            None,
        )),
        None => Err(host_error(op, "WMI has no Win32_BIOS instance", None)),
    }
}

/// The service's status as the API names it.
fn status_of(state: SERVICE_STATUS_CURRENT_STATE) -> ServiceStatus {
    match state.0 {
        1 => ServiceStatus::Stopped,
        2 => ServiceStatus::StartPending,
        3 => ServiceStatus::StopPending,
        4 => ServiceStatus::Running,
        5 => ServiceStatus::ContinuePending,
        6 => ServiceStatus::PausePending,
        7 => ServiceStatus::Paused,
        _ => ServiceStatus::Unknown,
    }
}

/// A service control manager handle, closed when dropped.
struct Handle(SC_HANDLE);

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle was opened by this process and is closed once.
        let _ = unsafe { CloseServiceHandle(self.0) };
    }
}

/// One open service, and the manager it was opened through.
struct Service {
    name: String,
    handle: SC_HANDLE,
    _service: Handle,
    _manager: Handle,
}

impl Service {
    fn open(op: Op, name: &str, access: u32) -> Result<Self> {
        let fail = |e| windows_error(op, name, e);
        // SAFETY: null machine and database name: the local manager.
        let manager = unsafe { OpenSCManagerW(PCWSTR::null(), PCWSTR::null(), SC_MANAGER_CONNECT) };
        let manager = Handle(manager.map_err(fail)?);
        // SAFETY: an open manager handle and a NUL-terminated name.
        let service = unsafe { OpenServiceW(manager.0, &HSTRING::from(name), access) };
        let service = Handle(service.map_err(fail)?);
        Ok(Self {
            name: name.to_owned(),
            handle: service.0,
            _service: service,
            _manager: manager,
        })
    }

    fn status(&self, op: Op) -> Result<SERVICE_STATUS_CURRENT_STATE> {
        let mut status = SERVICE_STATUS::default();
        // SAFETY: a handle open for SERVICE_QUERY_STATUS and a status to fill.
        unsafe { QueryServiceStatus(self.handle, &mut status) }
            .map_err(|e| windows_error(op, &self.name, e))?;
        Ok(status.dwCurrentState)
    }

    /// Asks the service to stop and waits until it has. One already
    /// stopping is waited for, and one still starting is stopped once it
    /// runs, as the proxy does; neither is an error.
    fn stop(&self, op: Op) -> Result<()> {
        // A start is waited for once: a service that keeps starting is not
        // chased.
        let mut waited_for_start = false;
        loop {
            let mut status = SERVICE_STATUS::default();
            // SAFETY: a handle open for SERVICE_STOP and a status to fill.
            let refused =
                match unsafe { ControlService(self.handle, SERVICE_CONTROL_STOP, &mut status) } {
                    Ok(()) => return self.wait_for(op, SERVICE_STOPPED),
                    Err(e) => e,
                };
            let state = match win32_code(&refused) {
                Some(code @ (ERROR_SERVICE_NOT_ACTIVE | ERROR_SERVICE_CANNOT_ACCEPT_CTRL)) => {
                    (code, self.status(op)?)
                }
                _ => return Err(windows_error(op, &self.name, refused)),
            };
            match after_refused_stop(state.0, state.1) {
                Some(SERVICE_STOPPED) => return self.wait_for(op, SERVICE_STOPPED),
                Some(SERVICE_RUNNING) if !waited_for_start => {
                    waited_for_start = true;
                    // A start that fails ends stopped: the stop's goal.
                    if self.wait_for_any(op, &[SERVICE_RUNNING, SERVICE_STOPPED])?
                        == SERVICE_STOPPED
                    {
                        return Ok(());
                    }
                }
                _ => return Err(windows_error(op, &self.name, refused)),
            }
        }
    }

    /// Waits up to [`SERVICE_WAIT`] for the service to reach `wanted`.
    fn wait_for(&self, op: Op, wanted: SERVICE_STATUS_CURRENT_STATE) -> Result<()> {
        self.wait_for_any(op, &[wanted]).map(drop)
    }

    /// Waits up to [`SERVICE_WAIT`] for the service to reach one of
    /// `wanted`; the one it reached.
    fn wait_for_any(
        &self,
        op: Op,
        wanted: &[SERVICE_STATUS_CURRENT_STATE],
    ) -> Result<SERVICE_STATUS_CURRENT_STATE> {
        let started = Instant::now();
        loop {
            let state = self.status(op)?;
            if wanted.contains(&state) {
                return Ok(state);
            }
            if started.elapsed() >= SERVICE_WAIT {
                let wanted: Vec<_> = wanted.iter().map(|&w| status_of(w)).collect();
                return Err(host_error(
                    op,
                    format!(
                        "{}: still {:?} after {SERVICE_WAIT:?}, waiting for {wanted:?}",
                        self.name,
                        status_of(state),
                    ),
                    None,
                ));
            }
            thread::sleep(SERVICE_POLL);
        }
    }

    /// The display name and start type.
    fn config(&self, op: Op) -> Result<(String, StartType)> {
        let fail = |e| windows_error(op, &self.name, e);
        let buffer = fill(|buffer, size, needed| {
            // SAFETY: a handle open for SERVICE_QUERY_CONFIG and a buffer of
            // `size` bytes, aligned for the structure.
            unsafe { QueryServiceConfigW(self.handle, buffer.map(|b| b.cast()), size, needed) }
        })
        .map_err(fail)?;
        if buffer.len() * 8 < std::mem::size_of::<QUERY_SERVICE_CONFIGW>() {
            return Err(host_error(
                op,
                format!("{}: no configuration", self.name),
                None,
            ));
        }
        // SAFETY: the call filled the buffer with one structure, whose
        // strings are null or point into the same buffer.
        let config = unsafe { &*buffer.as_ptr().cast::<QUERY_SERVICE_CONFIGW>() };
        let display_name = wide_string(config.lpDisplayName);
        let start_type = match config.dwStartType.0 {
            0 => StartType::Boot,
            1 => StartType::System,
            2 => StartType::Automatic,
            4 => StartType::Disabled,
            _ => StartType::Manual,
        };
        Ok((display_name, start_type))
    }

    /// The names of the running services that depend on this one.
    fn running_dependents(&self, op: Op) -> Result<Vec<String>> {
        let mut count = 0u32;
        let buffer = fill(|buffer, size, needed| {
            // SAFETY: a handle open for SERVICE_ENUMERATE_DEPENDENTS and a
            // buffer of `size` bytes, aligned for the structures.
            unsafe {
                EnumDependentServicesW(
                    self.handle,
                    SERVICE_ACTIVE,
                    buffer.map(|b| b.cast()),
                    size,
                    needed,
                    &mut count,
                )
            }
        })
        .map_err(|e| windows_error(op, &self.name, e))?;
        // SAFETY: the call wrote `count` structures at the buffer's start,
        // whose strings point into the same buffer.
        let services = unsafe {
            std::slice::from_raw_parts(
                buffer.as_ptr().cast::<ENUM_SERVICE_STATUSW>(),
                count as usize,
            )
        };
        Ok(services
            .iter()
            .map(|s| wide_string(s.lpServiceName))
            .collect())
    }
}

/// What a stop the service refused with `code` waits for, the service
/// being `state`: its stop (stopped, or stopping), or its start (then it
/// is asked again); `None`: the refusal is the answer.
fn after_refused_stop(
    code: i32,
    state: SERVICE_STATUS_CURRENT_STATE,
) -> Option<SERVICE_STATUS_CURRENT_STATE> {
    match (code, state) {
        (ERROR_SERVICE_NOT_ACTIVE, _) | (_, SERVICE_STOPPED | SERVICE_STOP_PENDING) => {
            Some(SERVICE_STOPPED)
        }
        (ERROR_SERVICE_CANNOT_ACCEPT_CTRL, SERVICE_START_PENDING) => Some(SERVICE_RUNNING),
        _ => None,
    }
}

/// A string an API returned, empty for a null pointer.
fn wide_string(text: PWSTR) -> String {
    if text.is_null() {
        return String::new();
    }
    // SAFETY: a non-null, NUL-terminated string the API wrote.
    unsafe { text.to_string() }.unwrap_or_default()
}

/// Calls an API that fills a buffer of variable size: first to learn the
/// size, then with a buffer that large (8-byte aligned, for the pointers in
/// the structures it holds).
fn fill(
    mut call: impl FnMut(Option<*mut u64>, u32, *mut u32) -> windows::core::Result<()>,
) -> windows::core::Result<Vec<u64>> {
    /// `ERROR_INSUFFICIENT_BUFFER` and `ERROR_MORE_DATA`.
    const SIZE_ERRORS: [i32; 2] = [122, 234];
    let mut needed = 0u32;
    match call(None, 0, &mut needed) {
        Ok(()) => return Ok(Vec::new()),
        Err(e) if win32_code(&e).is_some_and(|c| SIZE_ERRORS.contains(&c)) => {}
        Err(e) => return Err(e),
    }
    let mut buffer = vec![0u64; (needed as usize).div_ceil(8)];
    let size = (buffer.len() * 8) as u32;
    call(Some(buffer.as_mut_ptr()), size, &mut needed)?;
    Ok(buffer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use windows::Win32::System::Services::{SERVICE_CONTINUE_PENDING, SERVICE_PAUSED};

    #[test]
    fn a_stop_refused_while_the_service_stops_or_starts_waits_for_it() {
        let cannot = ERROR_SERVICE_CANNOT_ACCEPT_CTRL;
        // Already stopping (1061): its stop is waited for, as the proxy does.
        assert_eq!(
            after_refused_stop(cannot, SERVICE_STOP_PENDING),
            Some(SERVICE_STOPPED)
        );
        // Stopped between the two calls.
        assert_eq!(
            after_refused_stop(cannot, SERVICE_STOPPED),
            Some(SERVICE_STOPPED)
        );
        // Still starting: its start, then the stop again.
        assert_eq!(
            after_refused_stop(cannot, SERVICE_START_PENDING),
            Some(SERVICE_RUNNING)
        );
        // Not running (1062): stopped.
        let inactive = ERROR_SERVICE_NOT_ACTIVE;
        assert_eq!(
            after_refused_stop(inactive, SERVICE_STOPPED),
            Some(SERVICE_STOPPED)
        );
        // A service that refuses for another reason: the refusal.
        assert_eq!(after_refused_stop(cannot, SERVICE_PAUSED), None);
        assert_eq!(after_refused_stop(cannot, SERVICE_CONTINUE_PENDING), None);
    }
}
