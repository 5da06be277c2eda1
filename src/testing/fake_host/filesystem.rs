//! The filesystem group of the fake host, with the proxy's path checks.
//!
//! Paths are found as Windows finds them for the proxy's Go calls: the
//! links on the way are followed (into a share's folders, through its
//! mapping), the last one only where the call follows it (`os.Stat`, not
//! `os.Lstat`).

use async_trait::async_trait;

use super::faults::WindowsError;
use super::smb::{normalized, SmbAccess};
use super::state::{is_drive_root, key, parent, HostState, PathEntry};
use super::{host_error, FakeHost};
use crate::api::{FilesystemApi, WindowsPath};
use crate::capability::Operation;
use crate::error::Result;
use crate::working_dirs::Rule;

/// How many links a lookup follows before it gives up (Windows allows 63
/// reparse points in a path).
const MAX_LINKS: usize = 63;

/// Whether a lookup follows a link that is the path's last component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Last {
    /// Like `os.Lstat`: the link itself is found.
    Kept,
    /// Like `os.Stat`: where the link leads is found.
    Followed,
}

/// What a lookup found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Found {
    /// An entry of the node's tree, at this key.
    Local(String, PathEntry),
    /// A folder on an SMB share (its root included), normalized.
    Share(String),
}

impl Found {
    fn is_dir(&self) -> bool {
        !matches!(
            self,
            Found::Local(_, PathEntry::Symlink(_) | PathEntry::File)
        )
    }
}

/// `error`'s code with Go's text for `op` of `path`.
fn path_error(op: &str, path: &str, code: u32) -> WindowsError {
    let text = WindowsError::new(code);
    WindowsError::with_message(code, format!("{op} {path}: {}", text.message()))
}

impl HostState {
    /// What is at `path` (a local path or a share's), as Windows finds it:
    /// `Ok(None)` where Go's `os.IsNotExist` would hold, a Windows error
    /// where a share on the way cannot be reached (1326 with no mapping, 64
    /// through one that broke).
    pub(super) fn find(&self, path: &str, last: Last) -> Result<Option<Found>, WindowsError> {
        let mut path = path.to_owned();
        for _ in 0..=MAX_LINKS {
            match self.find_step(&path, last) {
                Step::Found(found) => return Ok(found),
                Step::Failed(error) => return Err(error),
                Step::Next(next) => path = next,
            }
        }
        // ERROR_CANT_RESOLVE_FILENAME, as for a loop of links.
        Err(WindowsError::with_message(
            1921,
            "The name of the file cannot be resolved by the system.",
        ))
    }

    /// One lookup of `path`, up to the first link to follow.
    fn find_step(&self, path: &str, last: Last) -> Step {
        if path.starts_with("\\\\") {
            // On a share: its folders, through the node's mapping.
            return match self.smb_access(path) {
                SmbAccess::Usable => Step::Found(
                    (self.share_folder_exists(path)).then(|| Found::Share(normalized(path))),
                ),
                SmbAccess::Broken => Step::Failed(WindowsError::new(WindowsError::NETNAME_DELETED)),
                SmbAccess::Unmapped => Step::Failed(WindowsError::new(WindowsError::LOGON_FAILURE)),
            };
        }
        let whole = key(path);
        let parts: Vec<&str> = whole.split('\\').filter(|p| !p.is_empty()).collect();
        let Some((drive, below)) = parts.split_first() else {
            return Step::Found(None);
        };
        let mut at = (*drive).to_owned();
        if !is_drive_root(&at) {
            return Step::Found(None);
        }
        let mut found = Found::Local(at.clone(), PathEntry::Directory);
        for (i, part) in below.iter().enumerate() {
            let is_last = i + 1 == below.len();
            at = format!("{at}\\{part}");
            match self.tree.get(&at) {
                None => return Step::Found(None),
                // Below a file there is nothing (Windows: the path is not
                // found).
                Some(PathEntry::File) if !is_last => return Step::Found(None),
                Some(PathEntry::Symlink(target)) if !is_last || last == Last::Followed => {
                    let rest = below[i + 1..].join("\\");
                    let target = target.trim_end_matches('\\');
                    return Step::Next(match rest.is_empty() {
                        true => target.to_owned(),
                        false => format!("{target}\\{rest}"),
                    });
                }
                Some(entry) => found = Found::Local(at.clone(), entry),
            }
        }
        Step::Found(Some(found))
    }

    /// `CreateDirectory` of `path`: its folder must be there (links
    /// followed), `path` itself must not.
    fn create_dir(&mut self, path: &str) -> Result<(), WindowsError> {
        if self.find(path, Last::Kept)?.is_some() {
            return Err(path_error("mkdir", path, WindowsError::ALREADY_EXISTS));
        }
        let whole = key(path);
        let (Some(up), Some(name)) = (parent(&whole), whole.rsplit('\\').next()) else {
            return Err(path_error("mkdir", path, WindowsError::PATH_NOT_FOUND));
        };
        match self.find(up, Last::Followed)? {
            None => Err(path_error("mkdir", path, WindowsError::PATH_NOT_FOUND)),
            Some(Found::Local(at, _)) => {
                self.tree
                    .insert(&format!("{at}\\{name}"), PathEntry::Directory);
                Ok(())
            }
            Some(Found::Share(at)) => {
                self.add_share_folder(&format!("{at}\\{name}"));
                Ok(())
            }
        }
    }

    /// Go's `os.MkdirAll`, which the proxy's `Mkdir` runs: done when `path`
    /// leads to a folder; else its folder is made first, then `path`.
    fn make_dirs(&mut self, path: &str) -> Result<(), WindowsError> {
        match self.find(path, Last::Followed) {
            Ok(Some(found)) if found.is_dir() => return Ok(()),
            // Go's `os.MkdirAll` stops at a file on the way: ENOTDIR.
            Ok(Some(Found::Local(_, PathEntry::File))) => {
                return Err(WindowsError::with_message(
                    WindowsError::DIRECTORY,
                    format!("mkdir {path}: not a directory"),
                ))
            }
            _ => {}
        }
        let whole = key(path);
        if let Some(up) = parent(&whole).filter(|up| !is_drive_root(up)) {
            self.make_dirs(up)?;
        }
        match self.create_dir(path) {
            Ok(()) => Ok(()),
            Err(error) => match self.find(path, Last::Kept) {
                Ok(Some(found)) if found.is_dir() => Ok(()),
                _ => Err(error),
            },
        }
    }

    /// What is at `path` for `op`, links on the way followed and the last
    /// one as `last` says; a missing path fails as Windows says it.
    fn existing(&self, op: Operation, path: &WindowsPath, last: Last) -> Result<Found> {
        match self.find(path.as_str(), last) {
            Ok(Some(found)) => Ok(found),
            Ok(None) => Err(host_error(
                op,
                format!("{path}: the system cannot find the file specified"),
            )),
            Err(error) => Err(error.into_error(op)),
        }
    }

    fn rmdir(&mut self, path: &WindowsPath, force: bool) -> Result<()> {
        let op = Operation::Rmdir;
        crate::working_dirs::check(&self.working_dirs, Rule::Prefix, op, path)?;
        // Forced, the proxy runs Go's `os.RemoveAll`, which is content
        // with a path that is not there.
        if force && matches!(self.find(path.as_str(), Last::Kept), Ok(None)) {
            return Ok(());
        }
        let at = match self.existing(op, path, Last::Kept)? {
            Found::Local(at, _) => at,
            Found::Share(folder) => return self.rmdir_on_share(op, path, &folder, force),
        };
        let below = self.tree.descendants(&at);
        // A mount point is a reparse point: Windows removes it, unforced,
        // whatever the volume holds (and the volume keeps its files).
        let mount_point = matches!(self.tree.get(&at), Some(PathEntry::MountPoint(_)));
        if !below.is_empty() && !force && !mount_point {
            return Err(host_error(
                op,
                format!("{path}: the directory is not empty"),
            ));
        }
        for child in below {
            self.tree.remove(&child);
        }
        if let Some(PathEntry::MountPoint(volume)) = self.tree.get(&at) {
            if let Some(v) = self.volumes.get_mut(&volume) {
                v.mounts.remove(&at);
            }
        }
        self.tree.remove(&at);
        Ok(())
    }

    /// `rmdir` of `path`, which is folder `folder` of a share.
    fn rmdir_on_share(
        &mut self,
        op: Operation,
        path: &WindowsPath,
        folder: &str,
        force: bool,
    ) -> Result<()> {
        if !force && !self.share_folders_below(folder).is_empty() {
            return Err(host_error(
                op,
                format!("{path}: the directory is not empty"),
            ));
        }
        match self.remove_share_folder(folder) {
            true => Ok(()),
            // The share's root: the server refuses.
            false => Err(WindowsError::new(WindowsError::ACCESS_DENIED).into_error(op)),
        }
    }

    fn rmdir_contents(&mut self, path: &WindowsPath) -> Result<()> {
        let op = Operation::RmdirContents;
        crate::working_dirs::check(&self.working_dirs, Rule::Prefix, op, path)?;
        // `os.Open` follows the links: what goes is below where they lead.
        match self.existing(op, path, Last::Followed)? {
            Found::Local(at, _) => {
                for child in self.tree.descendants(&at) {
                    self.tree.remove(&child);
                }
            }
            Found::Share(folder) => {
                for child in self.share_folders_below(&folder) {
                    self.remove_share_folder(&child);
                }
            }
        }
        Ok(())
    }

    fn create_symlink(&mut self, target: &WindowsPath, link: &WindowsPath) -> Result<()> {
        let op = Operation::CreateSymlink;
        crate::working_dirs::check(&self.working_dirs, Rule::Prefix, op, target)?;
        crate::working_dirs::check(&self.working_dirs, Rule::Prefix, op, link)?;
        let exists = |state: &Self| state.find(link.as_str(), Last::Kept);
        match exists(self) {
            Ok(None) => {}
            Ok(Some(_)) => {
                return Err(host_error(
                    op,
                    format!("{link}: cannot create a file when that file already exists"),
                ))
            }
            Err(error) => return Err(error.into_error(op)),
        }
        let link_key = key(link.as_str());
        let name = link_key.rsplit('\\').next().unwrap_or_default().to_owned();
        let folder = parent(&link_key).map(|up| self.find(up, Last::Followed));
        match folder {
            Some(Ok(Some(Found::Local(at, _)))) => {
                self.tree.insert(
                    &format!("{at}\\{name}"),
                    PathEntry::Symlink(target.to_string()),
                );
                Ok(())
            }
            Some(Ok(Some(Found::Share(_)))) => Err(host_error(
                op,
                format!("{link}: the fake host makes no links on a share"),
            )),
            Some(Err(error)) => Err(error.into_error(op)),
            Some(Ok(None)) | None => Err(host_error(
                op,
                format!("{link}: the system cannot find the path specified"),
            )),
        }
    }

    /// `IsSymlink`, as upstream's: `os.Lstat` of the path (an error when
    /// it is not there), then, for a link or a mount point, whether its
    /// target exists (`os.Lstat` of the target, which does not follow a
    /// target that is a link itself).
    fn is_symlink(&self, path: &WindowsPath) -> Result<bool> {
        let op = Operation::IsSymlink;
        match self.existing(op, path, Last::Kept)? {
            Found::Local(_, PathEntry::Symlink(target)) => match self.find(&target, Last::Kept) {
                Ok(found) => Ok(found.is_some()),
                Err(error) => Err(error.into_error(op)),
            },
            Found::Local(_, PathEntry::MountPoint(_)) => Ok(true),
            Found::Local(_, PathEntry::Directory | PathEntry::File) | Found::Share(_) => Ok(false),
        }
    }
}

/// One step of a lookup.
enum Step {
    Found(Option<Found>),
    Failed(WindowsError),
    /// Look up this path instead (a link was followed).
    Next(String),
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl FilesystemApi for FakeHost {
    async fn path_exists(&self, path: &WindowsPath) -> Result<bool> {
        let (op, path) = (Operation::PathExists, path.clone());
        self.host_call(op, move |state| {
            crate::working_dirs::check(&state.working_dirs, Rule::Prefix, op, &path)?;
            // Like the proxy's `os.Lstat`: a link exists, wherever it leads;
            // a path through a link is where the link leads.
            match state.find(path.as_str(), Last::Kept) {
                Ok(found) => Ok(found.is_some()),
                Err(error) => Err(error.into_error(op)),
            }
        })
        .await
    }

    async fn mkdir(&self, path: &WindowsPath) -> Result<()> {
        let (op, path) = (Operation::Mkdir, path.clone());
        self.host_call(op, move |state| {
            crate::working_dirs::check(&state.working_dirs, Rule::Prefix, op, &path)?;
            state
                .make_dirs(path.as_str())
                .map_err(|error| error.into_error(op))
        })
        .await
    }

    async fn rmdir(&self, path: &WindowsPath, force: bool) -> Result<()> {
        let path = path.clone();
        self.host_call(Operation::Rmdir, move |state| state.rmdir(&path, force))
            .await
    }

    async fn rmdir_contents(&self, path: &WindowsPath) -> Result<()> {
        let path = path.clone();
        self.host_call(Operation::RmdirContents, move |state| {
            state.rmdir_contents(&path)
        })
        .await
    }

    async fn create_symlink(&self, target: &WindowsPath, link: &WindowsPath) -> Result<()> {
        let (target, link) = (target.clone(), link.clone());
        self.host_call(Operation::CreateSymlink, move |state| {
            state.create_symlink(&target, &link)
        })
        .await
    }

    async fn is_symlink(&self, path: &WindowsPath) -> Result<bool> {
        let path = path.clone();
        self.host_call(Operation::IsSymlink, move |state| state.is_symlink(&path))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::super::SmbMappingStatus;
    use super::*;
    use crate::api::{Secret, SmbApi, SmbMapping, SmbRemotePath};
    use crate::testing::ProxyRelease;

    const PLUGINS: &str = r"C:\var\lib\kubelet\plugins";

    fn path(p: &str) -> WindowsPath {
        WindowsPath::new(p).unwrap()
    }

    fn mapping(remote: &str, user: &str, link: Option<&str>) -> SmbMapping {
        let mapping = SmbMapping::new(SmbRemotePath::new(remote).unwrap(), user, Secret::new("p"));
        match link {
            Some(link) => mapping.with_local_path(path(link)),
            None => mapping,
        }
    }

    fn host() -> FakeHost {
        FakeHost::builder()
            .dir(PLUGINS)
            .smb_share(r"\\srv\data", "u", "p")
            .build()
    }

    #[tokio::test]
    async fn a_link_to_a_share_folder_leads_somewhere_once_the_folder_is_there() {
        let host = host();
        let link = path(&format!(r"{PLUGINS}\pv"));
        let map = mapping(r"\\srv\data\pv", "u", Some(link.as_str()));
        host.new_smb_global_mapping(&map).await.unwrap();
        // The link is there, and leads nowhere: IsSymlink is false, as
        // upstream's is for a link whose target does not exist.
        assert!(host.path_exists(&link).await.unwrap());
        assert!(!host.is_symlink(&link).await.unwrap());
        assert!(!host.path_exists(&link.join("x").unwrap()).await.unwrap());

        host.add_share_folder(r"\\SRV\Data\PV\x");
        assert!(host.is_symlink(&link).await.unwrap());
        assert!(host.path_exists(&link.join("x").unwrap()).await.unwrap());

        // Deleted on the file server: the link leads nowhere again.
        assert!(host.remove_share_folder(r"\\srv\data\pv"));
        assert!(!host.share_folder_exists(r"\\srv\data\pv\x"), "with it");
        assert!(!host.is_symlink(&link).await.unwrap());
        assert!(!host.remove_share_folder(r"\\srv\data"), "never the root");
        assert!(host.share_folder_exists(r"\\srv\data"));
    }

    #[tokio::test]
    async fn folders_are_made_and_removed_on_the_share_through_a_link() {
        let host = host();
        let root_link = path(&format!(r"{PLUGINS}\root"));
        let map = mapping(r"\\srv\data", "u", Some(root_link.as_str()));
        host.new_smb_global_mapping(&map).await.unwrap();
        assert!(
            host.is_symlink(&root_link).await.unwrap(),
            "a root is there"
        );

        let deep = root_link.join(r"pv\sub").unwrap();
        host.mkdir(&deep).await.unwrap();
        host.mkdir(&deep).await.unwrap(); // `os.MkdirAll`: there already
        assert!(host.share_folder_exists(r"\\srv\data\pv\sub"));
        assert_eq!(host.entry(deep.as_str()), None, "not on the node");
        // A link of a volume's own to the folder now leads somewhere.
        let pv_link = path(&format!(r"{PLUGINS}\pv"));
        let pv = mapping(r"\\srv\data\pv", "u", Some(pv_link.as_str()));
        host.new_smb_global_mapping(&pv).await.unwrap();
        assert!(host.is_symlink(&pv_link).await.unwrap());

        let folder = root_link.join("pv").unwrap();
        assert!(host.rmdir(&folder, false).await.is_err(), "not empty");
        host.rmdir_contents(&pv_link).await.unwrap();
        assert!(!host.share_folder_exists(r"\\srv\data\pv\sub"));
        host.mkdir(&deep).await.unwrap();
        host.rmdir(&folder, true).await.unwrap();
        assert!(!host.share_folder_exists(r"\\srv\data\pv"));
        host.rmdir(&folder, true).await.unwrap(); // gone already: done
        assert!(host.rmdir(&folder, false).await.is_err());
        // The links stay.
        assert!(host.path_exists(&pv_link).await.unwrap());
    }

    #[tokio::test]
    async fn nothing_is_made_on_a_share_without_a_usable_mapping() {
        let host = host();
        let root_link = path(&format!(r"{PLUGINS}\root"));
        let map = mapping(r"\\srv\data", "u", Some(root_link.as_str()));
        host.new_smb_global_mapping(&map).await.unwrap();
        let folder = root_link.join("pv").unwrap();

        host.set_smb_mapping_status(r"\\srv\data", SmbMappingStatus::Disconnected);
        assert!(host.mkdir(&folder).await.is_err());
        assert!(host.path_exists(&folder).await.is_err(), "error 64");
        host.remove_smb_global_mapping(&SmbRemotePath::new(r"\\srv\data").unwrap())
            .await
            .unwrap();
        assert!(host.mkdir(&folder).await.is_err());
        assert!(!host.share_folder_exists(r"\\srv\data\pv"));
        // The link itself is there whatever the share does.
        assert!(host.path_exists(&root_link).await.unwrap());
    }

    #[tokio::test]
    async fn is_symlink_looks_at_a_link_target_without_following_it() {
        // Upstream's IsSymlink: `os.Lstat` of the target, which is there
        // when the target is a link, wherever that one leads.
        let host = host();
        let staging = path(&format!(r"{PLUGINS}\staging"));
        let map = mapping(r"\\srv\data\missing", "u", Some(staging.as_str()));
        host.new_smb_global_mapping(&map).await.unwrap();
        let publish = path(&format!(r"{PLUGINS}\publish"));
        host.create_symlink(&staging, &publish).await.unwrap();
        assert!(!host.is_symlink(&staging).await.unwrap());
        assert!(host.is_symlink(&publish).await.unwrap());
        // Through both links, the share's folder decides.
        assert!(!host.path_exists(&publish.join("x").unwrap()).await.unwrap());
        assert!(host.mkdir(&publish.join("x").unwrap()).await.is_err());
        // A link that leads nowhere is no folder to make: `os.MkdirAll`.
        assert!(host.mkdir(&staging).await.is_err());
    }

    #[tokio::test]
    async fn before_v1_1_2_a_mapping_whose_folder_is_missing_is_made_again() {
        // The proxy asks `PathValid` of the mapped path, which was the
        // remote path itself before v1.1.2: a missing folder does not
        // answer, and its mapping is removed and made again (its
        // credentials checked).
        let host = FakeHost::builder()
            .smb_share(r"\\srv\data", "u", "p")
            .share_folder(r"\\srv\data\kept")
            .release(ProxyRelease::V1_1_1)
            .build();
        let wrong = |remote: &str| {
            SmbMapping::new(SmbRemotePath::new(remote).unwrap(), "u", Secret::new("x"))
        };
        host.map_smb_outside(r"\\srv\data\kept", "u", "p");
        host.map_smb_outside(r"\\srv\data\missing", "u", "p");
        host.new_smb_global_mapping(&wrong(r"\\srv\data\kept"))
            .await
            .unwrap();
        let refused = (host
            .new_smb_global_mapping(&wrong(r"\\srv\data\missing"))
            .await)
            .unwrap_err();
        assert_eq!(refused.host_cause(), Some(crate::HostCause::LogonFailure));
        assert_eq!(host.smb_mappings(), [r"\\srv\data\kept"]);
    }

    #[tokio::test]
    async fn is_symlink_of_a_share_root_answers_while_the_share_does() {
        let host = FakeHost::builder()
            .smb_share(r"\\srv\data", "u", "p")
            .build();
        let share = SmbRemotePath::new(r"\\SRV\Data\pv").unwrap();
        let root = WindowsPath::share_root_of(&share).unwrap();
        assert_eq!(root.as_str(), r"\\srv\data\");
        // No mapping: the proxy's account has no credentials for it.
        let refused = host.is_symlink(&root).await.unwrap_err();
        assert_eq!(refused.host_cause(), Some(crate::HostCause::LogonFailure));
        host.map_smb_outside(r"\\srv\data", "u", "p");
        assert!(!host.is_symlink(&root).await.unwrap());
        host.set_smb_mapping_status(r"\\srv\data", SmbMappingStatus::Disconnected);
        let broken = host.is_symlink(&root).await.unwrap_err();
        assert_eq!(
            broken.host_cause(),
            Some(crate::HostCause::NetworkNameDeleted)
        );
        // The other calls refuse it, as the proxy's path checks do.
        assert!(host.path_exists(&root).await.is_err());
        assert!(host.mkdir(&root).await.is_err());
    }

    #[test]
    #[should_panic(expected = "add the share first")]
    fn a_folder_needs_its_share() {
        let _ = FakeHost::builder().share_folder(r"\\srv\data\pv");
    }
}
