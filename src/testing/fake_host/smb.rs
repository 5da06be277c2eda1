//! The SMB group of the fake host.

use async_trait::async_trait;

use super::state::{PathEntry, SmbMappingState};
use super::{host_error, FakeHost};
use crate::api::{share_root, SmbApi, SmbMapping, SmbRemotePath};
use crate::capability::Operation as Op;
use crate::error::Result;

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl SmbApi for FakeHost {
    async fn new_smb_global_mapping(&self, mapping: &SmbMapping) -> Result<()> {
        let op = Op::NewSmbGlobalMapping;
        let mut state = self.state();
        let remote = mapping.remote_path.as_str();
        let root = share_root(remote)
            .ok_or_else(|| host_error(op, format!("{remote} is not a share path")))?;
        // A usable mapping is kept as it is, credentials unchecked; one that
        // went bad is removed and made again.
        let usable = state.smb_mappings.get(&root).is_some_and(|m| m.valid);
        if !usable {
            let Some(share) = state.shares.get(&root) else {
                return Err(host_error(
                    op,
                    format!("{root}: the network path was not found"),
                ));
            };
            if share.username != mapping.username || share.password != mapping.password {
                return Err(host_error(op, format!("{root}: access is denied")));
            }
            state
                .smb_mappings
                .insert(root, SmbMappingState { valid: true });
        }
        // As the proxy does: the local path is checked only now, so a
        // mapping made above stays when it is refused.
        if let Some(local) = &mapping.local_path {
            crate::working_dirs::check(&state.working_dirs, op, local)?;
            if state.tree.exists(local.as_str()) {
                return Err(host_error(
                    op,
                    format!(
                        "creating link {local} to {remote} failed: a file already exists there"
                    ),
                ));
            }
            state
                .tree
                .insert(local.as_str(), PathEntry::Symlink(remote.to_owned()));
        }
        Ok(())
    }

    async fn remove_smb_global_mapping(&self, remote_path: &SmbRemotePath) -> Result<()> {
        let op = Op::RemoveSmbGlobalMapping;
        let mut state = self.state();
        let root = share_root(remote_path.as_str())
            .ok_or_else(|| host_error(op, format!("{remote_path} is not a share path")))?;
        match state.smb_mappings.remove(&root) {
            Some(_) => Ok(()),
            None => Err(host_error(op, format!("{root}: no global mapping exists"))),
        }
    }
}
