//! The availability rules, in one place: when the client looks for the
//! proxy, how long it waits, and when it stops waiting. The client
//! (`client::lookout` and the call policy), `connect`, and negotiation's
//! waits ([`Negotiator::negotiate_waiting`](crate::negotiate::Negotiator::negotiate_waiting),
//! in `negotiate/waiting.rs`) all follow them. The rules know nothing of
//! negotiation: it uses them, never the other way round. The other timings are not about the proxy's presence:
//! one connection attempt's timeout and a busy pipe's poll (the
//! transport), and the delays between sending a call again after its
//! connection broke (the [`RetryPolicy`](crate::RetryPolicy)).
//!
//! - **Pace** ([`Pace`]): every wait for the proxy, whoever waits, looks
//!   at once, then after 20 ms, doubling up to 250 ms
//!   ([`MAX_LOOK_INTERVAL`]), so nobody looks twice without waiting.
//! - **Waits** ([`until_served`]): the one loop of every wait, on the
//!   pace, bounded by a [`WaitLimit`]; `connect` and csiproxyctl announce
//!   what they wait for every 10 s.
//! - **Presence** ([`ProxyPresence`]): a group that is not served is waited
//!   for while the proxy as a whole is away, or within [`PIPE_GRACE`] of a
//!   change (a proxy creating or dropping its pipes); otherwise the node
//!   lacks it and the answer is `NotServed` at once.
//! - **Worth waiting for** ([`is_worth_waiting_for`]): only an endpoint
//!   that is not there (or served by someone untrusted); one that exists
//!   but fails is the answer.
//! - **Sharing**: a failed look is shared with callers that come within
//!   [`LOOK_COOL_DOWN`]; looks in the background try each endpoint for at
//!   most [`BACKGROUND_CONNECT_TIMEOUT`]; a connection that ends within
//!   [`YOUNG`] of being found counts as a failed look, so a proxy that
//!   drops every connection is not reconnected to in a loop.
//! - **Settling**: a version adopted while the proxy may still be creating
//!   its pipes is looked past once [`PIPE_GRACE`] has passed; a newer
//!   version whose endpoint exists but fails is looked for again on the
//!   slow [`Pace::slow`] until it is served or gone. What depends on the
//!   node's release is decided only from such a settled look
//!   ([`newer_settled_absent`]). `Backend::Automatic` gives the host only
//!   what a settled proxy lacks (`negotiate::negotiate_settled`).

mod pace;
mod presence;
mod release;
mod wait;

use std::time::Duration;

pub(crate) use pace::Pace;
pub(crate) use presence::ProxyPresence;
pub(crate) use release::{newer_settled_absent, with_newer_settled_absent};
pub(crate) use wait::{until_served, Found, WaitLimit};

use crate::error::Error;

/// The first wait between two looks (or attempts) of one caller.
const FIRST_LOOK_INTERVAL: Duration = Duration::from_millis(20);

/// The longest wait between two looks for a proxy that is away, so that
/// its return is noticed fast.
pub(crate) const MAX_LOOK_INTERVAL: Duration = Duration::from_millis(250);

/// How often a wait for the proxy says, at info level, what it waits for.
const WAIT_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// How long after the proxy changed (one of the client's groups was found,
/// or its connection ended) a group it does not serve is still waited for:
/// CSI Proxy creates its pipes one after the other when it starts, and
/// drops them together when it stops, all within milliseconds; a second
/// leaves room for a loaded node and for the client to notice every
/// connection's end. Past it, a group the node lacks while others are
/// served is [`Error::NotServed`] at once. It is also when a group that
/// adopted an older version than its best looks once more for a newer one
/// (its settling look), and how long `Backend::Automatic` waits after the
/// last group found before it gives the host what the proxy lacks.
pub(crate) const PIPE_GRACE: Duration = Duration::from_secs(1);

/// After a look for a newer version failed at an endpoint that exists
/// (busy, slow to answer, refusing), the wait before the next one; it
/// doubles after each failure up to [`MAX_NEWER_RETRY`].
const NEWER_RETRY: Duration = Duration::from_secs(1);

/// The longest wait between two looks for a newer version whose endpoint
/// keeps failing: one failed connection attempt (at most
/// [`BACKGROUND_CONNECT_TIMEOUT`]) every half minute.
const MAX_NEWER_RETRY: Duration = Duration::from_secs(30);

/// A look that failed is shared with every caller that comes within this
/// time, instead of each of them looking again.
pub(crate) const LOOK_COOL_DOWN: Duration = Duration::from_millis(50);

/// Bounds each attempt of a look in the background: a caller that comes
/// meanwhile waits for it rather than looking at the same time.
pub(crate) const BACKGROUND_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// A connection that ends sooner than this after it was found "died
/// young": the look that found it counts as failed, so the looks after it
/// keep slowing down instead of starting afresh (an endpoint that closes
/// every connection at once would otherwise be reconnected to in a loop).
pub(crate) const YOUNG: Duration = Duration::from_secs(1);

/// How long `connect` waits for the required groups unless told otherwise
/// ([`CsiProxyBuilder::wait_for_proxy`](crate::CsiProxyBuilder::wait_for_proxy)).
pub(crate) const DEFAULT_WAIT_FOR_PROXY: Duration = Duration::from_secs(30);

/// Whether a look that failed so is worth waiting for: nothing is there
/// (yet, or any more). An endpoint that exists but fails (access denied, a
/// handshake that times out) already had its retries under the
/// [`RetryPolicy`](crate::RetryPolicy) in that look; its error is the
/// answer.
pub(crate) fn is_worth_waiting_for(error: &Error) -> bool {
    // Only untrusted servers answered: the proxy itself may still come.
    matches!(
        error,
        Error::NotServed { .. } | Error::UntrustedServer { .. }
    )
}
