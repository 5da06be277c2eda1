//! Faults of the fake host: Windows errors, failures and delays planned for
//! the n-th call of an operation, latencies every call of an operation
//! waits, calls held for a test to act on, and the one path every call
//! takes.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use tokio::sync::oneshot;

use super::state::HostState;
use super::FakeHost;
use crate::capability::Operation;
use crate::error::{Code, Error, Result};

/// A Windows error (a Win32 `ERROR_*` code and its text), for the fake
/// host's own failures and for [`FakeHost::fail_call`].
///
/// A failure made from it is [`Error::Host`] with code `Unknown`, the text
/// as its message and the code as its `os_code`, as the `host-process`
/// backend reports one. Through a [`FakeProxy`](crate::testing::FakeProxy)
/// only the text reaches the client, as with the real proxy.
///
/// ```
/// use csi_proxy_client::testing::WindowsError;
///
/// let error = WindowsError::new(WindowsError::LOGON_FAILURE);
/// assert_eq!(error.code(), 1326);
/// assert_eq!(error.message(), "The user name or password is incorrect.");
/// let custom = WindowsError::with_message(1450, "Resize-Partition: out of resources");
/// assert_eq!(custom.message(), "Resize-Partition: out of resources");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WindowsError {
    code: u32,
    message: String,
}

impl WindowsError {
    /// 2, `ERROR_FILE_NOT_FOUND`.
    pub const FILE_NOT_FOUND: u32 = 2;
    /// 3, `ERROR_PATH_NOT_FOUND`.
    pub const PATH_NOT_FOUND: u32 = 3;
    /// 5, `ERROR_ACCESS_DENIED`.
    pub const ACCESS_DENIED: u32 = 5;
    /// 8, `ERROR_NOT_ENOUGH_MEMORY` (nodes with hundreds of leaked SMB
    /// mappings report it).
    pub const NOT_ENOUGH_MEMORY: u32 = 8;
    /// 19, `ERROR_WRITE_PROTECT`: the disk is read-only.
    pub const WRITE_PROTECT: u32 = 19;
    /// 21, `ERROR_NOT_READY`.
    pub const NOT_READY: u32 = 21;
    /// 32, `ERROR_SHARING_VIOLATION`.
    pub const SHARING_VIOLATION: u32 = 32;
    /// 53, `ERROR_BAD_NETPATH`: no such SMB server.
    pub const BAD_NETPATH: u32 = 53;
    /// 59, `ERROR_UNEXP_NET_ERR`.
    pub const UNEXPECTED_NETWORK_ERROR: u32 = 59;
    /// 64, `ERROR_NETNAME_DELETED`: the share stopped answering.
    pub const NETNAME_DELETED: u32 = 64;
    /// 65, `ERROR_NETWORK_ACCESS_DENIED`.
    pub const NETWORK_ACCESS_DENIED: u32 = 65;
    /// 67, `ERROR_BAD_NET_NAME`: no such share on the server.
    pub const BAD_NET_NAME: u32 = 67;
    /// 85, `ERROR_ALREADY_ASSIGNED`: a mapping of that name exists.
    pub const ALREADY_ASSIGNED: u32 = 85;
    /// 87, `ERROR_INVALID_PARAMETER`.
    pub const INVALID_PARAMETER: u32 = 87;
    /// 112, `ERROR_DISK_FULL`.
    pub const DISK_FULL: u32 = 112;
    /// 121, `ERROR_SEM_TIMEOUT`.
    pub const SEM_TIMEOUT: u32 = 121;
    /// 145, `ERROR_DIR_NOT_EMPTY`.
    pub const DIR_NOT_EMPTY: u32 = 145;
    /// 183, `ERROR_ALREADY_EXISTS`.
    pub const ALREADY_EXISTS: u32 = 183;
    /// 1117, `ERROR_IO_DEVICE`.
    pub const IO_DEVICE: u32 = 1117;
    /// 1219, `ERROR_SESSION_CREDENTIAL_CONFLICT`: the server is already
    /// connected under another user name.
    pub const SESSION_CREDENTIAL_CONFLICT: u32 = 1219;
    /// 1326, `ERROR_LOGON_FAILURE`: wrong user name or password.
    pub const LOGON_FAILURE: u32 = 1326;
    /// 1450, `ERROR_NO_SYSTEM_RESOURCES`.
    pub const NO_SYSTEM_RESOURCES: u32 = 1450;

    /// Error `code` with Windows' standard English text, or
    /// `Unknown Windows error <code>.` for a code this type does not know
    /// (every constant of this type is known).
    pub fn new(code: u32) -> Self {
        let message = match standard_text(code) {
            Some(text) => text.to_owned(),
            None => format!("Unknown Windows error {code}."),
        };
        Self { code, message }
    }

    /// Error `code` with the text `message` (a PowerShell cmdlet's, say).
    pub fn with_message(code: u32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// The Win32 error code.
    pub fn code(&self) -> u32 {
        self.code
    }

    /// The text.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The failure of `operation` it makes: [`Error::Host`], code
    /// `Unknown`, the text as the message and the code as `os_code`.
    pub fn into_error(self, operation: Operation) -> Error {
        Error::Host {
            operation,
            code: Code::Unknown,
            message: self.message,
            // Win32 codes are small and positive; a larger one keeps its bits,
            // as an HRESULT does.
            os_code: Some(self.code as i32),
            return_value: None,
        }
    }
}

impl fmt::Display for WindowsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (Windows error {})", self.message, self.code)
    }
}

impl std::error::Error for WindowsError {}

/// Windows' English text for the codes the fake host knows.
fn standard_text(code: u32) -> Option<&'static str> {
    Some(match code {
        2 => "The system cannot find the file specified.",
        3 => "The system cannot find the path specified.",
        5 => "Access is denied.",
        8 => "Not enough memory resources are available to process this command.",
        19 => "The media is write protected.",
        21 => "The device is not ready.",
        32 => "The process cannot access the file because it is being used by another process.",
        53 => "The network path was not found.",
        59 => "An unexpected network error occurred.",
        64 => "The specified network name is no longer available.",
        65 => "Network access is denied.",
        67 => "The network name cannot be found.",
        85 => "The local device name is already in use.",
        87 => "The parameter is incorrect.",
        112 => "There is not enough space on the disk.",
        121 => "The semaphore timeout period has expired.",
        145 => "The directory is not empty.",
        183 => "Cannot create a file when that file already exists.",
        1117 => "The request could not be performed because of an I/O device error.",
        1219 => {
            "Multiple connections to a server or shared resource by the same user, \
                 using more than one user name, are not allowed. Disconnect all previous \
                 connections to the server or shared resource and try again."
        }
        1326 => "The user name or password is incorrect.",
        1450 => "Insufficient system resources exist to complete the requested service.",
        _ => return None,
    })
}

/// The failure of `operation` that Windows error `code` makes.
pub(super) fn windows_error(operation: Operation, code: u32) -> Error {
    WindowsError::new(code).into_error(operation)
}

/// WMI's `WBEM_E_FAILED`, "Generic failure": how the SMB provider refuses
/// a mapping over a stale one (aksArc #111, csi-driver-smb #326).
pub(super) const GENERIC_FAILURE: u32 = 0x8004_1001;

/// Calls received per operation, and what is planned for calls to come.
#[derive(Debug, Default)]
pub(super) struct Faults {
    received: BTreeMap<Operation, usize>,
    planned: Vec<Planned>,
    /// What every call of an operation waits before its work
    /// ([`FakeHost::set_latency`]); no entry is no wait.
    latencies: BTreeMap<Operation, Duration>,
    /// Calls received, of every operation.
    total: usize,
    /// Calls to hold, by their number among all calls.
    holds: Vec<Hold>,
}

/// What a held call tells the test: its operation, and the sender with
/// which the test lets it go ([`FakeHost::hold_call`]).
type HeldCall = (Operation, oneshot::Sender<()>);

/// A call to hold, before its work or after it.
#[derive(Debug)]
struct Hold {
    /// Which call (1 = the first the host received, of any operation).
    call: usize,
    after_work: bool,
    tell: oneshot::Sender<HeldCall>,
}

impl Hold {
    /// Tells the test that the call is here, and waits until it lets the
    /// call go: whether it sent (rather than dropped) the go-ahead. A hold
    /// whose receiver is gone holds nothing.
    async fn wait(self, operation: Operation) -> bool {
        let (go, gone) = oneshot::channel();
        if self.tell.send((operation, go)).is_err() {
            return true;
        }
        gone.await.is_ok()
    }
}

#[derive(Debug)]
struct Planned {
    operation: Operation,
    /// Which call of `operation` (1 = the first the host received).
    call: usize,
    fault: Fault,
}

#[derive(Debug)]
enum Fault {
    Fail(WindowsError),
    Delay(Duration),
}

/// What happens to one call: it may be held before its work; it waits
/// `delay`, then fails with `failure` or does its work; it may be held
/// before its answer.
#[derive(Debug, Default)]
struct Plan {
    delay: Duration,
    failure: Option<WindowsError>,
    hold_before: Option<Hold>,
    hold_after: Option<Hold>,
}

impl Faults {
    fn received(&self, operation: Operation) -> usize {
        self.received.get(&operation).copied().unwrap_or(0)
    }

    fn latency(&self, operation: Operation) -> Duration {
        self.latencies.get(&operation).copied().unwrap_or_default()
    }

    fn set_latency(&mut self, operation: Operation, latency: Duration) {
        if latency.is_zero() {
            self.latencies.remove(&operation);
        } else {
            self.latencies.insert(operation, latency);
        }
    }

    fn plan(&mut self, caller: &str, operation: Operation, nth: usize, fault: Fault) {
        assert!(
            nth >= 1,
            "FakeHost::{caller}: calls are counted from 1 (the next call of {}), not {nth}",
            operation.name()
        );
        let call = self.received(operation) + nth;
        self.planned.push(Planned {
            operation,
            call,
            fault,
        });
    }

    fn hold(&mut self, caller: &str, nth: usize, after_work: bool) -> oneshot::Receiver<HeldCall> {
        assert!(
            nth >= 1,
            "FakeHost::{caller}: calls are counted from 1 (the next call), not {nth}"
        );
        let (tell, told) = oneshot::channel();
        self.holds.push(Hold {
            call: self.total + nth,
            after_work,
            tell,
        });
        told
    }

    /// Counts a call of `operation` and takes what was planned for it.
    fn next_call(&mut self, operation: Operation) -> Plan {
        let call = self.received(operation) + 1;
        self.received.insert(operation, call);
        self.total += 1;
        let mut plan = Plan {
            delay: self.latency(operation),
            ..Plan::default()
        };
        // Holds whose receiver was dropped are forgotten; for one call, the
        // first hold planned before its work and the first after it win.
        self.holds.retain(|hold| !hold.tell.is_closed());
        let total = self.total;
        let mut index = 0;
        while index < self.holds.len() {
            if self.holds[index].call != total {
                index += 1;
                continue;
            }
            let hold = self.holds.remove(index);
            let slot = match hold.after_work {
                false => &mut plan.hold_before,
                true => &mut plan.hold_after,
            };
            slot.get_or_insert(hold);
        }
        self.planned.retain_mut(|planned| {
            if planned.operation != operation || planned.call != call {
                return true;
            }
            match &mut planned.fault {
                Fault::Delay(delay) => plan.delay += *delay,
                Fault::Fail(error) if plan.failure.is_none() => {
                    plan.failure = Some(error.clone());
                }
                // A second failure for the same call is dropped: the first
                // one planned wins.
                Fault::Fail(_) => {}
            }
            false
        });
        plan
    }
}

impl Plan {
    fn run<T>(
        self,
        operation: Operation,
        state: &mut HostState,
        work: impl FnOnce(&mut HostState) -> Result<T>,
    ) -> Result<T> {
        match self.failure {
            Some(error) => Err(error.into_error(operation)),
            None => work(state),
        }
    }
}

impl FakeHost {
    /// Makes the `nth` call of `operation` from now on (1: the next one)
    /// fail with `error`, changing nothing on the host. Several failures
    /// may be planned, for the same operation or others; for one call, the
    /// first planned wins. The call is counted ([`calls_of`](Self::calls_of))
    /// either way.
    ///
    /// ```
    /// use csi_proxy_client::api::DiskApi;
    /// use csi_proxy_client::testing::{FakeHost, WindowsError};
    /// use csi_proxy_client::Operation;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let host = FakeHost::builder().disk(1, "pd-1", 10 << 30).build();
    /// host.fail_call(Operation::PartitionDisk, 1, WindowsError::new(1117));
    /// assert!(host.partition_disk(1).await.is_err());
    /// assert!(!host.disk(1).unwrap().partitioned, "nothing changed");
    /// host.partition_disk(1).await.unwrap(); // the second call works
    /// assert_eq!(host.calls_of(Operation::PartitionDisk), 2);
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// When `nth` is 0.
    pub fn fail_call(&self, operation: Operation, nth: usize, error: WindowsError) {
        self.state()
            .faults
            .plan("fail_call", operation, nth, Fault::Fail(error));
    }

    /// Makes the `nth` call of `operation` from now on (1: the next one) do
    /// its work only after `delay`, and answer then. The work is done even
    /// if the caller stopped waiting (its future was dropped, or a
    /// [`FakeProxy`](crate::testing::FakeProxy)'s client gave up): the
    /// proxy does not cancel host work. Delays planned for the same call
    /// add up; with a failure planned too, the call fails after the delay.
    ///
    /// The delayed work runs on a task of the current Tokio runtime, and
    /// on tokio's clock (a paused clock makes it instant).
    ///
    /// # Panics
    ///
    /// When `nth` is 0; when the delayed call is made outside a Tokio
    /// runtime.
    pub fn delay_call(&self, operation: Operation, nth: usize, delay: Duration) {
        self.state()
            .faults
            .plan("delay_call", operation, nth, Fault::Delay(delay));
    }

    /// Makes every call of `operation` from now on wait `latency` before
    /// its work, as a Windows host's WMI queries and PowerShell cmdlets
    /// take their time (a rescan a second, a format most of one); a
    /// `latency` of [`Duration::ZERO`] removes it. It replaces the
    /// operation's earlier latency, and adds to a delay planned for a call
    /// ([`delay_call`](Self::delay_call)); a failure planned for a call
    /// comes after it.
    ///
    /// Each call waits on its own, as a delayed call does: calls side by
    /// side wait at the same time, so eight calls with 200 ms of latency
    /// take about 200 ms together, not 1.6 s. Its work is done even if the
    /// caller stopped waiting, and it runs on a task of the current Tokio
    /// runtime, on tokio's clock. Latencies stay through a
    /// [reboot](Self::reboot), as planned faults do.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// use csi_proxy_client::api::DiskApi;
    /// use csi_proxy_client::testing::FakeHost;
    /// use csi_proxy_client::Operation;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let host = FakeHost::builder().disk(1, "pd-1", 10 << 30).build();
    /// host.set_latency(Operation::Rescan, Duration::from_millis(50));
    /// assert_eq!(host.latency(Operation::Rescan), Duration::from_millis(50));
    /// let started = Instant::now();
    /// host.rescan().await.unwrap();
    /// host.rescan().await.unwrap();
    /// assert!(started.elapsed() >= Duration::from_millis(100), "each call waits");
    /// host.set_latency(Operation::Rescan, Duration::ZERO); // gone
    /// assert_eq!(host.latency(Operation::Rescan), Duration::ZERO);
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// When a call of `operation` with a latency is made outside a Tokio
    /// runtime.
    pub fn set_latency(&self, operation: Operation, latency: Duration) {
        self.state().faults.set_latency(operation, latency);
    }

    /// [`set_latency`](Self::set_latency) for each operation and latency
    /// of `latencies`, at once: a table of a node's latencies.
    pub fn set_latencies(&self, latencies: impl IntoIterator<Item = (Operation, Duration)>) {
        let mut state = self.state();
        for (operation, latency) in latencies {
            state.faults.set_latency(operation, latency);
        }
    }

    /// The latency every call of `operation` waits
    /// ([`set_latency`](Self::set_latency)); [`Duration::ZERO`] when none.
    pub fn latency(&self, operation: Operation) -> Duration {
        self.state().faults.latency(operation)
    }

    /// How many calls of `operation` the host received, failed ones
    /// included. Through a fake proxy, an operation the client emulates
    /// arrives as the calls it is made of (`GetDiskNumberByName` as
    /// `ListDiskIDs` from v1beta1 on).
    pub fn calls_of(&self, operation: Operation) -> usize {
        self.state().faults.received(operation)
    }

    /// Holds the `nth` host call from now on (1: the next one), of
    /// whatever operation, before its work, until the test lets it go: a
    /// test can stop the proxy, or the driver, just before the host does
    /// that call ([`hold_answer`](Self::hold_answer) is for just after).
    ///
    /// When the call comes, the receiver gets its operation and a sender:
    /// sending on it lets the call do its work and answer; dropping it
    /// makes the call fail ([`Error::Host`], code `Unknown`) without its
    /// work. A call whose caller is gone while it is held (its future
    /// dropped, as with a connection that a stopped proxy broke) never does
    /// its work. Dropping the receiver before the call comes cancels the
    /// hold. The call is counted ([`calls_of`](Self::calls_of)) either way.
    ///
    /// ```
    /// use csi_proxy_client::api::DiskApi;
    /// use csi_proxy_client::testing::FakeHost;
    /// use csi_proxy_client::Operation;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let host = FakeHost::builder().disk(1, "pd-1", 10 << 30).build();
    /// let held = host.hold_call(1);
    /// let partition = tokio::spawn({
    ///     let host = host.clone();
    ///     async move { host.partition_disk(1).await }
    /// });
    /// let (operation, go) = held.await.unwrap();
    /// assert_eq!(operation, Operation::PartitionDisk);
    /// assert!(!host.disk(1).unwrap().partitioned, "held before its work");
    /// drop(go); // as a proxy that stopped before the call
    /// assert!(partition.await.unwrap().is_err());
    /// assert!(!host.disk(1).unwrap().partitioned);
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// When `nth` is 0.
    pub fn hold_call(&self, nth: usize) -> oneshot::Receiver<(Operation, oneshot::Sender<()>)> {
        self.state().faults.hold("hold_call", nth, false)
    }

    /// Holds the `nth` host call from now on (1: the next one), of
    /// whatever operation, after its work and before its answer, until the
    /// test lets it go: a test can stop the proxy, or the driver, so that
    /// the call is done and its answer lost.
    ///
    /// When the call's work is done (or has failed), the receiver gets its
    /// operation and a sender; sending on it or dropping it lets the answer
    /// go. Dropping the receiver before the call comes cancels the hold.
    /// Both holds may be planned for the same call.
    ///
    /// # Panics
    ///
    /// When `nth` is 0.
    pub fn hold_answer(&self, nth: usize) -> oneshot::Receiver<(Operation, oneshot::Sender<()>)> {
        self.state().faults.hold("hold_answer", nth, true)
    }

    /// One call of `operation`: counts it, holds it where a test asked,
    /// applies what was planned for it, and runs `work` on the state, now or
    /// (delayed) on a task of its own that finishes even if this future is
    /// dropped.
    pub(super) async fn host_call<T, F>(&self, operation: Operation, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut HostState) -> Result<T> + Send + 'static,
    {
        let mut plan = self.state().faults.next_call(operation);
        if let Some(hold) = plan.hold_before.take() {
            if !hold.wait(operation).await {
                return Err(Error::host(
                    operation,
                    Code::Unknown,
                    "the fake host's held call was let go without its work",
                ));
            }
        }
        let hold_after = plan.hold_after.take();
        let answer = self.run_plan(operation, plan, work).await;
        if let Some(hold) = hold_after {
            hold.wait(operation).await;
        }
        answer
    }

    /// Runs `work` as `plan` says: now, or (delayed) on a task of its own.
    async fn run_plan<T, F>(&self, operation: Operation, plan: Plan, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut HostState) -> Result<T> + Send + 'static,
    {
        if plan.delay.is_zero() {
            return plan.run(operation, &mut self.state(), work);
        }
        let host = self.clone();
        let late = tokio::spawn(async move {
            tokio::time::sleep(plan.delay).await;
            let mut state = host.state();
            plan.run(operation, &mut state, work)
        });
        match late.await {
            Ok(answer) => answer,
            Err(failed) if failed.is_panic() => std::panic::resume_unwind(failed.into_panic()),
            Err(_) => Err(Error::host(
                operation,
                Code::Unknown,
                "the fake host's delayed call was cancelled (the runtime is shutting down)",
            )),
        }
    }
}
