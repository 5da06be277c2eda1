//! At the plugin's start: finish or undo what a crash, a restart or a
//! reboot left half done.

use std::sync::Arc;

use super::journal::{key, LinkTo};
use super::prepare::unix_millis;
use super::{fan_out, DiskAfterUnstage, Inner, Mounter, PathState};
use crate::api::WindowsPath;
use crate::error::{Error, Result};

/// What [`Mounter::reconcile`] did.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ReconcileReport {
    /// Staging paths whose unfinished unstage was finished (the disk taken
    /// offline where asked).
    pub unstages_finished: Vec<WindowsPath>,
    /// Volumes whose SMB or iSCSI leases were dropped: they are no longer
    /// live.
    pub leases_dropped: Vec<String>,
    /// Shares (roots) whose mapping was removed: only those volumes used
    /// them, and this mounter made them.
    pub mappings_removed: Vec<String>,
    /// Links this mounter made to a share that no longer answers through
    /// them (a reboot dropped the mapping), removed so that kubelet can
    /// make its folders there again. A link that reads as leading nowhere
    /// is left with its record: a file put in its place reads the same.
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

    /// Takes in what the records of one step came to; a journal that could
    /// not be written ends the reconcile.
    fn absorb(&mut self, settled: Vec<Vec<Settled>>) -> Result<()> {
        for outcome in settled.into_iter().flatten() {
            match outcome {
                Settled::UnstageFinished(staging) => self.unstages_finished.push(staging),
                Settled::LeaseDropped(volume) => self.leases_dropped.push(volume),
                Settled::LinkRemoved(link) => self.links_removed.push(link),
                Settled::FolderRemoved(folder) => self.folders_removed.push(folder),
                Settled::Forgotten => self.records_forgotten += 1,
                Settled::Failed(what, error) => self.record_failure(what, error),
                Settled::JournalFailed(error) => return Err(error),
            }
        }
        Ok(())
    }
}

/// What settling one record came to.
enum Settled {
    UnstageFinished(WindowsPath),
    LeaseDropped(String),
    LinkRemoved(WindowsPath),
    FolderRemoved(WindowsPath),
    /// A record of something gone, forgotten.
    Forgotten,
    Failed(String, Error),
    JournalFailed(Error),
}

/// Records settled at once, by the kind of work: unstages and stages ask
/// the volume and disk groups (PowerShell on the host), links and folders
/// the filesystem group (a file system call).
const UNSTAGES_AT_ONCE: usize = 8;
const LEASES_AT_ONCE: usize = 16;
const LINKS_AT_ONCE: usize = 32;
const FOLDERS_AT_ONCE: usize = 16;
const STAGES_AT_ONCE: usize = 16;

impl Mounter {
    /// Brings the node in line with the journal, as a plugin's start
    /// should before it serves kubelet:
    ///
    /// 1. unstages begun and not finished are finished (the disk taken
    ///    offline where it was asked);
    /// 2. the SMB leases of volumes for which `is_live` is false are
    ///    dropped, with their links, and the mappings only they used and
    ///    this mounter made are removed (as are mappings whose removal
    ///    failed before); so are their iSCSI leases, their disks unstaged
    ///    (left online) and the targets only they used logged out of;
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
    ///
    /// Records are settled side by side, a bounded number at a time (a few
    /// calls in flight per kind of work, so that the node's proxy is not
    /// flooded): a node's worth of records costs about its slowest few, not
    /// their sum. Each path is settled under the same key as the calls on
    /// it, so a driver may serve kubelet while reconcile runs: a stage,
    /// publish or unstage waits only while reconcile works on its own path.
    pub async fn reconcile(&self, is_live: impl Fn(&str) -> bool) -> Result<ReconcileReport> {
        let mut report = ReconcileReport::default();
        let inner = &self.inner;
        let unstages = (inner.journal).view(|records| {
            let unstages = records.unstages.values();
            unstages
                .map(|u| (u.staging.clone(), u.offline))
                .collect::<Vec<_>>()
        });
        let settled = fan_out::each(unstages, UNSTAGES_AT_ONCE, |(staging, offline)| {
            let mounter = self.clone();
            async move {
                vec![
                    match mounter.unstage_disk_offline(&staging, offline).await {
                        Ok(_) => Settled::UnstageFinished(staging),
                        Err(error) => Settled::Failed(staging.to_string(), error),
                    },
                ]
            }
        });
        report.absorb(settled.await)?;
        self.drop_dead_leases(&is_live, &mut report).await?;
        let links = (inner.journal).view(|records| {
            let links = records.links.iter();
            (links.map(|(key, (link, _))| (key.clone(), link.clone()))).collect::<Vec<_>>()
        });
        let settled = fan_out::each(links, LINKS_AT_ONCE, |(key, link)| {
            let inner = inner.clone();
            async move { inner.settle_link(key, link).await }
        });
        report.absorb(settled.await)?;
        let made = (inner.journal).view(|records| {
            let made = records.made.iter();
            made.map(|(key, folder)| (key.clone(), folder.clone()))
                .collect::<Vec<_>>()
        });
        let settled = fan_out::each(made, FOLDERS_AT_ONCE, |(key, folder)| {
            let inner = inner.clone();
            async move { inner.settle_folder(key, folder).await }
        });
        report.absorb(settled.await)?;
        let stages = (inner.journal).view(|records| {
            let stages = records.stages.iter();
            stages
                .map(|(key, (staging, _))| (key.clone(), staging.clone()))
                .collect::<Vec<_>>()
        });
        let settled = fan_out::each(stages, STAGES_AT_ONCE, |(key, staging)| {
            let inner = inner.clone();
            async move { inner.settle_stage(key, staging).await }
        });
        report.absorb(settled.await)?;
        let (now, grace) = (unix_millis(), inner.settings.format_wait_millis());
        let forgotten = inner.journal.update(|records| {
            let before = records.formats.len();
            (records.formats).retain(|_, sent| now.saturating_sub(*sent) < grace);
            before - records.formats.len()
        });
        report.records_forgotten += forgotten.await?;
        Ok(report)
    }

    /// Step 2: the leases of volumes that are gone, and shares left with
    /// no lease.
    async fn drop_dead_leases(
        &self,
        is_live: &impl Fn(&str) -> bool,
        report: &mut ReconcileReport,
    ) -> Result<()> {
        let (leases, shares) = self.inner.journal.view(|records| {
            let leases: Vec<(String, String, WindowsPath)> = (records.leases.iter())
                .map(|((root, volume), lease)| {
                    (root.clone(), volume.clone(), lease.staging.clone())
                })
                .collect();
            let shares: Vec<(String, bool)> = (records.shares.iter())
                .map(|(root, share)| (root.clone(), share.ours))
                .collect();
            (leases, shares)
        });
        let dead: Vec<_> = (leases.iter())
            .filter(|(_, volume, _)| !is_live(volume))
            .cloned()
            .collect();
        let settled = fan_out::each(dead.clone(), LEASES_AT_ONCE, |(_, volume, staging)| {
            let mounter = self.clone();
            async move {
                vec![match mounter.unstage_smb(&volume, &staging).await {
                    Ok(_) => Settled::LeaseDropped(volume),
                    Err(error) => Settled::Failed(format!("the lease of {volume}"), error),
                }]
            }
        });
        report.absorb(settled.await)?;
        let targets = (self.inner.journal).view(|records| {
            let leases = records.target_leases.iter();
            leases
                .map(|((_, volume), staging)| (volume.clone(), staging.clone()))
                .collect::<Vec<_>>()
        });
        let dead_targets = targets.into_iter().filter(|(volume, _)| !is_live(volume));
        let settled = fan_out::each(dead_targets, LEASES_AT_ONCE, |(volume, staging)| {
            let mounter = self.clone();
            async move {
                let unstaged =
                    mounter.unstage_iscsi(&volume, &staging, DiskAfterUnstage::KeepOnline);
                vec![match unstaged.await {
                    Ok(_) => Settled::LeaseDropped(volume),
                    Err(error) => Settled::Failed(format!("the lease of {volume}"), error),
                }]
            }
        });
        report.absorb(settled.await)?;
        // Shares with no lease left: a removal that failed at the last
        // unstage.
        let unleased: Vec<String> = (shares.iter())
            .filter(|(root, _)| !leases.iter().any(|(leased, _, _)| leased == root))
            .map(|(root, _)| root.clone())
            .collect();
        let settled = fan_out::each(unleased.clone(), LEASES_AT_ONCE, |root| {
            let inner = self.inner.clone();
            async move {
                match inner.shares.release_lease(&root, "").await {
                    Ok(_) => vec![],
                    Err(error) => vec![Settled::Failed(root, error)],
                }
            }
        });
        report.absorb(settled.await)?;
        for (root, ours) in shares {
            let touched = unleased.contains(&root) || dead.iter().any(|(of, _, _)| *of == root);
            let gone = !(self.inner.journal).view(|records| records.shares.contains_key(&root));
            if touched && gone && ours {
                report.mappings_removed.push(root);
            }
        }
        Ok(())
    }
}

impl Inner {
    /// Step 3: a link this mounter made that is shown to lead nowhere
    /// goes, and its record with it, or with the link gone.
    ///
    /// Only a share's link whose share refuses the proxy is shown to be a
    /// link: `IsSymlink` answers "no" alike for a link whose target is
    /// gone and for a file put in its place, so such a path stays, and so
    /// does its record (kubelet's unpublish, or the next stage, deals with
    /// it).
    async fn settle_link(self: Arc<Self>, link_key: String, link: WindowsPath) -> Vec<Settled> {
        let _link = self.flights.lock(link.as_str()).await;
        // Read again under the key: a call on the path may have changed it
        // since the records were listed.
        let Some(to) =
            (self.journal).view(|records| records.links.get(&link_key).map(|(_, to)| to.clone()))
        else {
            return vec![];
        };
        let (dangling, absent) = match (self.paths.probe(&link).await, &to) {
            (Ok(None), _) => (false, true),
            (Ok(Some(_)), _) => (false, false),
            // A file would have answered: this is the link, its share
            // gone or refusing (a reboot dropped the mapping).
            (Err(Error::Host { .. }), LinkTo::Smb(_)) => (true, false),
            (Err(error), _) => return vec![Settled::Failed(link.to_string(), error)],
        };
        let mut settled = Vec::new();
        if dangling {
            if let Err(error) = self.paths.remove_unforced(&link).await {
                return vec![Settled::Failed(link.to_string(), error)];
            }
            settled.push(Settled::LinkRemoved(link.clone()));
        }
        if dangling || absent {
            // A share's staging link stays recorded while its lease
            // lives: the next stage makes the mapping again.
            let leased = matches!(to, LinkTo::Smb(_))
                && self.journal.view(|records| {
                    (records.leases.values()).any(|lease| key(lease.staging.as_str()) == link_key)
                });
            if !leased {
                let forgotten = self
                    .journal
                    .update(|records| records.links.remove(&link_key));
                settled.push(match forgotten.await {
                    Ok(_) => Settled::Forgotten,
                    Err(error) => Settled::JournalFailed(error),
                });
            }
        }
        settled
    }

    /// Step 4: a staging folder this mounter made, left empty, goes.
    async fn settle_folder(
        self: Arc<Self>,
        folder_key: String,
        folder: WindowsPath,
    ) -> Vec<Settled> {
        let _folder = self.flights.lock(folder.as_str()).await;
        let settled = match self.paths.inspect(&folder, false).await {
            // No volume there (the host said so) and not a link: removed
            // only once shown to be a folder with nothing in it (a file
            // put at the path reads the same to the proxy).
            Ok(PathState::Directory) => match self.paths.remove_empty_folder(&folder).await {
                Ok(_) => Settled::FolderRemoved(folder),
                // Something was put in it, or in its place: it stays, and
                // so does its record.
                Err(Error::Conflict { .. } | Error::NotOurs { .. }) => return vec![],
                Err(error) => return vec![Settled::Failed(folder.to_string(), error)],
            },
            Ok(PathState::Absent) => Settled::Forgotten,
            Ok(_) => return vec![],
            Err(error) => return vec![Settled::Failed(folder.to_string(), error)],
        };
        match self
            .journal
            .update(|records| records.made.remove(&folder_key))
            .await
        {
            Ok(_) => vec![settled],
            Err(error) => vec![Settled::JournalFailed(error)],
        }
    }

    /// Step 5: the record of a stage whose path is gone is forgotten.
    async fn settle_stage(
        self: Arc<Self>,
        staging_key: String,
        staging: WindowsPath,
    ) -> Vec<Settled> {
        let _staging = self.flights.lock(staging.as_str()).await;
        if !matches!(
            self.paths.inspect(&staging, false).await,
            Ok(PathState::Absent)
        ) {
            return vec![];
        }
        let forgotten = self
            .journal
            .update(|records| records.stages.remove(&staging_key));
        vec![match forgotten.await {
            Ok(_) => Settled::Forgotten,
            Err(error) => Settled::JournalFailed(error),
        }]
    }
}
