//! The seam between the filesystem group and the host's symbolic links.
//!
//! Links go through [`Links`] so that they can be tested where the host
//! cannot make them: Wine's `CreateSymbolicLinkW` reports success and
//! creates nothing. The real implementation, [`OsLinks`], checks that a
//! link it made is there, so such a host gets an error, never a false
//! success.

use std::fs;
use std::io;
use std::os::windows::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// What is at a path, without following a link at its end (`Lstat`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// Nothing.
    Missing,
    /// A directory.
    Directory,
    /// Anything else that is not a link: a file.
    File,
    /// A directory link: a symbolic link made for a directory (or another
    /// name-surrogate reparse point, such as a junction or a volume mount
    /// point), and where it leads.
    Link(PathBuf),
    /// A file symbolic link, and where it leads. Windows keeps the two
    /// kinds apart: each is removed as what it was made for.
    FileLink(PathBuf),
}

/// What is there, in words, for error texts (paths as Windows writes
/// them, not escaped).
impl std::fmt::Display for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Entry::Missing => f.write_str("nothing"),
            Entry::Directory => f.write_str("a directory"),
            Entry::File => f.write_str("a file"),
            Entry::Link(target) => write!(f, "a link to {}", target.display()),
            Entry::FileLink(target) => write!(f, "a file link to {}", target.display()),
        }
    }
}

/// How the filesystem group sees and makes links.
pub(crate) trait Links: Send + Sync + 'static {
    /// What is at `path`.
    fn entry(&self, path: &Path) -> io::Result<Entry>;

    /// Creates a directory link at `link` to `target`.
    fn create_dir_link(&self, target: &Path, link: &Path) -> io::Result<()>;

    /// Removes the directory link at `path` (`RemoveDirectoryW`), not
    /// what it leads to.
    fn remove_dir_link(&self, path: &Path) -> io::Result<()>;

    /// Removes the file link at `path` (`DeleteFileW`), not what it leads
    /// to. `RemoveDirectoryW` refuses one (267, `ERROR_DIRECTORY`).
    fn remove_file_link(&self, path: &Path) -> io::Result<()>;
}

/// The host's own links, through the Win32 file APIs.
pub(crate) struct OsLinks;

impl Links for OsLinks {
    fn entry(&self, path: &Path) -> io::Result<Entry> {
        match fs::symlink_metadata(path) {
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(Entry::Missing),
            Err(error) => Err(error),
            Ok(meta) if meta.file_type().is_symlink_file() => {
                Ok(Entry::FileLink(fs::read_link(path)?))
            }
            Ok(meta) if meta.file_type().is_symlink() => Ok(Entry::Link(fs::read_link(path)?)),
            Ok(meta) if meta.is_dir() => Ok(Entry::Directory),
            Ok(_) => Ok(Entry::File),
        }
    }

    fn create_dir_link(&self, target: &Path, link: &Path) -> io::Result<()> {
        // CreateSymbolicLinkW with the directory flag, and unprivileged
        // creation allowed where the host permits it.
        std::os::windows::fs::symlink_dir(target, link)?;
        match self.entry(link)? {
            Entry::Link(_) => Ok(()),
            found => Err(io::Error::other(format!(
                "the host reported the link made, but there is {found} there"
            ))),
        }
    }

    fn remove_dir_link(&self, path: &Path) -> io::Result<()> {
        fs::remove_dir(path)
    }

    fn remove_file_link(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_found_reads_as_words_with_paths_as_written() {
        assert_eq!(Entry::Missing.to_string(), "nothing");
        assert_eq!(Entry::Directory.to_string(), "a directory");
        let link = Entry::Link(PathBuf::from(r"C:\var\lib\kubelet\x"));
        assert_eq!(link.to_string(), r"a link to C:\var\lib\kubelet\x");
        let file = Entry::FileLink(PathBuf::from(r"C:\f"));
        assert_eq!(file.to_string(), r"a file link to C:\f");
    }
}
