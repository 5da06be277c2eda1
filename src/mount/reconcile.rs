//! At the plugin's start: finish or undo what a crash, a restart or a
//! reboot left half done.

use std::time::{SystemTime, UNIX_EPOCH};

use super::journal::LinkTo;
use super::{Mounter, PathState};
use crate::api::WindowsPath;
use crate::error::Result;

/// What [`Mounter::reconcile`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReconcileReport {
    /// Staging paths whose unfinished unstage was finished (the disk taken
    /// offline where asked).
    pub unstages_finished: Vec<WindowsPath>,
    /// Volumes whose SMB leases were dropped: they are no longer live.
    pub leases_dropped: Vec<String>,
    /// Shares (roots) whose mapping was removed: only those volumes used
    /// them, and this mounter made them.
    pub mappings_removed: Vec<String>,
    /// Links this mounter made that lead nowhere any more, removed so that
    /// kubelet can make its folders there again.
    pub links_removed: Vec<WindowsPath>,
    /// Staging folders this mounter made that were left empty (a failed
    /// stage, a reboot that unmounted them), removed.
    pub folders_removed: Vec<WindowsPath>,
    /// Records of paths that are gone, and of formats long done, forgotten.
    pub records_forgotten: usize,
}

impl Mounter {
    /// Brings the node in line with the journal, as a plugin's start
    /// should before it serves kubelet:
    ///
    /// 1. unstages begun and not finished are finished (the disk taken
    ///    offline where it was asked);
    /// 2. the SMB leases of volumes for which `is_live` is false are
    ///    dropped, with their links, and the mappings only they used and
    ///    this mounter made are removed;
    /// 3. the links it made that lead nowhere (after a reboot, a staging
    ///    link to a share whose mapping is gone, a pod's link to an
    ///    unmounted staging folder) are removed, so that kubelet's mkdir
    ///    of them works;
    /// 4. staging folders it made that are left empty (a stage that failed
    ///    after making it, a reboot that unmounted it) are removed;
    /// 5. records of paths that no longer exist are forgotten.
    ///
    /// It touches only what the journal names: CSI Proxy cannot list a
    /// folder. A step that fails ends it with that error; what was done
    /// stays done, and the next reconcile goes on from there.
    pub async fn reconcile(&self, is_live: impl Fn(&str) -> bool) -> Result<ReconcileReport> {
        let mut report = ReconcileReport::default();
        let inner = &self.inner;
        for unstage in inner.journal.read().unstages.into_values() {
            self.unstage_disk(&unstage.staging, unstage.offline).await?;
            report.unstages_finished.push(unstage.staging);
        }
        for (root, share) in inner.journal.read().shares {
            let gone: Vec<_> = share
                .leases
                .into_iter()
                .filter(|(volume, _)| !is_live(volume))
                .collect();
            for (volume, lease) in &gone {
                self.unstage_smb(volume, &lease.staging).await?;
                report.leases_dropped.push(volume.clone());
            }
            if !gone.is_empty() && !inner.journal.read().shares.contains_key(&root) {
                report.mappings_removed.push(root);
            }
        }
        for (link_key, (link, to)) in inner.journal.read().links {
            let found = inner.inspect(&link, false).await?;
            let dangling = matches!(
                found,
                PathState::Link {
                    reachable: false,
                    ..
                } | PathState::SmbLink {
                    reachable: false,
                    ..
                }
            );
            if dangling {
                inner.remove_unforced(&link).await?;
                report.links_removed.push(link);
            }
            if dangling || found == PathState::Absent {
                // A share's staging link stays recorded while its lease
                // lives: the next stage makes the mapping again.
                let keep = matches!(to, LinkTo::Smb(_))
                    && inner.journal.read().shares.values().any(|s| {
                        s.leases
                            .values()
                            .any(|lease| super::journal::key(lease.staging.as_str()) == link_key)
                    });
                if !keep {
                    inner
                        .journal
                        .update(|records| records.links.remove(&link_key))?;
                    report.records_forgotten += 1;
                }
            }
        }
        for (folder_key, folder) in inner.journal.read().made {
            match inner.inspect(&folder, false).await? {
                PathState::Directory => match inner.remove_unforced(&folder).await {
                    Ok(()) => report.folders_removed.push(folder),
                    // Something was put in it: it stays, and so does its record.
                    Err(crate::Error::Conflict { .. }) => continue,
                    Err(error) => return Err(error),
                },
                PathState::Absent => report.records_forgotten += 1,
                _ => continue,
            }
            inner
                .journal
                .update(|records| records.made.remove(&folder_key))?;
        }
        for (staging_key, (staging, _)) in inner.journal.read().stages {
            if inner.inspect(&staging, false).await? == PathState::Absent {
                inner
                    .journal
                    .update(|records| records.stages.remove(&staging_key))?;
                report.records_forgotten += 1;
            }
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let grace = inner.settings.format_grace.as_secs();
        let stale = inner.journal.update(|records| {
            let before = records.formats.len();
            records
                .formats
                .retain(|_, sent| now.saturating_sub(*sent) < grace);
            before - records.formats.len()
        })?;
        report.records_forgotten += stale;
        Ok(report)
    }
}
