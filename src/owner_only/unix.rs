//! Owner-only by owner and mode bits.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::Path;

pub(super) fn make_folder(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

pub(super) fn check_folder(dir: &Path) -> Result<(), String> {
    let meta = fs::metadata(dir).map_err(|e| format!("cannot read it: {e}"))?;
    if !meta.is_dir() {
        return Err("it is not a folder".into());
    }
    check(&meta, "chmod 700", false)
}

pub(super) fn check_file(file: &fs::File, _: &Path, secret: bool) -> Result<(), String> {
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read it: {e}"))?;
    check(&meta, "chmod 600", secret)
}

/// Owned by this process's user or root, writable by neither group nor
/// others (for a secret, not readable either).
fn check(meta: &fs::Metadata, mend: &str, secret: bool) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me && meta.uid() != 0 {
        return Err(format!(
            "it belongs to user {}, not to this process's user {me} or root: only the \
             plugin's own will do; nothing was taken from it",
            meta.uid()
        ));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(format!(
            "others may write to it (mode {mode:o}); make it owner-only ({mend})"
        ));
    }
    if secret && mode & 0o044 != 0 {
        return Err(format!(
            "others may read it (mode {mode:o}); make it owner-only ({mend})"
        ));
    }
    Ok(())
}
