//! A look sent beside another, so that a step waits for the slower of two
//! calls rather than for both in turn (issue 63: on CSI Proxy before v1.3
//! each call starts a PowerShell process, half a second or more).
//!
//! Only reads go beside: what the first look finds decides whether the
//! second one's answer is wanted, and a second look that is not wanted is
//! dropped unfinished, so it must leave nothing behind (a single read, or
//! shared listings that run on tasks of their own). The first runs to its
//! end whatever the second does, as it would alone.

use std::future::Future;

use crate::error::Result;

/// Runs `first` to its end with `second` sent at the same time. `second`'s
/// answer comes with `first`'s when `first` succeeds; when it fails, its
/// error is the answer and `second` is dropped, finished or not, as if
/// it had never been sent.
pub(super) async fn beside<A, B>(
    first: impl Future<Output = Result<A>>,
    second: impl Future<Output = B>,
) -> Result<(A, B)> {
    let (mut first, mut second) = (std::pin::pin!(first), std::pin::pin!(second));
    let mut answered = None;
    let found = loop {
        tokio::select! {
            biased;
            found = &mut first => break found,
            answer = &mut second, if answered.is_none() => answered = Some(answer),
        }
    };
    let found = found?;
    let answer = match answered {
        Some(answer) => answer,
        None => second.await,
    };
    Ok((found, answer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn the_second_goes_beside_the_first_and_only_a_success_waits_for_it() {
        let started = tokio::time::Instant::now();
        let slow = |answer: u32| async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            answer
        };
        let both = beside(async { Ok(slow(1).await) }, slow(2)).await.unwrap();
        assert_eq!(both, (1, 2));
        assert_eq!(started.elapsed(), Duration::from_secs(1), "side by side");

        let finished = AtomicBool::new(false);
        let failed = beside(
            async { Err::<(), _>(Error::NotFound { what: "x".into() }) },
            async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                finished.store(true, Ordering::SeqCst);
            },
        );
        assert!(failed.await.is_err());
        assert!(!finished.load(Ordering::SeqCst), "dropped, not waited for");
        assert_eq!(started.elapsed(), Duration::from_secs(1));
    }
}
