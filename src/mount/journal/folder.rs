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
use crate::owner_only;

/// The lock file in the state folder; it holds the holder's process ID.
pub(crate) const LOCK_FILE: &str = "instance.lock";

/// The folders this process holds, and their locked files: held for the
/// process's life (a lock released while a mounter of the process still
/// writes would let a second process in).
static HELD: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
static FILES: Mutex<Vec<fs::File>> = Mutex::new(Vec::new());

/// Makes `dir` owner-only if missing (mode 0700 on Unix, a protected
/// DACL on Windows: `crate::owner_only`), checks that no one else may
/// write to it, and takes its instance lock.
///
/// # Errors
///
/// [`Error::Configuration`] naming the folder: it cannot be made or read,
/// others may write to it (the user or SID named), or another process
/// holds it (named by its ID).
pub(crate) fn open(dir: &Path) -> Result<()> {
    owner_only::own_folder(dir).map_err(|why| {
        unusable(
            dir,
            format!("{why} (its journal drives unmounts, offlines and removals)"),
        )
    })?;
    hold(dir)
}

/// Opens `name` in `dir` with `options`, and checks that it is the
/// plugin's own (a `secret` is not readable by others either): a file
/// someone else planted is refused, never adopted.
pub(crate) fn open_own(
    dir: &Path,
    name: &str,
    options: &fs::OpenOptions,
    secret: bool,
) -> std::io::Result<std::result::Result<fs::File, Error>> {
    let path = dir.join(name);
    let file = options.open(&path)?;
    Ok(match owner_only::check_file(&file, &path, secret) {
        Ok(()) => Ok(file),
        Err(why) => Err(unusable(
            dir,
            format!("{name} will not do: {why}; nothing was read from it"),
        )),
    })
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
    let mut options = fs::OpenOptions::new();
    owner_only::private(options.read(true).write(true).create(true).truncate(false));
    let mut file = open_own(dir, LOCK_FILE, &options, false)
        .map_err(|e| unusable(dir, format!("cannot open its lock file: {e}")))??;
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
    // Only the plugin's own key: one planted before the first start would
    // be known to whoever planted it.
    let read_own = || -> Result<Option<Key>> {
        let cannot = |e: std::io::Error| unusable(dir, format!("cannot read {KEY_FILE}: {e}"));
        let mut file = match open_own(dir, KEY_FILE, fs::OpenOptions::new().read(true), true) {
            Ok(file) => file?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(cannot(e)),
        };
        let mut text = String::new();
        file.read_to_string(&mut text).map_err(cannot)?;
        read(&text).map(Some)
    };
    if let Some(key) = read_own()? {
        return Ok(key);
    }
    let key =
        random_key().map_err(|e| unusable(dir, format!("no random key could be made: {e}")))?;
    let text = hex(&key);
    // Its own DACL on Windows: the folder's ACEs may let others read.
    match owner_only::create_secret(&path) {
        Ok(mut file) => {
            let written = writeln!(file, "{text}").and_then(|()| file.sync_all());
            written.map_err(|e| unusable(dir, format!("cannot write {KEY_FILE}: {e}")))?;
            Ok(key)
        }
        // Made meanwhile: that one is the key.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_own()?
            .ok_or_else(|| unusable(dir, format!("{KEY_FILE} was made and removed meanwhile"))),
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
