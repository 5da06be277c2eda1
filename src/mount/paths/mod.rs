//! The paths the mounter works at, as one value: what is at a path
//! (`state.rs`: `inspect`, `probe`, the volume there), what it may remove
//! and its proof (`removal.rs`), what it makes (`make.rs`: a folder, a
//! link), and which CSI volume a path is the mounter's for
//! (`volume_ids.rs`); each read together with the journal, below the
//! kubelet folder.

mod make;
mod removal;
mod state;
mod volume_ids;

use std::sync::Arc;

use super::journal::{key, Journal, LinkTo, StageRecord};
use crate::api::{SmbRemotePath, WindowsPath};
use crate::client::CsiProxy;

pub use state::PathState;
pub(in crate::mount) use state::{conflict, conflict_at};

/// The path primitives: the proxy's filesystem and volume groups, the
/// journal's records of paths, and the kubelet folder nothing outside of
/// which is removed.
pub(in crate::mount) struct Paths {
    proxy: CsiProxy,
    journal: Arc<Journal>,
    kubelet_dir: WindowsPath,
}

/// Links followed through the journal, at most: a pod's link leads to a
/// staging path, which is no link.
const RECORDED_HOPS: usize = 4;

impl Paths {
    /// The paths of `proxy`, read with `journal`, removing nothing outside
    /// `kubelet_dir`.
    pub(in crate::mount) fn new(
        proxy: CsiProxy,
        journal: Arc<Journal>,
        kubelet_dir: WindowsPath,
    ) -> Self {
        Self {
            proxy,
            journal,
            kubelet_dir,
        }
    }

    /// What the journal says this mounter staged at `staging`.
    pub(in crate::mount) fn recorded_stage(&self, staging: &WindowsPath) -> Option<StageRecord> {
        self.journal.view(|records| {
            (records.stages.get(&key(staging.as_str()))).map(|(_, stage)| stage.clone())
        })
    }

    /// `path` with the local links this mounter made followed.
    pub(in crate::mount) fn through_recorded_links(&self, path: &WindowsPath) -> WindowsPath {
        self.journal.view(|records| {
            let mut at = path.clone();
            for _ in 0..RECORDED_HOPS {
                match records.links.get(&key(at.as_str())) {
                    Some((_, LinkTo::Local(next))) => at = next.clone(),
                    _ => break,
                }
            }
            at
        })
    }

    /// The share whose link `path` is, or leads to through the mounter's
    /// links, if any.
    pub(in crate::mount) fn share_behind(&self, path: &WindowsPath) -> Option<SmbRemotePath> {
        let at = self.through_recorded_links(path);
        match self.recorded_link(&at) {
            Some(LinkTo::Smb(remote)) => Some(remote),
            _ => None,
        }
    }
}
