//! SMB shares: one global mapping per share, leased by each volume that
//! uses it.
//!
//! CSI Proxy shows no mapping, its status or its credentials, and says
//! nothing of who made it; so the mounter keeps, per share root, the
//! volumes that use the share (their leases), the paths it mapped, whether
//! it made the mapping (proven by a look at the share's root before its
//! first mapping, `look`), and a salted hash of the credentials. Leases are
//! per share root whatever the proxy maps: the share root from v1.1.2,
//! the exact path before. When the last lease goes, the mounter removes
//! every path it mapped of that share, which undoes the mapping under
//! either rule (the second removal of a root already removed is "gone",
//! which counts as done), so the release need not be known. Before v1.1.2
//! this keeps each volume's own mapping until the whole share is unused.

mod gate;
mod look;
mod mapping;
mod shares;
mod stage;

use std::sync::Arc;

use super::beside::beside;
use super::journal::{key, LinkTo};
use super::paths::conflict;
use super::{check_volume, Change, Inner, Mounter, PathState};
use crate::api::{Secret, SmbRemotePath, WindowsPath};
use crate::error::{Error, Result};

use gate::Held;
pub use mapping::Rotated;
pub(super) use shares::Shares;
use stage::{Found, Undo};

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
    /// - Who made the mapping: before it first maps a share, the mounter
    ///   asks `IsSymlink` of the share's root (`\\server\share\`). Only
    ///   when Windows refused the share then (1326, 5, 53, 64, 67) and the
    ///   mapping then succeeded is it recorded as this mounter's, and
    ///   removed with the share's last lease. A share that answered (an
    ///   administrator's mapping, another driver's, the computer
    ///   account), or a look that told nothing, leaves the mapping someone
    ///   else's: used, never removed, never made again.
    /// - A mapping that does not work: made again (this mounter's own
    ///   removed first, see below); someone else's is
    ///   [`Error::NotOurs`] (`FAILED_PRECONDITION`), naming it, and is left
    ///   as it is.
    /// - The lease, the path to map and the link are recorded before the
    ///   mapping is asked for; a call whose answer was lost is looked at
    ///   (the link there and answering is the stage done), else its records
    ///   stay for the retry or [`reconcile`](Self::reconcile).
    /// - A staging link the share refuses through (the mapping went away
    ///   in a reboot, or came back Disconnected): the link is made again,
    ///   and this mounter's mapping removed first unless another volume's
    ///   link may still reach the share through it. A mapping of this
    ///   mounter's that Windows calls stale when it is made again
    ///   ("Generic failure", 85, 64) is removed and made once more. No other failure (a refused link, a
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
        let (volume, share) = (volume.to_owned(), share.clone());
        let (credentials, path) = (credentials.clone(), staging.clone());
        self.in_flight(staging.as_str(), request, |inner| async move {
            // Inside the flight: a call that ran before changed the records.
            inner.paths.check_staged_for(&volume, &path)?;
            inner.stage_smb(&volume, &share, &credentials, &path).await
        })
        .await
    }

    /// `NodeUnstageVolume` of an SMB share: removes the link at `staging`
    /// (never what is behind it) and `volume`'s lease taken for that path;
    /// when no lease is left and this mounter made the mapping, removes it.
    /// A lease `volume` holds for another path is kept: an unstage at a
    /// path the journal does not record for the volume releases nothing,
    /// and answers [`Change::Unchanged`] when nothing is there. A volume
    /// with no lease (staged before the journal existed) just loses its
    /// link. A removal of the mapping that fails keeps the lease, so that
    /// the retry removes it.
    pub async fn unstage_smb(&self, volume: &str, staging: &WindowsPath) -> Result<Change> {
        check_volume(volume)?;
        let request = format!("unstage-smb {volume}");
        let (volume, path) = (volume.to_owned(), staging.clone());
        self.in_flight(staging.as_str(), request, |inner| async move {
            inner.paths.check_staged_for(&volume, &path)?;
            inner.unstage_smb(&volume, &path).await
        })
        .await
    }
}

impl Inner {
    /// [`Mounter::stage_smb`]: this volume's path cleared, its lease
    /// recorded, the share mapped and linked, then looked through.
    pub(super) async fn stage_smb(
        self: &Arc<Self>,
        volume: &str,
        share: &SmbRemotePath,
        credentials: &SmbCredentials,
        staging: &WindowsPath,
    ) -> Result<Change> {
        let root = share_key(share)
            .ok_or_else(|| Error::invalid_argument("SMB share", share.to_string()))?;
        let gate = self.shares.gate(&root);
        let recorded = self
            .journal
            .view(|records| records.shares.contains_key(&root));
        // The first stage of a share fingerprints the credentials it maps
        // with, before any lock.
        let print = match recorded {
            true => None,
            false => Some(
                gate.fingerprint(credentials, self.journal.credential_key())
                    .await,
            ),
        };
        // This volume's own path first, beside the share's other volumes.
        // Before the share's first mapping, the look at its root goes
        // beside it (the clearing touches no mapping of a share with no
        // record); it stands only if no volume of this process was alone
        // at the gate before this one (none made or removed the mapping).
        let clear = self
            .shares
            .clear_staging(volume, share, staging, &root, &gate);
        let early = match (recorded || self.shares.is_foreign(&root), gate.quiet_mark()) {
            (false, Some(mark)) => Some(mark),
            _ => None,
        };
        let (found, early) = match early {
            Some(mark) => {
                let (found, refused) = beside(clear, self.shares.share_refused(share)).await?;
                (found, Some((mark, refused)))
            }
            None => (clear.await?, None),
        };
        if let Found::Staged = found {
            self.shares
                .take_lease(&root, volume, staging, share, print)
                .await?;
            self.shares.confirm_mapped(&root, share).await?;
            return Ok(Change::Unchanged);
        }
        let held = gate.enter().await;
        // The lease, the path to map and the link are recorded before the
        // mapping is made: an answer lost, or a crash, after the proxy made
        // them leaves nothing the journal does not know.
        let fingerprinted = print.is_some();
        let before = (self.shares)
            .take_lease(&root, volume, staging, share, print)
            .await?;
        if before.first_use && !fingerprinted {
            // The share's last lease went while this volume cleared its
            // path: this stage is its first use after all.
            let print = gate
                .fingerprint(credentials, self.journal.credential_key())
                .await;
            self.journal
                .update(|records| {
                    if let Some(record) = records.shares.get_mut(root.as_str()) {
                        record.fingerprint.get_or_insert(print);
                    }
                })
                .await?;
        }
        let alone = matches!(held, Held::Alone(_));
        // Before the share's first mapping: a mapping made now is this
        // mounter's only if Windows refused the share until then.
        let ours_if_made = (before.first_use || before.unclaimed)
            && !self.shares.is_foreign(&root)
            && match early {
                Some((mark, refused)) if alone && gate.alone_once_since(mark) => refused,
                _ => self.shares.share_refused(share).await,
            };
        let (held, mapped) = (self.shares)
            .map(share, credentials, staging, &root, held, &gate)
            .await;
        let error = match mapped {
            // Looked through: a link to a folder the share lacks would
            // stage nothing a pod could use.
            Ok(()) => {
                if ours_if_made {
                    self.shares.mapping_made(&root).await?;
                }
                return match self.paths.probe(staging).await? {
                    Some(true) => self.shares.mapping_works(&root, share, held).await,
                    _ => Err(folder_missing(share, staging)),
                };
            }
            Err(error) => error,
        };
        if error.may_have_run() {
            // Looked at: the link there, and answering, is the stage done.
            // Otherwise the records stay for the retry (or reconcile).
            if matches!(self.paths.probe(staging).await, Ok(Some(true))) {
                if ours_if_made {
                    self.shares.mapping_made(&root).await?;
                }
                return self.shares.mapping_works(&root, share, held).await;
            }
            return Err(error);
        }
        let undo = Undo {
            alone,
            ours_if_made,
        };
        self.shares
            .forget_failed_stage(&root, volume, share, staging, &before, undo, &error)
            .await?;
        Err(error)
    }

    /// [`Mounter::unstage_smb`]: the link at `staging` removed, and the
    /// lease taken for it released.
    pub(super) async fn unstage_smb(
        self: &Arc<Self>,
        volume: &str,
        staging: &WindowsPath,
    ) -> Result<Change> {
        let path_key = key(staging.as_str());
        let (disk_staged, recorded_share, root) = self.journal.view(|records| {
            let recorded_share = match records.links.get(&path_key) {
                Some((_, LinkTo::Smb(share))) => share_key(share),
                _ => None,
            };
            // Only the lease taken for this path: one held for another
            // path stays with the stage there. A link with no lease at all
            // (made before leases were kept) releases its share's.
            let root = match records.share_leased_at(volume, &path_key) {
                Some(root) => Some(root.to_owned()),
                None if records.share_leased_by(volume).is_some() => None,
                None => recorded_share.clone(),
            };
            (records.stages.contains_key(&path_key), recorded_share, root)
        });
        if disk_staged {
            return Err(conflict(
                staging,
                "a disk's volume is staged there (unstage it with unstage_disk)",
            ));
        }
        // A link this mounter made goes without a look: the look at a
        // link whose share is gone fails, and removing a link never
        // touches the share.
        let mut changed = match recorded_share {
            Some(_) => self.paths.remove_if_there(staging).await?,
            None => match self.paths.inspect(staging, false).await? {
                PathState::VolumeMount { .. } => {
                    return Err(conflict(staging, "a volume is mounted there"))
                }
                // What no record names goes only on proof that it holds
                // nothing.
                found => self.paths.remove_found(staging, &found).await?,
            },
        };
        if let Some(root) = &root {
            changed |= self.shares.release_lease(root, volume).await?;
        }
        self.journal
            .update(|records| records.links.remove(&path_key))
            .await?;
        Ok(Change::of(changed))
    }
}
