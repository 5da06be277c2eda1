//! At the plugin's start: finish or undo what a crash, a restart or a
//! reboot left half done.

use super::journal::{key, LinkTo};
use super::stage::unix_millis;
use super::{Inner, Mounter, PathState};
use crate::api::WindowsPath;
use crate::error::{Error, Result};

/// What [`Mounter::reconcile`] did.
#[derive(Clone, Debug, Default)]
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
    /// What could not be done, and why: each item on its own, the others
    /// went on. The next reconcile tries them again.
    pub failed: Vec<(String, Error)>,
}

impl ReconcileReport {
    fn record_failure(&mut self, what: impl std::fmt::Display, error: Error) {
        tracing::warn!(%what, %error, "reconcile could not finish it");
        self.failed.push((what.to_string(), error));
    }
}

impl Mounter {
    /// Brings the node in line with the journal, as a plugin's start
    /// should before it serves kubelet:
    ///
    /// 1. unstages begun and not finished are finished (the disk taken
    ///    offline where it was asked);
    /// 2. the SMB leases of volumes for which `is_live` is false are
    ///    dropped, with their links, and the mappings only they used and
    ///    this mounter made are removed (as are mappings whose removal
    ///    failed before);
    /// 3. the links it made that lead nowhere (after a reboot, a staging
    ///    link to a share whose mapping is gone) are removed, so that
    ///    kubelet's mkdir of them works. A share that does not answer for
    ///    a moment as the driver starts looks the same: its live volumes'
    ///    staging links go too, and their next stage makes them again;
    /// 4. staging folders it made that are left empty (a stage that failed
    ///    after making it, a reboot that unmounted it) are removed;
    /// 5. records of paths that no longer exist are forgotten.
    ///
    /// It touches only what the journal names: CSI Proxy cannot list a
    /// folder. An item that fails is reported in
    /// [`ReconcileReport::failed`] and the others go on; the next
    /// reconcile tries it again. It fails as a whole only when the journal
    /// cannot be written.
    pub async fn reconcile(&self, is_live: impl Fn(&str) -> bool) -> Result<ReconcileReport> {
        let mut report = ReconcileReport::default();
        let inner = &self.inner;
        for unstage in inner.journal.read().unstages.into_values() {
            match (self.unstage_disk_offline(&unstage.staging, unstage.offline)).await {
                Ok(_) => report.unstages_finished.push(unstage.staging),
                Err(error) => report.record_failure(&unstage.staging, error),
            }
        }
        self.drop_dead_leases(&is_live, &mut report).await;
        inner.forget_dangling_links(&mut report).await?;
        inner.remove_empty_folders(&mut report).await?;
        for (staging_key, (staging, _)) in inner.journal.read().stages {
            if matches!(inner.inspect(&staging, false).await, Ok(PathState::Absent)) {
                inner
                    .journal
                    .update(|records| records.stages.remove(&staging_key))?;
                report.records_forgotten += 1;
            }
        }
        let (now, grace) = (unix_millis(), inner.settings.format_wait_millis());
        report.records_forgotten += inner.journal.update(|records| {
            let before = records.formats.len();
            records
                .formats
                .retain(|_, sent| now.saturating_sub(*sent) < grace);
            before - records.formats.len()
        })?;
        Ok(report)
    }

    /// Step 2: the leases of volumes that are gone, and shares left with
    /// no lease.
    async fn drop_dead_leases(
        &self,
        is_live: &impl Fn(&str) -> bool,
        report: &mut ReconcileReport,
    ) {
        for (root, share) in self.inner.journal.read().shares {
            let gone: Vec<_> = (share.leases.iter())
                .filter(|(volume, _)| !is_live(volume))
                .collect();
            for (volume, lease) in &gone {
                match self.unstage_smb(volume, &lease.staging).await {
                    Ok(_) => report.leases_dropped.push((*volume).clone()),
                    Err(error) => report.record_failure(format!("the lease of {volume}"), error),
                }
            }
            if share.leases.is_empty() {
                // A removal that failed at the last unstage.
                if let Err(error) = self.inner.release_lease(&root, "").await {
                    report.record_failure(&root, error);
                }
            }
            if (!gone.is_empty() || share.leases.is_empty())
                && !(self.inner.journal).view(|records| records.shares.contains_key(&root))
                && share.ours
            {
                report.mappings_removed.push(root);
            }
        }
    }
}

impl Inner {
    /// Step 3: links this mounter made that lead nowhere, or are gone.
    async fn forget_dangling_links(&self, report: &mut ReconcileReport) -> Result<()> {
        for (link_key, (link, to)) in self.journal.read().links {
            let found = match self.inspect(&link, false).await {
                Ok(found) => found,
                Err(error) => {
                    report.record_failure(&link, error);
                    continue;
                }
            };
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
                if let Err(error) = self.remove_unforced(&link).await {
                    report.record_failure(&link, error);
                    continue;
                }
                report.links_removed.push(link);
            }
            if dangling || found == PathState::Absent {
                // A share's staging link stays recorded while its lease
                // lives: the next stage makes the mapping again.
                let leased = matches!(to, LinkTo::Smb(_))
                    && self.journal.view(|records| {
                        records.shares.values().any(|share| {
                            (share.leases.values())
                                .any(|lease| key(lease.staging.as_str()) == link_key)
                        })
                    });
                if !leased {
                    self.journal
                        .update(|records| records.links.remove(&link_key))?;
                    report.records_forgotten += 1;
                }
            }
        }
        Ok(())
    }

    /// Step 4: staging folders this mounter made, left empty.
    async fn remove_empty_folders(&self, report: &mut ReconcileReport) -> Result<()> {
        for (folder_key, folder) in self.journal.read().made {
            match self.inspect(&folder, false).await {
                // No volume there (the host said so) and not a link.
                Ok(PathState::Directory) => match self.remove_unforced(&folder).await {
                    Ok(()) => report.folders_removed.push(folder),
                    // Something was put in it: it stays, and so does its
                    // record.
                    Err(Error::Conflict { .. }) => continue,
                    Err(error) => {
                        report.record_failure(&folder, error);
                        continue;
                    }
                },
                Ok(PathState::Absent) => report.records_forgotten += 1,
                Ok(_) => continue,
                Err(error) => {
                    report.record_failure(&folder, error);
                    continue;
                }
            }
            self.journal
                .update(|records| records.made.remove(&folder_key))?;
        }
        Ok(())
    }
}
