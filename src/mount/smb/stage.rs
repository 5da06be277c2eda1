//! A share's volume staged: its own path cleared beside the share's other
//! volumes, its lease recorded, and its mapping made (alone at the share's
//! gate when the mapping is not known to work, beside the others when it
//! is), then looked through.

use std::sync::Arc;

use super::gate::{Held, ShareGate};
use super::Shares;
use super::{mapping, SmbCredentials};
use crate::api::{SmbMapping, SmbRemotePath, WindowsPath};
use crate::error::{Error, Result};
use crate::mount::fan_out;
use crate::mount::fingerprint::Fingerprint;
use crate::mount::journal::{key, Lease, LinkTo, ShareRecord};
use crate::mount::paths::conflict;
use crate::mount::{Change, PathState};

/// What the journal said of a share before a stage took its lease.
pub(super) struct StageSmbBefore {
    /// No record of the share: this stage may be the one that maps it.
    pub first_use: bool,
    /// The share is recorded, but not as this mounter's, with no lease but
    /// this volume's and no mapping of it seen working: an earlier stage of
    /// this volume was cut short before its mapping was shown to be the
    /// mounter's. Whose a mapping made now is may be looked at again (a
    /// mapping the cut stage did make answers the look, and stays
    /// someone else's: leaked, never removed).
    pub unclaimed: bool,
    /// The volume held a lease already (a repeat).
    pub had_lease: bool,
    /// The path was recorded as mapped already.
    pub had_mapped: bool,
}

/// What a refused stage may undo.
pub(super) struct Undo {
    /// The stage held the share's gate alone.
    pub alone: bool,
    /// The look before the share's first mapping found it refused: a
    /// mapping there now is this mounter's.
    pub ours_if_made: bool,
}

/// How many other volumes' links a stage looks through at once.
const LOOKS_AT_ONCE: usize = 16;

/// What this volume's staging path held before its stage.
pub(super) enum Found {
    /// Its link, answering: staged already.
    Staged,
    /// Nothing, or what was there is cleared.
    Cleared,
}

impl Shares {
    /// Clears this volume's staging path for its link: its link answering
    /// is the stage done; a link that leads nowhere, an empty folder or a
    /// leftover link goes. Only a link the share refuses through touches
    /// the mapping, alone at the gate.
    pub(super) async fn clear_staging(
        &self,
        volume: &str,
        share: &SmbRemotePath,
        staging: &WindowsPath,
        root: &str,
        gate: &ShareGate,
    ) -> Result<Found> {
        match self.paths.recorded_link(staging) {
            Some(LinkTo::Smb(remote)) if key(remote.as_str()) == key(share.as_str()) => {
                match self.paths.probe(staging).await {
                    Ok(Some(true)) => return Ok(Found::Staged),
                    Ok(None) => {}
                    // Leads nowhere, without Windows refusing the share:
                    // an empty folder where the link was (kubelet's, after
                    // a reboot), or the link with this volume's folder
                    // gone from the share. It goes, and the mapping stays;
                    // the new link is looked through after the stage.
                    Ok(Some(false)) => self.paths.remove_unforced(staging).await?,
                    // Windows' reason for the share: the mapping behind
                    // the link is gone or broken. The link goes, and the
                    // mapping too unless another volume still reaches the
                    // share through it.
                    Err(Error::Host { .. }) => {
                        self.paths.remove_unforced(staging).await?;
                        let mut alone = gate.alone().await;
                        if alone.refusal_settled != Some(alone.generation) {
                            let elsewhere = self.share_answers_elsewhere(root, volume);
                            if self.owns(root) && !elsewhere.await {
                                self.remove_mapping_quietly(share).await;
                                alone.removed();
                            }
                            alone.refusal_settled = Some(alone.generation);
                        }
                    }
                    Err(error) => return Err(error),
                }
            }
            _ => match self.paths.inspect(staging, false).await? {
                PathState::Absent => {}
                // An empty folder (kubelet's), a link that leads nowhere,
                // or one no record names that leads to no volume (a
                // leftover of a lost journal): on proof that it holds
                // nothing.
                found @ (PathState::Directory
                | PathState::Link {
                    target: None,
                    volume: None,
                    ..
                }) => drop(self.paths.remove_found(staging, &found).await?),
                other => return Err(conflict(staging, other)),
            },
        }
        Ok(Found::Cleared)
    }

    /// A stage's link answered through the share's mapping: recorded, and
    /// known to this process, so that the share's next volumes link beside
    /// each other.
    pub(super) async fn mapping_works(
        &self,
        root: &str,
        share: &SmbRemotePath,
        held: Held,
    ) -> Result<Change> {
        self.confirm_mapped(root, share).await?;
        if let Held::Alone(mut alone) = held {
            if !alone.working {
                alone.made();
            }
        }
        Ok(Change::Changed)
    }

    /// Records that this mounter made the share's mapping: the look before
    /// it found the share refused, and the mapping then succeeded.
    pub(super) async fn mapping_made(&self, root: &str) -> Result<()> {
        self.journal
            .update(|records| {
                if let Some(record) = records.shares.get_mut(root) {
                    record.ours = true;
                }
            })
            .await
    }

    /// Undoes the records of a stage the proxy refused, and a mapping a
    /// first use alone at the gate may have made (the proxy maps before it
    /// links) where the look before it found the share refused. A mapping
    /// whose removal fails stays recorded, with no lease, for the next
    /// unstage or `reconcile` to remove; one that may be someone else's is
    /// forgotten, and left.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn forget_failed_stage(
        &self,
        root: &str,
        volume: &str,
        share: &SmbRemotePath,
        staging: &WindowsPath,
        before: &StageSmbBefore,
        undo: Undo,
        error: &Error,
    ) -> Result<()> {
        let maybe_mapped = before.first_use && mapping::may_have_mapped(error);
        // Removed only alone at the gate: beside, other volumes link
        // through it.
        let unmapped = match (maybe_mapped, undo.ours_if_made) {
            (false, _) => true,
            // Not proven this mounter's: never removed, so not kept.
            (true, false) => true,
            // Beside other volumes: kept, as this mounter's, for the
            // share's last unstage.
            (true, true) if !undo.alone => {
                self.mapping_made(root).await?;
                false
            }
            (true, true) => match self.remove_mapping_of(share).await {
                Ok(()) => true,
                Err(removal) => {
                    tracing::warn!(%share, error = %removal, "removing the share's new mapping failed");
                    // Kept for the retry's removal: it is this mounter's.
                    self.mapping_made(root).await?;
                    false
                }
            },
        };
        self.journal
            .update(|records| {
                records.links.remove(&key(staging.as_str()));
                if !before.had_lease {
                    records.drop_lease(root, volume);
                }
                if !before.had_mapped && unmapped {
                    records.drop_mapped(root, share.as_str());
                }
                let unused = records.leases_of(root).next().is_none()
                    && records.mapped_of(root).next().is_none();
                if before.first_use && unused {
                    records.remove_share(root);
                }
            })
            .await
    }

    /// Maps `share` and links `staging` to it (the proxy does both in one
    /// call). A mapping of this mounter's that Windows says is stale (over
    /// a Disconnected one: "Generic failure", 85, 64) is removed and made
    /// once more, alone at the gate, unless another volume made it again
    /// meanwhile.
    pub(super) async fn map(
        &self,
        share: &SmbRemotePath,
        credentials: &SmbCredentials,
        staging: &WindowsPath,
        root: &str,
        held: Held,
        gate: &ShareGate,
    ) -> (Held, Result<()>) {
        let mapping = SmbMapping::new(
            share.clone(),
            credentials.username.clone(),
            credentials.password.clone(),
        )
        .with_local_path(staging.clone());
        let smb = match self.proxy.smb() {
            Ok(smb) => smb,
            Err(error) => return (held, Err(error)),
        };
        let error = match smb.new_smb_global_mapping(&mapping).await {
            Ok(()) => return (held, Ok(())),
            Err(error) => error,
        };
        // Only a refusal that says the mapping under this path is stale
        // (Windows' "Generic failure" over a Disconnected one, 85, 64): the
        // proxy tried to map because it found none working under the
        // path's key, so no volume reaches the share through it. A refused
        // link, a missing folder, a process that failed to start leave the
        // mapping as it is.
        if !mapping::says_stale(&error) {
            return (held, Err(error));
        }
        // A broken mapping this mounter did not make is left to its owner
        // (at a share's first use, any mapping is someone else's).
        if !self.owns(root) {
            return (held, Err(mapping::broken_foreign(share, &error)));
        }
        let seen = held.state().generation;
        let mut alone = held.alone(gate).await;
        if alone.generation == seen {
            tracing::info!(%share, %error, "the share's mapping is stale: making it again");
            // The link first: while it cannot go, the mapping stays as it is.
            if let Err(error) = self.paths.remove_if_there(staging).await {
                return (Held::Alone(alone), Err(error));
            }
            self.remove_mapping_quietly(share).await;
            alone.removed();
        }
        let made = smb.new_smb_global_mapping(&mapping).await;
        (Held::Alone(alone), made)
    }

    /// Whether another volume's staging link on share `root` may reach the
    /// share through the mapping, which must then not be removed under it:
    /// any answer but Windows' refusal of the share counts (a link whose
    /// folder is gone answers through a working mapping; a look that got
    /// no answer proves nothing).
    async fn share_answers_elsewhere(&self, root: &str, volume: &str) -> bool {
        let others: Vec<WindowsPath> = self.journal.view(|records| {
            (records.leases_of(root))
                .filter(|(holder, _)| *holder != volume)
                .map(|(_, lease)| lease.staging.clone())
                .collect()
        });
        fan_out::any(others, LOOKS_AT_ONCE, |staging| {
            let paths = Arc::clone(&self.paths);
            async move {
                match paths.probe(&staging).await {
                    Ok(None) | Err(Error::Host { .. }) => false,
                    Ok(Some(_)) | Err(_) => true,
                }
            }
        })
        .await
    }

    /// Records `volume`'s lease on the share `root`, the path it maps and
    /// its staging link, and says what the journal held before, in one
    /// change; the first lease of a share (`print` given) also records
    /// the share, as not (yet) this mounter's, with the credentials'
    /// fingerprint.
    pub(super) async fn take_lease(
        &self,
        root: &str,
        volume: &str,
        staging: &WindowsPath,
        share: &SmbRemotePath,
        print: Option<Fingerprint>,
    ) -> Result<StageSmbBefore> {
        let lease = Lease {
            staging: staging.clone(),
            remote: share.clone(),
        };
        self.journal
            .update(|records| {
                let unclaimed = records.shares.get(root).is_some_and(|share| !share.ours)
                    && records.leases_of(root).all(|(holder, _)| holder == volume)
                    && !records
                        .mapped_of(root)
                        .any(|path| records.is_confirmed(root, path));
                let before = StageSmbBefore {
                    first_use: !records.shares.contains_key(root),
                    unclaimed,
                    had_lease: records.has_lease(root, volume),
                    had_mapped: records.is_mapped(root, share.as_str()),
                };
                if before.first_use {
                    // Not this mounter's until its look and its mapping
                    // prove it (`mapping_made`).
                    let record = ShareRecord {
                        ours: false,
                        fingerprint: print,
                    };
                    records.shares.insert(root.to_owned(), record);
                }
                records.add_lease(root, volume, lease);
                records.add_mapped(root, share.as_str());
                records.links.insert(
                    key(staging.as_str()),
                    (staging.clone(), LinkTo::Smb(share.clone())),
                );
                before
            })
            .await
    }

    /// Records that the mapping of `share` works: a stage's link answered
    /// through it.
    pub(super) async fn confirm_mapped(&self, root: &str, share: &SmbRemotePath) -> Result<()> {
        self.journal
            .update(|records| {
                if records.shares.contains_key(root) {
                    records.confirm(root, share.as_str());
                }
            })
            .await
    }
}
