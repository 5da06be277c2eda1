//! What [`CsiProxy::health`](crate::CsiProxy::health) reports: per group,
//! served or not, since when, and why not.

use std::fmt;
use std::time::SystemTime;

use crate::error::Error;
use crate::group::ApiGroup;
use crate::version::ApiVersion;

pub use crate::served_by::ServedBy;

/// The state of every configured group, taken without waiting or sending
/// anything. See [`CsiProxy::health`](crate::CsiProxy::health).
#[derive(Clone, Debug)]
pub struct Health {
    pub(crate) groups: Vec<GroupHealth>,
}

/// The state of one group.
#[derive(Clone, Debug)]
pub struct GroupHealth {
    /// The group.
    pub group: ApiGroup,
    /// What serves it, or looks for what will.
    pub served_by: ServedBy,
    /// Served or not.
    pub status: GroupStatus,
}

/// Whether a group is served now.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum GroupStatus {
    /// Calls go to this version now.
    Served {
        /// The wire version (`None` when not served by CSI Proxy).
        version: Option<ApiVersion>,
        /// Since when this version is served (to this client).
        since: SystemTime,
    },
    /// Not served now: calls wait for it within their deadline while the
    /// proxy as a whole is away, and are answered [`Error::NotServed`]
    /// while it serves other groups.
    NotServed {
        /// Since when: the end of the connection, or the first look that
        /// found the group missing. `None` only for the moment between a
        /// connection's end and its being recorded.
        since: Option<SystemTime>,
        /// What the last look found: usually [`Error::NotServed`] with the
        /// endpoints tried, or the failure at an endpoint that exists (for
        /// example [`Error::PermissionDenied`]). `None` when the connection
        /// ended and no caller has looked since (the looks in the
        /// background only report the group found).
        last_error: Option<Error>,
    },
    /// Served by the host ([`ServedBy::Host`]), but host calls whose
    /// callers stopped waiting still run: a Windows provider (WMI's storage
    /// or SMB provider, typically, on a disk or target that does not
    /// answer) keeps them, or the work is only slow (a format the caller
    /// gave up on). New calls still run, up to the backend's limit per
    /// group, beyond which they fail at once with [`Error::HostBusy`]; a
    /// call like a stuck one, on the same object, fails with
    /// [`Error::InProgress`] until the stuck one ends. Only the process's
    /// end stops them sooner. The limit, the calls and this report are the
    /// process's: every client of the process (a driver may make several)
    /// shares them.
    Stuck {
        /// The host calls of the group stuck in this process, whichever
        /// client made them.
        calls: usize,
        /// When the oldest of them started.
        since: SystemTime,
        /// The most calls of the group the process runs at once: with as
        /// many stuck, every new call of any client fails until the
        /// process restarts, and the group is not ready
        /// ([`Health::is_ready`]).
        limit: usize,
    },
}

impl Health {
    /// Every configured group, in [`ApiGroup::ALL`] order.
    pub fn groups(&self) -> &[GroupHealth] {
        &self.groups
    }

    /// The state of `group`, if it was configured.
    pub fn group(&self, group: ApiGroup) -> Option<&GroupHealth> {
        self.groups.iter().find(|g| g.group == group)
    }

    /// Whether every group in `groups` is served now and can take calls:
    /// not a host group whose stuck calls fill its limit (each new call
    /// fails then, until the process restarts; a few stuck calls leave it
    /// ready). Both are the process's, so every client of the process
    /// answers alike. What a node plugin's CSI `Probe` answers as `ready`, with
    /// the groups it cannot work without.
    pub fn is_ready(&self, groups: &[ApiGroup]) -> bool {
        groups.iter().all(|&g| {
            self.group(g).is_some_and(|g| match g.status {
                GroupStatus::Stuck { calls, limit, .. } => calls < limit,
                _ => g.is_served(),
            })
        })
    }
}

impl GroupHealth {
    /// Whether calls go to the group now.
    pub fn is_served(&self) -> bool {
        matches!(
            self.status,
            GroupStatus::Served { .. } | GroupStatus::Stuck { .. }
        )
    }

    /// Whether host calls of the group are stuck ([`GroupStatus::Stuck`]).
    pub fn is_stuck(&self) -> bool {
        matches!(self.status, GroupStatus::Stuck { .. })
    }
}

impl fmt::Display for Health {
    /// One line per group, for logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ago = |t: &SystemTime| t.elapsed().map(|d| d.as_secs()).unwrap_or(0);
        for g in &self.groups {
            write!(f, "{:<10} ", g.group.to_string())?;
            match &g.status {
                GroupStatus::Served { version, since } => {
                    let version =
                        version.map_or_else(|| g.served_by.to_string(), |v| v.to_string());
                    writeln!(f, "served {version} for {} s", ago(since))?;
                }
                GroupStatus::Stuck {
                    calls,
                    since,
                    limit,
                } => {
                    writeln!(
                        f,
                        "served host, {calls} host calls stuck for {} s (at most {limit} run)",
                        ago(since)
                    )?;
                }
                GroupStatus::NotServed { since, last_error } => {
                    f.write_str("not served")?;
                    if let Some(since) = since {
                        write!(f, " for {} s", ago(since))?;
                    }
                    match last_error {
                        Some(e) => writeln!(f, ": {e}")?,
                        None => writeln!(f, ": the connection ended")?,
                    }
                }
            }
        }
        Ok(())
    }
}
