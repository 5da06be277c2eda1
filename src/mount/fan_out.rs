//! Work on many records at once, a bounded number at a time, so that a
//! node's worth of records costs about the slowest one and the proxy is
//! not flooded.

use std::future::Future;

use tokio::task::JoinSet;

/// Runs `work` on every item, at most `limit` at once, each in a task of
/// its own; their answers, in the order they finished.
pub(super) async fn each<I, T, F, Fut>(items: I, limit: usize, mut work: F) -> Vec<T>
where
    I: IntoIterator,
    F: FnMut(I::Item) -> Fut,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let mut running = JoinSet::new();
    let mut answers = Vec::new();
    for item in items {
        while running.len() >= limit.max(1) {
            answers.extend(next(&mut running).await);
        }
        running.spawn(work(item));
    }
    while let Some(answer) = next(&mut running).await {
        answers.push(answer);
    }
    answers
}

/// Whether `test` says yes for any item, at most `limit` at once; the
/// tests still running when one says yes are dropped.
pub(super) async fn any<I, F, Fut>(items: I, limit: usize, mut test: F) -> bool
where
    I: IntoIterator,
    F: FnMut(I::Item) -> Fut,
    Fut: Future<Output = bool> + Send + 'static,
{
    let mut running = JoinSet::new();
    for item in items {
        while running.len() >= limit.max(1) {
            if next(&mut running).await == Some(true) {
                return true;
            }
        }
        running.spawn(test(item));
    }
    while let Some(yes) = next(&mut running).await {
        if yes {
            return true;
        }
    }
    false
}

/// The next answer; a task that panicked passes its panic on.
async fn next<T: 'static>(running: &mut JoinSet<T>) -> Option<T> {
    loop {
        match running.join_next().await? {
            Ok(answer) => return Some(answer),
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            // Cancelled: only when the runtime shuts down.
            Err(_) => continue,
        }
    }
}
