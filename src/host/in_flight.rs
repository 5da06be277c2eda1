//! Host work in flight, per group and per process: bounded, and never
//! started again for an object while an earlier call on it is stuck.
//!
//! A host call runs on a blocking thread, and nothing can stop it: a WMI
//! provider that hangs on an unresponsive disk or iSCSI target keeps its
//! thread for good. Without a bound, kubelet's periodic calls pile such
//! threads up until tokio's blocking pool is full, and then every host
//! call (file operations too) queues forever. So each group admits at most
//! [`LIMIT_PER_GROUP`] calls at a time in the process and refuses the rest
//! at once; a call whose caller stopped waiting ("stuck") is not started
//! again for the same object while it runs; and the health report says so.
//!
//! The pool and the host are one per process, whatever the number of
//! clients: a driver that builds a client per request, or again after
//! errors, shares one set of calls per group ([`InFlight::of_process`]),
//! so its stuck calls count against one limit, not one per client.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::SystemTime;

use crate::capability::Operation;
use crate::error::{Error, Result};
use crate::group::ApiGroup;

/// The most host calls of one group that run at once in the process,
/// over all its clients. Well above what a node's kubelet asks at a time,
/// and far below tokio's blocking pool (512 threads), so that the stuck
/// calls of every group (96 at most) cannot fill it.
pub(crate) const LIMIT_PER_GROUP: usize = 16;

/// One group's host calls in flight.
pub(crate) struct InFlight {
    group: ApiGroup,
    limit: usize,
    calls: Mutex<Calls>,
}

#[derive(Default)]
struct Calls {
    next_id: u64,
    running: HashMap<u64, Call>,
}

struct Call {
    operation: Operation,
    object: String,
    started: SystemTime,
    /// Its caller stopped waiting (a deadline, a cancelled request) while
    /// it ran.
    abandoned: bool,
}

/// Calls of a group whose callers stopped waiting while they still run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stuck {
    /// How many.
    pub calls: usize,
    /// When the oldest of them started.
    pub since: SystemTime,
    /// The most calls the group runs at once: stuck calls as many as
    /// that leave no room for any other, until the process ends.
    pub limit: usize,
}

impl InFlight {
    /// The host calls of `group` in this process: one set per group,
    /// shared by every client the host backend serves, at most
    /// [`LIMIT_PER_GROUP`] at a time.
    pub fn of_process(group: ApiGroup) -> Arc<Self> {
        #[cfg(test)]
        if let Some(apart) = apart::of(group) {
            return apart;
        }
        static PROCESS: [OnceLock<Arc<InFlight>>; 6] = [const { OnceLock::new() }; 6];
        PROCESS[group.index()]
            .get_or_init(|| Self::new(group, LIMIT_PER_GROUP))
            .clone()
    }

    /// The calls of `group`, at most `limit` at a time.
    fn new(group: ApiGroup, limit: usize) -> Arc<Self> {
        let in_flight = Arc::new(Self {
            group,
            limit,
            calls: Mutex::default(),
        });
        registry().push(Arc::downgrade(&in_flight));
        in_flight
    }

    /// Admits a call of `operation` on `object` (a volume, a path, a
    /// service; empty for one on the whole group), or says why not: an
    /// earlier call on it is stuck ([`Error::InProgress`]), or the group
    /// has its limit of calls running ([`Error::HostBusy`]).
    pub fn admit(self: &Arc<Self>, operation: Operation, object: &str) -> Result<Admitted> {
        let mut calls = self.lock();
        let stuck_on_it = calls
            .running
            .values()
            .find(|c| c.abandoned && c.operation == operation && c.object == object);
        if let Some(stuck) = stuck_on_it {
            let on = if object.is_empty() {
                String::new()
            } else {
                format!(" on {object}")
            };
            return Err(Error::InProgress {
                what: format!(
                    "{} {}{on}, started {} s ago, may still be running on the host (its caller \
                     stopped waiting): not starting it again; retry later",
                    operation.group(),
                    operation.name(),
                    stuck.started.elapsed().map_or(0, |d| d.as_secs())
                ),
            });
        }
        if calls.running.len() >= self.limit {
            return Err(Error::HostBusy {
                group: self.group,
                running: calls.running.len(),
            });
        }
        let id = calls.next_id;
        calls.next_id += 1;
        calls.running.insert(
            id,
            Call {
                operation,
                object: object.to_owned(),
                started: SystemTime::now(),
                abandoned: false,
            },
        );
        Ok(Admitted {
            in_flight: self.clone(),
            id,
        })
    }

    /// The calls whose callers stopped waiting and that still run; `None`
    /// when there are none.
    pub fn stuck(&self) -> Option<Stuck> {
        let calls = self.lock();
        let abandoned = calls.running.values().filter(|c| c.abandoned);
        abandoned.fold(None, |stuck: Option<Stuck>, call| {
            Some(match stuck {
                None => Stuck {
                    calls: 1,
                    since: call.started,
                    limit: self.limit,
                },
                Some(s) => Stuck {
                    calls: s.calls + 1,
                    since: s.since.min(call.started),
                    ..s
                },
            })
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Calls> {
        // The map is consistent between statements: a panic elsewhere
        // leaves nothing half done in it.
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// An admitted call: it counts as running until this is dropped, which
/// the work's thread does when the work ends.
pub(crate) struct Admitted {
    in_flight: Arc<InFlight>,
    id: u64,
}

impl Admitted {
    /// Marks the call as stuck: its caller stopped waiting while it runs.
    pub fn abandon(&self) {
        if let Some(call) = self.in_flight.lock().running.get_mut(&self.id) {
            call.abandoned = true;
        }
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.in_flight.lock().running.remove(&self.id);
    }
}

/// Every set of calls in this process: what [`stuck`] reports from. One
/// per group ([`InFlight::of_process`]); tests make more, apart.
fn registry() -> std::sync::MutexGuard<'static, Vec<Weak<InFlight>>> {
    static REGISTRY: Mutex<Vec<Weak<InFlight>>> = Mutex::new(Vec::new());
    let mut registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    registry.retain(|r| r.strong_count() > 0);
    registry
}

/// The stuck host calls of `group` in this process, with the limit they
/// count against: both of the process's one set of the group's calls,
/// which every client shares (of the fullest set, where tests made sets
/// apart).
pub(crate) fn stuck(group: ApiGroup) -> Option<Stuck> {
    let groups: Vec<Arc<InFlight>> = registry().iter().filter_map(Weak::upgrade).collect();
    groups
        .iter()
        .filter(|g| g.group == group)
        .filter_map(|g| g.stuck())
        .max_by(|a, b| (a.calls * b.limit).cmp(&(b.calls * a.limit)))
}

/// Sets of host calls apart from the process's, for tests that fill a
/// group's limit while other tests of the same process use the group.
#[cfg(test)]
pub(crate) mod apart {
    use std::cell::RefCell;
    use std::sync::Arc;

    use super::{InFlight, LIMIT_PER_GROUP};
    use crate::group::ApiGroup;

    thread_local! {
        static APART: RefCell<Option<[Option<Arc<InFlight>>; 6]>> = const { RefCell::new(None) };
    }

    /// Runs `make` (a test building its backends) with sets of host calls
    /// of its own: every backend it makes shares one set per group, as
    /// the clients of a process do, apart from the process's.
    pub(crate) fn apart<T>(make: impl FnOnce() -> T) -> T {
        let before = APART.with(|a| a.borrow_mut().replace(Default::default()));
        let made = make();
        APART.with(|a| *a.borrow_mut() = before);
        made
    }

    /// The set of `group` of the `apart` running on this thread, if any.
    pub(super) fn of(group: ApiGroup) -> Option<Arc<InFlight>> {
        APART.with(|a| {
            let mut a = a.borrow_mut();
            let sets = a.as_mut()?;
            let set =
                sets[group.index()].get_or_insert_with(|| InFlight::new(group, LIMIT_PER_GROUP));
            Some(set.clone())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_admits_up_to_its_limit_and_frees_a_place_when_a_call_ends() {
        let in_flight = InFlight::new(ApiGroup::Disk, 2);
        let first = in_flight.admit(Operation::Rescan, "").unwrap();
        let _second = in_flight.admit(Operation::GetDiskStats, "1").unwrap();
        match in_flight.admit(Operation::GetDiskStats, "2") {
            Err(Error::HostBusy { group, running }) => {
                assert_eq!((group, running), (ApiGroup::Disk, 2));
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
        drop(first);
        assert!(in_flight.admit(Operation::GetDiskStats, "2").is_ok());
    }

    #[test]
    fn every_client_of_the_process_shares_one_limit_per_group() {
        let (disk, again, volume) = apart::apart(|| {
            (
                InFlight::of_process(ApiGroup::Disk),
                InFlight::of_process(ApiGroup::Disk),
                InFlight::of_process(ApiGroup::Volume),
            )
        });
        assert!(Arc::ptr_eq(&disk, &again), "one set per group");
        assert!(!Arc::ptr_eq(&disk, &volume));
        let running: Vec<Admitted> = (0..LIMIT_PER_GROUP)
            .map(|n| disk.admit(Operation::GetDiskStats, &n.to_string()).unwrap())
            .collect();
        // Another client's call of the group finds the limit full.
        match again.admit(Operation::GetDiskStats, "99") {
            Err(Error::HostBusy { group, running }) => {
                assert_eq!((group, running), (ApiGroup::Disk, LIMIT_PER_GROUP));
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
        assert!(volume.admit(Operation::GetVolumeStats, "v").is_ok());
        // Stuck, they are counted against the one limit they fill.
        running.iter().for_each(Admitted::abandon);
        let stuck = again.stuck().unwrap();
        assert_eq!(
            (stuck.calls, stuck.limit),
            (LIMIT_PER_GROUP, LIMIT_PER_GROUP)
        );
        assert!(super::stuck(ApiGroup::Disk).is_some_and(|s| s.calls <= s.limit));
        drop(running);
        assert_eq!(again.stuck(), None);
    }

    #[test]
    fn only_a_stuck_call_keeps_the_same_call_on_the_same_object_out() {
        let in_flight = InFlight::new(ApiGroup::Volume, 8);
        let op = Operation::GetVolumeStats;
        let first = in_flight.admit(op, "vol-a").unwrap();
        // Waited for: a second call on the same volume runs beside it.
        drop(in_flight.admit(op, "vol-a").unwrap());
        assert_eq!(in_flight.stuck(), None);

        first.abandon();
        let refused = in_flight.admit(op, "vol-a").map(|_| ()).unwrap_err();
        assert!(matches!(&refused, Error::InProgress { what } if what.contains("vol-a")));
        assert!(refused.is_retryable(), "{refused}");
        // Another volume, and another operation on it, are not held up.
        assert!(in_flight.admit(op, "vol-b").is_ok());
        assert!(in_flight
            .admit(Operation::WriteVolumeCache, "vol-a")
            .is_ok());
        assert_eq!(in_flight.stuck().map(|s| s.calls), Some(1));
        assert!(stuck(ApiGroup::Volume).is_some_and(|s| s.calls >= 1));

        drop(first);
        assert_eq!(in_flight.stuck(), None);
        assert!(in_flight.admit(op, "vol-a").is_ok());
    }
}
