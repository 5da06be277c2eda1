//! What a call's answer may read from the node's release. One answer
//! depends on the proxy's release rather than its wire version (volume
//! v1beta1 and v1beta2's `VolumeStats` size: the free space on CSI Proxy
//! v0.2.x, the total later), and the only sign of an old release is that
//! the newer versions are absent. A proxy that is starting lacks them for
//! a moment too, so that sign counts only once it is settled: a look made
//! after [`PIPE_GRACE`](super::PIPE_GRACE) found every newer version's
//! endpoint absent. The call policy sets it around the one call it
//! settled for ([`with_newer_settled_absent`]); the adapter reads it
//! ([`newer_settled_absent`]). Unset, as around every other call, the
//! answer is read as every release of the last years sends it.

use std::future::Future;

tokio::task_local! {
    /// Whether the settling look of the version a call goes to found every
    /// newer version absent.
    static NEWER_SETTLED_ABSENT: bool;
}

/// Runs `call` knowing whether the settling look of the version it goes
/// to found every newer version absent (`absent`).
pub(crate) async fn with_newer_settled_absent<F: Future>(absent: bool, call: F) -> F::Output {
    NEWER_SETTLED_ABSENT.scope(absent, call).await
}

/// Whether the call running now goes to a version whose settling look
/// found every newer version absent: the node's proxy predates them. False
/// when that is not settled (a proxy that may still be creating its
/// pipes, a newer endpoint that exists but failed) or not asked.
pub(crate) fn newer_settled_absent() -> bool {
    NEWER_SETTLED_ABSENT
        .try_with(|absent| *absent)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_a_call_run_with_a_settled_absence_reads_it() {
        assert!(!newer_settled_absent(), "unset");
        assert!(with_newer_settled_absent(true, async { newer_settled_absent() }).await);
        assert!(!with_newer_settled_absent(false, async { newer_settled_absent() }).await);
        assert!(!newer_settled_absent(), "only within the call");
    }
}
