//! What is at a path, in one answer.

use std::fmt;

use super::Paths;
use crate::api::{SmbRemotePath, VolumeId, WindowsPath};
use crate::error::{Error, Result};
use crate::host_cause::HostCause;
use crate::mount::journal::{key, LinkTo};
use crate::mount::Mounter;

/// What is at a path on the node: [`Mounter::inspect`].
///
/// CSI Proxy has no call that reads a link or lists a folder, so what it
/// cannot tell is said here as such: a link this mounter made is known
/// from its journal (where it leads, and whether it still leads
/// somewhere), and its volume is asked where it leads; a link it did not
/// make reads before v1.3 as the mount point of the volume it leads to,
/// and from v1.3 (which names the volume that holds a link) as a link to
/// no volume, told from a mount point by a probe link of the mounter's
/// beside it; one that leads nowhere reads as a directory on every
/// release. Whether a directory is empty is learned when the
/// mounter acts on it: it removes only empty ones.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathState {
    /// Nothing is there.
    Absent,
    /// A directory with no volume mounted at it.
    Directory,
    /// The folder where `volume` is mounted (or a link, not made by this
    /// mounter, that leads to it).
    VolumeMount {
        /// The volume.
        volume: VolumeId,
    },
    /// A link to a folder on the node.
    Link {
        /// Where it leads, when this mounter made it.
        target: Option<WindowsPath>,
        /// The volume it leads to, if it leads to one.
        volume: Option<VolumeId>,
        /// Whether it still leads somewhere (after a reboot, a staging
        /// folder's volume may be gone).
        reachable: bool,
    },
    /// A link to a folder on an SMB share, made by this mounter.
    SmbLink {
        /// The share folder.
        remote: SmbRemotePath,
        /// Whether the share answers through it (its mapping is there and
        /// connected).
        reachable: bool,
    },
}

impl PathState {
    /// The volume a block volume's path holds, directly or through a link.
    pub fn volume(&self) -> Option<&VolumeId> {
        match self {
            PathState::VolumeMount { volume } => Some(volume),
            PathState::Link { volume, .. } => volume.as_ref(),
            _ => None,
        }
    }
}

impl fmt::Display for PathState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathState::Absent => f.write_str("nothing is there"),
            PathState::Directory => f.write_str("there is a directory"),
            PathState::VolumeMount { volume } => write!(f, "volume {volume} is mounted there"),
            PathState::Link {
                target, reachable, ..
            } => {
                let dangling = if *reachable {
                    ""
                } else {
                    " that leads nowhere"
                };
                match target {
                    Some(target) => write!(f, "there is a link to {target}{dangling}"),
                    None => write!(f, "there is a link{dangling}"),
                }
            }
            PathState::SmbLink { remote, reachable } => {
                let dangling = if *reachable {
                    ""
                } else {
                    " that does not answer"
                };
                write!(f, "there is a link to the share {remote}{dangling}")
            }
        }
    }
}

/// The conflict of finding `found` at `path`.
pub(in crate::mount) fn conflict(path: &WindowsPath, found: impl fmt::Display) -> Error {
    conflict_at(path, found)
}

/// The conflict of finding `found` at `place` (a path, or a share).
pub(in crate::mount) fn conflict_at(place: impl fmt::Display, found: impl fmt::Display) -> Error {
    Error::Conflict {
        path: place.to_string(),
        found: found.to_string(),
    }
}

impl Mounter {
    /// What is at `path`: `IsSymlink` (which fails for a path that does
    /// not exist) and, where it says something leads somewhere,
    /// `GetVolumeIDFromTargetPath`, read together with the journal. "Not a mount point" is an answer
    /// ([`PathState::Directory`]), not an error; a host failure that says
    /// something else (access denied, out of resources) is.
    pub async fn inspect(&self, path: &WindowsPath) -> Result<PathState> {
        self.inner.paths.inspect(path, true).await
    }
}

impl Paths {
    /// [`Mounter::inspect`]; without `volume_of_links`, a link this
    /// mounter made is not asked for its volume (one call less, for
    /// callers that only need where it leads).
    pub(in crate::mount) async fn inspect(
        &self,
        path: &WindowsPath,
        volume_of_links: bool,
    ) -> Result<PathState> {
        let recorded = self.recorded_link(path);
        let probed = self.probe(path).await;
        self.inspect_probed(path, volume_of_links, recorded, probed)
            .await
    }

    /// [`inspect`](Self::inspect) of `path`, where the journal recorded
    /// `recorded` and the probe was answered `probed` (sent beside another
    /// look).
    pub(in crate::mount) async fn inspect_probed(
        &self,
        path: &WindowsPath,
        volume_of_links: bool,
        recorded: Option<LinkTo>,
        probed: Result<Option<bool>>,
    ) -> Result<PathState> {
        let reachable = match (probed, &recorded) {
            (Ok(None), _) => return Ok(PathState::Absent),
            (Ok(Some(reachable)), _) => reachable,
            // A link to a share whose mapping is gone or broken: the
            // proxy's IsSymlink fails with Windows' reason (access denied,
            // a logon failure, a network name gone) for a link that is
            // there.
            (Err(Error::Host { .. }), Some(LinkTo::Smb(_))) => false,
            (Err(error), _) => return Err(error),
        };
        match recorded {
            Some(LinkTo::Smb(remote)) => Ok(PathState::SmbLink { remote, reachable }),
            Some(LinkTo::Local(target)) => {
                // Asked where the link leads, never at the link: from v1.3
                // the proxy answers for a link with the volume that holds
                // the link itself.
                let volume = match reachable && volume_of_links {
                    true => self.mounted_volume(&target).await?,
                    false => None,
                };
                Ok(PathState::Link {
                    target: Some(target),
                    volume,
                    reachable,
                })
            }
            // Not a link this mounter made. A folder with a volume mounted
            // answers IsSymlink true on every release (before v1.3 Go read
            // a mount point as a link, v1.3 asks for mount points), so a
            // path that leads nowhere holds no volume: a folder, or a link
            // that leads nowhere, which the proxy tells apart by nothing.
            // Any volume named for it is v1.3's reading of a link (the
            // volume that holds the link itself), so it is not asked.
            None if !reachable => Ok(PathState::Directory),
            None => Ok(match self.volume_at(path).await? {
                // v1.3 names, for a live link too, the volume that holds
                // it: a link no record names, a leftover to clear.
                Some(volume) if self.names_the_holder(path, &volume).await? => PathState::Link {
                    target: None,
                    volume: None,
                    reachable: true,
                },
                Some(volume) => PathState::VolumeMount { volume },
                None => PathState::Link {
                    target: None,
                    volume: None,
                    reachable: true,
                },
            }),
        }
    }

    /// Where the link at `path` leads, if this mounter made it.
    pub(in crate::mount) fn recorded_link(&self, path: &WindowsPath) -> Option<LinkTo> {
        self.journal
            .view(|records| (records.links.get(&key(path.as_str()))).map(|(_, to)| to.clone()))
    }

    /// Whether `path` is a link or mount point that leads somewhere
    /// (`IsSymlink`), `None` when nothing is there: one call where
    /// `PathExists` and `IsSymlink` would be two. A failure that does not
    /// say "not found" is asked again with `PathExists`.
    pub(in crate::mount) async fn probe(&self, path: &WindowsPath) -> Result<Option<bool>> {
        let filesystem = self.proxy.filesystem()?;
        match filesystem.is_symlink(path).await {
            Ok(leads) => Ok(Some(leads)),
            Err(error) if error.host_cause() == Some(HostCause::PathNotFound) => Ok(None),
            Err(error @ Error::Host { .. }) => match filesystem.path_exists(path).await? {
                false => Ok(None),
                true => Err(error),
            },
            Err(error) => Err(error),
        }
    }

    /// The volume at `path` (following links); `None` only when the host
    /// says no volume is there. A failure that does not say so is an error:
    /// taking "cannot tell" for "not mounted" would remove a mounted folder
    /// without unmounting it. Volume v1alpha1 cannot ask: the journal's
    /// record of a stage there answers.
    pub(in crate::mount) async fn volume_at(&self, path: &WindowsPath) -> Result<Option<VolumeId>> {
        match self
            .proxy
            .volume()?
            .get_volume_id_from_target_path(path)
            .await
        {
            Ok(volume) => Ok(Some(volume)),
            Err(Error::Unsupported { .. }) => {
                Ok(self.recorded_stage(path).map(|stage| stage.volume))
            }
            Err(error) if says_no_volume(&error) => Ok(None),
            Err(error) => Err(error),
        }
    }
}

impl Paths {
    /// The volume mounted at `path`: none at a link this mounter made;
    /// else [`volume_at`](Self::volume_at), where a volume this mounter did
    /// not stage there counts only when the path leads somewhere (from
    /// v1.3 the proxy names, for a link, the volume that holds the link).
    pub(in crate::mount) async fn mounted_volume(
        &self,
        path: &WindowsPath,
    ) -> Result<Option<VolumeId>> {
        // A link this mounter made is no mount point, whatever the proxy
        // names for it.
        if self.recorded_link(path).is_some() {
            return Ok(None);
        }
        let at = self.volume_at(path).await;
        self.mounted_volume_of(path, at).await
    }

    /// [`mounted_volume`](Self::mounted_volume) of `path`, where
    /// `GetVolumeIDFromTargetPath` answered `at` ([`volume_at`](Self::volume_at),
    /// sent beside another look).
    pub(in crate::mount) async fn mounted_volume_of(
        &self,
        path: &WindowsPath,
        at: Result<Option<VolumeId>>,
    ) -> Result<Option<VolumeId>> {
        if self.recorded_link(path).is_some() {
            return Ok(None);
        }
        let Some(volume) = at? else {
            return Ok(None);
        };
        let staged_here = self.journal.view(|records| {
            (records.stages.get(&key(path.as_str()))).map(|(_, s)| s.volume == volume)
        });
        if staged_here == Some(true) {
            return Ok(Some(volume));
        }
        if self.probe(path).await? != Some(true) || self.names_the_holder(path, &volume).await? {
            return Ok(None);
        }
        Ok(Some(volume))
    }

    /// Whether `volume`, which the proxy named for `path` (which leads
    /// somewhere, and where this mounter staged nothing), is only the
    /// volume that holds `path`: v1.3's answer for a link. A mount point
    /// and a link cannot be told apart by any call, so a link of the
    /// mounter's own, to the folder above, is made beside `path` and asked
    /// too (three calls, only for a path no record names): the same
    /// volume named for both is the holder's. Where links are followed
    /// (before v1.3), the probe names no volume, and `volume` stands. A
    /// probe that cannot be made leaves `volume` standing: never a mount
    /// point taken for a link.
    pub(in crate::mount) async fn names_the_holder(
        &self,
        path: &WindowsPath,
        volume: &VolumeId,
    ) -> Result<bool> {
        let staged_here = self.journal.view(|records| {
            (records.stages.get(&key(path.as_str()))).is_some_and(|(_, s)| s.volume == *volume)
        });
        if staged_here {
            return Ok(false);
        }
        let Some(parent) = path.parent() else {
            return Ok(false);
        };
        // A path near the length limit has no room for the probe's name:
        // no probe, so the volume stands, as when one cannot be made.
        let Ok(probe) = WindowsPath::new(format!("{path}.volume-probe")) else {
            tracing::debug!(%path, "no room for a probe link beside the path: the volume stands");
            return Ok(false);
        };
        let probe_key = key(probe.as_str());
        let filesystem = self.proxy.filesystem()?;
        // One a crash left there first, if the journal says it is the
        // mounter's; anything else at that name is someone else's, and
        // stays (the volume stands).
        let recorded = self
            .journal
            .view(|records| records.links.contains_key(&probe_key));
        let cleared = match recorded {
            true => self.remove_if_there(&probe).await.map(|_| ()),
            false => match self.probe(&probe).await {
                Ok(None) => Ok(()),
                Ok(Some(_)) => Err(conflict(&probe, "something is there")),
                Err(error) => Err(error),
            },
        };
        if let Err(error) = cleared {
            tracing::debug!(%probe, %error, "no probe link: the volume stands");
            return Ok(false);
        }
        // Recorded before it is made, so that only the mounter's own probe
        // is ever removed.
        self.journal
            .update(|records| {
                (records.links).insert(
                    probe_key.clone(),
                    (probe.clone(), LinkTo::Local(parent.clone())),
                )
            })
            .await?;
        if let Err(error) = filesystem.create_symlink(&parent, &probe).await {
            tracing::debug!(%probe, %error, "no probe link: the volume stands");
            if !error.may_have_run() {
                self.journal
                    .update(|records| records.links.remove(&probe_key))
                    .await?;
            }
            return Ok(false);
        }
        let holder = self.volume_at(&probe).await;
        match self.remove_if_there(&probe).await {
            Ok(_) => {
                self.journal
                    .update(|records| records.links.remove(&probe_key))
                    .await?;
            }
            Err(error) => {
                tracing::warn!(%probe, %error, "the probe link stays; the next look removes it");
            }
        }
        Ok(holder? == Some(volume.clone()))
    }
}

/// Whether a failed `GetVolumeIDFromTargetPath` says that no volume is at
/// the path, in the words of each release: nothing there at all; "not a
/// mounted folder" (v1.3); an empty `Target` from PowerShell (v0.2 to
/// v1.2: "error getting volume from mount ... output: , error: <nil>").
fn says_no_volume(error: &Error) -> bool {
    let Error::Host { message, .. } = error else {
        return false;
    };
    let text = message.to_lowercase();
    error.host_cause() == Some(HostCause::PathNotFound)
        || text.contains("not a mounted folder")
        || text.contains("no volume is mounted")
        || (text.contains("error getting volume from mount") && text.contains("error: <nil>"))
}
