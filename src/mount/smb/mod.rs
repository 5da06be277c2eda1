//! SMB shares: one global mapping per share, leased by each volume that
//! uses it.
//!
//! CSI Proxy shows no mapping, its status or its credentials, and says
//! nothing of who made it; so the mounter keeps, per share root, the
//! volumes that use the share (their leases), the paths it mapped, whether
//! it made the mapping, and a salted hash of the credentials. Leases are
//! per share root whatever the proxy maps: the share root from v1.1.2,
//! the exact path before. When the last lease goes, the mounter removes
//! every path it mapped of that share, which undoes the mapping under
//! either rule (the second removal of a root already removed is "gone",
//! which counts as done), so the release need not be known. Before v1.1.2
//! this keeps each volume's own mapping until the whole share is unused.

mod mapping;

use std::sync::Arc;

use super::again::outcome_unknown;
use super::fingerprint::Fingerprint;
use super::journal::{key, Lease, LinkTo, ShareRecord};
use super::path_state::conflict;
use super::{Change, Inner, Mounter, PathState};
use crate::api::{Secret, SmbMapping, SmbRemotePath, WindowsPath};
use crate::error::{Error, Result};

pub use mapping::Rotated;

/// The user and password to map a share with (from a volume's node-stage
/// secrets). `Debug` hides the password.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmbCredentials {
    /// The user, `DOMAIN\user` or `user`.
    pub username: String,
    /// The password.
    pub password: Secret,
}

impl SmbCredentials {
    /// Credentials of `username` with `password`.
    pub fn new(username: impl Into<String>, password: Secret) -> Self {
        Self {
            username: username.into(),
            password,
        }
    }

    fn fingerprint(&self) -> Fingerprint {
        Fingerprint::of(&self.username, self.password.expose())
    }

    /// The credentials as part of a request's name, so that a retry with
    /// other credentials is not taken for the same request: a hash kept in
    /// memory only.
    fn request_tag(&self) -> String {
        format!(
            "{} {:x}",
            self.username,
            stable_hash(self.password.expose())
        )
    }
}

/// A hash stable within this process (the standard library's keys are
/// drawn once per process).
fn stable_hash(text: &str) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static KEYS: std::sync::OnceLock<std::collections::hash_map::RandomState> =
        std::sync::OnceLock::new();
    let mut hasher = KEYS.get_or_init(Default::default).build_hasher();
    hasher.write(text.as_bytes());
    hasher.finish()
}

/// What the journal said of a share before a stage took its lease.
struct StageSmbBefore {
    /// No record of the share: this stage may be the one that maps it.
    first_use: bool,
    /// The volume held a lease already (a repeat).
    had_lease: bool,
    /// The path was recorded as mapped already.
    had_mapped: bool,
}

/// When the mounter removes a share's mapping that it made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum SmbMappingRemoval {
    /// When the last volume that used it is unstaged (or dropped by
    /// [`Mounter::reconcile`]).
    #[default]
    WhenUnused,
    /// Never: mappings stay for the node's life (what azurefile's proxy
    /// mode does), for nodes where other users may share them.
    Never,
}

/// The key of a share's records: its root, `\\server\share`, lower-cased.
pub(super) fn share_key(share: &SmbRemotePath) -> Option<String> {
    crate::api::share_root(share.as_str())
}

/// The volume's folder is not on its share: the link at `staging` leads
/// nowhere while the share answers. The link and the lease stay for the
/// unstage.
fn folder_missing(share: &SmbRemotePath, staging: &WindowsPath) -> Error {
    Error::NotFound {
        what: format!("folder {share} on its share (the link at {staging} leads nowhere)"),
    }
}

fn check_volume(volume: &str) -> Result<()> {
    if volume.is_empty() {
        return Err(Error::invalid_argument("volume ID", "it is empty"));
    }
    Ok(())
}

fn check_credentials(credentials: &SmbCredentials) -> Result<()> {
    crate::api::check_name("SMB user name", &credentials.username)
}

impl Mounter {
    /// `NodeStageVolume` of an SMB share: maps `share` (a share or a folder
    /// in it) with `credentials` and links `staging` to it, for `volume`
    /// (the CSI volume ID), which takes a lease on the share's mapping.
    ///
    /// - Already staged so: [`Change::Unchanged`] (the lease is kept once).
    /// - The mapping exists and answers: used as it is, whatever
    ///   credentials it was made with, as CSI Proxy does (see
    ///   [`rotate_smb_credentials`](Self::rotate_smb_credentials)).
    /// - The lease, the path to map and the link are recorded before the
    ///   mapping is asked for; a call whose answer was lost is looked at
    ///   (the link there and answering is the stage done), else its records
    ///   stay for the retry or [`reconcile`](Self::reconcile).
    /// - A staging link the share refuses through (the mapping went away
    ///   in a reboot, or came back Disconnected): the link is made again,
    ///   and this mounter's mapping removed first unless another volume's
    ///   link may still reach the share through it. A mapping Windows
    ///   calls stale when it is made again ("Generic failure", 85, 64) is
    ///   removed and made once more. No other failure (a refused link, a
    ///   missing parent folder, a process that failed to start) touches a
    ///   mapping other volumes use.
    /// - The volume's folder missing on the share (the link leads nowhere
    ///   while the share answers): [`Error::NotFound`], the link and lease
    ///   kept for the unstage.
    /// - Windows' refusals are typed ([`Error::host_cause`]): 1219
    ///   `CredentialConflict`, 1326 `LogonFailure`, 53/64/67 for the
    ///   network path or name; the lease this call took is dropped again.
    /// - The link refused after the share's first mapping was made (the
    ///   proxy maps first): that mapping is removed.
    /// - Something else at `staging`: [`Error::Conflict`].
    pub async fn stage_smb(
        &self,
        volume: &str,
        share: &SmbRemotePath,
        credentials: &SmbCredentials,
        staging: &WindowsPath,
    ) -> Result<Change> {
        check_volume(volume)?;
        check_credentials(credentials)?;
        let request = format!(
            "stage-smb {volume} {} {}",
            key(share.as_str()),
            credentials.request_tag()
        );
        let inner = self.inner.clone();
        let (volume, share) = (volume.to_owned(), share.clone());
        let (credentials, path) = (credentials.clone(), staging.clone());
        let work = async move { inner.stage_smb(&volume, &share, &credentials, &path).await };
        self.inner
            .flights
            .run(staging.as_str(), request, work)
            .await
    }

    /// `NodeUnstageVolume` of an SMB share: removes the link at `staging`
    /// (never what is behind it) and `volume`'s lease; when no lease is
    /// left and this mounter made the mapping, removes it. A volume with no
    /// lease (staged before the journal existed) just loses its link. A
    /// removal of the mapping that fails keeps the lease, so that the retry
    /// removes it.
    pub async fn unstage_smb(&self, volume: &str, staging: &WindowsPath) -> Result<Change> {
        check_volume(volume)?;
        let request = format!("unstage-smb {volume}");
        let inner = self.inner.clone();
        let (volume, path) = (volume.to_owned(), staging.clone());
        let work = async move { inner.unstage_smb(&volume, &path).await };
        self.inner
            .flights
            .run(staging.as_str(), request, work)
            .await
    }
}

impl Inner {
    async fn stage_smb(
        self: &Arc<Self>,
        volume: &str,
        share: &SmbRemotePath,
        credentials: &SmbCredentials,
        staging: &WindowsPath,
    ) -> Result<Change> {
        let root = share_key(share)
            .ok_or_else(|| Error::invalid_argument("SMB share", share.to_string()))?;
        let _share = self.flights.lock(&format!("share {root}")).await;
        match self.recorded_link(staging) {
            Some(LinkTo::Smb(remote)) if key(remote.as_str()) == key(share.as_str()) => {
                match self.probe(staging).await {
                    Ok(Some(true)) => {
                        self.take_lease(&root, volume, staging, share, credentials)?;
                        self.confirm_mapped(&root, share)?;
                        return Ok(Change::Unchanged);
                    }
                    Ok(None) => {}
                    // Leads nowhere, without Windows refusing the share:
                    // an empty folder where the link was (kubelet's, after
                    // a reboot), or the link with this volume's folder
                    // gone from the share. It goes, and the mapping stays;
                    // the new link is looked through below.
                    Ok(Some(false)) => self.remove_unforced(staging).await?,
                    // Windows' reason for the share: the mapping behind
                    // the link is gone or broken. The link goes, and the
                    // mapping too unless another volume still reaches the
                    // share through it.
                    Err(Error::Host { .. }) => {
                        self.remove_unforced(staging).await?;
                        if self.owns(&root) && !self.share_answers_elsewhere(&root, volume).await {
                            self.remove_mapping_quietly(share).await;
                        }
                    }
                    Err(error) => return Err(error),
                }
            }
            _ => match self.inspect(staging, false).await? {
                PathState::Absent => {}
                // An empty folder (kubelet's), a link that leads nowhere,
                // or one no record names that leads to no volume (a
                // leftover of a lost journal).
                PathState::Directory
                | PathState::Link {
                    target: None,
                    volume: None,
                    ..
                } => self.remove_unforced(staging).await?,
                other => return Err(conflict(staging, other)),
            },
        }
        let before = self.journal.view(|records| {
            let record = records.shares.get(&root);
            StageSmbBefore {
                first_use: record.is_none(),
                had_lease: record.is_some_and(|share| share.leases.contains_key(volume)),
                had_mapped: record.is_some_and(|r| r.mapped.contains(share.as_str())),
            }
        });
        // The lease, the path to map and the link are recorded before the
        // mapping is made: an answer lost, or a crash, after the proxy made
        // them leaves nothing the journal does not know.
        self.take_lease(&root, volume, staging, share, credentials)?;
        let error = match self.map(share, credentials, staging, &root, &before).await {
            // Looked through: a link to a folder the share lacks would
            // stage nothing a pod could use.
            Ok(()) => {
                return match self.probe(staging).await? {
                    Some(true) => self.confirm_mapped(&root, share).map(|()| Change::Changed),
                    _ => Err(folder_missing(share, staging)),
                }
            }
            Err(error) => error,
        };
        if outcome_unknown(&error) {
            // Looked at: the link there, and answering, is the stage done.
            // Otherwise the records stay for the retry (or reconcile).
            if matches!(self.probe(staging).await, Ok(Some(true))) {
                return self.confirm_mapped(&root, share).map(|()| Change::Changed);
            }
            return Err(error);
        }
        self.forget_failed_stage(&root, volume, share, staging, &before, &error)
            .await?;
        Err(error)
    }

    /// Undoes the records of a stage the proxy refused, and a mapping a
    /// first use may have made (the proxy maps before it links). A mapping
    /// whose removal fails stays recorded, with no lease, for the next
    /// unstage or `reconcile` to remove.
    async fn forget_failed_stage(
        &self,
        root: &str,
        volume: &str,
        share: &SmbRemotePath,
        staging: &WindowsPath,
        before: &StageSmbBefore,
        error: &Error,
    ) -> Result<()> {
        let maybe_mapped = before.first_use && mapping::may_have_mapped(error);
        let unmapped = match maybe_mapped && self.owns(root) {
            true => match self.remove_mapping_of(share).await {
                Ok(()) => true,
                Err(removal) => {
                    tracing::warn!(%share, error = %removal, "removing the share's new mapping failed");
                    false
                }
            },
            false => !maybe_mapped,
        };
        self.journal.update(|records| {
            records.links.remove(&key(staging.as_str()));
            if let Some(record) = records.shares.get_mut(root) {
                if !before.had_lease {
                    record.leases.remove(volume);
                }
                if !before.had_mapped && unmapped {
                    record.mapped.remove(share.as_str());
                }
                if before.first_use && record.leases.is_empty() && record.mapped.is_empty() {
                    records.shares.remove(root);
                }
            }
        })
    }

    /// Maps `share` and links `staging` to it. A mapping of this mounter's
    /// that Windows says is stale (over a Disconnected one: "Generic
    /// failure", 85, 64) is removed and made once more.
    async fn map(
        &self,
        share: &SmbRemotePath,
        credentials: &SmbCredentials,
        staging: &WindowsPath,
        root: &str,
        before: &StageSmbBefore,
    ) -> Result<()> {
        let mapping = SmbMapping::new(
            share.clone(),
            credentials.username.clone(),
            credentials.password.clone(),
        )
        .with_local_path(staging.clone());
        let smb = self.proxy.smb()?;
        let error = match smb.new_smb_global_mapping(&mapping).await {
            Ok(()) => return Ok(()),
            Err(error) => error,
        };
        // Only a refusal that says the mapping under this path is stale
        // (Windows' "Generic failure" over a Disconnected one, 85, 64): the
        // proxy tried to map because it found none working under the
        // path's key, so no volume reaches the share through it. A refused
        // link, a missing folder, a process that failed to start leave the
        // mapping as it is.
        if before.first_use || !mapping::says_stale(&error) || !self.owns(root) {
            return Err(error);
        }
        tracing::info!(%share, %error, "the share's mapping is stale: making it again");
        // The link first: while it cannot go, the mapping stays as it is.
        self.remove_if_there(staging).await?;
        self.remove_mapping_quietly(share).await;
        smb.new_smb_global_mapping(&mapping).await
    }

    /// Whether another volume's staging link on share `root` may reach the
    /// share through the mapping, which must then not be removed under it:
    /// any answer but Windows' refusal of the share counts (a link whose
    /// folder is gone answers through a working mapping; a look that got
    /// no answer proves nothing).
    async fn share_answers_elsewhere(&self, root: &str, volume: &str) -> bool {
        let others: Vec<WindowsPath> = self.journal.view(|records| {
            (records.shares.get(root).into_iter())
                .flat_map(|share| share.leases.iter())
                .filter(|(holder, _)| holder.as_str() != volume)
                .map(|(_, lease)| lease.staging.clone())
                .collect()
        });
        for staging in others {
            match self.probe(&staging).await {
                Ok(None) | Err(Error::Host { .. }) => {}
                Ok(Some(_)) | Err(_) => return true,
            }
        }
        false
    }

    /// Records `volume`'s lease on the share `root`, the path it maps and
    /// its staging link; the first lease of a share also records whether
    /// the mapping is this mounter's and the credentials' fingerprint, in
    /// the same write.
    fn take_lease(
        &self,
        root: &str,
        volume: &str,
        staging: &WindowsPath,
        share: &SmbRemotePath,
        credentials: &SmbCredentials,
    ) -> Result<()> {
        let lease = Lease {
            staging: staging.clone(),
            remote: share.clone(),
        };
        let ours = !self.is_foreign(root);
        self.journal.update(|records| {
            let record = records
                .shares
                .entry(root.to_owned())
                .or_insert_with(|| ShareRecord {
                    ours,
                    fingerprint: Some(credentials.fingerprint()),
                    ..ShareRecord::default()
                });
            record.leases.insert(volume.to_owned(), lease);
            record.mapped.insert(share.as_str().to_owned());
            records.links.insert(
                key(staging.as_str()),
                (staging.clone(), LinkTo::Smb(share.clone())),
            );
        })
    }

    /// Records that the mapping of `share` works: a stage's link answered
    /// through it.
    fn confirm_mapped(&self, root: &str, share: &SmbRemotePath) -> Result<()> {
        self.journal.update(|records| {
            if let Some(record) = records.shares.get_mut(root) {
                record.confirmed.insert(share.as_str().to_owned());
            }
        })
    }

    fn is_foreign(&self, root: &str) -> bool {
        self.settings.foreign_shares.iter().any(|f| f == root)
    }

    /// Whether the mapping of share `root` is this mounter's to remove.
    fn owns(&self, root: &str) -> bool {
        !self.is_foreign(root)
            && self
                .journal
                .view(|records| records.shares.get(root).is_none_or(|share| share.ours))
    }

    pub(super) async fn unstage_smb(
        self: &Arc<Self>,
        volume: &str,
        staging: &WindowsPath,
    ) -> Result<Change> {
        let path_key = key(staging.as_str());
        let records = self.journal.read();
        if records.stages.contains_key(&path_key) {
            return Err(conflict(
                staging,
                "a disk's volume is staged there (unstage it with unstage_disk)",
            ));
        }
        let recorded_share = match records.links.get(&path_key) {
            Some((_, LinkTo::Smb(share))) => share_key(share),
            _ => None,
        };
        let root = records
            .shares
            .iter()
            .find(|(_, share)| share.leases.contains_key(volume))
            .map(|(root, _)| root.clone())
            .or(recorded_share.clone());
        let _share = match &root {
            Some(root) => Some(self.flights.lock(&format!("share {root}")).await),
            None => None,
        };
        // A link this mounter made goes without a look: the look at a
        // link whose share is gone fails, and removing a link never
        // touches the share.
        let remove = match recorded_share {
            Some(_) => true,
            None => match self.inspect(staging, false).await? {
                PathState::Absent => false,
                PathState::VolumeMount { .. } => {
                    return Err(conflict(staging, "a volume is mounted there"))
                }
                _ => true,
            },
        };
        let mut changed = remove && self.remove_if_there(staging).await?;
        if let Some(root) = &root {
            changed |= self.release_lease(root, volume).await?;
        }
        self.journal
            .update(|records| records.links.remove(&path_key))?;
        Ok(Change::of(changed))
    }
}
