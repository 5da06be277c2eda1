//! An operation run: its first attempt cut by its fault, every host call
//! held for a look at the node before it goes on, kubelet's retries, and
//! the new driver's `reconcile` after one was killed.

use std::time::Duration;

use csi_proxy_client::Operation as HostOp;
use tokio::sync::oneshot;

use super::driver::{next_of, outcome_text, Driver, Fault, Outcome};
use super::ops::{disk_number, Op};
use super::walk::World;
use super::{FIRST_BACKOFF, RETRIES};
use csi_proxy_client::api::VolumeApi;
use csi_proxy_client::Error;

impl World<'_> {
    /// `op`, with its first attempt cut by a fault, retried as kubelet
    /// does until it succeeds (at most `RETRIES` times); then the node is
    /// checked.
    pub(super) async fn run_op(&mut self, op: Op) {
        self.run.figures.operations += 1;
        let fault = self.choose_fault(&op);
        let kind = self.kind(&op);
        self.current = Some(op.clone());
        self.fault = fault;
        if self.trace {
            println!("{}", self.context());
        }
        let mut faulted = false;
        let mut last = String::new();
        for attempt in 0..=RETRIES {
            if attempt > 0 {
                tokio::time::sleep(FIRST_BACKOFF * 2u32.pow(attempt - 1)).await;
            }
            let cut = if attempt == 0 { fault } else { None };
            let (outcome, calls) = self.attempt(&op, cut, true).await;
            if attempt == 0 {
                match fault.filter(|f| f.n <= calls) {
                    Some(f) => {
                        self.run.hit.insert((kind, f.n, f.after_work));
                        faulted = true;
                    }
                    None => {
                        let most = self.run.most_calls.entry(kind).or_default();
                        *most = (*most).max(calls);
                    }
                }
            }
            if self.trace {
                println!(
                    "    attempt {attempt}: {calls} host calls, {}",
                    outcome_text(&outcome)
                );
            }
            match outcome {
                Outcome::Done(reply) => {
                    self.check_reply(&op, reply);
                    self.model.apply(&op);
                    self.check_node();
                    self.run.figures.converged += 1;
                    self.current = None;
                    return;
                }
                Outcome::Killed => {
                    last = "the driver was killed".to_owned();
                    if !self.restart_after_kill().await {
                        return;
                    }
                }
                Outcome::Failed {
                    error,
                    retryable,
                    not_ours,
                } => {
                    let operator = not_ours && self.format_by_hand(&op).await;
                    let again = retryable || faulted || operator;
                    last = error;
                    if !again {
                        break;
                    }
                }
            }
        }
        let failure = format!("{}: NOT CONVERGED: {last}", self.context());
        self.run.failures.push(failure);
        self.run.figures.not_converged += 1;
        self.stopped = true;
    }

    /// A new driver after one was killed, and its `reconcile` (retried as
    /// a driver's start is, with no fault). Whether it converged.
    async fn restart_after_kill(&mut self) -> bool {
        self.driver = Driver::start(&self.node, self.state.path()).await;
        let mut last = String::new();
        for attempt in 0..=RETRIES {
            if attempt > 0 {
                tokio::time::sleep(FIRST_BACKOFF * 2u32.pow(attempt - 1)).await;
            }
            let (outcome, calls) = self.attempt(&Op::Reconcile, None, false).await;
            if self.trace {
                let outcome = outcome_text(&outcome);
                println!("    the new driver's reconcile: {calls} host calls, {outcome}");
            }
            match outcome {
                Outcome::Done(reply) => {
                    self.check_reply(&Op::Reconcile, reply);
                    return true;
                }
                Outcome::Killed => unreachable!("no fault, no kill"),
                Outcome::Failed { error, .. } => last = error,
            }
        }
        let failure = format!(
            "{}: NOT CONVERGED: the reconcile after the driver was killed: {last}",
            self.context()
        );
        self.run.failures.push(failure);
        self.run.figures.not_converged += 1;
        self.stopped = true;
        false
    }

    /// One attempt of `op`, every host call of it held for a look at the
    /// node before it goes on, and the call `fault` names cut. How it
    /// ended, and how many host calls it made.
    async fn attempt(&mut self, op: &Op, fault: Option<Fault>, counted: bool) -> (Outcome, usize) {
        if counted {
            self.run.figures.attempts += 1;
        }
        let mut task = self.driver.spawn(op.clone(), self.live());
        let mut calls = 0;
        // Whether a PartitionDisk, a NewSmbGlobalMapping of this attempt
        // went to work.
        let (mut partitioned, mut mapped) = (false, false);
        let mut before = Some(self.host.hold_call(1));
        let answer_of = |n: usize| fault.is_some_and(|f| f.after_work && f.n == n);
        let mut after = answer_of(1).then(|| self.host.hold_answer(1));
        enum Event<J> {
            Joined(J),
            Before(Option<(HostOp, oneshot::Sender<()>)>),
            After(Option<(HostOp, oneshot::Sender<()>)>),
        }
        let joined = loop {
            let event = tokio::select! {
                joined = &mut task => Event::Joined(joined),
                held = next_of(&mut before) => Event::Before(held),
                held = next_of(&mut after) => Event::After(held),
            };
            match event {
                Event::Joined(joined) => break joined,
                Event::Before(None) => before = None,
                Event::After(None) => after = None,
                Event::Before(Some((host_op, go))) => {
                    calls += 1;
                    self.run.figures.host_calls += 1;
                    // The next call's holds, before this one goes on.
                    before = Some(self.host.hold_call(1));
                    if answer_of(calls + 1) {
                        after = Some(self.host.hold_answer(1));
                    }
                    let cut = fault.filter(|f| f.n == calls && !f.after_work);
                    partitioned |= host_op == HostOp::PartitionDisk && cut.is_none();
                    mapped |= host_op == HostOp::NewSmbGlobalMapping && cut.is_none();
                    self.check_between(op, calls, host_op, cut.is_none());
                    match cut {
                        Some(fault) => self.cut(fault, host_op, go).await,
                        None => {
                            let _ = go.send(());
                        }
                    }
                }
                Event::After(Some((host_op, go))) => {
                    after = None;
                    if host_op == HostOp::PartitionDisk {
                        if let Some(disk) = op.disk() {
                            self.model.partition_resends[disk] += 1;
                        }
                    }
                    if host_op == HostOp::NewSmbGlobalMapping {
                        self.model.smb_unproven.extend(op.smb_staged());
                    }
                    let fault = fault.expect("a hold after the work only for a fault");
                    self.cut(fault, host_op, go).await;
                }
            }
        };
        drop((before, after));
        let killed = fault.is_some_and(|f| f.kill_driver && f.n <= calls);
        if let (true, true, Some(disk)) = (killed, partitioned, op.disk()) {
            self.model.unproven[disk] = true;
        }
        if killed && mapped {
            self.model.smb_unproven.extend(op.smb_staged());
        }
        let outcome = match joined {
            // It may have ended while its runtime was shutting down.
            _ if killed => Outcome::Killed,
            Ok(Ok(reply)) => Outcome::Done(reply),
            Ok(Err(error)) => Outcome::Failed {
                retryable: error.is_retryable(),
                not_ours: matches!(error, Error::NotOurs { .. }),
                error: error.to_string(),
            },
            Err(join) if join.is_cancelled() => Outcome::Killed,
            Err(join) => Outcome::Failed {
                error: format!("the operation panicked: {join}"),
                retryable: false,
                not_ours: false,
            },
        };
        (outcome, calls)
    }

    /// What an operator does when a stage of a disk whose partition was
    /// made under a killed driver is refused (`NotOurs`): knowing the disk
    /// holds no data, formats its volume by hand. Whether it did (only for
    /// such a disk, once).
    async fn format_by_hand(&mut self, op: &Op) -> bool {
        let Op::StageDisk { disk, .. } = *op else {
            return false;
        };
        if !std::mem::take(&mut self.model.unproven[disk]) {
            return false;
        }
        let number = disk_number(disk);
        let volumes = self.host.volumes().into_iter();
        let mut found = volumes.filter(|(_, v)| v.disk == number && !v.formatted);
        let Some((volume, _)) = found.next() else {
            return false;
        };
        self.host.format_volume(&volume).await.unwrap();
        self.run.figures.operator_formats += 1;
        if self.trace {
            println!("    an operator formats {volume} by hand");
        }
        true
    }

    /// The fault: the proxy stops (its connections break, the held call's
    /// answer is lost) and starts again, or the driver dies. A call held
    /// before its work is let go without it.
    async fn cut(&mut self, fault: Fault, host_op: HostOp, go: oneshot::Sender<()>) {
        self.run.figures.faults += 1;
        if self.trace {
            println!("    {fault}: {}", host_op.name());
        }
        if fault.kill_driver {
            self.run.figures.driver_restarts += 1;
            self.driver.kill();
        } else {
            self.run.figures.proxy_restarts += 1;
            self.node.fake.stop_all().await;
            let down = Duration::from_millis(self.rng.below(20));
            tokio::time::sleep(down).await;
            self.node.fake.restart(self.release.served()).await.unwrap();
        }
        drop(go);
    }
}
