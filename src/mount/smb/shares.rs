//! The shares in use, as one value: their gates, their mappings and
//! leases as the journal keeps them, and how their space is measured.

use std::sync::Arc;

use tokio::sync::Semaphore;

use super::gate::{ShareGate, ShareGates};
use crate::api::SmbRemotePath;
use crate::client::CsiProxy;
use crate::mount::journal::Journal;
use crate::mount::paths::Paths;
use crate::mount::share_space::MEASURE_DEADLINE;
use crate::mount::{FsStats, Settings, ShareSpace};

/// The SMB shares: per share root its gate (`gate.rs`), its mapping made,
/// released and rotated (`mapping.rs`), the look before its first mapping
/// (`look.rs`), a stage's steps on it (`stage.rs`), and its space measured
/// (`share_space.rs`).
pub(in crate::mount) struct Shares {
    pub(super) proxy: CsiProxy,
    pub(super) journal: Arc<Journal>,
    /// A stage's links and staging paths.
    pub(super) paths: Arc<Paths>,
    /// Per SMB share: what is decided once, and what runs beside.
    pub(super) gates: ShareGates,
    pub(super) settings: Arc<Settings>,
    /// How a share's size is measured.
    space: Arc<dyn ShareSpace>,
    /// The share measures that may run at once.
    measures: Arc<Semaphore>,
}

impl Shares {
    /// The shares mapped through `proxy`, leased in `journal`, linked at
    /// `paths`, measured by `space` with at most `measures_at_once` under
    /// way.
    pub(in crate::mount) fn new(
        proxy: CsiProxy,
        journal: Arc<Journal>,
        paths: Arc<Paths>,
        settings: Arc<Settings>,
        space: Arc<dyn ShareSpace>,
        measures_at_once: usize,
    ) -> Self {
        Self {
            proxy,
            journal,
            paths,
            gates: ShareGates::default(),
            settings,
            space,
            measures: Arc::new(Semaphore::new(measures_at_once)),
        }
    }

    /// The size and use of the share that holds `share` (a folder on it),
    /// measured off the runtime's threads by the [`ShareSpace`], or `None`
    /// when it cannot tell, gives up after its deadline, or every measure
    /// is still under way.
    pub(in crate::mount) async fn measure(&self, share: &SmbRemotePath) -> Option<FsStats> {
        let space = Arc::clone(&self.space);
        let folder = share.clone();
        // A measure that outlives its deadline keeps its thread until the
        // server answers: at most MEASURES_AT_ONCE such threads, after
        // which a share is answered unmeasured.
        let Ok(permit) = Arc::clone(&self.measures).try_acquire_owned() else {
            tracing::warn!(%share, "every share measure is still under way: answered unmeasured");
            return None;
        };
        let measure = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            space.measure(&folder)
        });
        match tokio::time::timeout(MEASURE_DEADLINE, measure).await {
            Ok(Ok(stats)) => stats,
            Ok(Err(_)) | Err(_) => {
                tracing::warn!(%share, "the share's space could not be measured");
                None
            }
        }
    }

    /// The gate of share `root`.
    pub(super) fn gate(&self, root: &str) -> Arc<ShareGate> {
        self.gates.of(root)
    }

    /// Whether share `root` is named foreign
    /// ([`MounterBuilder::foreign_smb_share`](crate::mount::MounterBuilder::foreign_smb_share)).
    pub(super) fn is_foreign(&self, root: &str) -> bool {
        self.settings.foreign_shares.iter().any(|f| f == root)
    }

    /// Whether the mapping of share `root` is this mounter's to remove: its
    /// record says the mounter made it (see `stage_smb`), and the share is
    /// not named foreign. A share with no record is not.
    pub(super) fn owns(&self, root: &str) -> bool {
        !self.is_foreign(root)
            && self
                .journal
                .view(|records| records.shares.get(root).is_some_and(|share| share.ours))
    }
}
