//! Per-call settings: deadlines and retries.

use std::time::Duration;

use crate::capability::{Effect, Operation};
use crate::group::ApiGroup;
use crate::version::ApiVersion;

/// Deadlines, by the operation's effect (the defaults are
/// `Effect::default_deadline`), with overrides per operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Deadlines {
    pub read: Duration,
    pub mutation: Duration,
    /// The slow mutations' (`effect = SlowlyMutates` in their rows of the
    /// catalogue, `catalogue/<group>.rs`): formatting and resizing a volume
    /// take long on old proxies (PowerShell), and long for large volumes.
    pub slow_mutation: Duration,
    pub overrides: Vec<(Operation, Duration)>,
}

impl Default for Deadlines {
    fn default() -> Self {
        Self {
            read: Effect::Reads.default_deadline(),
            mutation: Effect::Mutates.default_deadline(),
            slow_mutation: Effect::SlowlyMutates.default_deadline(),
            overrides: Vec::new(),
        }
    }
}

impl Deadlines {
    pub fn of(&self, operation: Operation) -> Duration {
        if let Some(&(_, d)) = self.overrides.iter().find(|(op, _)| *op == operation) {
            return d;
        }
        match operation.effect() {
            Effect::Reads => self.read,
            Effect::Mutates => self.mutation,
            Effect::SlowlyMutates => self.slow_mutation,
        }
    }
}

/// Settings for the calls made through one set of handles; see
/// [`CsiProxy::with_call_options`](crate::CsiProxy::with_call_options).
///
/// ```
/// use std::time::Duration;
/// use csi_proxy_client::CallOptions;
///
/// let patient = CallOptions::default()
///     .deadline(Duration::from_secs(900))
///     .retry_mutations(true);
/// # let _ = patient;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallOptions {
    pub(crate) deadline: Option<Duration>,
    pub(crate) retry_mutations: bool,
}

impl CallOptions {
    /// The deadline of every call, instead of the per-operation default.
    /// When it passes, the call fails with
    /// [`Error::Timeout`](crate::Error::Timeout); the host operation may
    /// still go on and finish, since CSI Proxy does not cancel host work.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Also retry calls that change the host after the connection broke
    /// while they were in flight. Off by default: such a call may have
    /// reached the host, and running a partition, format or mount twice is
    /// not always harmless. (A call that was certainly not sent is retried
    /// either way.)
    pub fn retry_mutations(mut self, retry: bool) -> Self {
        self.retry_mutations = retry;
        self
    }
}

/// A group's wire version changed after the proxy went away and came back
/// (an upgrade or a downgrade), or the group appeared or disappeared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VersionChange {
    /// The group.
    pub group: ApiGroup,
    /// The version before, if the group was served.
    pub from: Option<ApiVersion>,
    /// The version now, if the group is served.
    pub to: Option<ApiVersion>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_mutations_get_longer_deadlines() {
        let mut d = Deadlines::default();
        assert!(d.of(Operation::FormatVolume) > d.of(Operation::Mkdir));
        assert!(d.of(Operation::Mkdir) > d.of(Operation::ListDiskIds));
        d.overrides.push((Operation::Mkdir, Duration::from_secs(1)));
        assert_eq!(d.of(Operation::Mkdir), Duration::from_secs(1));
    }

    #[test]
    fn the_defaults_are_the_operation_table_s() {
        let d = Deadlines::default();
        for &op in Operation::ALL {
            assert_eq!(d.of(op), op.effect().default_deadline(), "{op}");
        }
    }
}
