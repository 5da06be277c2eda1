//! Faults of the fake host: Windows errors, failures and delays planned for
//! the n-th call of an operation, latencies every call of an operation
//! waits, calls held for a test to act on, and the one path every call
//! takes.

mod on_demand;
mod windows;

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::sync::oneshot;

use super::state::HostState;
use super::FakeHost;
use crate::capability::Operation;
use crate::error::{Code, Error, Result};

pub use windows::WindowsError;
pub(super) use windows::{windows_error, GENERIC_FAILURE};

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
    /// Calls to hold, by their number among all calls or among their
    /// operation's.
    holds: Vec<Hold>,
}

/// What a held call tells the test: its operation, and the sender with
/// which the test lets it go ([`FakeHost::hold_call`]).
type HeldCall = (Operation, oneshot::Sender<()>);

/// A call to hold, before its work or after it.
#[derive(Debug)]
struct Hold {
    call: Which,
    after_work: bool,
    tell: oneshot::Sender<HeldCall>,
}

/// Which call a hold is for, counted from 1 (the first the host received).
#[derive(Debug, PartialEq, Eq)]
enum Which {
    /// The n-th call of any operation ([`FakeHost::hold_call`]).
    Any(usize),
    /// The n-th call of one operation ([`FakeHost::hold_call_of`]).
    Of(Operation, usize),
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

    /// Holds the `nth` call from now on, of `operation` or (`None`) of any.
    fn hold(
        &mut self,
        caller: &str,
        operation: Option<Operation>,
        nth: usize,
        after_work: bool,
    ) -> oneshot::Receiver<HeldCall> {
        assert!(
            nth >= 1,
            "FakeHost::{caller}: calls are counted from 1 (the next call), not {nth}"
        );
        let call = match operation {
            None => Which::Any(self.total + nth),
            Some(operation) => Which::Of(operation, self.received(operation) + nth),
        };
        let (tell, told) = oneshot::channel();
        self.holds.push(Hold {
            call,
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
        let (any, of) = (Which::Any(self.total), Which::Of(operation, call));
        let mut index = 0;
        while index < self.holds.len() {
            if self.holds[index].call != any && self.holds[index].call != of {
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
