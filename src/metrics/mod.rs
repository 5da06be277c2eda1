//! Metrics of what the driver sees of CSI Proxy: its calls, how long they
//! take and how they end, the negotiations, and which version each group
//! is served by. With the `metrics` cargo feature they are recorded through
//! the [`metrics`](https://docs.rs/metrics) facade, so the application
//! picks the exporter (Prometheus, StatsD, ...) and installs it as the
//! global recorder; without a recorder nothing is kept. Without the
//! feature nothing is recorded at all.
//!
//! | name | kind | labels |
//! |---|---|---|
//! | [`CALLS_TOTAL`] | counter | `group`, `version`, `method`, `outcome` |
//! | [`CALL_DURATION_SECONDS`] | histogram | `group`, `version`, `method` |
//! | [`NEGOTIATIONS_TOTAL`] | counter | `group`, `result` |
//! | [`VERSION_CHANGES_TOTAL`] | counter | `group`, `from`, `to` |
//! | [`API_VERSION`] | gauge | `group`, `version` |
//! | [`GROUP_SERVED`] | gauge | `group` |
//! | [`UNTRUSTED_SERVERS_TOTAL`] | counter | `group`, `version`, `reason` |
//!
//! Every label value comes from a fixed set (group, version and method
//! names, and the words below), never from a request or a message, so
//! no path or secret reaches a metric and the number of series is bounded.
//!
//! - `method`: the operation's RPC name in the newest version of its group
//!   ([`Operation::name`](crate::Operation::name)), the same on every
//!   version.
//! - `version` of a call: the version serving the group when the call
//!   ended; `none` when no version was (the proxy was away), `direct` for a
//!   backend given to [`CsiProxy::from_backends`](crate::CsiProxy::from_backends).
//! - `outcome`: `ok`, the [`ErrorKind`](crate::ErrorKind) of the failure
//!   ([`ErrorKind::as_str`](crate::ErrorKind::as_str)): `host` (the proxy
//!   ran it and it failed on the host), `timeout`, `transport` (the
//!   connection failed, or was not made in time), `not_served`,
//!   `untrusted_server`, `unsupported` (the version in use lacks the
//!   operation; nothing was sent), `invalid_argument` (rejected before
//!   sending), `invalid_response`, `not_found`, `permission_denied`,
//!   `configuration`, `not_implemented`, `conflict`, `not_staged` (a
//!   publish found nothing staged), `not_ours` (the mounter refused to
//!   destroy what it cannot prove is its own), `ambiguous`,
//!   `in_progress`, `host_busy` (the host backend's limit of calls of a
//!   group); or `cancelled` (the caller stopped waiting: its future was
//!   dropped).
//! - `result` of a negotiation: `served`, `not_served` (no endpoint of any
//!   acceptable version), `untrusted_server` (only servers the client does
//!   not trust answered) or `failed` (an endpoint exists but could not be
//!   used).
//! - `reason` an endpoint was passed over: `owner` (its server's owner is
//!   not trusted) or `suspect` (it failed, while an older version was
//!   served by a trusted owner).
//! - `from`/`to` of a version change: a version, or `none` for a group
//!   that stopped, or started, being served.

#[cfg(feature = "metrics")]
mod record;
#[cfg(not(feature = "metrics"))]
#[path = "noop.rs"]
mod record;

pub(crate) use record::{
    negotiated, passed_over, version_changed, CallSeries, CallTimer, CallVersion, GroupGauges,
};

/// Calls made through [`CsiProxy`](crate::CsiProxy)'s handles, once each
/// (whatever retries and re-negotiation happened inside), by how they
/// ended.
pub const CALLS_TOTAL: &str = "csi_proxy_client_calls_total";

/// How long those calls took, in seconds, from the driver's side: waits for
/// the proxy and retries included.
pub const CALL_DURATION_SECONDS: &str = "csi_proxy_client_call_duration_seconds";

/// Negotiations of a group's version: at connect, and at each later look
/// for the proxy (after it went away, or while it is away).
pub const NEGOTIATIONS_TOTAL: &str = "csi_proxy_client_negotiations_total";

/// Changes of the version serving a group after connect: a proxy that
/// came back with another version, went away (`to="none"`) or came back
/// (`from="none"`).
pub const VERSION_CHANGES_TOTAL: &str = "csi_proxy_client_version_changes_total";

/// 1 for the version serving the group now, 0 for a version that served
/// it before; no series at 1 while the group is not served.
pub const API_VERSION: &str = "csi_proxy_client_api_version";

/// 1 while calls on the group go to the proxy; 0 from the moment its
/// connection ends, or a look finds nothing, until a look finds it again:
/// the client's own in the background after a connection ended, a
/// caller's, or [`CsiProxy::renegotiate`](crate::CsiProxy::renegotiate)
/// (as [`CsiProxy::health`](crate::CsiProxy::health) tells).
pub const GROUP_SERVED: &str = "csi_proxy_client_group_served";

/// Endpoints that negotiation passed over, by group, version and
/// `reason`: `owner`, a server whose owner the client's
/// [`ServerTrust`](crate::transport::ServerTrust) does not admit (nothing
/// was sent to it), or `suspect`, an endpoint that exists but failed (busy
/// for the whole connect timeout, access denied, not a socket) while an
/// older version was served by a trusted owner. Counted at every look
/// that passes one over, the client's own looks in the background
/// included: a squatter that stays is counted again at each look.
/// Anything above zero deserves a look at the node.
pub const UNTRUSTED_SERVERS_TOTAL: &str = "csi_proxy_client_untrusted_servers_total";

/// Why negotiation passed over an endpoint, for [`UNTRUSTED_SERVERS_TOTAL`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PassedOver {
    /// Its server's owner is not trusted.
    Owner,
    /// It failed while an older version was served by a trusted owner.
    Suspect,
}

impl PassedOver {
    /// The `reason` label.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Owner => "owner",
            Self::Suspect => "suspect",
        }
    }
}

/// Gives the installed recorder the unit and description of each metric
/// (an exporter prints them as `# HELP` lines). Call it after installing
/// the recorder; [`CsiProxyBuilder::connect`](crate::CsiProxyBuilder::connect)
/// calls it too.
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub fn describe() {
    use ::metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_counter!(
        CALLS_TOTAL,
        Unit::Count,
        "Calls to CSI Proxy by group, version, method and outcome"
    );
    describe_histogram!(
        CALL_DURATION_SECONDS,
        Unit::Seconds,
        "Duration of calls to CSI Proxy as the driver saw them"
    );
    describe_counter!(
        NEGOTIATIONS_TOTAL,
        Unit::Count,
        "Negotiations of a group's CSI Proxy API version by result"
    );
    describe_counter!(
        VERSION_CHANGES_TOTAL,
        Unit::Count,
        "Changes of the CSI Proxy API version serving a group"
    );
    describe_gauge!(
        API_VERSION,
        "1 for the CSI Proxy API version serving the group now"
    );
    describe_gauge!(
        GROUP_SERVED,
        "1 while the group is served by CSI Proxy, 0 otherwise"
    );
    describe_counter!(
        UNTRUSTED_SERVERS_TOTAL,
        Unit::Count,
        "Endpoints of CSI Proxy passed over: an untrusted owner, or failing while an older version is served"
    );
}
