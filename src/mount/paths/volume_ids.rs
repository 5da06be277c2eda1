//! Which CSI volume a path is the mounter's for: a call that names another
//! volume than the one the journal staged there is refused, so that an
//! unstage or unpublish of one volume never undoes another's.

use super::{conflict, Paths};
use crate::api::{VolumeId, WindowsPath};
use crate::error::Result;
use crate::mount::journal::{key, LinkTo};

impl Paths {
    /// Fails with [`Error::Conflict`](crate::Error::Conflict) when the
    /// journal records another CSI volume than `volume` staged at
    /// `staging`; nothing recorded there, or the same volume, passes.
    pub(in crate::mount) fn check_staged_for(
        &self,
        volume: &str,
        staging: &WindowsPath,
    ) -> Result<()> {
        let staged = self
            .journal
            .view(|records| (records.csi_volume_at(&key(staging.as_str()))).map(str::to_owned));
        match staged {
            Some(staged) if staged != volume => Err(conflict(
                staging,
                format!("volume {staged:?} is staged there, not {volume:?}"),
            )),
            _ => Ok(()),
        }
    }

    /// Fails with [`Error::Conflict`](crate::Error::Conflict) when the
    /// journal records host volume `mounted` (found at `path`) staged for
    /// another CSI volume than `volume`.
    pub(in crate::mount) fn check_volume_is(
        &self,
        volume: &str,
        mounted: &VolumeId,
        path: &WindowsPath,
    ) -> Result<()> {
        let staged_for = self.journal.view(|records| {
            (records.stages.values())
                .filter(|(_, stage)| stage.volume == *mounted)
                .find_map(|(_, stage)| stage.csi_volume.clone().filter(|other| other != volume))
        });
        match staged_for {
            Some(other) => Err(conflict(
                path,
                format!(
                    "the host answers volume {mounted} there, which is staged for {other:?}, \
                     not {volume:?}"
                ),
            )),
            None => Ok(()),
        }
    }

    /// Whether the journal records `volume` staged at some path.
    pub(in crate::mount) fn staged_anywhere(&self, volume: &VolumeId) -> bool {
        (self.journal).view(|records| records.stages.values().any(|(_, s)| s.volume == *volume))
    }

    /// [`check_staged_for`](Self::check_staged_for) of the staging path a
    /// link this mounter made at `target` leads to.
    pub(in crate::mount) fn check_published_for(
        &self,
        volume: &str,
        target: &WindowsPath,
    ) -> Result<()> {
        match self.recorded_link(target) {
            Some(LinkTo::Local(staging)) => self.check_staged_for(volume, &staging).map_err(|_| {
                conflict(
                    target,
                    format!("it is a link of another volume's, to {staging}, not of {volume:?}"),
                )
            }),
            _ => Ok(()),
        }
    }
}
