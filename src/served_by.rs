//! What serves a group's calls: a word that health, negotiation reports
//! and metrics all use, here below them (public as
//! `health::ServedBy`).

use std::fmt;

/// What serves a group's calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServedBy {
    /// CSI Proxy, at the negotiated version.
    CsiProxy,
    /// The host itself, in-process (feature `host-process`; see
    /// [`Backend::Host`](crate::Backend::Host)).
    Host,
    /// A backend given to [`CsiProxy::from_backends`](crate::CsiProxy::from_backends)
    /// (a mock).
    Given,
}

impl ServedBy {
    /// `csi-proxy`, `host` or `given`: the word in logs, spans and metric
    /// labels.
    pub fn as_str(self) -> &'static str {
        match self {
            ServedBy::CsiProxy => "csi-proxy",
            ServedBy::Host => "host",
            ServedBy::Given => "given",
        }
    }
}

impl fmt::Display for ServedBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}
