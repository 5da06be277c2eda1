//! The call policy: a call's deadline, and what it does when the group is
//! not served or the connection fails under it (look again, send again,
//! wait, or give up and say why).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use backon::BackoffBuilder;

use super::{LastFailure, Lookout, Patience};
use crate::adapter::FromConnection;
use crate::availability::{with_newer_settled_absent, Pace, WaitLimit};
use crate::capability::Operation;
use crate::client::options::CallOptions;
use crate::error::{Delivery, Error, Result};
use crate::metrics::CallTimer;

/// What a call went through, for its answer when its deadline passes.
#[derive(Default)]
struct Progress {
    /// The call's answer is read by the release its group's missing newer
    /// versions imply: each attempt first waits for the settling look for
    /// a newer version ([`Operation::read_by_release`]).
    settle: bool,
    /// A request is out, waiting for its answer.
    in_flight: bool,
    /// The last failure the call met: of an attempt that was not given up
    /// on, or what it was waiting through (the proxy not there, a newer
    /// version's endpoint failing).
    last_failure: LastFailure,
}

impl Progress {
    /// The answer of a call whose deadline passed: a bare timeout when a
    /// request was out (it may still run on the host), else the last real
    /// failure the call met, if any: it says more than the deadline. A
    /// call that waited for a proxy that stayed away is answered
    /// [`Error::NotServed`], with every endpoint its looks tried.
    fn at_deadline(self, operation: Operation, after: Duration) -> Error {
        match self.last_failure.take() {
            Some(failure) if !self.in_flight => failure,
            _ => Error::Timeout { operation, after },
        }
    }
}

impl<A: ?Sized + FromConnection + Send + Sync + 'static> Lookout<A> {
    /// Runs `call` on the current adapter within the operation's deadline.
    ///
    /// While the group is not served, or its connection has ended, the call
    /// looks for the proxy again (sharing each look with concurrent
    /// callers) and waits for it within its deadline, as long as the proxy
    /// as a whole is away; a group the node lacks while others are served
    /// is [`Error::NotServed`] after one look (and the grace for a proxy
    /// still creating its pipes). A request that certainly was not sent
    /// goes again without spending the retry budget; one the proxy refused
    /// unprocessed goes once more; one that may have been sent is repeated
    /// only if the operation only reads (or the caller opted in), under
    /// the [`RetryPolicy`](crate::RetryPolicy). Every look and attempt
    /// after the first waits on the [`Pace`], the one every wait for the
    /// proxy follows. A call whose deadline passes while it waits for a
    /// proxy that stays away is [`Error::NotServed`] (every endpoint its
    /// looks tried), not [`Error::Timeout`], which is for a request that
    /// was out.
    pub async fn run<T, F, Fut>(
        &self,
        operation: Operation,
        options: CallOptions,
        call: F,
    ) -> Result<T>
    where
        F: Fn(Arc<A>) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let version = || self.call_version();
        let timer = CallTimer::start(&self.calls, operation, &version);
        let deadline = options
            .deadline
            .unwrap_or_else(|| self.behaviour.deadlines.of(operation));
        let mut progress = Progress {
            settle: operation.read_by_release(),
            ..Progress::default()
        };
        let attempts = async {
            let state = self.state();
            // The fast path: served, and the connection is open.
            let failure = match state.usable() {
                Some(api) => {
                    let result = self.attempt(api.clone(), &call, &mut progress).await;
                    match result {
                        Err(error) => match connection_failure(&error) {
                            Some(delivery) => Some((error, delivery)),
                            None => return Err(error),
                        },
                        ok => return ok,
                    }
                }
                None => None,
            };
            self.run_slowly(operation, options, &call, failure, &mut progress)
                .await
        };
        let result = match tokio::time::timeout(deadline, attempts).await {
            Ok(result) => result,
            Err(_) => Err(progress.at_deadline(operation, deadline)),
        };
        timer.finish(&result);
        result
    }

    /// The answer of a call whose argument checks refused `error`: recorded
    /// like any outcome, while nothing waits for the proxy or is sent.
    pub fn refused<T>(&self, operation: Operation, error: Error) -> Result<T> {
        let version = || self.call_version();
        let timer = CallTimer::start(&self.calls, operation, &version);
        let result = Err(error);
        timer.finish(&result);
        result
    }

    /// For a call whose answer is read by the release the missing newer
    /// versions imply: while a newer version may still be appearing (a
    /// proxy creating its pipes), waits for the grace to pass and for the
    /// settling look (the one in flight, or its own), so that a version
    /// adopted in that moment is not read as an old release's. A version
    /// that look moves to is settled in turn. A newer version whose
    /// endpoint exists but failed is not waited for: it is there, so the
    /// node's release is not an old one.
    async fn settle_first(&self) {
        loop {
            let state = self.state();
            let Some(due) = self.newer_due(&state) else {
                return;
            };
            if self.newer_failure(&state).is_some() {
                return;
            }
            tokio::time::sleep_until(due.into()).await;
            // Past the grace: it settles the state, or moves to a newer
            // one, which the next round settles.
            self.look_for_newer(state.generation).await;
        }
    }

    /// The slow path: the group is not usable now, or `failure` is the
    /// connection failure that the last attempt met, with what became of
    /// its request.
    async fn run_slowly<T, F, Fut>(
        &self,
        operation: Operation,
        options: CallOptions,
        call: &F,
        mut failure: Option<(Error, Delivery)>,
        progress: &mut Progress,
    ) -> Result<T>
    where
        F: Fn(Arc<A>) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let may_repeat = !operation.is_mutating() || options.retry_mutations;
        let mut retries = None;
        let mut refused_before = false;
        let mut pace = Pace::default();
        loop {
            if let Some((error, delivery)) = failure.take() {
                match next_after(delivery, may_repeat, refused_before) {
                    Next::SendAgain => {}
                    Next::SendOnceMore => refused_before = true,
                    Next::Retry => {
                        let retries =
                            retries.get_or_insert_with(|| self.behaviour.retry.backoff().build());
                        match retries.next() {
                            Some(delay) => tokio::time::sleep(delay).await,
                            None => return Err(error),
                        }
                    }
                    // The outcome is unknown: report this connection's
                    // failure, never what a later look finds.
                    Next::GiveUp => return Err(error),
                }
                progress.last_failure.set(error);
            }
            let api = self
                .wait_until_served(
                    &mut pace,
                    WaitLimit::QUIET,
                    Patience::WhileProxyAway,
                    &progress.last_failure,
                )
                .await?;
            match self.attempt(api, call, progress).await {
                Err(error) => match connection_failure(&error) {
                    Some(delivery) => failure = Some((error, delivery)),
                    None => return Err(error),
                },
                ok => return ok,
            }
        }
    }

    /// One attempt on `api`. An operation that its version lacks, while a
    /// newer version may still be appearing (a proxy creating its pipes,
    /// or a newer version's endpoint that did not answer yet), goes to the
    /// newer version once one is in use; it is [`Error::Unsupported`] once
    /// the group settled without one, and the newer endpoint's failure
    /// while that endpoint exists but keeps failing. Nothing was sent for
    /// an unsupported operation, so it may go again whatever it does.
    ///
    /// A call whose answer is read by the release settles first, and runs
    /// knowing what the settling look found of the newer versions
    /// ([`with_newer_settled_absent`]).
    async fn attempt<T, F, Fut>(&self, api: Arc<A>, call: &F, progress: &mut Progress) -> Result<T>
    where
        F: Fn(Arc<A>) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let mut pace = Pace::default();
        let mut api = api;
        let mut newer_absent = false;
        if progress.settle {
            // Also after a wait for a proxy that came back: the version
            // adopted in that moment may be an older one.
            self.settle_first().await;
            let state = self.state();
            if let Some(now) = state.usable() {
                api = now.clone();
                newer_absent = self.newer_settled_absent(&state);
            }
        }
        loop {
            progress.in_flight = true;
            let result = if progress.settle {
                with_newer_settled_absent(newer_absent, call(api)).await
            } else {
                call(api).await
            };
            progress.in_flight = false;
            let served = match &result {
                Err(error @ Error::Unsupported { served, .. }) => {
                    // The answer if the deadline passes while it waits.
                    progress.last_failure.set(error.clone());
                    *served
                }
                _ => return result,
            };
            match self
                .wait_for_newer(&mut pace, served, &progress.last_failure)
                .await
            {
                Ok(newer) => {
                    newer_absent = false;
                    api = newer;
                }
                Err(None) => return result,
                // A newer version is there but does not answer.
                Err(Some(failure)) => return Err(failure),
            }
        }
    }
}

/// What a call does after an attempt failed on the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    /// Send it again once the group is served, spending no retry: it was
    /// certainly not sent.
    SendAgain,
    /// Send it once more: the proxy refused it unprocessed, the first time.
    SendOnceMore,
    /// Send it again after the retry policy's next delay, if one is left:
    /// it may have been processed, and may be repeated.
    Retry,
    /// Give up: the failure is the answer.
    GiveUp,
}

/// The retry decision, from what became of the request
/// ([`Error::delivery`]). A request the proxy refused unprocessed goes
/// once more, whatever it does (a proxy that refuses again is answered
/// so); one that certainly was not sent goes again; one that may have been
/// processed goes again only if the operation may be repeated (a read, or
/// a mutation the caller opted in for), under the retry policy. An answer
/// is the answer.
fn next_after(delivery: Delivery, may_repeat: bool, refused_before: bool) -> Next {
    match delivery {
        Delivery::RefusedUnprocessed if refused_before => Next::GiveUp,
        Delivery::RefusedUnprocessed => Next::SendOnceMore,
        Delivery::NotSent => Next::SendAgain,
        Delivery::MayHaveRun if may_repeat => Next::Retry,
        Delivery::MayHaveRun | Delivery::Answered => Next::GiveUp,
    }
}

/// If an attempt failed on the connection to the proxy
/// ([`Error::Transport`]): what became of its request, which decides
/// whether it goes again ([`next_after`]) once the group is served. `None`
/// for every other failure: `Unknown` (a host failure) and every other
/// answer of the proxy, an operation the version lacks, a deadline; the
/// failure is the call's answer.
fn connection_failure(error: &Error) -> Option<Delivery> {
    matches!(error, Error::Transport { .. }).then(|| error.delivery())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_decision() {
        use Delivery::*;
        use Next::*;
        // (what became of the request, may repeat, refused before) => next
        let table = [
            ((RefusedUnprocessed, true, false), SendOnceMore),
            ((RefusedUnprocessed, false, false), SendOnceMore),
            ((RefusedUnprocessed, true, true), GiveUp),
            ((RefusedUnprocessed, false, true), GiveUp),
            ((NotSent, true, false), SendAgain),
            ((NotSent, false, false), SendAgain),
            ((NotSent, false, true), SendAgain),
            ((MayHaveRun, true, false), Retry),
            ((MayHaveRun, true, true), Retry),
            ((MayHaveRun, false, false), GiveUp),
            ((MayHaveRun, false, true), GiveUp),
            // Never a connection failure's; the answer, were it one.
            ((Answered, true, false), GiveUp),
            ((Answered, false, false), GiveUp),
        ];
        for ((delivery, may_repeat, refused_before), next) in table {
            assert_eq!(
                next_after(delivery, may_repeat, refused_before),
                next,
                "{delivery:?}, may repeat: {may_repeat}, refused before: {refused_before}"
            );
        }
    }

    #[test]
    fn only_a_transport_failure_is_a_connection_failure() {
        let transport = |maybe_sent| Error::Transport {
            address: "p".into(),
            operation: None,
            maybe_sent,
            source: std::sync::Arc::new(std::io::Error::other("broken pipe")),
        };
        assert_eq!(
            connection_failure(&transport(true)),
            Some(Delivery::MayHaveRun)
        );
        assert_eq!(
            connection_failure(&transport(false)),
            Some(Delivery::NotSent)
        );
        let op = Operation::ListDiskIds;
        for answer in [
            Error::host(op, crate::error::Code::Unknown, "the device is not ready"),
            Error::Timeout {
                operation: op,
                after: Duration::from_secs(1),
            },
            Error::invalid_response(op, "garbled"),
            Error::connect_timeout("p", Duration::from_secs(1)),
        ] {
            assert_eq!(connection_failure(&answer), None, "{answer}");
        }
    }
}
