//! The state folder as a privileged service keeps it: made owner-only,
//! refused when others may write to it (its journal drives unmounts,
//! offlines and unmappings), and held by one process at a time through a
//! lock file that names the holder. Two plugins on one folder would
//! interleave their journals and undo each other's work.

use std::collections::BTreeSet;
use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::mount::fingerprint::{hex, unhex, Key};

/// The lock file in the state folder; it holds the holder's process ID.
pub(crate) const LOCK_FILE: &str = "instance.lock";

/// The folders this process holds, and their locked files: held for the
/// process's life (a lock released while a mounter of the process still
/// writes would let a second process in).
static HELD: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
static FILES: Mutex<Vec<fs::File>> = Mutex::new(Vec::new());

/// Makes `dir` (owner-only where the platform says so by mode bits),
/// checks that no one else may write to it, and takes its instance lock.
///
/// # Errors
///
/// [`Error::Configuration`] naming the folder: it cannot be made or read,
/// others may write to it, or another process holds it (named by its ID).
pub(crate) fn open(dir: &Path) -> Result<()> {
    make_owner_only(dir)?;
    check_not_writable_by_others(dir)?;
    hold(dir)
}

#[cfg(unix)]
fn make_owner_only(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => Ok(()),
        Err(e) => Err(unusable(dir, format!("cannot make it: {e}"))),
    }
}

#[cfg(not(unix))]
fn make_owner_only(dir: &Path) -> Result<()> {
    // A new folder inherits its parent's ACL: the plugin's host folder
    // (C:\var\lib\kubelet\plugins\...) admits administrators and SYSTEM.
    fs::create_dir_all(dir).map_err(|e| unusable(dir, format!("cannot make it: {e}")))
}

#[cfg(unix)]
fn check_not_writable_by_others(dir: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = fs::metadata(dir).map_err(|e| unusable(dir, format!("cannot read it: {e}")))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me && meta.uid() != 0 {
        return Err(unusable(
            dir,
            format!(
                "it belongs to user {}, not to this process's user {me} or root: its \
                 journal drives unmounts and offlines, so only the plugin's own folder will do",
                meta.uid()
            ),
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(unusable(
            dir,
            format!(
                "others may write to it (mode {:o}): its journal drives unmounts and \
                 offlines; make it owner-only (chmod 700)",
                meta.mode() & 0o7777
            ),
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_not_writable_by_others(_: &Path) -> Result<()> {
    // Windows: the folder's ACL is not read (docs/security.md says so).
    Ok(())
}

/// Takes the folder's instance lock for the rest of the process's life
/// (at once again in a process that holds it already).
fn hold(dir: &Path) -> Result<()> {
    let canonical = dir
        .canonicalize()
        .map_err(|e| unusable(dir, format!("cannot read it: {e}")))?;
    let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
    if held.contains(&canonical) {
        return Ok(());
    }
    let file = lock(dir)?;
    FILES.lock().unwrap_or_else(|e| e.into_inner()).push(file);
    held.insert(canonical);
    Ok(())
}

/// Opens the folder's lock file, locks it without waiting, and writes
/// this process's ID in it: the locked file, kept open. Another holder is
/// an error that names it.
pub(crate) fn lock(dir: &Path) -> Result<fs::File> {
    let path = dir.join(LOCK_FILE);
    let mut file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| unusable(dir, format!("cannot open its lock file: {e}")))?;
    match try_lock(&file) {
        Ok(true) => {}
        Ok(false) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            let holder = match holder.is_empty() {
                true => "another process".to_owned(),
                false => format!("process {holder}"),
            };
            return Err(unusable(
                dir,
                format!(
                    "it is in use by {holder} (another instance of the plugin: one \
                     instance per state folder); nothing was touched"
                ),
            ));
        }
        Err(e) => return Err(unusable(dir, format!("cannot lock it: {e}"))),
    }
    let written = file
        .set_len(0)
        .and_then(|()| file.seek(SeekFrom::Start(0)))
        .and_then(|_| writeln!(file, "{}", std::process::id()))
        .and_then(|()| file.sync_data());
    written.map_err(|e| unusable(dir, format!("cannot write its lock file: {e}")))?;
    Ok(file)
}

/// An exclusive lock on `file` without waiting: whether it was taken.
#[cfg(unix)]
fn try_lock(file: &fs::File) -> std::io::Result<bool> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: the descriptor is open for the call's length.
    let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if locked == 0 {
        return Ok(true);
    }
    let error = std::io::Error::last_os_error();
    match error.kind() {
        std::io::ErrorKind::WouldBlock => Ok(false),
        _ => Err(error),
    }
}

/// An exclusive lock on `file` without waiting: whether it was taken.
/// Only a byte far past the process ID is locked, so that another process
/// can still read who holds it.
#[cfg(windows)]
fn try_lock(file: &fs::File) -> std::io::Result<bool> {
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::Foundation::ERROR_LOCK_VIOLATION;
    use windows_sys::Win32::Storage::FileSystem::{
        LockFileEx, LOCKFILE_EXCLUSIVE_LOCK, LOCKFILE_FAIL_IMMEDIATELY,
    };
    use windows_sys::Win32::System::IO::OVERLAPPED;
    // SAFETY: an all-zero OVERLAPPED is valid; its offset is set below.
    let mut overlapped: OVERLAPPED = unsafe { std::mem::zeroed() };
    overlapped.Anonymous.Anonymous.OffsetHigh = 1;
    // SAFETY: the handle is open, and `overlapped` outlives the call
    // (which completes at once: the handle is synchronous).
    let locked = unsafe {
        LockFileEx(
            file.as_raw_handle() as _,
            LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY,
            0,
            1,
            0,
            &mut overlapped,
        )
    };
    if locked != 0 {
        return Ok(true);
    }
    let error = std::io::Error::last_os_error();
    match error.raw_os_error() {
        Some(code) if code == ERROR_LOCK_VIOLATION as i32 => Ok(false),
        _ => Err(error),
    }
}

#[cfg(not(any(unix, windows)))]
fn try_lock(_: &fs::File) -> std::io::Result<bool> {
    Ok(true)
}

/// The file of the node-local secret that keys credential fingerprints.
pub(crate) const KEY_FILE: &str = "credential.key";

/// The node-local secret in `dir` (made, the owner's alone, with 32
/// random bytes from the system, the first time).
///
/// # Errors
///
/// [`Error::Configuration`] naming the folder: the key cannot be read,
/// made, or is not one.
pub(crate) fn credential_key(dir: &Path) -> Result<Key> {
    let path = dir.join(KEY_FILE);
    let read = |text: &str| -> Result<Key> {
        unhex(text.trim())
            .ok_or_else(|| unusable(dir, format!("{KEY_FILE} is not a key of 64 hex digits")))
    };
    match fs::read_to_string(&path) {
        Ok(text) => return read(&text),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(unusable(dir, format!("cannot read {KEY_FILE}: {e}")))
        }
        Err(_) => {}
    }
    let key =
        random_key().map_err(|e| unusable(dir, format!("no random key could be made: {e}")))?;
    let text = hex(&key);
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(&path) {
        Ok(mut file) => {
            let written = writeln!(file, "{text}").and_then(|()| file.sync_all());
            written.map_err(|e| unusable(dir, format!("cannot write {KEY_FILE}: {e}")))?;
            Ok(key)
        }
        // Made meanwhile: that one is the key.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let text = fs::read_to_string(&path)
                .map_err(|e| unusable(dir, format!("cannot read {KEY_FILE}: {e}")))?;
            read(&text)
        }
        Err(e) => Err(unusable(dir, format!("cannot make {KEY_FILE}: {e}"))),
    }
}

/// 32 bytes from the system's random source.
#[cfg(unix)]
fn random_key() -> std::io::Result<Key> {
    let mut key = [0u8; 32];
    fs::File::open("/dev/urandom")?.read_exact(&mut key)?;
    Ok(key)
}

/// 32 bytes from the system's preferred random number generator.
#[cfg(windows)]
fn random_key() -> std::io::Result<Key> {
    use windows_sys::Win32::Security::Cryptography::{
        BCryptGenRandom, BCRYPT_USE_SYSTEM_PREFERRED_RNG,
    };
    let mut key = [0u8; 32];
    // SAFETY: the buffer is valid for its length; no algorithm handle is
    // needed with the system's preferred generator.
    let status = unsafe {
        BCryptGenRandom(
            std::ptr::null_mut(),
            key.as_mut_ptr(),
            key.len() as u32,
            BCRYPT_USE_SYSTEM_PREFERRED_RNG,
        )
    };
    match status {
        0 => Ok(key),
        status => Err(std::io::Error::other(format!(
            "BCryptGenRandom failed with status {status:#x}"
        ))),
    }
}

#[cfg(not(any(unix, windows)))]
fn random_key() -> std::io::Result<Key> {
    Err(std::io::Error::other("no random source on this platform"))
}

fn unusable(dir: &Path, why: String) -> Error {
    Error::Configuration {
        setting: format!("mounter state folder {}", dir.display()),
        reason: why,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_folder_is_refused_to_another_holder_with_its_process_id() {
        let dir = tempfile::tempdir().unwrap();
        open(dir.path()).unwrap();
        // Again in this process: it holds the folder already.
        open(dir.path()).unwrap();
        // Another open file description is another holder, as another
        // process would be.
        let error = lock(dir.path()).unwrap_err();
        let text = error.to_string();
        assert!(matches!(error, Error::Configuration { .. }), "{text}");
        assert!(
            text.contains(&format!("in use by process {}", std::process::id())),
            "{text}"
        );
        assert!(text.contains(&dir.path().display().to_string()), "{text}");
    }

    #[test]
    fn the_credential_key_is_made_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let key = credential_key(dir.path()).unwrap();
        assert_ne!(key, [0; 32]);
        assert_eq!(credential_key(dir.path()).unwrap(), key);
        let other = tempfile::tempdir().unwrap();
        assert_ne!(credential_key(other.path()).unwrap(), key);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let meta = fs::metadata(dir.path().join(KEY_FILE)).unwrap();
            assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        }
        fs::write(dir.path().join(KEY_FILE), "not hex").unwrap();
        let error = credential_key(dir.path()).unwrap_err().to_string();
        assert!(error.contains("not a key"), "{error}");
    }

    #[cfg(unix)]
    #[test]
    fn a_folder_others_may_write_to_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        open(&state).unwrap();
        let mode = fs::metadata(&state).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "made owner-only");
        let shared = dir.path().join("shared");
        fs::create_dir(&shared).unwrap();
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o777)).unwrap();
        let error = open(&shared).unwrap_err().to_string();
        assert!(error.contains("others may write to it"), "{error}");
        assert!(error.contains("shared"), "{error}");
    }
}
