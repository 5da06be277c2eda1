//! The handles `CsiProxy` gives out: each group trait implemented by running
//! every call through the group's [`Lookout`] and its call policy, which
//! add deadlines, retries and looking for the proxy around whichever
//! adapter is current.
//!
//! The methods are generated from the RPC catalogue (`catalogue/`) into
//! `relays.rs`: every method is one call of [`Handle::run`] with the
//! operation the catalogue gives it, whose deadline, retry rule, metrics
//! label and span apply, after the argument checks the catalogue gives it.

use std::future::Future;
use std::sync::Arc;

use super::lookout::Lookout;
use super::options::CallOptions;
use crate::adapter::FromConnection;
use crate::capability::Operation;
use crate::error::Result;

/// A group's lookout with the options of the calls made through it.
pub(crate) struct Handle<A: ?Sized> {
    pub lookout: Arc<Lookout<A>>,
    pub options: CallOptions,
}

impl<A: ?Sized + FromConnection + Send + Sync + 'static> Handle<A> {
    /// Runs `call` on the group's current adapter as `operation`, unless
    /// its argument checks refused it (`checked`).
    pub(super) async fn run<T, F, Fut>(
        &self,
        operation: Operation,
        checked: Result<()>,
        call: F,
    ) -> Result<T>
    where
        F: Fn(Arc<A>) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        self.lookout
            .run(operation, self.options, checked, call)
            .await
    }
}
