//! A share's mapping: released with its last lease, removed quietly when
//! it is stale, made again with new credentials.

use super::Shares;
use super::{check_credentials, share_key, SmbCredentials, SmbMappingRemoval};
use crate::api::{SmbMapping, SmbRemotePath};
use crate::error::{Error, Result};
use crate::host_cause::HostCause;
use crate::mount::journal::{MappingKey, Records};
use crate::mount::paths::conflict_at;
use crate::mount::{Change, Mounter};

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

impl Mounter {
    /// Maps `share` again with `credentials` (after a password rotation),
    /// if it was mapped with others; only a mapping this mounter made
    /// (another is [`Error::Conflict`]; an unknown share is
    /// [`Error::NotFound`]).
    ///
    /// CSI Proxy keeps a working mapping whatever credentials a new one
    /// brings, so the mapping is removed first and made again: when the new
    /// credentials are refused, the share is left unmapped (the error says
    /// why, the fingerprint is forgotten), and a rotation with the right
    /// ones, or the next stage of a volume on the share, maps it again. It
    /// runs in a task of its own, like the other calls, so a caller that
    /// gives up does not leave it between the two steps.
    pub async fn rotate_smb_credentials(
        &self,
        share: &SmbRemotePath,
        credentials: &SmbCredentials,
    ) -> Result<Rotated> {
        check_credentials(credentials)?;
        let root = share_key(share)
            .ok_or_else(|| Error::invalid_argument("SMB share", share.to_string()))?;
        // The share's key, which its stages and unstages hold too.
        let key = format!("share {root}");
        let request = format!("rotate {}", credentials.request_tag());
        let (share, credentials) = (share.clone(), credentials.clone());
        self.in_flight(&key, request, |inner| async move {
            inner.shares.rotate(&share, &root, &credentials).await
        })
        .await
    }
}

/// A share's mapped paths, each with whether it was seen to work.
type MappedPaths = Vec<(String, bool)>;

fn mapped_paths(records: &Records, root: &str) -> MappedPaths {
    (records.mapped_of(root))
        .map(|remote| (remote.to_owned(), records.is_confirmed(root, remote)))
        .collect()
}

impl Shares {
    /// Drops `volume`'s lease on share `root`; when it was the last, first
    /// removes the mapping if this mounter made it (and the policy lets
    /// it). Whether a mapping was removed. A removal that fails leaves the
    /// lease in place, so that the retry removes the mapping. Done alone
    /// at the share's gate: no stage links through the mapping meanwhile.
    pub(in crate::mount) async fn release_lease(&self, root: &str, volume: &str) -> Result<bool> {
        let gate = self.gates.of(root);
        let mut alone = gate.alone().await;
        let Some((ours, mapped, last)) = self.journal.view(|records| {
            let record = records.shares.get(root)?;
            let last = !records.leases_of(root).any(|(holder, _)| holder != volume);
            Some((record.ours, mapped_paths(records, root), last))
        }) else {
            return Ok(false);
        };
        let remove = last
            && ours
            && !self.is_foreign(root)
            && self.settings.smb_removal == SmbMappingRemoval::WhenUnused;
        if remove {
            self.remove_mappings(&mapped).await?;
            alone.removed();
        }
        self.journal
            .update(|records| match last {
                true => records.remove_share(root),
                false => records.drop_lease(root, volume),
            })
            .await?;
        Ok(remove && !mapped.is_empty())
    }

    /// Removes a share's `mapped` paths: a single removal once the proxy
    /// is known to key mappings by the share's root, each path otherwise.
    /// The rule is learned from the paths seen to work: the first of them
    /// removed and every other one gone is the share root's rule (v1.1.2
    /// and later); each removed is the exact path's (before).
    async fn remove_mappings(&self, mapped: &MappedPaths) -> Result<()> {
        let rule = self.journal.view(|records| records.smb_mapping_key);
        // The paths seen to work first: the answers that teach.
        let confirmed = mapped.iter().filter(|(_, confirmed)| *confirmed);
        let others = mapped.iter().filter(|(_, confirmed)| !*confirmed);
        let mut learned_from = Vec::new();
        for (index, (remote, confirmed)) in confirmed.chain(others).enumerate() {
            if rule == Some(MappingKey::ShareRoot) && index > 0 {
                break;
            }
            let removed = self.remove_mapping(&SmbRemotePath::new(remote)?).await?;
            if *confirmed {
                learned_from.push(removed);
            }
        }
        let learned = match learned_from.split_first() {
            Some((true, rest)) if rule.is_none() && !rest.is_empty() => {
                if rest.iter().all(|removed| !removed) {
                    Some(MappingKey::ShareRoot)
                } else if rest.iter().all(|removed| *removed) {
                    Some(MappingKey::ExactPath)
                } else {
                    None
                }
            }
            _ => None,
        };
        if let Some(rule) = learned {
            tracing::debug!(?rule, "learned how the proxy keys SMB mappings");
            self.journal
                .update(|records| records.smb_mapping_key = Some(rule))
                .await?;
        }
        Ok(())
    }

    /// Removes the mapping of `remote`; one that is not there is fine.
    pub(super) async fn remove_mapping_of(&self, remote: &SmbRemotePath) -> Result<()> {
        self.remove_mapping(remote).await.map(drop)
    }

    /// Removes the mapping of `remote`: whether there was one (one not
    /// there is no error).
    async fn remove_mapping(&self, remote: &SmbRemotePath) -> Result<bool> {
        match self.proxy.smb()?.remove_smb_global_mapping(remote).await {
            Ok(()) => Ok(true),
            Err(error) if is_gone(&error) => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// Removes the mapping of `remote` as a step of making it again: a
    /// failure is logged, and the new mapping that follows says what is
    /// wrong.
    pub(super) async fn remove_mapping_quietly(&self, remote: &SmbRemotePath) {
        if let Err(error) = self.remove_mapping_of(remote).await {
            tracing::warn!(%remote, %error, "removing the share's mapping failed");
        }
    }

    async fn rotate(
        &self,
        share: &SmbRemotePath,
        root: &str,
        credentials: &SmbCredentials,
    ) -> Result<Rotated> {
        let gate = self.gates.of(root);
        let mut alone = gate.alone().await;
        let Some((record, mapped, leases)) = self.journal.view(|records| {
            let record = records.shares.get(root)?.clone();
            let leases: Vec<String> = (records.leases_of(root))
                .map(|(volume, _)| volume.to_owned())
                .collect();
            Some((record, mapped_paths(records, root), leases))
        }) else {
            return Err(Error::NotFound {
                what: format!("mapping of {share} made by this mounter"),
            });
        };
        if !record.ours || self.is_foreign(root) {
            return Err(conflict_at(
                share,
                "its mapping was not made by this mounter",
            ));
        }
        let secret = credentials.password.expose();
        let key = self.journal.credential_key();
        if let Some(known) =
            (record.fingerprint.as_ref()).filter(|f| f.matches(key, &credentials.username, secret))
        {
            // An earlier build's unkeyed fingerprint gives way to a keyed
            // one, now that the credentials are known to match it.
            if known.is_legacy() {
                let print = gate.fingerprint(credentials, key).await;
                self.journal
                    .update(|records| {
                        if let Some(record) = records.shares.get_mut(root) {
                            record.fingerprint = Some(print);
                        }
                    })
                    .await?;
            }
            return Ok(Rotated {
                change: Change::Unchanged,
                interrupted: Vec::new(),
            });
        }
        let print = gate.fingerprint(credentials, key).await;
        self.remove_mappings(&mapped).await?;
        alone.removed();
        let smb = self.proxy.smb()?;
        for (remote, _) in &mapped {
            let remote = SmbRemotePath::new(remote)?;
            let (user, password) = (credentials.username.clone(), credentials.password.clone());
            if let Err(error) = smb
                .new_smb_global_mapping(&SmbMapping::new(remote, user, password))
                .await
            {
                // Unmapped now, with no credentials known to work.
                self.journal
                    .update(|records| {
                        if let Some(record) = records.shares.get_mut(root) {
                            record.fingerprint = None;
                        }
                    })
                    .await?;
                return Err(error);
            }
        }
        self.journal
            .update(|records| {
                if let Some(record) = records.shares.get_mut(root) {
                    record.fingerprint = Some(print);
                }
            })
            .await?;
        alone.made();
        Ok(Rotated {
            change: Change::Changed,
            interrupted: leases,
        })
    }
}

/// Whether Windows pins a failed `NewSmbGlobalMapping` on the caller's
/// credentials or on the server: making the mapping again would not help.
pub(super) fn names_the_caller(error: &Error) -> bool {
    matches!(
        error.host_cause(),
        Some(
            HostCause::CredentialConflict
                | HostCause::LogonFailure
                | HostCause::AccessDenied
                | HostCause::NetworkPathNotFound
                | HostCause::NetworkNameNotFound
                | HostCause::OutOfResources
        )
    )
}

/// Whether a failed `NewSmbGlobalMapping` says the mapping under the path
/// is stale: Windows' "Generic failure" (a mapping made over a Disconnected
/// one), 85 or 1202 (the name is in use), 64 (the network name went away).
pub(super) fn says_stale(error: &Error) -> bool {
    let Error::Host { message, .. } = error else {
        return false;
    };
    matches!(
        error.host_cause(),
        Some(HostCause::StaleMapping | HostCause::NetworkNameDeleted)
    ) || message.to_lowercase().contains("generic failure")
}

/// The refusal of a stage that found the share's mapping broken (`stale`,
/// Windows' words) where this mounter did not make it: the mapping is its
/// owner's to repair or remove, and nothing was changed.
pub(super) fn broken_foreign(share: &SmbRemotePath, stale: &Error) -> Error {
    let root = share_key(share).unwrap_or_else(|| share.to_string());
    Error::NotOurs {
        what: format!("the global SMB mapping of {root}, which does not work ({stale})"),
        why: "this mounter did not make it (it was there before the share's first \
              stage): its owner must repair or remove it"
            .to_owned(),
    }
}

/// Whether a failed `NewSmbGlobalMapping` may have left a mapping: not when
/// Windows refused the mapping itself.
pub(super) fn may_have_mapped(error: &Error) -> bool {
    match error {
        Error::Host { .. } => {
            !names_the_caller(error)
                && !matches!(
                    error.host_cause(),
                    Some(HostCause::NetworkNameDeleted | HostCause::StaleMapping)
                )
        }
        error => error.may_have_run(),
    }
}

/// Whether a failed `RemoveSmbGlobalMapping` says there was nothing to
/// remove. The proxies say so only in words: PowerShell's "No
/// MSFT_SmbGlobalMapping objects found with property 'RemotePath'" (up to
/// v1.2), "not found" (v1.3).
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
        "objects found with property",
        "objectnotfound",
        "cmdletizationquery_notfound",
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
        assert!(names_the_caller(&host("Access is denied.")));
        assert!(!names_the_caller(&host("Generic failure")));
        assert!(says_stale(&host("Generic failure")));
        assert!(!says_stale(&host(
            "creating link C:\\x to \\\\srv\\share\\b failed: the system cannot find the path specified"
        )));
        let gone = |text: &str| Error::host(Operation::RemoveSmbGlobalMapping, Code::Unknown, text);
        assert!(is_gone(&gone("no global mapping exists")));
        assert!(is_gone(&gone(
            "UnmountSmbShare failed. output: \"Remove-SmbGlobalMapping : No MSFT_SmbGlobalMapping \
             objects found with property 'RemotePath' equal to '\\\\srv\\share'.\""
        )));
        assert!(!is_gone(&gone("Access is denied.")));
    }
}
