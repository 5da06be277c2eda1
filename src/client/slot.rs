//! One group's current adapter, swapped when the proxy comes back with
//! other versions, and the call loop: deadline, retries, re-negotiation.

use std::future::Future;
use std::sync::Arc;

use arc_swap::ArcSwapOption;
use backon::BackoffBuilder;
use tokio::sync::{broadcast, Mutex};

use super::options::{CallOptions, Deadlines, VersionChange};
use crate::adapter::FromConnection;
use crate::capability::Operation;
use crate::error::{Error, Result};
use crate::group::ApiGroup;
use crate::negotiate::Negotiator;
use crate::retry::RetryPolicy;
use crate::transport::ConnectionLost;
use crate::version::ApiVersion;

/// The adapter in use, and when it was attached.
pub(crate) struct Attached<A: ?Sized> {
    pub api: Arc<A>,
    pub version: Option<ApiVersion>,
    generation: u64,
}

/// How the client behaves, shared by every group.
pub(crate) struct Behaviour {
    pub deadlines: Deadlines,
    pub retry: RetryPolicy,
    pub events: broadcast::Sender<VersionChange>,
}

/// One group: its current adapter, and how to find a new one.
pub(crate) struct GroupSlot<A: ?Sized> {
    group: ApiGroup,
    attached: ArcSwapOption<Attached<A>>,
    /// `None` for backends given directly (mocks): nothing to renegotiate.
    negotiator: Option<Negotiator>,
    renegotiating: Mutex<()>,
    pub behaviour: Arc<Behaviour>,
}

impl<A: ?Sized + FromConnection + Send + Sync + 'static> GroupSlot<A> {
    pub fn new(
        group: ApiGroup,
        attached: Option<(Arc<A>, Option<ApiVersion>)>,
        negotiator: Option<Negotiator>,
        behaviour: Arc<Behaviour>,
    ) -> Self {
        let attached = attached.map(|(api, version)| {
            Arc::new(Attached {
                api,
                version,
                generation: 0,
            })
        });
        Self {
            group,
            attached: ArcSwapOption::new(attached),
            negotiator,
            renegotiating: Mutex::new(()),
            behaviour,
        }
    }

    /// The adapter in use, if the group is served.
    pub fn current(&self) -> Option<Arc<Attached<A>>> {
        self.attached.load_full()
    }

    /// Negotiates this group again, unless another call already did since
    /// `seen` was attached. Fails if no version is served now.
    async fn renegotiate_now(&self, seen: Option<u64>) -> Result<()> {
        let Some(negotiator) = &self.negotiator else {
            // A backend given directly stays; there is nothing to look for.
            return match self.current() {
                Some(_) => Ok(()),
                None => Err(Error::NotServed {
                    group: self.group,
                    tried: Vec::new(),
                }),
            };
        };
        let _only_one = self.renegotiating.lock().await;
        let before = self.current();
        if before.as_ref().map(|a| a.generation) != seen {
            return Ok(());
        }
        let negotiated = negotiator.negotiate(&[self.group]).await?;
        let outcome = negotiated.connection(self.group);
        let (from, generation) = (
            before.as_ref().and_then(|a| a.version),
            seen.map_or(1, |g| g + 1),
        );
        let attached = match &outcome {
            Ok(connection) => Some(Arc::new(Attached {
                api: A::from_connection(connection),
                version: Some(connection.version()),
                generation,
            })),
            // Keep the old adapter: its calls fail fast until the proxy is back.
            Err(_) => before,
        };
        let to = attached.as_ref().and_then(|a| a.version);
        self.attached.store(attached);
        if from != to && outcome.is_ok() {
            tracing::info!(group = %self.group, ?from, ?to, "CSI Proxy API version changed");
            let _ = self.behaviour.events.send(VersionChange {
                group: self.group,
                from,
                to,
            });
        }
        outcome.map(drop)
    }

    /// Runs `call` on the current adapter within the operation's deadline.
    /// When the connection is lost, negotiates again and, if the policy
    /// allows, retries on whatever version is served now.
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
        let deadline = options
            .deadline
            .unwrap_or_else(|| self.behaviour.deadlines.of(operation));
        let may_repeat = !operation.is_mutating() || options.retry_mutations;
        let attempts = async {
            // Built on the first failure: most calls never need it.
            let mut delays = None;
            loop {
                let Some(attached) = self.current() else {
                    self.renegotiate_now(None).await?;
                    continue;
                };
                let result = call(attached.api.clone()).await;
                let error = match result {
                    Err(error) if is_connection_failure(&error) => error,
                    other => return other,
                };
                // Whatever comes back may serve other versions: look again.
                let renegotiated = self.renegotiate_now(Some(attached.generation)).await;
                let may_retry = may_repeat || was_not_sent(&error);
                let delays = delays.get_or_insert_with(|| self.behaviour.retry.backoff().build());
                match (may_retry, delays.next()) {
                    (true, Some(delay)) => tokio::time::sleep(delay).await,
                    _ => return Err(final_error(error, renegotiated)),
                }
            }
        };
        match tokio::time::timeout(deadline, attempts).await {
            Ok(result) => result,
            Err(_) => Err(Error::Timeout {
                operation: format!("{} {}", operation.group(), operation.name()),
                after: deadline,
            }),
        }
    }
}

/// What a call that is not tried again reports. A request that may have
/// reached the proxy reports its own broken connection, so the caller knows
/// the outcome is uncertain, whatever renegotiation found since. A request
/// that was certainly not sent reports why no proxy could take it, if
/// renegotiation found that.
fn final_error(call: Error, renegotiated: Result<()>) -> Error {
    match renegotiated {
        Err(now) if was_not_sent(&call) => now,
        _ => call,
    }
}

/// The connection to the proxy failed or broke. `Unknown` (a host failure)
/// and every other answer of the proxy are not connection failures.
fn is_connection_failure(error: &Error) -> bool {
    matches!(error, Error::Transport { .. })
}

/// The request certainly did not reach the proxy.
fn was_not_sent(error: &Error) -> bool {
    matches!(error, Error::Transport { source, .. } if source.is::<ConnectionLost>())
}

/// What the facade needs of a slot, whatever its group's trait.
#[async_trait::async_trait]
pub(crate) trait AnySlot: Send + Sync {
    /// The version in use (`None` for a backend given directly).
    fn version(&self) -> Option<ApiVersion>;
    /// The generation of the adapter in use, if any.
    fn generation(&self) -> Option<u64>;
    /// Negotiates again unless that already happened since `seen`.
    async fn renegotiate(&self, seen: Option<u64>) -> Result<()>;
}

#[async_trait::async_trait]
impl<A: ?Sized + FromConnection + Send + Sync + 'static> AnySlot for GroupSlot<A> {
    fn version(&self) -> Option<ApiVersion> {
        self.current().and_then(|a| a.version)
    }

    fn generation(&self) -> Option<u64> {
        self.current().map(|a| a.generation)
    }

    async fn renegotiate(&self, seen: Option<u64>) -> Result<()> {
        self.renegotiate_now(seen).await
    }
}
