//! A share volume's folder, made and removed on the node: the share
//! staged by the node's mounter at a link of the controller's own, the
//! folder made or removed through it, and the share unstaged again.

use std::collections::HashMap;
use std::time::Duration;

use crate::api::{Secret, SmbRemotePath, WindowsPath};
use crate::csi::driver::VolumeKind;
use crate::mount::SmbCredentials;
use crate::{Error, Status};

use super::claims::Claim;
use super::ids::{fnv1a, WORK_VOLUME};
use super::naming::{named_as, TestVolume};
use super::TestController;

/// What the controller does to a volume's folder on its share.
#[derive(Clone, Copy, Debug)]
pub(super) enum FolderWork {
    Make,
    Remove,
}

impl TestController {
    /// Makes or removes `folder` on `share`, on the node: the share staged
    /// by the node's mounter at the controller's link for `folder` (a lease
    /// of the share's mapping, shared with the node's volumes), the folder
    /// made (`Mkdir`, with its parents) or removed (`Rmdir`, forced: with
    /// what it holds; a folder not there is removed already) through the
    /// link, and the share unstaged, whatever the work gave.
    ///
    /// A failure a retry may mend (a proxy restarting under a call) is
    /// retried a few times, as a CO would retry the create or delete:
    /// csi-sanity does not, and the whole work may be done again.
    pub(super) async fn on_share(
        &self,
        share: &SmbRemotePath,
        folder: &str,
        credentials: &SmbCredentials,
        work: FolderWork,
    ) -> Result<(), Status> {
        let mut retries = 0;
        loop {
            match self.on_share_once(share, folder, credentials, work).await {
                Err(error) if error.is_retryable() && retries < 5 => {
                    retries += 1;
                    tokio::time::sleep(Duration::from_millis(200 * retries)).await;
                }
                done => return Ok(done?),
            }
        }
    }

    /// [`on_share`](Self::on_share), once.
    async fn on_share_once(
        &self,
        share: &SmbRemotePath,
        folder: &str,
        credentials: &SmbCredentials,
        work: FolderWork,
    ) -> Result<(), Error> {
        let filesystem = self.proxy.filesystem()?;
        let links = WindowsPath::new(format!(
            r"C:\var\lib\kubelet\plugins\{}\controller",
            self.driver
        ))?;
        // A short name: the folder's own (up to 128 characters, as
        // csi-sanity's longest volume name) would take the path through the
        // link past Windows' 260.
        let link = links.join(format!("{:016x}", fnv1a(folder)))?;
        let volume = format!("{WORK_VOLUME}{folder}");
        filesystem.mkdir(&links).await?;
        self.mounter
            .stage_smb(&volume, share, credentials, &link)
            .await?;
        let on_share = link.join(folder)?;
        let done = match work {
            // A folder that is there is someone's: never adopted (a
            // delete would remove it with what it holds).
            FolderWork::Make => {
                let remote = format!(r"{share}\{folder}").to_lowercase();
                let ours = self.folders().contains(&remote);
                match filesystem.path_exists(&on_share).await {
                    Ok(true) if !ours => Err(Error::Conflict {
                        path: format!(r"{share}\{folder}"),
                        found: "the folder exists on the share, and the test controller \
                                makes (and deletes) only folders of its own"
                            .into(),
                    }),
                    Ok(_) => {
                        // Noted before it is made: a retry after a lost
                        // answer, or a failed unstage, finds it its own.
                        self.folders().insert(remote);
                        filesystem.mkdir(&on_share).await
                    }
                    Err(error) => Err(error),
                }
            }
            FolderWork::Remove => filesystem.rmdir(&on_share, true).await,
        };
        let unstaged = self.mounter.unstage_smb(&volume, &link).await;
        done?;
        unstaged?;
        Ok(())
    }

    /// Makes the folder of volume `name` on the share of the parameter
    /// `share`, with the create's secrets.
    pub(super) async fn make_folder(
        &self,
        name: &str,
        parameters: &HashMap<String, String>,
        secrets: &HashMap<String, String>,
    ) -> Result<Claim, Status> {
        let share = parameters
            .get("share")
            .ok_or_else(|| Status::invalid_argument("the parameter share is missing"))?;
        // The folder is named after the volume, made safe for a path.
        let folder: String = name
            .chars()
            .map(|c| match c.is_ascii_alphanumeric() || c == '-' {
                true => c,
                false => '_',
            })
            .collect();
        let share = SmbRemotePath::new(share)?;
        let remote = SmbRemotePath::new(format!(r"{share}\{folder}"))?;
        let credentials = credentials(secrets).ok_or_else(|| {
            Status::invalid_argument(
                "the provisioner secrets username and password are missing: \
                 the volume's folder is made on the share with them",
            )
        })?;
        let named = named_as(&TestVolume::Share(remote), self.volume_ids.as_ref());
        // Named before the folder is made: a naming that fails leaves
        // nothing behind.
        let named = named?;
        self.check_unique(name, &named)?;
        self.on_share(&share, &folder, &credentials, FolderWork::Make)
            .await?;
        Ok(Claim::new(VolumeKind::Smb, 0, named, Some((share, folder))))
    }
}

/// The SMB credentials of a controller call's secrets (`username`,
/// `password`), if it has them.
pub(super) fn credentials(secrets: &HashMap<String, String>) -> Option<SmbCredentials> {
    let get = |key: &str| secrets.get(key).filter(|value| !value.is_empty());
    Some(SmbCredentials::new(
        get("username")?.clone(),
        Secret::new(get("password")?.clone()),
    ))
}
