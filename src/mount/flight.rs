//! One operation at a time per key, and a repeat that joins the one
//! running.
//!
//! Every mounter operation runs in a task of its own under its key (a
//! staging path, a publish target): when the caller gives up (kubelet's
//! deadline drops the driver's handler), the work goes on to a consistent
//! end instead of stopping between two host calls. A second call with the
//! same key and the same request waits for that task's answer (kubelet's
//! retry of a stage whose format outlived the first deadline, azuredisk
//! #2690); a call with another request waits until the key is free.

use std::any::Any;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::{watch, Mutex as KeyMutex, OwnedMutexGuard};

use crate::error::{Error, Result};

/// An answer shared by every caller of one operation.
type Shared = Option<Result<Arc<dyn Any + Send + Sync>>>;

#[derive(Default)]
struct Slot {
    /// Held by whoever works under the key.
    lock: Arc<KeyMutex<()>>,
    /// The operation that owns the key now or waits for it, by request.
    running: Option<(String, watch::Receiver<Shared>)>,
}

/// The keys in use, lower-cased (paths compare without case on Windows).
#[derive(Default)]
pub(crate) struct Flights {
    slots: Mutex<HashMap<String, Slot>>,
}

impl Flights {
    /// Runs `work` under `key` in a task of its own and waits for its
    /// answer, or joins the call already under way with the same `key` and
    /// `request`.
    pub async fn run<T, F>(self: &Arc<Self>, key: &str, request: String, work: F) -> Result<T>
    where
        T: Clone + Send + Sync + 'static,
        F: Future<Output = Result<T>> + Send + 'static,
    {
        let key = super::journal::key(key);
        let mut answer = {
            let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            let slot = slots.entry(key.clone()).or_default();
            match &slot.running {
                Some((running, answer)) if *running == request => answer.clone(),
                _ => {
                    let (publish, answer) = watch::channel(None);
                    slot.running = Some((request, answer.clone()));
                    let lock = slot.lock.clone();
                    let flights = self.clone();
                    let key = key.clone();
                    let own = answer.clone();
                    tokio::spawn(async move {
                        // Even if `work` panics, the key is let go of, so
                        // that the next call starts afresh.
                        let _done = Done {
                            flights: flights.clone(),
                            key: key.clone(),
                            own: own.clone(),
                        };
                        let guard = lock.lock_owned().await;
                        let result = work.await.map(|value| {
                            let shared: Arc<dyn Any + Send + Sync> = Arc::new(value);
                            shared
                        });
                        drop(guard);
                        // The slot is cleared before the answer goes out:
                        // a repeat made once the answer is known starts
                        // afresh, and looks, rather than joining a call
                        // that has ended.
                        flights.finish(&key, &own);
                        // Nobody may be waiting any more; that is fine.
                        let _ = publish.send(Some(result));
                    });
                    answer
                }
            }
        };
        let shared = answer
            .wait_for(Option::is_some)
            .await
            .map_err(|_| lost(&key))?
            .clone();
        match shared {
            Some(Ok(value)) => value.downcast_ref::<T>().cloned().ok_or_else(|| lost(&key)),
            Some(Err(error)) => Err(error),
            None => Err(lost(&key)),
        }
    }

    /// Takes `key` as a plain lock, outside any single flight, for work
    /// that is part of another operation (a disk, a share), waiting while
    /// someone else has it.
    pub async fn lock(&self, key: &str) -> OwnedMutexGuard<()> {
        let lock = {
            let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            slots
                .entry(super::journal::key(key))
                .or_default()
                .lock
                .clone()
        };
        lock.lock_owned().await
    }

    /// The operation whose answer `own` carries is done: later calls start
    /// afresh rather than join it. Keys nobody uses any more are forgotten,
    /// so that a long-lived driver keeps no slot per volume it ever saw.
    fn finish(&self, key: &str, own: &watch::Receiver<Shared>) {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(slot) = slots.get_mut(key) {
            if slot
                .running
                .as_ref()
                .is_some_and(|(_, answer)| answer.same_channel(own))
            {
                slot.running = None;
            }
        }
        // Idle: nothing running or waiting, and no guard out (a guard
        // holds a clone of the lock).
        slots.retain(|_, slot| slot.running.is_some() || Arc::strong_count(&slot.lock) > 1);
    }
}

/// Lets go of an operation's key when its task ends, however it ends.
struct Done {
    flights: Arc<Flights>,
    key: String,
    own: watch::Receiver<Shared>,
}

impl Drop for Done {
    fn drop(&mut self) {
        self.flights.finish(&self.key, &self.own);
    }
}

/// The task of an operation ended without an answer: it panicked (a bug),
/// or the runtime is shutting down.
fn lost(key: &str) -> Error {
    Error::InProgress {
        what: format!(
            "the operation on {key} ended without an answer (its task stopped): it may have \
             been cut short; retry"
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_repeat_joins_and_another_request_waits_its_turn() {
        let flights = Arc::new(Flights::default());
        let runs = Arc::new(AtomicUsize::new(0));
        let slow = |runs: Arc<AtomicUsize>, value: u32| async move {
            runs.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(50)).await;
            Ok(value)
        };
        let (a, b, c) = tokio::join!(
            flights.run("K", "stage".into(), slow(runs.clone(), 1)),
            flights.run("k", "stage".into(), slow(runs.clone(), 2)),
            flights.run("k", "unstage".into(), slow(runs.clone(), 3)),
        );
        // The second joined the first (same key, any case); the third ran
        // after them.
        assert_eq!((a.unwrap(), b.unwrap(), c.unwrap()), (1, 1, 3));
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        assert!(
            flights.slots.lock().unwrap().is_empty(),
            "idle keys are forgotten"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_repeat_right_after_an_answer_runs_afresh() {
        let flights = Arc::new(Flights::default());
        let runs = Arc::new(AtomicUsize::new(0));
        for _ in 0..50 {
            for _ in 0..2 {
                let runs = runs.clone();
                let work = async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                };
                flights.run("k", "stage".into(), work).await.unwrap();
            }
        }
        // Each call came after the one before had answered: none joined.
        assert_eq!(runs.load(Ordering::SeqCst), 100);
    }

    #[tokio::test]
    async fn a_panicking_operation_lets_go_of_its_key() {
        let flights = Arc::new(Flights::default());
        let boom = async {
            if true {
                panic!("a bug");
            }
            Ok(())
        };
        let error = flights.run("k", "stage".into(), boom).await.unwrap_err();
        assert!(matches!(error, Error::InProgress { .. }), "{error}");
        // The same request again runs afresh, and works.
        flights
            .run("k", "stage".into(), async { Ok(()) })
            .await
            .unwrap();
    }

    /// On tokio's paused clock (nothing here does I/O): the caller gives
    /// up at 5 ms, before the work's 30 ms are over, whatever the load.
    #[tokio::test(start_paused = true)]
    async fn the_work_goes_on_when_its_caller_gives_up() {
        let flights = Arc::new(Flights::default());
        let done = Arc::new(AtomicUsize::new(0));
        let work = {
            let done = done.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(30)).await;
                done.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        };
        let gave_up = tokio::time::timeout(
            Duration::from_millis(5),
            flights.run("k", "format".into(), work),
        )
        .await;
        assert!(gave_up.is_err());
        // A retry joins it, and it finished once.
        flights
            .run("k", "format".into(), async { Ok(()) })
            .await
            .unwrap();
        assert_eq!(done.load(Ordering::SeqCst), 1);
    }
}
