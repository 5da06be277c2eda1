//! A host change whose answer was lost (the proxy restarted under it, a
//! deadline passed) may or may not have happened: its error
//! [`may_have_run`](Error::may_have_run). For a change that is the same
//! done twice as once, the mounter sends it once more rather than failing
//! the caller: the SDK waits for the proxy to come back, and the second
//! answer is the outcome. Changes that are not so (a format) are looked at
//! before they are sent again.

use std::future::Future;

use crate::error::{Error, Result};

/// Runs `change`, which is the same done twice as once, once more when
/// its first answer was lost. `done_already` reads the second attempt's
/// failure: whether it says the first one did the work (a folder removed
/// is not found the second time).
pub(super) async fn idempotent<T, F, Fut>(
    mut change: F,
    done_already: impl Fn(&Error) -> Option<T>,
) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    match change().await {
        Err(error) if error.may_have_run() => {
            tracing::debug!(%error, "the answer was lost: sending the change once more");
            match change().await {
                Err(error) => done_already(&error).ok_or(error),
                done => done,
            }
        }
        other => other,
    }
}

/// For [`idempotent`]: no failure of the second attempt means done.
pub(super) fn never<T>(_: &Error) -> Option<T> {
    None
}
