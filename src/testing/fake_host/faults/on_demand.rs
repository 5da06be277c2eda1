//! What a test asks of the fake host's calls: failures and delays planned
//! for the n-th call of an operation, latencies, calls held, calls counted.

use std::time::Duration;

use tokio::sync::oneshot;

use super::{Fault, WindowsError};
use crate::capability::Operation;
use crate::testing::fake_host::FakeHost;

impl FakeHost {
    /// Makes the `nth` call of `operation` from now on (1: the next one)
    /// fail with `error`, changing nothing on the host. Several failures
    /// may be planned, for the same operation or others; for one call, the
    /// first planned wins. The call is counted ([`calls_of`](Self::calls_of))
    /// either way.
    ///
    /// ```
    /// use csi_proxy_client::api::DiskApi;
    /// use csi_proxy_client::testing::{FakeHost, WindowsError};
    /// use csi_proxy_client::Operation;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let host = FakeHost::builder().disk(1, "pd-1", 10 << 30).build();
    /// host.fail_call(Operation::PartitionDisk, 1, WindowsError::new(1117));
    /// assert!(host.partition_disk(1).await.is_err());
    /// assert!(!host.disk(1).unwrap().partitioned, "nothing changed");
    /// host.partition_disk(1).await.unwrap(); // the second call works
    /// assert_eq!(host.calls_of(Operation::PartitionDisk), 2);
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// When `nth` is 0.
    pub fn fail_call(&self, operation: Operation, nth: usize, error: WindowsError) {
        self.state()
            .faults
            .plan("fail_call", operation, nth, Fault::Fail(error));
    }

    /// Makes the `nth` call of `operation` from now on (1: the next one) do
    /// its work only after `delay`, and answer then. The work is done even
    /// if the caller stopped waiting (its future was dropped, or a
    /// [`FakeProxy`](crate::testing::FakeProxy)'s client gave up): the
    /// proxy does not cancel host work. Delays planned for the same call
    /// add up; with a failure planned too, the call fails after the delay.
    ///
    /// The delayed work runs on a task of the current Tokio runtime, and
    /// on tokio's clock (a paused clock makes it instant).
    ///
    /// # Panics
    ///
    /// When `nth` is 0; when the delayed call is made outside a Tokio
    /// runtime.
    pub fn delay_call(&self, operation: Operation, nth: usize, delay: Duration) {
        self.state()
            .faults
            .plan("delay_call", operation, nth, Fault::Delay(delay));
    }

    /// Makes every call of `operation` from now on wait `latency` before
    /// its work, as a Windows host's WMI queries and PowerShell cmdlets
    /// take their time (a rescan a second, a format most of one); a
    /// `latency` of [`Duration::ZERO`] removes it. It replaces the
    /// operation's earlier latency, and adds to a delay planned for a call
    /// ([`delay_call`](Self::delay_call)); a failure planned for a call
    /// comes after it.
    ///
    /// Each call waits on its own, as a delayed call does: calls side by
    /// side wait at the same time, so eight calls with 200 ms of latency
    /// take about 200 ms together, not 1.6 s. Its work is done even if the
    /// caller stopped waiting, and it runs on a task of the current Tokio
    /// runtime, on tokio's clock. Latencies stay through a
    /// [reboot](Self::reboot), as planned faults do.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// use csi_proxy_client::api::DiskApi;
    /// use csi_proxy_client::testing::FakeHost;
    /// use csi_proxy_client::Operation;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let host = FakeHost::builder().disk(1, "pd-1", 10 << 30).build();
    /// host.set_latency(Operation::Rescan, Duration::from_millis(50));
    /// assert_eq!(host.latency(Operation::Rescan), Duration::from_millis(50));
    /// let started = Instant::now();
    /// host.rescan().await.unwrap();
    /// host.rescan().await.unwrap();
    /// assert!(started.elapsed() >= Duration::from_millis(100), "each call waits");
    /// host.set_latency(Operation::Rescan, Duration::ZERO); // gone
    /// assert_eq!(host.latency(Operation::Rescan), Duration::ZERO);
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// When a call of `operation` with a latency is made outside a Tokio
    /// runtime.
    pub fn set_latency(&self, operation: Operation, latency: Duration) {
        self.state().faults.set_latency(operation, latency);
    }

    /// [`set_latency`](Self::set_latency) for each operation and latency
    /// of `latencies`, at once: a table of a node's latencies.
    pub fn set_latencies(&self, latencies: impl IntoIterator<Item = (Operation, Duration)>) {
        let mut state = self.state();
        for (operation, latency) in latencies {
            state.faults.set_latency(operation, latency);
        }
    }

    /// The latency every call of `operation` waits
    /// ([`set_latency`](Self::set_latency)); [`Duration::ZERO`] when none.
    pub fn latency(&self, operation: Operation) -> Duration {
        self.state().faults.latency(operation)
    }

    /// How many calls of `operation` the host received, failed ones
    /// included. Through a fake proxy, an operation the client emulates
    /// arrives as the calls it is made of (`GetDiskNumberByName` as
    /// `ListDiskIDs` from v1beta1 on).
    pub fn calls_of(&self, operation: Operation) -> usize {
        self.state().faults.received(operation)
    }

    /// Holds the `nth` host call from now on (1: the next one), of
    /// whatever operation, before its work, until the test lets it go: a
    /// test can stop the proxy, or the driver, just before the host does
    /// that call ([`hold_answer`](Self::hold_answer) is for just after).
    ///
    /// When the call comes, the receiver gets its operation and a sender:
    /// sending on it lets the call do its work and answer; dropping it
    /// makes the call fail ([`Error::Host`](crate::Error::Host), code
    /// `Unknown`) without its work. A call whose caller is gone while it is
    /// held (its future dropped, as with a connection that a stopped proxy
    /// broke) never does its work. Dropping the receiver before the call
    /// comes cancels the hold. The call is counted
    /// ([`calls_of`](Self::calls_of)) either way.
    ///
    /// ```
    /// use csi_proxy_client::api::DiskApi;
    /// use csi_proxy_client::testing::FakeHost;
    /// use csi_proxy_client::Operation;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let host = FakeHost::builder().disk(1, "pd-1", 10 << 30).build();
    /// let held = host.hold_call(1);
    /// let partition = tokio::spawn({
    ///     let host = host.clone();
    ///     async move { host.partition_disk(1).await }
    /// });
    /// let (operation, go) = held.await.unwrap();
    /// assert_eq!(operation, Operation::PartitionDisk);
    /// assert!(!host.disk(1).unwrap().partitioned, "held before its work");
    /// drop(go); // as a proxy that stopped before the call
    /// assert!(partition.await.unwrap().is_err());
    /// assert!(!host.disk(1).unwrap().partitioned);
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// When `nth` is 0.
    pub fn hold_call(&self, nth: usize) -> oneshot::Receiver<(Operation, oneshot::Sender<()>)> {
        self.state().faults.hold("hold_call", None, nth, false)
    }

    /// [`hold_call`](Self::hold_call) for the `nth` call of `operation`
    /// from now on (1: the next one), whatever other calls come meanwhile:
    /// a test can keep one call on the host, before its work, for as long
    /// as it takes to show what goes on beside it, and then let it go.
    ///
    /// ```
    /// use csi_proxy_client::api::DiskApi;
    /// use csi_proxy_client::testing::FakeHost;
    /// use csi_proxy_client::Operation;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let host = FakeHost::builder().disk(1, "pd-1", 10 << 30).build();
    /// let held = host.hold_call_of(Operation::PartitionDisk, 1);
    /// let partition = tokio::spawn({
    ///     let host = host.clone();
    ///     async move { host.partition_disk(1).await }
    /// });
    /// let (_, go) = held.await.unwrap();
    /// // Other calls are not held.
    /// assert!(host.list_disk_ids().await.unwrap().contains_key(&1));
    /// assert!(!host.disk(1).unwrap().partitioned, "held before its work");
    /// go.send(()).unwrap();
    /// partition.await.unwrap().unwrap();
    /// assert!(host.disk(1).unwrap().partitioned);
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// When `nth` is 0.
    pub fn hold_call_of(
        &self,
        operation: Operation,
        nth: usize,
    ) -> oneshot::Receiver<(Operation, oneshot::Sender<()>)> {
        self.state()
            .faults
            .hold("hold_call_of", Some(operation), nth, false)
    }

    /// Holds the `nth` host call from now on (1: the next one), of
    /// whatever operation, after its work and before its answer, until the
    /// test lets it go: a test can stop the proxy, or the driver, so that
    /// the call is done and its answer lost.
    ///
    /// When the call's work is done (or has failed), the receiver gets its
    /// operation and a sender; sending on it or dropping it lets the answer
    /// go. Dropping the receiver before the call comes cancels the hold.
    /// Both holds may be planned for the same call.
    ///
    /// # Panics
    ///
    /// When `nth` is 0.
    pub fn hold_answer(&self, nth: usize) -> oneshot::Receiver<(Operation, oneshot::Sender<()>)> {
        self.state().faults.hold("hold_answer", None, nth, true)
    }
}
