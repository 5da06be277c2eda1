//! When each call a fake proxy received began and ended, on one counter:
//! which calls overlapped, and so how long the chain of calls that waited
//! on one another was ([`FakeProxy::depth`]).

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::FakeProxy;

/// One call's span ([`FakeProxy::spans`]): when it was received and when
/// it was answered, as positions on one counter of the proxy's events.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Span {
    /// The RPC name from the request path.
    pub rpc: String,
    /// Its place among the proxy's events when the request came.
    pub began: u64,
    /// Its place when the answer was made; `None` while it runs.
    pub ended: Option<u64>,
}

/// The spans of the calls since the last clear.
#[derive(Debug, Default)]
pub(super) struct Timeline {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The next event's place.
    next: u64,
    /// By start, so that a call's end finds its span at once however
    /// many calls a long-lived proxy has served.
    spans: BTreeMap<u64, Span>,
}

impl Timeline {
    /// A call of `rpc` came: its span's start.
    pub fn begin(&self, rpc: &str) -> u64 {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let began = state.next;
        state.next += 1;
        let span = Span {
            rpc: rpc.to_owned(),
            began,
            ended: None,
        };
        state.spans.insert(began, span);
        began
    }

    /// The call that began at `began` was answered (one cleared since is
    /// not recorded).
    pub fn end(&self, began: u64) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let ended = state.next;
        state.next += 1;
        if let Some(span) = state.spans.get_mut(&began) {
            span.ended = Some(ended);
        }
    }

    pub fn spans(&self) -> Vec<Span> {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.spans.values().cloned().collect()
    }

    pub fn clear(&self) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.spans.clear();
    }
}

/// Each of `spans`' round: one more than the longest chain of calls
/// that ended before it began (1: it waited on no other call).
fn rounds_of(spans: &[Span]) -> Vec<usize> {
    let end = |span: &Span| span.ended.unwrap_or(u64::MAX);
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by_key(|&i| end(&spans[i]));
    let mut round = vec![0; spans.len()];
    for (at, &i) in order.iter().enumerate() {
        let before = order[..at]
            .iter()
            .filter(|&&j| end(&spans[j]) < spans[i].began)
            .map(|&j| round[j])
            .max()
            .unwrap_or(0);
        round[i] = before + 1;
    }
    round
}

/// The longest chain of `spans` in which each call began after the one
/// before it ended: the calls that waited on one another. A call still
/// running ends after every other.
pub fn depth(spans: &[Span]) -> usize {
    rounds_of(spans).into_iter().max().unwrap_or(0)
}

/// The RPCs of `spans` by round ([`FakeProxy::rounds`]).
pub fn rounds(spans: &[Span]) -> Vec<Vec<String>> {
    let of = rounds_of(spans);
    let mut rounds = vec![Vec::new(); of.iter().copied().max().unwrap_or(0)];
    for (span, round) in spans.iter().zip(of) {
        rounds[round - 1].push(span.rpc.clone());
    }
    for round in &mut rounds {
        round.sort();
    }
    rounds
}

impl FakeProxy {
    /// The span of every call received since the last
    /// [`clear_calls`](Self::clear_calls), in the order they came.
    pub fn spans(&self) -> Vec<Span> {
        self.timeline.spans()
    }

    /// The depth of the calls since the last
    /// [`clear_calls`](Self::clear_calls): the longest chain of them in
    /// which each began after the one before it was answered. Calls sent
    /// side by side overlap, and count once, when each takes long enough
    /// for the others to come meanwhile: give the host a latency
    /// ([`FakeHost::set_latency`](crate::testing::FakeHost::set_latency)),
    /// on a paused clock for a figure that does not depend on the
    /// machine's load.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> csi_proxy_client::Result<()> {
    /// use std::time::Duration;
    ///
    /// use csi_proxy_client::testing::{FakeHost, FakeProxy, LocalEndpoints, ProxyRelease};
    /// use csi_proxy_client::{CsiProxy, Operation};
    ///
    /// let endpoints = LocalEndpoints::new()?;
    /// let host = FakeHost::builder().disk(1, "pd-1", 10 << 30).build();
    /// host.set_latency(Operation::ListDiskIds, Duration::from_millis(50));
    /// let mut fake = FakeProxy::for_host(endpoints.transport(), &host);
    /// fake.serve_release(ProxyRelease::LATEST).await?;
    /// let proxy = CsiProxy::builder().transport(endpoints.transport()).connect().await?;
    /// let disk = proxy.disk()?;
    /// let (a, b) = tokio::join!(disk.list_disk_ids(), disk.list_disk_ids());
    /// (a?, b?);
    /// disk.list_disk_ids().await?;
    /// assert_eq!((fake.calls().len(), fake.depth()), (3, 2));
    /// # Ok(()) }
    /// ```
    pub fn depth(&self) -> usize {
        depth(&self.timeline.spans())
    }

    /// The RPCs of the calls since the last
    /// [`clear_calls`](Self::clear_calls) by round, each round's sorted:
    /// a call's round is one more than the longest chain of calls that
    /// were answered before it came ([`depth`](Self::depth) rounds in
    /// all). Calls sent side by side share a round when each takes long
    /// enough for the others to come meanwhile.
    pub fn rounds(&self) -> Vec<Vec<String>> {
        rounds(&self.timeline.spans())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(began: u64, ended: u64) -> Span {
        Span {
            rpc: String::new(),
            began,
            ended: Some(ended),
        }
    }

    #[test]
    fn overlapping_calls_count_once_in_a_chain() {
        assert_eq!(depth(&[]), 0);
        // a, then b beside c, then d.
        let calls = [span(0, 1), span(2, 5), span(3, 4), span(6, 7)];
        assert_eq!(depth(&calls), 3);
        // Each after the last.
        let chain = [span(0, 1), span(2, 3), span(4, 5)];
        assert_eq!(depth(&chain), 3);
        // All at once.
        let at_once = [span(0, 5), span(1, 4), span(2, 3)];
        assert_eq!(depth(&at_once), 1);
        let named = |rpc: &str, began, ended| Span {
            rpc: rpc.into(),
            ..span(began, ended)
        };
        let calls = [named("B", 0, 1), named("A", 2, 5), named("C", 3, 4)];
        assert_eq!(rounds(&calls), [vec!["B"], vec!["A", "C"]]);
    }
}
