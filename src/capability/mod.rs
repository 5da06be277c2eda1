//! What each wire version can do: the one table of operations, their wire
//! names per version, and whether they change the host. The table
//! (`operations.rs`) is generated from the RPC catalogue (`catalogue/`).
//!
//! The adapters take their RPC paths and their `Unsupported` errors from
//! here. The capability table of docs/versions.md is rendered from the
//! same rows of the catalogue, by the test that generates this table
//! (`tests/generated_code/`).

use std::fmt;
use std::time::Duration;

use crate::group::ApiGroup;
use crate::version::ApiVersion;

mod operations;

pub use operations::Operation;
#[cfg(feature = "testing")] // the fake proxy's servers
pub(crate) use operations::{
    DiskOperation, FilesystemOperation, IscsiOperation, SmbOperation, SystemOperation,
    VolumeOperation,
};

/// How a wire version serves an [`Operation`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Support {
    /// By the RPC of this name.
    Native(&'static str),
    /// Not by an RPC of its own, but exactly, through other RPCs of the same
    /// version (see the method's documentation).
    Emulated,
    /// Not at all: the call fails with [`Error::Unsupported`](crate::Error::Unsupported)
    /// and nothing is sent.
    Unsupported,
}

impl Support {
    /// Whether the operation can be called.
    pub fn is_available(self) -> bool {
        !matches!(self, Support::Unsupported)
    }
}

/// The operations of one group, as their own type (`DiskOperation` and so
/// on).
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
pub(crate) trait GroupOperation: Copy + Into<Operation> + Send + Sync + 'static {
    /// Every operation of the group.
    const ALL: &'static [Self];

    /// The operation that `version` serves under the RPC name `rpc`.
    fn served_as(version: ApiVersion, rpc: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|&op| matches!(op.into().support(version), Support::Native(name) if name == rpc))
    }
}

/// Whether an operation changes the host, and how long it may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    Reads,
    Mutates,
    /// A mutation that takes long on old proxies (PowerShell) and for
    /// large volumes: formatting and resizing a volume.
    SlowlyMutates,
}

impl Effect {
    /// The default deadline of the operations of this effect. The client's
    /// deadlines start from it, and the host backend lets a change whose
    /// caller left go on this long in its provider.
    pub(crate) const fn default_deadline(self) -> Duration {
        match self {
            Effect::Reads => Duration::from_secs(30),
            Effect::Mutates => Duration::from_secs(120),
            Effect::SlowlyMutates => Duration::from_secs(600),
        }
    }
}

impl Operation {
    /// Whether the operation changes the host. Such a call is sent
    /// again automatically only when it certainly did not reach the
    /// proxy, or with
    /// [`CallOptions::retry_mutations`](crate::CallOptions::retry_mutations).
    pub const fn is_mutating(self) -> bool {
        !matches!(self.effect(), Effect::Reads)
    }

    /// Whether an older version's answer to it is read by the release that
    /// the node's missing newer versions imply (volume v1beta1 and
    /// v1beta2's `VolumeStats` size is the free space on CSI Proxy v0.2.x,
    /// the total later): right after a proxy (re)starts, the newer versions
    /// may only be missing for a moment. The catalogue marks such an
    /// operation `read_by_release`.
    pub(crate) fn read_by_release(self) -> bool {
        Self::READ_BY_RELEASE.contains(&self)
    }

    /// How `version` of the operation's group serves it. A version the group
    /// does not have serves nothing.
    pub fn support(self, version: ApiVersion) -> Support {
        if !self.group().has_version(version) {
            return Support::Unsupported;
        }
        self.history()
            .iter()
            .rev()
            .find(|(since, _)| *since <= version)
            .map_or(Support::Unsupported, |&(_, support)| support)
    }

    /// The oldest version of the group that can serve the operation.
    pub fn available_since(self) -> Option<ApiVersion> {
        self.group()
            .versions()
            .iter()
            .copied()
            .find(|&v| self.support(v).is_available())
    }

    /// The operations of one group.
    pub fn of_group(group: ApiGroup) -> impl Iterator<Item = Operation> {
        Self::ALL
            .iter()
            .copied()
            .filter(move |op| op.group() == group)
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ApiVersion as V;

    #[test]
    fn renames_and_gaps_follow_the_versions() {
        assert_eq!(
            Operation::GetDiskStats.support(V::V1ALPHA1),
            Support::Unsupported
        );
        assert_eq!(
            Operation::GetDiskStats.support(V::V1BETA2),
            Support::Native("DiskStats")
        );
        assert_eq!(
            Operation::GetDiskStats.support(V::V1),
            Support::Native("GetDiskStats")
        );
        assert_eq!(
            Operation::UnmountVolume.support(V::V2ALPHA1),
            Support::Native("UnmountVolume")
        );
        assert_eq!(
            Operation::GetDiskNumberByName.support(V::V1),
            Support::Emulated
        );
        assert_eq!(
            Operation::RmdirContents.support(V::V1),
            Support::Unsupported
        );
        assert_eq!(
            Operation::SetMutualChapSecret.available_since(),
            Some(V::V1ALPHA2)
        );
        // A version the group never had serves nothing.
        assert_eq!(
            Operation::PathExists.support(V::V1BETA3),
            Support::Unsupported
        );
    }

    #[test]
    fn every_group_version_serves_its_basics() {
        for group in ApiGroup::ALL {
            let first = Operation::of_group(group).next().unwrap();
            for &v in group.versions() {
                assert!(first.support(v).is_available(), "{group} {v} {first}");
            }
        }
    }

    #[test]
    fn mutations_are_marked() {
        assert!(Operation::FormatVolume.is_mutating());
        assert!(Operation::SetDiskState.is_mutating());
        assert!(!Operation::ListDiskIds.is_mutating());
        assert!(!Operation::GetService.is_mutating());
    }
}
