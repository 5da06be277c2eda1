//! The filesystem group of the fake host, with the proxy's path checks.

use async_trait::async_trait;

use super::faults::WindowsError;
use super::state::{key, parent, HostState, PathEntry};
use super::{host_error, FakeHost};
use crate::api::{FilesystemApi, WindowsPath};
use crate::capability::Operation;
use crate::error::Result;

impl HostState {
    fn check_exists(&self, operation: Operation, path: &WindowsPath) -> Result<()> {
        if self.tree.exists(path.as_str()) {
            Ok(())
        } else {
            Err(host_error(
                operation,
                format!("{path}: the system cannot find the file specified"),
            ))
        }
    }

    /// `IsSymlink`'s answer for a link to `target`: whether it leads
    /// somewhere; through a share whose mapping is gone or broken, the
    /// error Windows gives the proxy for the share (1326 with no mapping,
    /// 64 for one that broke).
    fn link_answer(&self, op: Operation, target: &str) -> Result<bool> {
        let mut current = target.to_owned();
        for _ in 0..32 {
            if current.starts_with("\\\\") {
                return match self.smb_access(&current) {
                    super::smb::SmbAccess::Usable => Ok(true),
                    super::smb::SmbAccess::Broken => Err(super::faults::windows_error(
                        op,
                        WindowsError::NETNAME_DELETED,
                    )),
                    super::smb::SmbAccess::Unmapped => Err(super::faults::windows_error(
                        op,
                        WindowsError::LOGON_FAILURE,
                    )),
                };
            }
            match self.tree.get(&current) {
                Some(PathEntry::Symlink(next)) => current = next,
                Some(_) => return Ok(true),
                None => return Ok(false),
            }
        }
        Ok(false)
    }

    fn rmdir(&mut self, path: &WindowsPath, force: bool) -> Result<()> {
        let op = Operation::Rmdir;
        crate::working_dirs::check(&self.working_dirs, op, path)?;
        // Forced, the proxy runs Go's `os.RemoveAll`, which is content
        // with a path that is not there.
        if force && !self.tree.exists(path.as_str()) {
            return Ok(());
        }
        self.check_exists(op, path)?;
        let below = self.tree.descendants(path.as_str());
        // A mount point is a reparse point: Windows removes it, unforced,
        // whatever the volume holds (and the volume keeps its files).
        let mount_point = matches!(self.tree.get(path.as_str()), Some(PathEntry::MountPoint(_)));
        if !below.is_empty() && !force && !mount_point {
            return Err(host_error(
                op,
                format!("{path}: the directory is not empty"),
            ));
        }
        for child in below {
            self.tree.remove(&child);
        }
        if let Some(PathEntry::MountPoint(volume)) = self.tree.get(path.as_str()) {
            if let Some(v) = self.volumes.get_mut(&volume) {
                v.mounts.remove(&key(path.as_str()));
            }
        }
        self.tree.remove(path.as_str());
        Ok(())
    }

    fn create_symlink(&mut self, target: &WindowsPath, link: &WindowsPath) -> Result<()> {
        let op = Operation::CreateSymlink;
        crate::working_dirs::check(&self.working_dirs, op, target)?;
        crate::working_dirs::check(&self.working_dirs, op, link)?;
        if self.tree.exists(link.as_str()) {
            return Err(host_error(
                op,
                format!("{link}: cannot create a file when that file already exists"),
            ));
        }
        let link_key = key(link.as_str());
        if parent(&link_key).is_some_and(|p| !self.tree.exists(p)) {
            return Err(host_error(
                op,
                format!("{link}: the system cannot find the path specified"),
            ));
        }
        self.tree
            .insert(link.as_str(), PathEntry::Symlink(target.to_string()));
        Ok(())
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl FilesystemApi for FakeHost {
    async fn path_exists(&self, path: &WindowsPath) -> Result<bool> {
        let (op, path) = (Operation::PathExists, path.clone());
        self.host_call(op, move |state| {
            crate::working_dirs::check(&state.working_dirs, op, &path)?;
            // Like the proxy's `os.Lstat`: a symlink exists, wherever it leads.
            Ok(state.tree.exists(path.as_str()))
        })
        .await
    }

    async fn mkdir(&self, path: &WindowsPath) -> Result<()> {
        let (op, path) = (Operation::Mkdir, path.clone());
        self.host_call(op, move |state| {
            crate::working_dirs::check(&state.working_dirs, op, &path)?;
            state.mkdir_all(path.as_str());
            Ok(())
        })
        .await
    }

    async fn rmdir(&self, path: &WindowsPath, force: bool) -> Result<()> {
        let path = path.clone();
        self.host_call(Operation::Rmdir, move |state| state.rmdir(&path, force))
            .await
    }

    async fn rmdir_contents(&self, path: &WindowsPath) -> Result<()> {
        let (op, path) = (Operation::RmdirContents, path.clone());
        self.host_call(op, move |state| {
            crate::working_dirs::check(&state.working_dirs, op, &path)?;
            state.check_exists(op, &path)?;
            for child in state.tree.descendants(path.as_str()) {
                state.tree.remove(&child);
            }
            Ok(())
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
        let (op, path) = (Operation::IsSymlink, path.clone());
        self.host_call(op, move |state| match state.tree.get(path.as_str()) {
            None => Err(host_error(
                op,
                format!("{path}: the system cannot find the file specified"),
            )),
            Some(PathEntry::Symlink(target)) => state.link_answer(op, &target),
            Some(PathEntry::MountPoint(_)) => Ok(true),
            Some(PathEntry::Directory) => Ok(false),
        })
        .await
    }
}
