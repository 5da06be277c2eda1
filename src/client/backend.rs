//! Which backend serves the groups: CSI Proxy, the host in-process, or for
//! each group whichever is there.

use super::Backends;
use crate::client::health::GroupStatus;
#[cfg(all(windows, feature = "host-process"))]
use crate::host::HostBackend;

/// What serves the groups of a [`CsiProxy`](crate::CsiProxy); see
/// [`CsiProxyBuilder::backend`](crate::CsiProxyBuilder::backend). A driver
/// written against the group traits runs unchanged on each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Backend {
    /// CSI Proxy, over its named pipes: the negotiated version of each
    /// group (the default).
    #[default]
    CsiProxy,
    /// The host itself, in-process, for a driver that runs as a HostProcess
    /// container with no proxy: needs the feature `host-process`, on
    /// Windows (elsewhere `connect` fails with
    /// [`Error::Configuration`](crate::Error::Configuration)). The host
    /// backend serves every group. See
    /// `docs/host-process.md`.
    Host,
    /// CSI Proxy for every group it serves once its start has settled;
    /// the host for a group it does not serve, when the process has host
    /// access: it runs in a HostProcess container (Kubernetes sets
    /// `CONTAINER_SANDBOX_MOUNT_POINT` in each) with an elevated token (an
    /// administrator, or `NT AUTHORITY\SYSTEM`). Without the feature
    /// `host-process`, or off Windows, it is [`Backend::CsiProxy`].
    ///
    /// A proxy creates its pipes one after the other, so `connect` does
    /// not give the host a group the proxy may only not have created yet:
    /// once the proxy serves any group, a missing one is looked for again
    /// until a second has passed since the last group was found. A proxy
    /// that is away (none of the groups served) is waited for as long as
    /// [`CsiProxyBuilder::wait_for_proxy`](crate::CsiProxyBuilder::wait_for_proxy)
    /// says (not at all unless set); still away, the host takes every
    /// group. Each group keeps the backend it got for the client's life: a
    /// proxy that appears later, or serves more groups after an upgrade,
    /// serves this client's host groups only after the driver makes a new
    /// client (restarts).
    Automatic,
}

/// Backends standing for the host's (see
/// [`CsiProxyBuilder::stand_in_host`](crate::CsiProxyBuilder::stand_in_host)).
#[derive(Clone)]
pub(super) struct HostStandIn(pub Backends);

impl std::fmt::Debug for HostStandIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("HostStandIn")
            .field(&self.0.groups())
            .finish()
    }
}

/// The environment variable Kubernetes sets in every HostProcess container.
pub(crate) const HOST_PROCESS_MARKER: &str = "CONTAINER_SANDBOX_MOUNT_POINT";

/// Whether a process may do the host's storage work itself: in a
/// HostProcess container (`in_host_process`) and elevated. A process in an
/// ordinary Windows container may be elevated too, but only inside it.
pub(crate) fn has_host_access(in_host_process: bool, elevated: impl FnOnce() -> bool) -> bool {
    in_host_process && elevated()
}

/// The host backend's groups, in a build that has it; filesystem paths
/// must lie under `working_dirs`.
#[cfg(all(windows, feature = "host-process"))]
pub(super) fn host_backends(working_dirs: &[String]) -> Option<Backends> {
    let host = HostBackend::groups(working_dirs);
    Some(Backends {
        disk: Some(host.disk),
        filesystem: Some(host.filesystem),
        iscsi: Some(host.iscsi),
        smb: Some(host.smb),
        system: Some(host.system),
        volume: Some(host.volume),
    })
}

/// The host backend's groups: none in this build.
#[cfg(not(all(windows, feature = "host-process")))]
pub(super) fn host_backends(_working_dirs: &[String]) -> Option<Backends> {
    None
}

/// The host calls of `group` whose callers stopped waiting and that still
/// run in this process (any client's), with the process's limit they
/// count against, as the health report says it.
#[cfg(all(windows, feature = "host-process"))]
pub(crate) fn host_calls_stuck(group: crate::group::ApiGroup) -> Option<GroupStatus> {
    HostBackend::stuck(group).map(|s| GroupStatus::Stuck {
        calls: s.calls,
        since: s.since,
        limit: s.limit,
    })
}

/// No host backend in this build: nothing stuck.
#[cfg(not(all(windows, feature = "host-process")))]
pub(crate) fn host_calls_stuck(_group: crate::group::ApiGroup) -> Option<GroupStatus> {
    None
}

/// Whether this process has host access (see [`Backend::Automatic`]).
pub(super) fn this_process_has_host_access() -> bool {
    let in_host_process = std::env::var_os(HOST_PROCESS_MARKER).is_some();
    #[cfg(all(windows, feature = "host-process"))]
    let elevated = HostBackend::is_elevated;
    #[cfg(not(all(windows, feature = "host-process")))]
    let elevated = || false;
    has_host_access(in_host_process, elevated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_elevated_process_in_a_host_process_container_has_host_access() {
        assert!(has_host_access(true, || true));
        assert!(!has_host_access(true, || false));
        assert!(!has_host_access(false, || panic!("not asked outside")));
    }
}
