//! The faults and the driver they hit: where an attempt is cut, how it
//! ended, and a driver process, its own runtime, that can be killed with
//! everything on it.

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use csi_proxy_client::mount::Mounter;
use csi_proxy_client::Error;
use tokio::sync::oneshot;

use super::ops::{perform, Op, Reply};
use crate::common::node::FakeNode;

/// Where an operation's first attempt is cut: at its `n`-th host call,
/// before or after the host's work, by a proxy restart or by killing the
/// driver.
#[derive(Clone, Copy, Debug)]
pub(super) struct Fault {
    pub(super) n: usize,
    pub(super) after_work: bool,
    pub(super) kill_driver: bool,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kill_driver {
            true => "driver killed",
            false => "proxy restarted",
        };
        let when = match self.after_work {
            true => "after",
            false => "before",
        };
        write!(f, "{what} {when} host call {}", self.n)
    }
}

/// How an attempt ended.
pub(super) enum Outcome {
    Done(Reply),
    Failed {
        error: String,
        retryable: bool,
        /// `Error::NotOurs`: refused for want of proof.
        not_ours: bool,
    },
    /// The driver was killed under it.
    Killed,
}

pub(super) fn outcome_text(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Done(reply) => format!("done: {reply:?}"),
        Outcome::Failed {
            error, retryable, ..
        } => format!("failed (retryable: {retryable}): {error}"),
        Outcome::Killed => "the driver was killed".to_owned(),
    }
}

/// A driver process: its own runtime (killed with everything on it) and a
/// mounter on the same journal folder as the drivers before it.
pub(super) struct Driver {
    runtime: Option<tokio::runtime::Runtime>,
    mounter: Mounter,
}

impl Driver {
    pub(super) async fn start(node: &FakeNode, state: &std::path::Path) -> Driver {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (client, state) = (node.client_builder(), state.to_owned());
        let mounter = runtime.spawn(async move {
            let proxy = client.connect().await.unwrap();
            Mounter::builder(proxy, state)
                .poll_interval(Duration::from_millis(10))
                .disk_wait(Duration::from_millis(300))
                .volume_wait(Duration::from_secs(2))
                .format_deadline(Duration::from_secs(1))
                .format_grace(Duration::ZERO)
                .build()
                .unwrap()
        });
        let mounter = mounter.await.unwrap();
        Driver {
            runtime: Some(runtime),
            mounter,
        }
    }

    pub(super) fn spawn(
        &self,
        op: Op,
        live: BTreeSet<String>,
    ) -> tokio::task::JoinHandle<Result<Reply, Error>> {
        let runtime = self.runtime.as_ref().expect("a driver that runs");
        runtime.spawn(perform(self.mounter.clone(), op, live))
    }

    /// The process dies: every task of its runtime is dropped where it
    /// stands.
    pub(super) fn kill(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The next message of a hold, if one is armed.
pub(super) async fn next_of<T>(hold: &mut Option<oneshot::Receiver<T>>) -> Option<T> {
    match hold {
        Some(receiver) => receiver.await.ok(),
        None => std::future::pending().await,
    }
}
