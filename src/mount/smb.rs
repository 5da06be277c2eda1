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
//! which counts as done), so the release need not be known.

use std::sync::Arc;

use super::fingerprint::Fingerprint;
use super::journal::{key, Lease, LinkTo, Records};
use super::path_state::conflict;
use super::{Change, Inner, Mounter, PathState};
use crate::api::{Secret, SmbMapping, SmbRemotePath, WindowsPath};
use crate::error::{Error, Result};
use crate::host_cause::HostCause;

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

/// What [`Mounter::rotate_smb_credentials`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rotated {
    /// `Unchanged` when the mapping had these credentials already.
    pub change: Change,
    /// The volumes whose links went through the mapping while it was made
    /// again: their pods may have seen errors for that moment.
    pub interrupted: Vec<String>,
}

/// The key of a share's records: its root, `\\server\share`, lower-cased.
pub(super) fn share_key(share: &SmbRemotePath) -> Option<String> {
    crate::api::share_root(share.as_str())
}

fn check_volume(volume: &str) -> Result<()> {
    if volume.is_empty() {
        return Err(Error::invalid_argument("volume ID", "it is empty"));
    }
    Ok(())
}

impl Mounter {
    /// `NodeStageVolume` of an SMB share: maps `share` (a share or a folder
    /// in it) with `credentials` and links `staging` to it, for `volume`
    /// (the CSI volume ID, which holds a lease on the share's mapping).
    ///
    /// - Already staged so: [`Change::Unchanged`] (the lease is kept once).
    /// - The mapping exists and answers: used as it is, whatever
    ///   credentials it was made with, as CSI Proxy does (see
    ///   [`rotate_smb_credentials`](Self::rotate_smb_credentials)).
    /// - A staging link that no longer answers (the mapping went away in a
    ///   reboot, or came back Disconnected), or a mapping the host calls
    ///   stale: the mapping is removed and made again.
    /// - Windows' refusals are typed ([`Error::host_cause`]): 1219
    ///   `CredentialConflict`, 1326 `LogonFailure`, 53/64/67 for the
    ///   network path or name; the lease is dropped again.
    /// - The link refused after the mapping was made (the proxy maps
    ///   first): a mapping this call may have made is removed.
    /// - Something else at `staging`: [`Error::Conflict`].
    pub async fn stage_smb(
        &self,
        volume: &str,
        share: &SmbRemotePath,
        credentials: &SmbCredentials,
        staging: &WindowsPath,
    ) -> Result<Change> {
        check_volume(volume)?;
        credentials_valid(credentials)?;
        let inner = self.inner.clone();
        let (volume2, share2, credentials, staging2) = (
            volume.to_owned(),
            share.clone(),
            credentials.clone(),
            staging.clone(),
        );
        self.inner
            .flights
            .run(
                staging.as_str(),
                format!("stage-smb {volume} {}", key(share.as_str())),
                async move {
                    inner
                        .stage_smb(&volume2, &share2, &credentials, &staging2)
                        .await
                },
            )
            .await
    }

    /// `NodeUnstageVolume` of an SMB share: removes the link at `staging`
    /// (never what is behind it) and `volume`'s lease; when no lease is
    /// left and this mounter made the mapping, removes it. A volume with no
    /// lease (staged before the journal existed) just loses its link.
    pub async fn unstage_smb(&self, volume: &str, staging: &WindowsPath) -> Result<Change> {
        check_volume(volume)?;
        let (inner, volume2, staging2) = (self.inner.clone(), volume.to_owned(), staging.clone());
        self.inner
            .flights
            .run(
                staging.as_str(),
                format!("unstage-smb {volume}"),
                async move { inner.unstage_smb(&volume2, &staging2).await },
            )
            .await
    }

    /// Maps `share` again with `credentials` (after a password rotation),
    /// if it was mapped with others. Only a mapping this mounter made:
    /// another is [`Error::Conflict`]; an unknown share is
    /// [`Error::NotFound`].
    pub async fn rotate_smb_credentials(
        &self,
        share: &SmbRemotePath,
        credentials: &SmbCredentials,
    ) -> Result<Rotated> {
        credentials_valid(credentials)?;
        self.inner.rotate(share, credentials).await
    }
}

fn credentials_valid(credentials: &SmbCredentials) -> Result<()> {
    crate::api::check_name("SMB user name", &credentials.username)
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
        let _share = self.flights.hold(&format!("share {root}")).await;
        let same_share = |remote: &SmbRemotePath| key(remote.as_str()) == key(share.as_str());
        match self.inspect(staging, false).await? {
            PathState::SmbLink {
                remote,
                reachable: true,
            } if same_share(&remote) => {
                self.lease(&root, volume, staging, share)?;
                return Ok(Change::Unchanged);
            }
            PathState::SmbLink {
                remote,
                reachable: false,
            } if same_share(&remote) => {
                // The mapping behind it is gone or broken: make both again.
                self.remove_unforced(staging).await?;
                self.remove_mappings(&root).await?;
            }
            PathState::Absent => {}
            // An empty folder (kubelet's), or a link that leads nowhere.
            PathState::Directory => self.remove_unforced(staging).await?,
            other => return Err(conflict(staging, other)),
        }
        let before = self.journal.read();
        let first_use = !before.shares.contains_key(&root);
        let had_lease = before
            .shares
            .get(&root)
            .is_some_and(|s| s.leases.contains_key(volume));
        self.lease(&root, volume, staging, share)?;
        let mapping = SmbMapping::new(
            share.clone(),
            credentials.username.clone(),
            credentials.password.clone(),
        )
        .with_local_path(staging.clone());
        let smb = self.proxy.smb()?;
        let mut result = smb.new_smb_global_mapping(&mapping).await;
        if let Err(error) = &result {
            if matches!(
                error.host_cause(),
                Some(HostCause::StaleMapping | HostCause::NetworkNameDeleted)
            ) {
                self.remove_mapping_of(share).await?;
                result = smb.new_smb_global_mapping(&mapping).await;
            }
        }
        if let Err(error) = result {
            if first_use && may_have_mapped(&error) && !self.is_foreign(&root) {
                // The proxy maps before it links: undo what this call made.
                self.remove_mapping_of(share).await?;
            }
            self.journal.update(|records| {
                if !had_lease {
                    drop_lease(records, &root, volume);
                }
                if first_use
                    && records
                        .shares
                        .get(&root)
                        .is_some_and(|s| s.leases.is_empty())
                {
                    records.shares.remove(&root);
                }
            })?;
            return Err(error);
        }
        let foreign = self.is_foreign(&root);
        self.journal.update(|records| {
            let record = records.shares.entry(root.clone()).or_default();
            if first_use {
                record.ours = !foreign;
                record.fingerprint = Some(credentials.fingerprint());
            }
            record.mapped.insert(share.as_str().to_owned());
            records.links.insert(
                key(staging.as_str()),
                (staging.clone(), LinkTo::Smb(share.clone())),
            );
        })?;
        Ok(Change::Changed)
    }

    /// Records `volume`'s lease on the share `root`.
    fn lease(
        &self,
        root: &str,
        volume: &str,
        staging: &WindowsPath,
        share: &SmbRemotePath,
    ) -> Result<()> {
        let lease = Lease {
            staging: staging.clone(),
            remote: share.clone(),
        };
        self.journal.update(|records| {
            records
                .shares
                .entry(root.to_owned())
                .or_default()
                .leases
                .insert(volume.to_owned(), lease);
        })
    }

    fn is_foreign(&self, root: &str) -> bool {
        self.settings.foreign_shares.iter().any(|f| f == root)
    }

    pub(super) async fn unstage_smb(
        self: &Arc<Self>,
        volume: &str,
        staging: &WindowsPath,
    ) -> Result<Change> {
        let records = self.journal.read();
        let root = records
            .shares
            .iter()
            .find(|(_, share)| share.leases.contains_key(volume))
            .map(|(root, _)| root.clone());
        let _share = match &root {
            Some(root) => Some(self.flights.hold(&format!("share {root}")).await),
            None => None,
        };
        let mut changed = match self.inspect(staging, false).await? {
            PathState::Absent => false,
            PathState::VolumeMount { .. } => {
                return Err(conflict(
                    staging,
                    "a volume is mounted there (unstage it with unstage_disk)",
                ))
            }
            _ => {
                self.remove_unforced(staging).await?;
                true
            }
        };
        self.journal.update(|records| {
            records.links.remove(&key(staging.as_str()));
            if let Some(root) = &root {
                drop_lease(records, root, volume);
            }
        })?;
        if let Some(root) = root {
            changed |= self.release_if_unused(&root).await?;
        }
        Ok(Change::of(changed))
    }

    /// Removes the mapping of share `root` if no lease is left, this
    /// mounter made it, and the policy lets it; whether it did.
    pub(super) async fn release_if_unused(&self, root: &str) -> Result<bool> {
        let Some(record) = self.journal.read().shares.get(root).cloned() else {
            return Ok(false);
        };
        if !record.leases.is_empty() {
            return Ok(false);
        }
        if record.ours
            && self.settings.smb_removal == SmbMappingRemoval::WhenUnused
            && !self.is_foreign(root)
        {
            self.remove_mappings(root).await?;
        }
        self.journal.update(|records| records.shares.remove(root))?;
        Ok(record.ours)
    }

    /// Removes every path of share `root` this mounter mapped (under
    /// either proxy rule); what is gone already counts as removed.
    async fn remove_mappings(&self, root: &str) -> Result<()> {
        let mapped = self
            .journal
            .read()
            .shares
            .get(root)
            .map(|s| s.mapped.clone())
            .unwrap_or_default();
        for remote in mapped {
            if let Ok(remote) = SmbRemotePath::new(&remote) {
                self.remove_mapping_of(&remote).await?;
            }
        }
        Ok(())
    }

    /// Removes the mapping of `remote`; one that is not there is fine.
    async fn remove_mapping_of(&self, remote: &SmbRemotePath) -> Result<()> {
        match self.proxy.smb()?.remove_smb_global_mapping(remote).await {
            Err(error) if !is_gone(&error) => Err(error),
            _ => Ok(()),
        }
    }

    async fn rotate(&self, share: &SmbRemotePath, credentials: &SmbCredentials) -> Result<Rotated> {
        let root = share_key(share)
            .ok_or_else(|| Error::invalid_argument("SMB share", share.to_string()))?;
        let _share = self.flights.hold(&format!("share {root}")).await;
        let Some(record) = self.journal.read().shares.get(&root).cloned() else {
            return Err(Error::NotFound {
                what: format!("mapping of {share} made by this mounter"),
            });
        };
        if !record.ours || self.is_foreign(&root) {
            return Err(conflict_share(share));
        }
        if record
            .fingerprint
            .as_ref()
            .is_some_and(|f| f.matches(&credentials.username, credentials.password.expose()))
        {
            return Ok(Rotated {
                change: Change::Unchanged,
                interrupted: Vec::new(),
            });
        }
        let smb = self.proxy.smb()?;
        self.remove_mappings(&root).await?;
        for remote in &record.mapped {
            let remote = SmbRemotePath::new(remote)?;
            let mapping = SmbMapping::new(
                remote,
                credentials.username.clone(),
                credentials.password.clone(),
            );
            smb.new_smb_global_mapping(&mapping).await?;
        }
        self.journal.update(|records| {
            if let Some(record) = records.shares.get_mut(&root) {
                record.fingerprint = Some(credentials.fingerprint());
            }
        })?;
        Ok(Rotated {
            change: Change::Changed,
            interrupted: record.leases.keys().cloned().collect(),
        })
    }
}

fn conflict_share(share: &SmbRemotePath) -> Error {
    Error::Conflict {
        path: share.to_string(),
        found: "its mapping was not made by this mounter".into(),
    }
}

fn drop_lease(records: &mut Records, root: &str, volume: &str) {
    if let Some(share) = records.shares.get_mut(root) {
        share.leases.remove(volume);
    }
}

/// Whether a failed `NewSmbGlobalMapping` may have left a mapping: not when
/// Windows refused the mapping itself.
fn may_have_mapped(error: &Error) -> bool {
    match error {
        Error::Host { .. } => !matches!(
            error.host_cause(),
            Some(
                HostCause::CredentialConflict
                    | HostCause::LogonFailure
                    | HostCause::NetworkPathNotFound
                    | HostCause::NetworkNameNotFound
                    | HostCause::NetworkNameDeleted
                    | HostCause::StaleMapping
                    | HostCause::OutOfResources
            )
        ),
        Error::Timeout { .. } | Error::InvalidResponse { .. } => true,
        Error::Transport { maybe_sent, .. } => *maybe_sent,
        _ => false,
    }
}

/// Whether a failed `RemoveSmbGlobalMapping` says there was nothing to
/// remove. The proxies say so only in words.
fn is_gone(error: &Error) -> bool {
    let Error::Host { message, .. } = error else {
        return false;
    };
    let text = message.to_lowercase();
    matches!(
        error.host_cause(),
        Some(HostCause::PathNotFound | HostCause::NetworkNameNotFound)
    ) || [
        "not found",
        "does not exist",
        "no global mapping",
        "no mapping",
    ]
    .iter()
    .any(|words| text.contains(words))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::Operation;
    use crate::error::Code;

    #[test]
    fn only_refusals_of_the_mapping_itself_leave_nothing_mapped() {
        let host = |text: &str| Error::host(Operation::NewSmbGlobalMapping, Code::Unknown, text);
        assert!(!may_have_mapped(&host(
            "The user name or password is incorrect."
        )));
        assert!(!may_have_mapped(&host(
            "Multiple connections to a server ... (1219)"
        )));
        assert!(may_have_mapped(&host(
            "path C:\\x is not within the working directories"
        )));
        let gone = Error::host(
            Operation::RemoveSmbGlobalMapping,
            Code::Unknown,
            "no global mapping exists",
        );
        assert!(is_gone(&gone));
        assert!(!is_gone(&host("Access is denied.")));
        assert_eq!(
            share_key(&SmbRemotePath::new(r"\\Files\Share\sub").unwrap()).as_deref(),
            Some(r"\\files\share")
        );
    }
}
