//! The filesystem group on the host: what CSI Proxy's host layer does with
//! Go's `os` package, through the same Win32 file APIs (`std::fs`), with
//! links through the [`Links`] seam.

use std::fs;
use std::io;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;

use super::in_flight::InFlight;
use super::links::{Entry, Links};
use super::on_host::{io_error, on_host};
use super::smb::MappingLook;
use crate::api::{FilesystemApi, WindowsPath};
use crate::capability::Operation as Op;
use crate::error::Result;
use crate::group::ApiGroup;
use crate::working_dirs::{self, Rule};

/// `ERROR_FILE_NOT_FOUND`: what `Lstat` of a missing path fails with.
const ERROR_FILE_NOT_FOUND: i32 = 2;
/// `ERROR_ALREADY_EXISTS`: what `CreateSymbolicLinkW` fails with over an
/// existing path.
const ERROR_ALREADY_EXISTS: i32 = 183;

/// The filesystem group, served by the host.
pub(crate) struct HostFilesystem {
    files: Arc<Files>,
    in_flight: Arc<InFlight>,
    /// The global SMB mappings, for `IsSymlink` of a share's root.
    mappings: Option<Arc<MappingLook>>,
}

impl HostFilesystem {
    /// Paths must lie under `working_dirs`; links go through `links`.
    pub fn new(working_dirs: Vec<String>, links: impl Links) -> Self {
        Self {
            files: Arc::new(Files {
                working_dirs,
                links: Box::new(links),
            }),
            in_flight: InFlight::of_process(ApiGroup::Filesystem),
            mappings: None,
        }
    }

    /// `IsSymlink` of a share's root also asks `mappings` whether the
    /// share has a global mapping.
    pub fn with_mappings(mut self, mappings: MappingLook) -> Self {
        self.mappings = Some(Arc::new(mappings));
        self
    }

    /// Checks `paths` against the working directories, then runs `work`
    /// on the host with them.
    async fn run<T: Send + 'static, const N: usize>(
        &self,
        operation: Op,
        paths: [&WindowsPath; N],
        work: impl FnOnce(&Files, [WindowsPath; N]) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        for path in paths {
            working_dirs::check(&self.files.working_dirs, Rule::Components, operation, path)?;
        }
        let object = paths.map(WindowsPath::as_str).join(" -> ");
        let (files, paths) = (self.files.clone(), paths.map(WindowsPath::clone));
        on_host(&self.in_flight, operation, object, move || {
            work(&files, paths)
        })
        .await
    }
}

/// What the operations work on.
pub(crate) struct Files {
    working_dirs: Vec<String>,
    links: Box<dyn Links>,
}

impl Files {
    /// Removes what is at `at`. Forced, as `os.RemoveAll`: everything below
    /// too, and a missing path is fine. Otherwise as `os.Remove`: an empty
    /// directory, a file or a link. A link is removed, never what it leads
    /// to, as what it was made for: a directory link as a directory, a
    /// file link as a file (before this release, a file link could not be
    /// removed).
    fn remove(&self, at: &Path, force: bool) -> io::Result<()> {
        match self.links.entry(at)? {
            Entry::Missing if force => Ok(()),
            Entry::Link(_) => self.links.remove_dir_link(at),
            Entry::FileLink(_) => self.links.remove_file_link(at),
            Entry::Directory if force => fs::remove_dir_all(at),
            Entry::File => fs::remove_file(at),
            // Missing, or not empty: the host's own error says which.
            Entry::Missing | Entry::Directory => fs::remove_dir(at),
        }
    }

    fn entry(&self, operation: Op, path: &WindowsPath) -> Result<Entry> {
        self.links
            .entry(Path::new(path.as_str()))
            .map_err(|e| io_error(operation, path, e))
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl FilesystemApi for HostFilesystem {
    /// By `Lstat`: a link exists wherever it leads.
    async fn path_exists(&self, path: &WindowsPath) -> Result<bool> {
        let op = Op::PathExists;
        self.run(op, [path], move |files, [path]| {
            Ok(files.entry(op, &path)? != Entry::Missing)
        })
        .await
    }

    /// With every missing parent, as `os.MkdirAll`; an existing directory
    /// is fine.
    async fn mkdir(&self, path: &WindowsPath) -> Result<()> {
        let op = Op::Mkdir;
        self.run(op, [path], move |_, [path]| {
            fs::create_dir_all(path.as_str()).map_err(|e| io_error(op, &path, e))
        })
        .await
    }

    /// See [`Files::remove`].
    async fn rmdir(&self, path: &WindowsPath, force: bool) -> Result<()> {
        let op = Op::Rmdir;
        self.run(op, [path], move |files, [path]| {
            (files.remove(Path::new(path.as_str()), force)).map_err(|e| io_error(op, &path, e))
        })
        .await
    }

    /// Removes everything in `path`, keeping `path`; links in it are
    /// removed, not followed.
    async fn rmdir_contents(&self, path: &WindowsPath) -> Result<()> {
        let op = Op::RmdirContents;
        self.run(op, [path], move |files, [path]| {
            let failed = |e: io::Error| io_error(op, &path, e);
            for child in fs::read_dir(path.as_str()).map_err(failed)? {
                let child = child.map_err(failed)?.path();
                (files.remove(&child, true)).map_err(|e| io_error(op, child.display(), e))?;
            }
            Ok(())
        })
        .await
    }

    /// A directory link at `link`; both paths must lie in the working
    /// directories, and nothing may be at `link` yet.
    async fn create_symlink(&self, target: &WindowsPath, link: &WindowsPath) -> Result<()> {
        let op = Op::CreateSymlink;
        self.run(op, [target, link], move |files, [target, link]| {
            if files.entry(op, &link)? != Entry::Missing {
                let exists = io::Error::from_raw_os_error(ERROR_ALREADY_EXISTS);
                return Err(io_error(op, &link, exists));
            }
            files
                .links
                .create_dir_link(Path::new(target.as_str()), Path::new(link.as_str()))
                .map_err(|e| io_error(op, &link, e))
        })
        .await
    }

    /// As the proxy: a link is a mount point while what it names exists
    /// (by `Lstat`, one step); a directory or file is not; a missing path
    /// is an error.
    ///
    /// A share's root (`\\server\share\`, which only the SDK's mounter
    /// asks of, before it first maps the share) with a global mapping,
    /// whatever its status, is `false` at once: the share is mapped on the
    /// node already, by someone. Without one, it is looked at as any
    /// path: `false` when the share answers anyway (the computer
    /// account), Windows' error when it does not.
    async fn is_symlink(&self, path: &WindowsPath) -> Result<bool> {
        let op = Op::IsSymlink;
        if let (Some(mappings), true) = (&self.mappings, path.as_str().starts_with("\\\\")) {
            if mappings.is_mapped(op, path.as_str()).await? {
                return Ok(false);
            }
        }
        // Not checked against the working directories, as by the proxy.
        let (files, path) = (self.files.clone(), path.clone());
        on_host(&self.in_flight, op, path.clone(), move || {
            match files.entry(op, &path)? {
                Entry::Missing => {
                    let missing = io::Error::from_raw_os_error(ERROR_FILE_NOT_FOUND);
                    Err(io_error(op, &path, missing))
                }
                Entry::Link(target) | Entry::FileLink(target) => {
                    // A relative target is relative to the link's folder.
                    let link = Path::new(path.as_str());
                    let target = link
                        .parent()
                        .map_or(target.clone(), |dir| dir.join(&target));
                    let found = files.links.entry(&target);
                    Ok(found.map_err(|e| io_error(op, target.display(), e))? != Entry::Missing)
                }
                Entry::Directory | Entry::File => Ok(false),
            }
        })
        .await
    }
}
