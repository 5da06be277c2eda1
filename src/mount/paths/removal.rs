//! What the mounter may remove, and the proof each removal needs
//! (docs/security.md): a path under the kubelet folder, and there only a
//! link or folder its journal records, a link the host says leads
//! somewhere (removing a link never touches where it leads), or a folder
//! shown to be empty. Never a file, a folder with files in it, or a mount
//! point no record names.

use super::{conflict, PathState, Paths};
use crate::api::WindowsPath;
use crate::error::{Error, Result};
use crate::host_cause::HostCause;
use crate::mount::again::{idempotent, never};
use crate::mount::journal::key;

/// The folder the mounter makes inside a folder it did not make, to learn
/// that it is a folder: only a folder can hold one. Removed at once.
const FOLDER_PROBE: &str = ".csi-proxy-client-folder-probe";

impl Paths {
    /// Whether the journal records `path` as the mounter's: a link it made,
    /// a folder it made, a stage or an unstage there.
    pub(in crate::mount) fn recorded_path(&self, path: &WindowsPath) -> bool {
        let path_key = key(path.as_str());
        self.journal.view(|records| {
            records.links.contains_key(&path_key)
                || records.made.contains_key(&path_key)
                || records.stages.contains_key(&path_key)
                || records.unstages.contains_key(&path_key)
        })
    }

    /// Removes what [`inspect`](Self::inspect) found at `path` when it is
    /// proven the mounter's to remove; whether something was removed.
    ///
    /// - nothing there: nothing to do;
    /// - a link the journal records (whether it still leads somewhere or
    ///   not), or any link that leads somewhere: removed unforced;
    /// - a directory (recorded or not: a record may outlive its folder):
    ///   removed only once shown to be an empty folder; a file (or a link
    ///   that leads nowhere that no record names, which the proxy cannot
    ///   tell from one) is [`Error::NotOurs`], a folder with files in it a
    ///   conflict;
    /// - a mount point: [`Error::NotOurs`] (callers unmount what they
    ///   staged first).
    pub(in crate::mount) async fn remove_found(
        &self,
        path: &WindowsPath,
        found: &PathState,
    ) -> Result<bool> {
        match found {
            PathState::Absent => Ok(false),
            PathState::Link {
                target: Some(_), ..
            }
            | PathState::SmbLink { .. }
            | PathState::Link {
                reachable: true, ..
            } => self.remove_if_there(path).await,
            PathState::Directory => self.remove_empty_folder(path).await,
            PathState::VolumeMount { volume } => Err(Error::NotOurs {
                what: format!("the mount point {path}"),
                why: format!(
                    "volume {volume} is mounted there and no record of the mounter's names it"
                ),
            }),
            other => Err(conflict(path, other)),
        }
    }

    /// Removes the folder `path` if it is an empty one, which the proxy
    /// cannot say: the mounter makes a folder inside it (only a folder can
    /// hold one) and removes it, then removes `path` unforced (a folder
    /// with files in it fails, and stays). Whether something was removed.
    pub(in crate::mount) async fn remove_empty_folder(&self, path: &WindowsPath) -> Result<bool> {
        check_removable(path, &self.kubelet_dir)?;
        let probe = path.join(FOLDER_PROBE)?;
        let filesystem = self.proxy.filesystem()?;
        // Made twice is made once (Mkdir makes what is missing): a probe
        // whose answer a proxy restart lost is asked for again.
        match idempotent(|| filesystem.mkdir(&probe), never).await {
            Ok(()) => {}
            Err(error @ Error::Host { .. }) => {
                // Gone meanwhile: nothing to remove.
                if !filesystem.path_exists(path).await? {
                    return Ok(false);
                }
                return Err(Error::NotOurs {
                    what: format!("{path}"),
                    why: format!(
                        "it is not a folder the mounter may remove (a file, or a link that \
                         leads nowhere, which the proxy cannot tell from one): {error}"
                    ),
                });
            }
            Err(error) => return Err(error),
        }
        self.remove_unforced(&probe).await?;
        self.remove_if_there(path).await
    }

    /// [`remove_unforced`](Self::remove_unforced), where nothing there is
    /// no error: whether something was removed.
    pub(in crate::mount) async fn remove_if_there(&self, path: &WindowsPath) -> Result<bool> {
        match self.remove_unforced(path).await {
            Ok(()) => Ok(true),
            Err(error) if error.host_cause() == Some(HostCause::PathNotFound) => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// Removes a link or an empty folder below the kubelet folder, never
    /// forced: a folder with files in it is a conflict, and stays. The
    /// proxy's unforced removal takes a file or a mount point too, so
    /// callers have proof first ([`remove_found`](Self::remove_found)),
    /// and make sure no volume is mounted at `path`.
    pub(in crate::mount) async fn remove_unforced(&self, path: &WindowsPath) -> Result<()> {
        check_removable(path, &self.kubelet_dir)?;
        let filesystem = self.proxy.filesystem()?;
        let gone =
            |error: &Error| (error.host_cause() == Some(HostCause::PathNotFound)).then_some(());
        match idempotent(|| filesystem.rmdir(path, false), gone).await {
            Err(error) if error.host_cause() == Some(HostCause::DirectoryNotEmpty) => {
                Err(conflict(path, "there is a directory with files in it"))
            }
            other => other,
        }
    }
}

/// Fails unless `path` lies strictly below `root` (compared by whole
/// components, without case): the mounter removes nothing elsewhere.
pub(super) fn check_removable(path: &WindowsPath, root: &WindowsPath) -> Result<()> {
    let rest = crate::working_dirs::rest_below(path.as_str(), root.as_str());
    match rest.is_some_and(|rest| !rest.trim_matches('\\').is_empty()) {
        true => Ok(()),
        false => Err(Error::NotOurs {
            what: format!("{path}"),
            why: format!(
                "it is not below the kubelet folder {root}, the only place the mounter \
                 removes anything (MounterBuilder::kubelet_dir)"
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> WindowsPath {
        WindowsPath::new(text).unwrap()
    }

    #[test]
    fn only_paths_below_the_kubelet_folder_are_removable() {
        let root = path(r"C:\var\lib\kubelet");
        let ok = |p: &str| check_removable(&path(p), &root).is_ok();
        assert!(ok(r"C:\var\lib\kubelet\pods\p1\volumes\pv"));
        assert!(ok(r"c:\VAR\lib\Kubelet\plugins\x"));
        assert!(!ok(r"C:\var\lib\kubelet"));
        assert!(!ok(r"C:\var\lib\kubeletx\pods"));
        assert!(!ok(r"C:\var\lib"));
        assert!(!ok(r"D:\var\lib\kubelet\pods"));
        assert!(!ok(r"C:\Windows\System32"));
        let error = check_removable(&path(r"C:\data\x"), &root).unwrap_err();
        assert!(matches!(error, Error::NotOurs { .. }), "{error}");
        assert!(error.to_string().contains("kubelet_dir"), "{error}");
    }
}
