//! The call policy: a call's deadline, and what it does when the group is
//! not served or the connection fails under it (look again, send again,
//! wait, or give up and say why).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use backon::BackoffBuilder;

use super::lookout::{Lookout, Patience};
use super::options::CallOptions;
use crate::adapter::FromConnection;
use crate::capability::Operation;
use crate::error::{Error, Result};
use crate::metrics::CallTimer;
use crate::negotiate::{Pace, WaitLimit};

/// What a call went through, for its answer when its deadline passes.
#[derive(Default)]
struct Progress {
    /// A request is out, waiting for its answer.
    in_flight: bool,
    /// The last failure of an attempt that was not given up on.
    last_failure: Option<Error>,
}

impl Progress {
    /// The answer of a call whose deadline passed: a bare timeout when a
    /// request was out (it may still run on the host), else the last real
    /// failure the call met, if any: it says more than the deadline.
    fn at_deadline(self, operation: Operation, after: Duration) -> Error {
        match self.last_failure {
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
    /// proxy follows.
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
        let mut progress = Progress::default();
        let attempts = async {
            let state = self.state();
            // The fast path: served, and the connection is open.
            let failure = match state.usable() {
                Some(api) => {
                    let result = self.attempt(api.clone(), &call, &mut progress).await;
                    match result {
                        Err(error) if is_connection_failure(&error) => Some(error),
                        other => return other,
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

    /// The slow path: the group is not usable now, or `failure` is the
    /// connection failure that the last attempt met.
    async fn run_slowly<T, F, Fut>(
        &self,
        operation: Operation,
        options: CallOptions,
        call: &F,
        mut failure: Option<Error>,
        progress: &mut Progress,
    ) -> Result<T>
    where
        F: Fn(Arc<A>) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let may_repeat = !operation.is_mutating() || options.retry_mutations;
        let mut retries = None;
        let mut refused = false;
        let mut pace = Pace::default();
        loop {
            if let Some(error) = failure.take() {
                if error.was_refused() {
                    // Not processed, so safe to send once more whatever it
                    // does; a proxy that refuses again is answered so.
                    if std::mem::replace(&mut refused, true) {
                        return Err(error);
                    }
                } else if !error.certainly_not_sent() {
                    let retries =
                        retries.get_or_insert_with(|| self.behaviour.retry.backoff().build());
                    match (may_repeat, retries.next()) {
                        (true, Some(delay)) => tokio::time::sleep(delay).await,
                        // The outcome is unknown: report this connection's
                        // failure, never what a later look finds.
                        _ => return Err(error),
                    }
                }
                progress.last_failure = Some(error);
            }
            let api = self
                .wait_until_served(&mut pace, WaitLimit::QUIET, Patience::WhileProxyAway)
                .await?;
            match self.attempt(api, call, progress).await {
                Err(error) if is_connection_failure(&error) => failure = Some(error),
                other => return other,
            }
        }
    }

    /// One attempt on `api`. An operation that its version lacks, while a
    /// newer version may still be appearing (a proxy creating its pipes),
    /// goes to the newer version once one is in use; it is
    /// [`Error::Unsupported`] once the grace has passed without one.
    /// Nothing was sent for an unsupported operation, so it may go again
    /// whatever it does.
    async fn attempt<T, F, Fut>(&self, api: Arc<A>, call: &F, progress: &mut Progress) -> Result<T>
    where
        F: Fn(Arc<A>) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let mut pace = Pace::default();
        let mut api = api;
        loop {
            progress.in_flight = true;
            let result = call(api).await;
            progress.in_flight = false;
            let served = match &result {
                Err(error @ Error::Unsupported { served, .. }) => {
                    // The answer if the deadline passes while it waits.
                    progress.last_failure = Some(error.clone());
                    *served
                }
                _ => return result,
            };
            match self.wait_for_newer(&mut pace, served).await {
                Some(newer) => api = newer,
                None => return result,
            }
        }
    }
}

/// The connection to the proxy failed or broke. `Unknown` (a host failure)
/// and every other answer of the proxy are not connection failures.
fn is_connection_failure(error: &Error) -> bool {
    matches!(error, Error::Transport { .. })
}
