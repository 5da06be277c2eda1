//! What the mounter makes at a path: a folder, a link; each recorded in
//! the journal, so that only what it made is ever taken for its own.

use super::{LinkTo, PathState, Paths};
use crate::api::WindowsPath;
use crate::error::Result;
use crate::host_cause::HostCause;
use crate::mount::again::{idempotent, never};
use crate::mount::journal::key;

impl Paths {
    /// Removes what was `found` at `path` (on proof that it is the
    /// mounter's to remove: a link, or an empty folder) and makes an empty
    /// folder there.
    pub(in crate::mount) async fn replace_with_folder(
        &self,
        path: &WindowsPath,
        found: &PathState,
    ) -> Result<()> {
        self.remove_found(path, found).await?;
        self.make_folder(path).await
    }

    /// Makes the folder `path`, and records it as made here.
    pub(in crate::mount) async fn make_folder(&self, path: &WindowsPath) -> Result<()> {
        self.journal
            .update(|records| records.made.insert(key(path.as_str()), path.clone()))
            .await?;
        let filesystem = self.proxy.filesystem()?;
        idempotent(|| filesystem.mkdir(path), never).await
    }
    /// Makes `target` a link to `staging`, and its parent folder if kubelet
    /// did not.
    pub(in crate::mount) async fn make_link(
        &self,
        staging: &WindowsPath,
        target: &WindowsPath,
    ) -> Result<()> {
        let filesystem = self.proxy.filesystem()?;
        let made = match filesystem.create_symlink(staging, target).await {
            // The answer was lost: once more; a link there then is the
            // first attempt's.
            Err(error) if error.may_have_run() => {
                match filesystem.create_symlink(staging, target).await {
                    Err(_) if self.probe(target).await? == Some(true) => Ok(()),
                    again => again,
                }
            }
            first => first,
        };
        match made {
            Err(error) if error.host_cause() == Some(HostCause::PathNotFound) => {
                // The pod's volume folder is kubelet's to make; make it if
                // it did not.
                let Some(parent) = target.parent() else {
                    return Err(error);
                };
                idempotent(|| filesystem.mkdir(&parent), never).await?;
                filesystem.create_symlink(staging, target).await
            }
            other => other,
        }
    }

    pub(in crate::mount) async fn record_link(
        &self,
        link: &WindowsPath,
        to: &WindowsPath,
    ) -> Result<()> {
        self.journal
            .update(|records| {
                records.links.insert(
                    key(link.as_str()),
                    (link.clone(), LinkTo::Local(to.clone())),
                );
            })
            .await
    }
}
