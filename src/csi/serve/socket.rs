//! The socket file of a `unix://` endpoint: bound owner-only (aside, then
//! linked into place), an earlier run's stale socket removed first but a
//! live instance's left, and removed at the end only if still this
//! listener's.

use std::path::PathBuf;

use super::Bound;

#[cfg(unix)]
pub(super) async fn bind_unix(path: &str) -> Result<Bound, String> {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    own_folder(path)?;
    // A socket a crashed run left: only a socket no one serves is
    // removed, never a file, nor a live instance's socket.
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if meta.file_type().is_socket() {
            match std::os::unix::net::UnixStream::connect(path) {
                Ok(_) => return Err(served_already(path)),
                // No one listens: an earlier run's.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {}
                Err(e) => {
                    return Err(format!(
                        "a socket is at {path}, and whether an instance serves it could \
                         not be told ({e}): it was left as it is"
                    ))
                }
            }
            std::fs::remove_file(path).map_err(|e| format!("the old socket stays: {e}"))?;
        }
    }
    let listener = match bind_privately(path) {
        Some(listener) => listener,
        // A path too long for a folder beside it (or a folder that takes
        // none): bound in place, and made owner-only at once.
        None => {
            tracing::warn!(
                path,
                "the socket could not be made in a folder of its own: bound in place, \
                 reachable with the umask's mode until it is made owner-only"
            );
            let listener = tokio::net::UnixListener::bind(path).map_err(|e| e.to_string())?;
            let owner_only = std::fs::Permissions::from_mode(0o600);
            std::fs::set_permissions(path, owner_only)
                .map_err(|e| format!("the socket could not be made owner-only: {e}"))?;
            listener
        }
    };
    Ok(Bound::Unix(listener, SocketFile::made(path)))
}

/// Binds the socket in a folder of its own beside `path` (mode 0700, so
/// that no one else can reach it while its mode is the umask's), makes it
/// owner-only, then gives it its name with a hard link, which never
/// replaces a file someone else put there. `None` when the folder or the
/// socket in it cannot be made (a path near the 107-byte limit, a folder
/// that does not allow it): the caller binds in place.
#[cfg(unix)]
fn bind_privately(path: &str) -> Option<tokio::net::UnixListener> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    use std::sync::atomic::{AtomicU32, Ordering};
    static BINDS: AtomicU32 = AtomicU32::new(0);
    let parent = std::path::Path::new(path).parent()?;
    // A name no other bind uses: the process (a container's is often 1 at
    // every start), this bind, and the time; one a crash left is passed by.
    let made = (0..4).find_map(|_| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.subsec_nanos());
        let bind = BINDS.fetch_add(1, Ordering::Relaxed);
        let name = format!(".csi-bind-{}-{bind}-{nanos:x}", std::process::id());
        let folder = parent.join(name);
        let created = std::fs::DirBuilder::new().mode(0o700).create(&folder);
        created.ok().map(|()| folder)
    });
    let folder = made?;
    let private = folder.join("s");
    let bound = (|| {
        let listener = tokio::net::UnixListener::bind(&private).ok()?;
        let owner_only = std::fs::Permissions::from_mode(0o600);
        std::fs::set_permissions(&private, owner_only).ok()?;
        Some(listener)
    })();
    let named =
        bound.and_then(|listener| std::fs::hard_link(&private, path).ok().map(|_| listener));
    let _ = std::fs::remove_file(&private);
    let _ = std::fs::remove_dir(&folder);
    named
}

#[cfg(all(test, unix))]
mod private_bind_tests {
    use std::os::unix::fs::PermissionsExt;

    #[tokio::test]
    async fn the_socket_is_made_aside_and_linked_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("csi.sock");
        let listener = super::bind_privately(path.to_str().unwrap());
        assert!(listener.is_some(), "bound aside");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let entries: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(entries.len(), 1, "no folder left: {entries:?}");
        // A file at the path is never replaced: no socket there.
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "a file").unwrap();
        assert!(super::bind_privately(path.to_str().unwrap()).is_none());
        assert_eq!(std::fs::read(&path).unwrap(), b"a file");
    }
}

/// Makes the socket's folder owner-only if it is missing (kubelet's
/// plugin folder is not there on a fresh node), and refuses one that
/// someone else may write to: they could put their own socket in its
/// place. kubelet's own (root's, 0750 or 0755) will do.
#[cfg(any(unix, windows))]
pub(super) fn own_folder(path: &str) -> Result<(), String> {
    let folder = match std::path::Path::new(path).parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => std::path::Path::new("."),
    };
    let fault = |why: String| format!("the socket's folder {}: {why}", folder.display());
    crate::owner_only::own_folder(folder).map_err(fault)
}

/// Another instance serves the socket at `path`.
#[cfg(any(unix, windows))]
fn served_already(path: &str) -> String {
    format!(
        "another instance of the plugin serves {path} (a connection to it succeeded): \
         one instance per endpoint; it was left as it is"
    )
}

/// The socket file this listener made: removed at the end only if it is
/// still the one made (a newer instance may have replaced it).
#[derive(Debug)]
pub(super) struct SocketFile {
    pub(super) path: PathBuf,
    #[cfg(unix)]
    made: Option<(u64, u64)>,
}

impl SocketFile {
    fn made(path: &str) -> Self {
        let path = PathBuf::from(path);
        Self {
            #[cfg(unix)]
            made: identity(&path),
            path,
        }
    }

    /// Removes the socket file if it is still the one this listener made
    /// (the same device and inode) and no one answers on it (an inode
    /// number may be used again for a newer instance's socket).
    #[cfg(unix)]
    pub(super) fn remove(self) {
        let same = self.made.is_some() && self.made == identity(&self.path);
        if same && std::os::unix::net::UnixStream::connect(&self.path).is_err() {
            let _ = std::fs::remove_file(&self.path);
            return;
        }
        tracing::info!(
            path = %self.path.display(),
            "the socket file is not this instance's any more: left as it is"
        );
    }

    /// Leaves the socket file: on Windows nothing tells this instance's
    /// socket from a newer one's made at the same path (NTFS gives a name
    /// made again soon its old creation time), and the bridge's accept
    /// thread still answers on it. The next start removes it once a
    /// connection to it fails.
    #[cfg(windows)]
    pub(super) fn remove(self) {
        tracing::debug!(path = %self.path.display(), "the socket file is left for the next start");
    }
}

#[cfg(unix)]
fn identity(path: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).ok()?;
    Some((meta.dev(), meta.ino()))
}

#[cfg(windows)]
pub(super) async fn bind_unix(path: &str) -> Result<Bound, String> {
    own_folder(path)?;
    // A socket left by an earlier run would refuse the bind: removed once
    // a connection to it failed, and only if it is an AF_UNIX socket's
    // reparse point (a file, a link or a deduplicated file is someone
    // else's, and is never removed).
    if std::fs::symlink_metadata(path).is_ok() {
        match reparse_tag(path) {
            Ok(Some(AF_UNIX_TAG)) => {}
            Ok(_) => {
                return Err(format!(
                    "{path} is not a socket an earlier run left (a file, a link or another \
                     reparse point): it was left as it is"
                ))
            }
            Err(e) => {
                return Err(format!(
                    "something is at {path}, and what it is could not be told ({e}): it \
                     was left as it is"
                ))
            }
        }
        match uds_windows::UnixStream::connect(path) {
            Ok(_) => return Err(served_already(path)),
            // No one listens: an earlier run's.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {}
            Err(e) => {
                return Err(format!(
                    "a socket is at {path}, and whether an instance serves it could \
                     not be told ({e}): it was left as it is"
                ))
            }
        }
        std::fs::remove_file(path).map_err(|e| format!("the old socket stays: {e}"))?;
    }
    let listener = crate::csi::blocking_unix::bind(path)?;
    Ok(Bound::WindowsUnix(listener, SocketFile::made(path)))
}

/// The `IO_REPARSE_TAG_AF_UNIX` of an AF_UNIX socket's file.
#[cfg(windows)]
const AF_UNIX_TAG: u32 = 0x8000_0023;

/// The reparse tag of what is at `path` (`None`: no reparse point), as
/// the folder's listing says, without opening it.
#[cfg(windows)]
fn reparse_tag(path: &str) -> std::io::Result<Option<u32>> {
    use windows_sys::Win32::Foundation::INVALID_HANDLE_VALUE;
    use windows_sys::Win32::Storage::FileSystem::{
        FindClose, FindFirstFileW, FILE_ATTRIBUTE_REPARSE_POINT, WIN32_FIND_DATAW,
    };
    // A wildcard would list another file.
    if path.contains(['*', '?']) {
        return Err(std::io::ErrorKind::InvalidInput.into());
    }
    let wide: Vec<u16> = path.encode_utf16().chain([0]).collect();
    // SAFETY: all-zero is a valid WIN32_FIND_DATAW; `wide` is
    // NUL-terminated; the search handle is closed once.
    unsafe {
        let mut found: WIN32_FIND_DATAW = std::mem::zeroed();
        let search = FindFirstFileW(wide.as_ptr(), &mut found);
        if search == INVALID_HANDLE_VALUE {
            return Err(std::io::Error::last_os_error());
        }
        FindClose(search);
        // dwReserved0 holds the tag of a reparse point.
        Ok((found.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT != 0)
            .then_some(found.dwReserved0))
    }
}

#[cfg(not(any(unix, windows)))]
pub(super) async fn bind_unix(_: &str) -> Result<Bound, String> {
    Err("no Unix sockets on this platform".into())
}
