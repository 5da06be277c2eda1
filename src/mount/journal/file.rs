//! The journal's file: opened (a cut last change dropped, format 1
//! rewritten), appended to and synced, rewritten whole when long.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use super::folder::open_own;
use super::read::read_bytes;
use super::records::Records;
use super::text::{seal, HEADER_2};
use crate::error::{Error, Result};
use crate::owner_only;

/// The file is rewritten whole once it holds more change lines than this
/// and than twice the records: the rewrite's cost, spread over the changes
/// since the last one, stays a few lines' worth per change.
const REWRITE_AFTER_LINES: usize = 4_096;

/// The journal's file, open for appending.
#[derive(Debug)]
pub(super) struct JournalFile {
    path: PathBuf,
    out: Option<fs::File>,
    /// Its length up to the end of the last change written.
    length: u64,
    /// Change lines written since it was last rewritten whole.
    lines: usize,
    /// A failed write could not be cut back: rewrite the file whole.
    damaged: bool,
    pub(super) writes: usize,
}

impl JournalFile {
    /// Opens the file at `path`, or makes it; its records. A last change
    /// left without its `commit` (a crash while it was written) is cut
    /// off; a file in format 1 is rewritten in format 2.
    pub(super) fn open(path: &Path) -> Result<(Self, Records)> {
        let mut file = Self {
            path: path.to_owned(),
            out: None,
            length: 0,
            lines: 0,
            damaged: false,
            writes: 0,
        };
        // A rewrite's leftover is replaced at the next rewrite, never
        // renamed into place as it is; one planted is refused, as the
        // journal would be.
        if let Some(planted) = own(&path.with_extension("new"))?.err() {
            return Err(planted);
        }
        let text = match own(path)? {
            Ok(Some(text)) => text,
            Ok(None) => {
                file.rewrite("")?;
                return Ok((file, Records::default()));
            }
            Err(planted) => return Err(planted),
        };
        let read = read_bytes(&text).map_err(|why| Error::Configuration {
            setting: format!("mounter journal {}", path.display()),
            reason: format!(
                "{why}; nothing was done. Run the build that wrote it, or move it away \
                 to start afresh (what it recorded is then forgotten, and the mounter \
                 destroys nothing that only those records proved its own)"
            ),
        })?;
        if read.format == 1 || read.length < text.len() as u64 {
            if read.format == 2 {
                tracing::warn!(
                    journal = %path.display(),
                    "the mounter journal's last change was cut short or torn (a crash while it was written): it is dropped"
                );
            }
            file.rewrite(&read.records.lines())?;
        } else {
            file.length = read.length;
            file.lines = read.lines;
        }
        Ok((file, read.records))
    }

    pub(super) fn due_for_rewrite(&self, more: usize, records: usize) -> bool {
        let lines = self.lines + more;
        self.damaged || (lines > REWRITE_AFTER_LINES && lines > 2 * records)
    }

    /// Appends `text` (`count` lines) and syncs it. On failure, the file
    /// is cut back to where it was.
    pub(super) fn append(&mut self, text: &str, count: usize) -> Result<()> {
        let path = self.path.clone();
        let fail = |e: &std::io::Error| unusable(&path, "cannot write it", e);
        let out = match &mut self.out {
            Some(out) => out,
            None => {
                let opened = fs::OpenOptions::new().append(true).open(&self.path);
                self.out.insert(opened.map_err(|e| fail(&e))?)
            }
        };
        let written = out
            .write_all(text.as_bytes())
            .and_then(|()| out.sync_data());
        self.writes += 1;
        match written {
            Ok(()) => {
                self.length += text.len() as u64;
                self.lines += count;
                Ok(())
            }
            Err(e) => {
                // Cut back to the last whole change, through a handle that
                // may truncate (an append-only one may not, on Windows);
                // reopened at the next write. When the cut fails, the next
                // write rewrites the file whole.
                self.out = None;
                let cut = fs::OpenOptions::new()
                    .write(true)
                    .open(&self.path)
                    .and_then(|file| file.set_len(self.length));
                self.damaged = cut.is_err();
                Err(fail(&e))
            }
        }
    }

    /// Writes `lines` (every record) as the whole file, beside it first,
    /// then renamed into place: a crash leaves the old file or the new.
    pub(super) fn rewrite(&mut self, lines: &str) -> Result<()> {
        let text = format!("{HEADER_2}\n{lines}{}", seal(lines));
        let fresh = self.path.with_extension("new");
        // Windows renames nothing over a file that is open.
        self.out = None;
        let written = (|| {
            // Made afresh, never an existing file (whose owner and ACL it
            // would keep) truncated.
            match fs::remove_file(&fresh) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
            let mut options = fs::OpenOptions::new();
            let mut out = owner_only::private(options.write(true).create_new(true)).open(&fresh)?;
            out.write_all(text.as_bytes())?;
            out.sync_all()?;
            fs::rename(&fresh, &self.path)?;
            sync_folder(&self.path)
        })();
        self.writes += 1;
        written.map_err(|e| unusable(&self.path, "cannot write it", &e))?;
        self.length = text.len() as u64;
        self.lines = 0;
        self.damaged = false;
        Ok(())
    }

    /// The records as the file holds them now.
    pub(super) fn read_back(&self) -> Result<Records> {
        let text = fs::read(&self.path).map_err(|e| unusable(&self.path, "cannot read it", &e))?;
        let read = read_bytes(&text).map_err(|why| Error::Configuration {
            setting: format!("mounter journal {}", self.path.display()),
            reason: why,
        })?;
        Ok(read.records)
    }
}

/// What the file at `path` holds (`None`: there is none), once it is
/// known to be the plugin's own; `Err` in the outer result when it cannot
/// be read, in the inner one when it is someone else's.
fn own(path: &Path) -> Result<std::result::Result<Option<Vec<u8>>, Error>> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(unusable(
            path,
            "cannot read it",
            &std::io::ErrorKind::InvalidInput.into(),
        ));
    };
    let read = fs::OpenOptions::new().read(true).clone();
    let mut file = match open_own(dir, &name.to_string_lossy(), &read, false) {
        Ok(Ok(file)) => file,
        Ok(Err(planted)) => return Ok(Err(planted)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Ok(None)),
        Err(e) => return Err(unusable(path, "cannot read it", &e)),
    };
    let mut text = Vec::new();
    (file.read_to_end(&mut text)).map_err(|e| unusable(path, "cannot read it", &e))?;
    Ok(Ok(Some(text)))
}

/// Makes a rename in the file's folder durable (Unix; NTFS journals its
/// renames itself).
fn sync_folder(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    if let Some(folder) = path.parent() {
        fs::File::open(folder)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

pub(super) fn unusable(path: &Path, what: &str, error: &std::io::Error) -> Error {
    Error::Configuration {
        setting: format!("mounter state folder {}", path.display()),
        reason: format!("{what}: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::link_record;
    use super::super::{Journal, FILE_NAME};
    use super::*;

    #[tokio::test]
    async fn the_file_is_rewritten_when_it_holds_far_more_changes_than_records() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open(dir.path()).unwrap();
        for _ in 0..REWRITE_AFTER_LINES {
            journal.update(link_record(1)).await.unwrap();
            journal
                .update(|r| r.links.remove(r"c:\pods\p1\mount"))
                .await
                .unwrap();
        }
        let lines = fs::read_to_string(dir.path().join(FILE_NAME)).unwrap();
        assert!(lines.lines().count() < REWRITE_AFTER_LINES + 10);
        assert!(Journal::open(dir.path()).unwrap().records().links.len() == 0);
    }

    /// A key, lock or journal file someone else could write (or, for the
    /// key, read) is refused by name, and nothing is taken from it.
    #[cfg(unix)]
    #[tokio::test]
    async fn planted_files_are_refused_and_never_adopted() {
        use super::super::folder::{KEY_FILE, LOCK_FILE};
        use std::os::unix::fs::{MetadataExt, PermissionsExt};

        let plant = |name: &str, text: &str, mode: u32| {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(name);
            fs::write(&path, text).unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
            let error = Journal::open(dir.path()).unwrap_err();
            let text = error.to_string();
            assert!(matches!(error, Error::Configuration { .. }), "{text}");
            assert!(text.contains(&format!("{name} will not do")), "{text}");
            (dir, text)
        };
        let key = "11".repeat(32);
        let (_, why) = plant(KEY_FILE, &key, 0o644);
        assert!(why.contains("others may read it (mode 644)"), "{why}");
        let (_, why) = plant(KEY_FILE, &key, 0o622);
        assert!(why.contains("others may write to it (mode 622)"), "{why}");
        let (_, why) = plant(LOCK_FILE, "4242\n", 0o666);
        assert!(why.contains("others may write to it"), "{why}");
        let (_, why) = plant(FILE_NAME, "", 0o664);
        assert!(why.contains("others may write to it"), "{why}");
        // A planted rewrite's leftover never becomes the live journal.
        let (dir, why) = plant(&format!("{FILE_NAME}.new"), "", 0o666);
        assert!(why.contains("others may write to it"), "{why}");
        assert!(!dir.path().join(FILE_NAME).exists());

        // One of the plugin's own (a crash mid-rewrite) is replaced by a
        // file made afresh, not renamed into place as it is.
        let dir = tempfile::tempdir().unwrap();
        let leftover = dir.path().join(format!("{FILE_NAME}.new"));
        fs::write(&leftover, "torn").unwrap();
        // Its own, and readable by the group: the fresh file is not.
        fs::set_permissions(&leftover, fs::Permissions::from_mode(0o640)).unwrap();
        let journal = Journal::open(dir.path()).unwrap();
        let live = fs::metadata(dir.path().join(FILE_NAME)).unwrap();
        assert_eq!(live.mode() & 0o777, 0o600);
        drop(journal);

        // Another user's file, whatever its mode (only root may plant
        // one for the test).
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(KEY_FILE);
            fs::write(&path, &key).unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
            std::os::unix::fs::chown(&path, Some(4242), None).unwrap();
            let error = Journal::open(dir.path()).unwrap_err().to_string();
            assert!(error.contains("it belongs to user 4242"), "{error}");
        }
    }

    /// Under Wine too: a key whose DACL lets Everyone read it is refused.
    #[cfg(windows)]
    #[tokio::test]
    async fn a_planted_key_others_may_read_is_refused() {
        use super::super::folder::KEY_FILE;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KEY_FILE);
        fs::write(&path, "11".repeat(32)).unwrap();
        crate::owner_only::set_dacl(&path, "D:(A;;FR;;;WD)").unwrap();
        let error = Journal::open(dir.path()).unwrap_err().to_string();
        assert!(error.contains("credential.key will not do"), "{error}");
        assert!(error.contains("S-1-1-0 may read it"), "{error}");
    }
}
