//! The SMB group of the fake host: global mappings, keyed as the release
//! the host follows keys them, with their users and statuses.

use async_trait::async_trait;

use super::faults::{windows_error, WindowsError};
use super::state::{
    key as key_of, parent, HostState, PathEntry, SmbMappingState, SmbMappingStatus,
};
use super::{host_error, FakeHost};
use crate::api::{share_root, SmbApi, SmbMapping, SmbRemotePath};
use crate::capability::Operation as Op;
use crate::error::Result;
use crate::testing::ProxyRelease;
use crate::working_dirs::Rule;

/// `remote` as a mapping key is compared: backslashes, lower-cased, no
/// trailing backslash.
pub(super) fn normalized(remote: &str) -> String {
    remote
        .replace('/', "\\")
        .trim_end_matches('\\')
        .to_lowercase()
}

/// The share root of `remote` (`\\server\share`, lower-cased) and the
/// folder below it (lower-cased, empty for the root); `None` for a path
/// that names no share.
pub(super) fn share_folder_of(remote: &str) -> Option<(String, String)> {
    let path = normalized(remote);
    let root = share_root(&path)?;
    let below = path.strip_prefix(root.as_str())?;
    let below: Vec<&str> = below.split('\\').filter(|part| !part.is_empty()).collect();
    Some((root, below.join("\\")))
}

/// `\\server` of a share path (lower-cased).
fn server_of(remote: &str) -> Option<String> {
    let root = share_root(remote)?;
    let end = root[2..].find('\\')? + 2;
    Some(root[..end].to_owned())
}

impl HostState {
    /// What the proxy maps for `remote`: the share's root from v1.1.2 on,
    /// the remote path itself before. `None` for a path that names no share.
    pub(super) fn mapping_key(&self, remote: &str) -> Option<String> {
        let root = share_root(remote)?;
        Some(if self.release >= ProxyRelease::V1_1_2 {
            root
        } else {
            normalized(remote)
        })
    }

    /// Whether folder `remote` is on its share: the root of a share the
    /// host has always is; a folder below it once seeded or made.
    pub(super) fn share_folder_exists(&self, remote: &str) -> bool {
        let Some((root, below)) = share_folder_of(remote) else {
            return false;
        };
        let Some(share) = self.shares.get(&root) else {
            return false;
        };
        below.is_empty() || share.folders.contains(&below)
    }

    /// Makes folder `remote` and the folders above it on its share, as the
    /// file server does. `false` when the host has no such share.
    pub(super) fn add_share_folder(&mut self, remote: &str) -> bool {
        let Some((root, below)) = share_folder_of(remote) else {
            return false;
        };
        let Some(share) = self.shares.get_mut(&root) else {
            return false;
        };
        let mut at = String::new();
        for part in below.split('\\').filter(|part| !part.is_empty()) {
            if !at.is_empty() {
                at.push('\\');
            }
            at.push_str(part);
            share.folders.insert(at.clone());
        }
        true
    }

    /// The folders strictly below `remote` on its share.
    pub(super) fn share_folders_below(&self, remote: &str) -> Vec<String> {
        let Some((root, below)) = share_folder_of(remote) else {
            return Vec::new();
        };
        let Some(share) = self.shares.get(&root) else {
            return Vec::new();
        };
        let prefix = if below.is_empty() {
            String::new()
        } else {
            format!("{below}\\")
        };
        (share.folders.iter())
            .filter(|folder| folder.starts_with(&prefix))
            .map(|folder| format!("{root}\\{folder}"))
            .collect()
    }

    /// Removes folder `remote` and everything below it from its share;
    /// whether it was there. A share's root is never removed.
    pub(super) fn remove_share_folder(&mut self, remote: &str) -> bool {
        let Some((root, below)) = share_folder_of(remote) else {
            return false;
        };
        let Some(share) = self.shares.get_mut(&root) else {
            return false;
        };
        if below.is_empty() {
            return false;
        }
        let prefix = format!("{below}\\");
        share.folders.retain(|folder| !folder.starts_with(&prefix));
        share.folders.remove(&below)
    }

    /// How the node reaches `remote` through its mappings.
    pub(super) fn smb_access(&self, remote: &str) -> SmbAccess {
        let target = normalized(remote);
        let covering = self.smb_mappings.iter().filter(|(key, _)| {
            target == **key
                || target
                    .strip_prefix(key.as_str())
                    .is_some_and(|rest| rest.starts_with('\\'))
        });
        let mut access = SmbAccess::Unmapped;
        for (_, mapping) in covering {
            if mapping.usable() {
                return SmbAccess::Usable;
            }
            access = SmbAccess::Broken;
        }
        access
    }

    /// Makes a new mapping at `key`, as `New-SmbGlobalMapping` does, or
    /// fails as Windows refuses it.
    fn make_mapping(&mut self, key: String, mapping: &SmbMapping) -> Result<()> {
        let op = Op::NewSmbGlobalMapping;
        // A mapping not OK (disconnected) is still there under that name:
        // the SMB provider answers a generic failure.
        if self.smb_mappings.contains_key(&key) {
            let refusal =
                WindowsError::with_message(super::faults::GENERIC_FAILURE, "Generic failure");
            return Err(refusal.into_error(op));
        }
        let remote = mapping.remote_path.as_str();
        let (Some(root), Some(server)) = (share_root(remote), server_of(remote)) else {
            return Err(host_error(op, format!("{remote} is not a share path")));
        };
        let on_server = |name: &String| name.starts_with(&format!("{server}\\"));
        if !self.shares.keys().any(on_server) {
            return Err(windows_error(op, WindowsError::BAD_NETPATH));
        }
        let Some(share) = self.shares.get(&root) else {
            return Err(windows_error(op, WindowsError::BAD_NET_NAME));
        };
        let other_user = self.smb_mappings.iter().any(|(other, m)| {
            on_server(other)
                && m.status == SmbMappingStatus::Ok
                && !m.username.eq_ignore_ascii_case(&mapping.username)
        });
        if other_user {
            return Err(windows_error(op, WindowsError::SESSION_CREDENTIAL_CONFLICT));
        }
        if share.username != mapping.username || share.password != mapping.password {
            return Err(windows_error(op, WindowsError::LOGON_FAILURE));
        }
        let made = SmbMappingState::new(&mapping.username, mapping.password.clone());
        self.smb_mappings.insert(key, made);
        Ok(())
    }

    fn new_smb_global_mapping(&mut self, mapping: &SmbMapping) -> Result<()> {
        let op = Op::NewSmbGlobalMapping;
        let remote = mapping.remote_path.as_str();
        let key = self
            .mapping_key(remote)
            .ok_or_else(|| host_error(op, format!("{remote} is not a share path")))?;
        // A mapping with status OK whose path answers (`PathValid` of the
        // mapped path: the share's root from v1.1.2, which always exists;
        // before, the remote path, a folder that may be missing) is kept as
        // it is, credentials unchecked; one that does not answer is removed
        // and made again. One not OK counts as not mapped, and is mapped
        // over (which Windows refuses).
        match self.smb_mappings.get(&key) {
            Some(m)
                if m.status == SmbMappingStatus::Ok
                    && m.valid
                    && self.share_folder_exists(&key) => {}
            Some(m) if m.status == SmbMappingStatus::Ok => {
                self.smb_mappings.remove(&key);
                self.make_mapping(key, mapping)?;
            }
            _ => self.make_mapping(key, mapping)?,
        }
        // As the proxy does: the local path is checked only now, so a
        // mapping made above stays when it is refused.
        if let Some(local) = &mapping.local_path {
            crate::working_dirs::check(&self.working_dirs, Rule::Prefix, op, local)?;
            if self.tree.exists(local.as_str()) {
                return Err(host_error(
                    op,
                    format!(
                        "creating link {local} to {remote} failed: a file already exists there"
                    ),
                ));
            }
            if parent(&key_of(local.as_str())).is_some_and(|p| !self.tree.exists(p)) {
                return Err(host_error(
                    op,
                    format!(
                        "creating link {local} to {remote} failed: \
                         the system cannot find the path specified"
                    ),
                ));
            }
            self.tree
                .insert(local.as_str(), PathEntry::Symlink(remote.to_owned()));
        }
        Ok(())
    }

    fn remove_smb_global_mapping(&mut self, remote: &SmbRemotePath) -> Result<()> {
        let op = Op::RemoveSmbGlobalMapping;
        let key = self
            .mapping_key(remote.as_str())
            .ok_or_else(|| host_error(op, format!("{remote} is not a share path")))?;
        match self.smb_mappings.remove(&key) {
            Some(_) => Ok(()),
            // In each release's words: PowerShell's up to v1.2, WMI's after.
            None if self.release < ProxyRelease::V1_3_0 => Err(host_error(
                op,
                format!(
                    "UnmountSmbShare failed. output: \"Remove-SmbGlobalMapping : No \
                     MSFT_SmbGlobalMapping objects found with property 'RemotePath' equal to \
                     '{remote}'.  Verify the value of the property and retry.\", err: exit status 1"
                ),
            )),
            None => Err(host_error(
                op,
                format!("error remove smb mapping '{remote}'. err: {key} not found"),
            )),
        }
    }
}

/// How the node reaches a remote path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SmbAccess {
    /// Through a mapping that works.
    Usable,
    /// Only through a mapping that is Disconnected, or whose share no
    /// longer answers.
    Broken,
    /// Through no mapping at all.
    Unmapped,
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl SmbApi for FakeHost {
    async fn new_smb_global_mapping(&self, mapping: &SmbMapping) -> Result<()> {
        let mapping = mapping.clone();
        self.host_call(Op::NewSmbGlobalMapping, move |state| {
            state.new_smb_global_mapping(&mapping)
        })
        .await
    }

    async fn remove_smb_global_mapping(&self, remote_path: &SmbRemotePath) -> Result<()> {
        let remote = remote_path.clone();
        self.host_call(Op::RemoveSmbGlobalMapping, move |state| {
            state.remove_smb_global_mapping(&remote)
        })
        .await
    }
}

/// A share's space as a node that reaches it measures it: only through a
/// usable global mapping that covers the folder, and only for a folder
/// that is there (Windows answers "network path not found" otherwise).
impl crate::mount::ShareSpace for FakeHost {
    fn measure(&self, folder: &SmbRemotePath) -> Option<crate::mount::FsStats> {
        let state = self.state();
        let reachable = matches!(state.smb_access(folder.as_str()), SmbAccess::Usable)
            && state.share_folder_exists(folder.as_str());
        let (root, _) = share_folder_of(folder.as_str())?;
        let share = state.shares.get(&root).filter(|_| reachable)?;
        Some(crate::mount::FsStats {
            total_bytes: share.total_bytes,
            used_bytes: share.used_bytes,
            available_bytes: share.total_bytes - share.used_bytes,
        })
    }
}
