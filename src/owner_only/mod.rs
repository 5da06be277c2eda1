//! Folders and files that only the plugin's own user and the system's
//! administrators may change: the mounter's state folder and its files
//! (the journal's records drive unmounts, offlines and removals; the key
//! keys the credential fingerprints), and the CSI socket's folder (whoever
//! reaches the socket can have the node format). A missing folder is made
//! so; an existing folder or file that someone else may write to (or, for
//! a secret, read) is refused, never adopted.
//!
//! On Unix by owner and mode bits: owned by this process's user or root,
//! and no write bit for group or others. On Windows by owner and DACL
//! (`windows`): owned by SYSTEM, the Administrators or this process's user,
//! and no ACE that lets another SID write, delete or change it.

use std::fs;
use std::path::Path;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as os;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as os;
#[cfg(all(test, windows))]
pub(crate) use windows::set_dacl;

/// Makes `dir` and its missing parents owner-only (mode 0700 on Unix; a
/// protected DACL for SYSTEM, the Administrators and this process's user
/// on Windows). Folders that exist are left as they are: check them with
/// [`check_folder`].
///
/// # Errors
///
/// Why a folder could not be made.
pub(crate) fn make_folder(dir: &Path) -> Result<(), String> {
    #[cfg(any(unix, windows))]
    let made = os::make_folder(dir);
    #[cfg(not(any(unix, windows)))]
    let made = fs::create_dir_all(dir);
    made.map_err(|e| format!("cannot make it: {e}"))
}

/// Whether `dir` is owned by a trusted user and no one else may write to
/// it, delete it or change its permissions (on Windows, nor write to the
/// files made in it, which inherit its ACEs).
///
/// # Errors
///
/// Why it will not do (its owner, or the user or SID that may write),
/// with how to mend it.
pub(crate) fn check_folder(dir: &Path) -> Result<(), String> {
    #[cfg(any(unix, windows))]
    return os::check_folder(dir);
    #[cfg(not(any(unix, windows)))]
    {
        let _ = dir;
        Ok(())
    }
}

/// Makes `dir` owner-only as [`make_folder`] does if it is missing, and
/// checks it as [`check_folder`] does. On Windows, a folder that others
/// may write to but that holds nothing yet is made owner-only first:
/// kubelet makes a plugin's host folder (a `hostPath` of type
/// `DirectoryOrCreate`) with the ACL its parent passes on, which on a stock
/// node lets Users create files. An empty folder has nothing in it to
/// adopt; one that holds anything is refused, and so is one whose owner
/// is not trusted (its owner may change its DACL at any time).
///
/// # Errors
///
/// Why it will not do, with how to mend it.
pub(crate) fn own_folder(dir: &Path) -> Result<(), String> {
    make_folder(dir)?;
    let checked = check_folder(dir);
    #[cfg(windows)]
    if let Err(why) = &checked {
        if is_empty(dir) {
            if let Err(e) = os::protect_folder(dir) {
                tracing::debug!(folder = %dir.display(), error = %e, "could not make the empty folder owner-only");
                return checked;
            }
            // Something put in it meanwhile came in under the old DACL.
            if !is_empty(dir) {
                return Err(format!(
                    "{why}; something was put in it while it was made owner-only"
                ));
            }
            tracing::info!(folder = %dir.display(), "an empty folder others could write to was made owner-only");
            return check_folder(dir);
        }
    }
    checked
}

/// Whether `dir` holds nothing (a folder that cannot be read holds
/// something, as far as this is concerned).
#[cfg(windows)]
fn is_empty(dir: &Path) -> bool {
    fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_none())
}

/// Whether `file` (open, at `path`) is owned by a trusted user and no one
/// else may change it; for a `secret`, nor read it.
///
/// # Errors
///
/// Why it will not do, with how to mend it.
pub(crate) fn check_file(file: &fs::File, path: &Path, secret: bool) -> Result<(), String> {
    #[cfg(any(unix, windows))]
    return os::check_file(file, path, secret);
    #[cfg(not(any(unix, windows)))]
    {
        let _ = (file, path, secret);
        Ok(())
    }
}

/// Makes a new file at `path` for a secret, its owner's alone whatever
/// its folder lets others read (mode 0600 on Unix; on Windows a protected
/// DACL for SYSTEM, the Administrators and this process's user), open
/// for writing.
///
/// # Errors
///
/// As `OpenOptions::create_new`: `AlreadyExists` when a file is there.
pub(crate) fn create_secret(path: &Path) -> std::io::Result<fs::File> {
    #[cfg(windows)]
    return os::create_secret(path);
    #[cfg(not(windows))]
    private(fs::OpenOptions::new().write(true).create_new(true)).open(path)
}

/// `options` making a file its owner's alone (mode 0600 on Unix, whatever
/// the umask; on Windows a file inherits its owner-only folder's ACEs).
pub(crate) fn private(options: &mut fs::OpenOptions) -> &mut fs::OpenOptions {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(options, 0o600);
    options
}
