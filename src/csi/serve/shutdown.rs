//! How serving stops: on a signal (SIGTERM, Ctrl-C, Ctrl-Break, ...),
//! with the calls under way answered and the work of those whose callers
//! left ended, within [`SHUTDOWN_DEADLINE`].

use std::future::Future;

/// How long [`serve`](super::serve) waits, once asked to stop, for the
/// calls under way before it returns anyway: under a pod's default grace
/// period of 30 s, so that the plugin exits by itself. A call cut short is
/// finished by kubelet's retry, or by `reconcile` at the next start (the
/// journal records each step before it is taken).
pub const SHUTDOWN_DEADLINE: std::time::Duration = std::time::Duration::from_secs(25);

/// `stop` for the server, and the deadline it starts: a future that
/// completes [`SHUTDOWN_DEADLINE`] after `stop` did (never, if it never
/// does).
pub(super) fn with_deadline(
    stop: impl Future<Output = ()>,
) -> (impl Future<Output = ()>, impl Future<Output = ()>) {
    let (stopping, stopped) = tokio::sync::oneshot::channel::<()>();
    let stop = async move {
        stop.await;
        let _ = stopping.send(());
    };
    let deadline = async move {
        if stopped.await.is_err() {
            return std::future::pending().await;
        }
        tokio::time::sleep(SHUTDOWN_DEADLINE).await;
    };
    (stop, deadline)
}

/// `served`, then the calls whose callers left, until `calls_ended`.
pub(super) async fn then_calls_left<E>(
    served: impl Future<Output = Result<(), E>>,
    calls_ended: impl Future<Output = ()>,
) -> Result<(), E> {
    let served = served.await;
    calls_ended.await;
    served
}

/// `served`, or success once `deadline` passed first (the calls still
/// under way are dropped, with a warning).
pub(super) async fn within<E>(
    deadline: impl Future<Output = ()>,
    served: impl Future<Output = Result<(), E>>,
) -> Result<(), E> {
    tokio::select! {
        served = served => served,
        () = deadline => {
            tracing::warn!(
                deadline = ?SHUTDOWN_DEADLINE,
                "calls still under way after the shutdown deadline: stopping without them"
            );
            Ok(())
        }
    }
}

/// Completes when the process is asked to stop: SIGTERM or SIGINT
/// (Ctrl-C) on Unix; Ctrl-C, Ctrl-Break, or the console's close or the
/// system's shutdown on Windows (what a container's stop sends).
pub async fn stop_signal() {
    let which = wait_for_signal().await;
    tracing::info!(
        signal = which,
        "asked to stop: answering the calls under way"
    );
}

#[cfg(unix)]
async fn wait_for_signal() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::warn!("no signal handler could be installed: only a kill stops the plugin");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    }
}

#[cfg(windows)]
async fn wait_for_signal() -> &'static str {
    use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close, ctrl_shutdown};
    let (Ok(mut c), Ok(mut brk), Ok(mut close), Ok(mut shutdown)) =
        (ctrl_c(), ctrl_break(), ctrl_close(), ctrl_shutdown())
    else {
        tracing::warn!("no console handler could be installed: only a kill stops the plugin");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = c.recv() => "Ctrl-C",
        _ = brk.recv() => "Ctrl-Break",
        _ = close.recv() => "console close",
        _ = shutdown.recv() => "shutdown",
    }
}

#[cfg(not(any(unix, windows)))]
async fn wait_for_signal() -> &'static str {
    let _ = tokio::signal::ctrl_c().await;
    "Ctrl-C"
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::sync::Semaphore;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn serving_ends_once_the_work_of_calls_whose_callers_left_has_ended() {
        let places = Arc::new(Semaphore::new(2));
        let left = places.clone().acquire_owned().await.unwrap();
        let ends = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(3)).await;
            drop(left);
        });
        let started = tokio::time::Instant::now();
        let calls_ended = async { drop(places.acquire_many(2).await) };
        then_calls_left(async { Ok::<(), ()>(()) }, calls_ended)
            .await
            .unwrap();
        assert!(started.elapsed() >= Duration::from_secs(3));
        ends.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn the_deadline_runs_from_the_stop() {
        let (asked, asking) = tokio::sync::oneshot::channel::<()>();
        let (stop, deadline) = with_deadline(async {
            let _ = asking.await;
        });
        let mut deadline = std::pin::pin!(deadline);
        // Not asked to stop: no deadline, however long it serves.
        let early = tokio::time::timeout(SHUTDOWN_DEADLINE * 4, deadline.as_mut()).await;
        assert!(early.is_err(), "a deadline with no stop");
        asked.send(()).unwrap();
        stop.await;
        let stopped = tokio::time::Instant::now();
        deadline.await;
        assert!(stopped.elapsed() >= SHUTDOWN_DEADLINE);
    }
}
