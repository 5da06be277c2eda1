//! The mounter's records on the node: what it made (links, stages, SMB
//! mappings), who uses each mapping (leases), and the steps of operations
//! that must be finished after a failure or a restart. CSI Proxy can tell
//! none of these (it has no readlink, no list of mappings), so the mounter
//! keeps them in a file in a folder the driver chooses.
//!
//! A change costs what it touches, not what the node holds: the records a
//! change touched are appended as lines, ended by a `commit` line, and
//! the changes made together are written and synced at once, on a thread
//! of the blocking pool, while the callers wait for their own to be on
//! disk. A crash mid-write leaves a last change without its `commit`,
//! which the next start drops: the records read back as before the change
//! or after it. When the file holds far more lines than records, it is
//! rewritten whole and renamed into place (format 1, which held only
//! that, is read and rewritten so on first start).

mod records;
mod table;
mod text;

use std::collections::VecDeque;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::watch;

use crate::error::{Error, Result};
use text::{COMMIT, HEADER_1, HEADER_2};

pub(crate) use records::{
    Lease, LinkTo, MappingKey, Records, ShareRecord, StageRecord, TargetRecord, UnstageRecord,
};

/// The file's name in the state folder.
const FILE_NAME: &str = "mounter-journal";
/// The file is rewritten whole once it holds more change lines than this
/// and than twice the records: the rewrite's cost, spread over the changes
/// since the last one, stays a few lines' worth per change.
const REWRITE_AFTER_LINES: usize = 4_096;
/// Failed writes remembered for the callers still to hear of them.
const FAILURES_KEPT: usize = 16;

/// The key of a path or share in the records.
pub(crate) fn key(text: &str) -> String {
    text.trim_end_matches('\\').to_lowercase()
}

/// The records, in memory and in their file.
#[derive(Debug)]
pub(crate) struct Journal {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    /// Never held across an await or a write: the records and the queue.
    state: Mutex<State>,
    /// The newest change whose fate is known (written, or failed).
    settled: watch::Sender<u64>,
    /// The file; only the writing thread takes it.
    file: Mutex<JournalFile>,
}

#[derive(Debug)]
struct State {
    records: Records,
    /// Changes made and not yet handed to the writer, as lines.
    queue: String,
    queued_lines: usize,
    /// Changes are numbered from 1 as they are made.
    last_made: u64,
    settled: u64,
    /// Whether a writer runs: it takes the queue until it is empty.
    writing: bool,
    /// Changes that could not be written: (first, last, why).
    failures: VecDeque<(u64, u64, Error)>,
}

impl Journal {
    /// Opens the journal in `dir` (made if missing), reading what an earlier
    /// run recorded.
    pub fn open(dir: &Path) -> Result<Self> {
        fs::create_dir_all(dir).map_err(|e| unusable(dir, "cannot make it", &e))?;
        let (file, records) = JournalFile::open(&dir.join(FILE_NAME))?;
        let state = State {
            records,
            queue: String::new(),
            queued_lines: 0,
            last_made: 0,
            settled: 0,
            writing: false,
            failures: VecDeque::new(),
        };
        Ok(Self {
            shared: Arc::new(Shared {
                state: Mutex::new(state),
                settled: watch::Sender::new(0),
                file: Mutex::new(file),
            }),
        })
    }

    /// What `look` finds in the records, without copying them. It sees
    /// changes whose write is still under way; every change waits for
    /// those before it, so nothing is done on the strength of a record
    /// that is not on disk.
    pub fn view<T>(&self, look: impl FnOnce(&Records) -> T) -> T {
        look(&self.shared.lock().records)
    }

    /// Changes the records with `change` and waits until the change (and
    /// every one before it) is on disk. A change that cannot be written is
    /// undone, with the changes made after it, and the call fails. A call
    /// that changes nothing writes nothing, and waits only for changes
    /// still being written.
    pub async fn update<T>(&self, change: impl FnOnce(&mut Records) -> T) -> Result<T> {
        let (answer, made) = {
            let mut state = self.shared.lock();
            // A call that changes nothing while nothing is left to write
            // is done: an earlier change's failure is not its own.
            let nothing_pending = state.last_made <= state.settled;
            let rule = state.records.smb_mapping_key;
            let answer = change(&mut state.records);
            let lines = state.records.take_changes(rule);
            if !lines.is_empty() {
                state.queued_lines += lines.matches('\n').count() + 1;
                state.queue.push_str(&lines);
                state.queue.push_str(COMMIT);
                state.queue.push('\n');
                state.last_made += 1;
                if !state.writing {
                    state.writing = true;
                    let shared = self.shared.clone();
                    tokio::task::spawn_blocking(move || shared.write_queue());
                }
            }
            if lines.is_empty() && nothing_pending {
                return Ok(answer);
            }
            (answer, state.last_made)
        };
        if made > *self.shared.settled.borrow() {
            let mut settled = self.shared.settled.subscribe();
            // The sender lives in `shared`, which this journal holds.
            let _ = settled.wait_for(|settled| *settled >= made).await;
        }
        let state = self.shared.lock();
        match (state.failures.iter()).find(|(first, last, _)| (*first..=*last).contains(&made)) {
            Some((_, _, error)) => Err(error.clone()),
            None => Ok(answer),
        }
    }

    /// How many writes (each one sync) the journal made: changes made
    /// together share one.
    #[cfg(test)]
    fn writes(&self) -> usize {
        self.shared.file.lock().unwrap().writes
    }

    #[cfg(test)]
    fn records(&self) -> Records {
        self.view(Records::clone)
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes queued changes until none is left; runs on a thread of the
    /// blocking pool, one at a time.
    fn write_queue(&self) {
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let (lines, count, last, all) = {
                let mut state = self.lock();
                if state.queue.is_empty() {
                    state.writing = false;
                    return;
                }
                let count = std::mem::take(&mut state.queued_lines);
                let all = (file.due_for_rewrite(count, state.records.len()))
                    .then(|| state.records.lines());
                (
                    std::mem::take(&mut state.queue),
                    count,
                    state.last_made,
                    all,
                )
            };
            let written = match all {
                Some(all) => file.rewrite(&all),
                None => file.append(&lines, count),
            };
            let mut state = self.lock();
            if let Err(error) = written {
                // What the file holds is what is so: the changes queued
                // since are undone too, and their callers told.
                match file.read_back() {
                    Ok(records) => state.records = records,
                    Err(again) => {
                        tracing::error!(error = %again, "the mounter journal cannot be read back")
                    }
                }
                state.queue.clear();
                state.queued_lines = 0;
                let first = state.settled + 1;
                let failed = (first, state.last_made, error);
                state.failures.push_back(failed);
                if state.failures.len() > FAILURES_KEPT {
                    state.failures.pop_front();
                }
                state.settled = state.last_made;
            } else {
                state.settled = last;
            }
            self.settled.send_replace(state.settled);
        }
    }
}

/// The journal's file, open for appending.
#[derive(Debug)]
struct JournalFile {
    path: PathBuf,
    out: Option<fs::File>,
    /// Its length up to the end of the last change written.
    length: u64,
    /// Change lines written since it was last rewritten whole.
    lines: usize,
    /// A failed write could not be cut back: rewrite the file whole.
    damaged: bool,
    writes: usize,
}

impl JournalFile {
    /// Opens the file at `path`, or makes it; its records. A last change
    /// left without its `commit` (a crash while it was written) is cut
    /// off; a file in format 1 is rewritten in format 2.
    fn open(path: &Path) -> Result<(Self, Records)> {
        let mut file = Self {
            path: path.to_owned(),
            out: None,
            length: 0,
            lines: 0,
            damaged: false,
            writes: 0,
        };
        let text = match fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                file.rewrite("")?;
                return Ok((file, Records::default()));
            }
            Err(e) => return Err(unusable(path, "cannot read it", &e)),
        };
        let read = read_text(&text).map_err(|why| Error::Configuration {
            setting: format!("mounter journal {}", path.display()),
            reason: format!(
                "{why}; move it away to start afresh (what it recorded is then forgotten)"
            ),
        })?;
        if read.format == 1 || read.length < text.len() as u64 {
            if read.format == 2 {
                tracing::warn!(
                    journal = %path.display(),
                    "the mounter journal's last change was cut short (a crash while it was written): it is dropped"
                );
            }
            file.rewrite(&read.records.lines())?;
        } else {
            file.length = read.length;
            file.lines = read.lines;
        }
        Ok((file, read.records))
    }

    fn due_for_rewrite(&self, more: usize, records: usize) -> bool {
        let lines = self.lines + more;
        self.damaged || (lines > REWRITE_AFTER_LINES && lines > 2 * records)
    }

    /// Appends `text` (`count` lines) and syncs it. On failure, the file
    /// is cut back to where it was.
    fn append(&mut self, text: &str, count: usize) -> Result<()> {
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
    fn rewrite(&mut self, lines: &str) -> Result<()> {
        let text = format!("{HEADER_2}\n{lines}{COMMIT}\n");
        let fresh = self.path.with_extension("new");
        // Windows renames nothing over a file that is open.
        self.out = None;
        let written = (|| {
            let mut out = fs::File::create(&fresh)?;
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
    fn read_back(&self) -> Result<Records> {
        let text = fs::read_to_string(&self.path)
            .map_err(|e| unusable(&self.path, "cannot read it", &e))?;
        let read = read_text(&text).map_err(|why| Error::Configuration {
            setting: format!("mounter journal {}", self.path.display()),
            reason: why,
        })?;
        Ok(read.records)
    }
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

fn unusable(path: &Path, what: &str, error: &std::io::Error) -> Error {
    Error::Configuration {
        setting: format!("mounter state folder {}", path.display()),
        reason: format!("{what}: {error}"),
    }
}

/// A journal file, read.
struct Read {
    records: Records,
    format: u8,
    /// Bytes up to the end of the last whole change.
    length: u64,
    /// Change lines in them (format 2).
    lines: usize,
}

/// Reads a journal file's text: format 1 (the records) or 2 (changes). A
/// line that does not read is an error, except after the last `commit`,
/// where a crash may have cut a change short.
fn read_text(text: &str) -> std::result::Result<Read, String> {
    let mut lines = text.split_inclusive('\n').enumerate();
    let format = match lines.next().map(|(_, line)| line.trim_end_matches('\n')) {
        Some(HEADER_1) => 1,
        Some(HEADER_2) => 2,
        _ => {
            return Err(format!(
                "its first line is not {HEADER_2:?} (nor {HEADER_1:?})"
            ))
        }
    };
    let mut read = Read {
        records: Records::default(),
        format,
        length: text.find('\n').map_or(0, |end| end as u64 + 1),
        lines: 0,
    };
    let mut at = read.length;
    let mut change = Vec::new();
    for (number, whole) in lines {
        at += whole.len() as u64;
        let Some(line) = whole.strip_suffix('\n') else {
            break; // cut short
        };
        let located = |why: String| format!("line {}: {why}: {line:?}", number + 1);
        if format == 1 {
            if line.is_empty() {
                continue;
            }
            let fields = text::fields(line);
            let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
            let row = text::read_row(&fields).map_err(located)?;
            read.records.apply(row, true);
            read.length = at;
            continue;
        }
        if line == COMMIT {
            for parsed in change.drain(..) {
                let (present, row) = parsed?;
                read.records.apply(row, present);
            }
            read.lines += 1;
            read.length = at;
            continue;
        }
        let fields = text::fields(line);
        let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
        // Judged at its `commit`: a change cut short may end in anything.
        let parsed = match fields.split_first() {
            Some((&"+", row)) => text::read_row(row).map(|row| (true, row)),
            Some((&"-", row)) => text::read_row(row).map(|row| (false, row)),
            _ => Err("not a change this version writes".to_owned()),
        };
        change.push(parsed.map_err(located));
        read.lines += 1;
    }
    // The rows as they are, without a record of having been touched.
    read.records.take_changes(read.records.smb_mapping_key);
    Ok(read)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{SmbRemotePath, VolumeId, WindowsPath};
    use crate::mount::fingerprint::Fingerprint;

    fn path(text: &str) -> WindowsPath {
        WindowsPath::new(text).unwrap()
    }

    fn sample(records: &mut Records) {
        let staging = path(r"C:\var\lib\kubelet\plugins\d\pv-1\globalmount");
        let target = path(r"C:\var\lib\kubelet\pods\p\volumes\v\mount");
        let remote = SmbRemotePath::new(r"\\files\share\sub").unwrap();
        let volume = VolumeId::new(r"\\?\Volume{1}\").unwrap();
        records.links.insert(
            key(target.as_str()),
            (target.clone(), LinkTo::Local(staging.clone())),
        );
        let stage = StageRecord {
            volume: volume.clone(),
            selector: "disk at LUN 3".into(),
        };
        (records.stages).insert(key(staging.as_str()), (staging.clone(), stage));
        let unstage = UnstageRecord {
            staging: staging.clone(),
            volume: Some(volume),
            offline: true,
        };
        records.unstages.insert(key(staging.as_str()), unstage);
        (records.formats).insert(r"\\?\Volume{1}\".into(), 1_700_000_000);
        records.smb_mapping_key = Some(MappingKey::ShareRoot);
        let root = r"\\files\share";
        let share = ShareRecord {
            ours: true,
            fingerprint: Some(Fingerprint::of("user", "secret")),
        };
        records.shares.insert(root.into(), share);
        records.add_mapped(root, remote.as_str());
        records.confirm(root, remote.as_str());
        let lease = Lease { staging, remote };
        records.add_lease(root, "vol\tid%1", lease);
    }

    fn link_record(n: usize) -> impl FnOnce(&mut Records) {
        move |records| {
            let link = path(&format!(r"C:\pods\p{n}\mount"));
            let to = LinkTo::Local(path(&format!(r"C:\staging\s{n}")));
            records.links.insert(key(link.as_str()), (link, to));
        }
    }

    #[tokio::test]
    async fn records_survive_a_round_trip_through_their_file() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open(dir.path()).unwrap();
        journal.update(sample).await.unwrap();
        let again = Journal::open(dir.path()).unwrap();
        assert_eq!(again.records(), journal.records());
        assert_eq!(again.records().len(), 9);
        let text = fs::read_to_string(dir.path().join(FILE_NAME)).unwrap();
        assert!(!text.contains("secret"), "{text}");
        // Removals are written too.
        journal
            .update(|records| {
                records.remove_share(r"\\files\share");
                records.smb_mapping_key = None;
            })
            .await
            .unwrap();
        let again = Journal::open(dir.path()).unwrap();
        assert_eq!(again.records(), journal.records());
        assert!(again.records().leases.len() + again.records().mapped.len() == 0);
    }

    #[tokio::test]
    async fn a_change_writes_only_what_it_touched_and_a_repeat_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open(dir.path()).unwrap();
        for n in 0..100 {
            journal.update(link_record(n)).await.unwrap();
        }
        let file = dir.path().join(FILE_NAME);
        let size = fs::metadata(&file).unwrap().len();
        let writes = journal.writes();
        journal.update(link_record(7)).await.unwrap();
        assert_eq!(
            journal.writes(),
            writes,
            "an unchanged repeat writes nothing"
        );
        journal.update(link_record(100)).await.unwrap();
        let grown = fs::metadata(&file).unwrap().len() - size;
        assert!(grown < 100, "one change appended {grown} bytes");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn changes_made_together_share_a_write() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Arc::new(Journal::open(dir.path()).unwrap());
        let before = journal.writes();
        let tasks: Vec<_> = (0..200)
            .map(|n| {
                let journal = journal.clone();
                tokio::spawn(async move { journal.update(link_record(n)).await })
            })
            .collect();
        for task in tasks {
            task.await.unwrap().unwrap();
        }
        let writes = journal.writes() - before;
        assert!(
            writes < 200,
            "200 changes made at once took {writes} writes"
        );
        let again = Journal::open(dir.path()).unwrap();
        assert_eq!(again.records().links.len(), 200);
    }

    #[tokio::test]
    async fn a_crash_at_any_byte_reads_back_as_before_or_after_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open(dir.path()).unwrap();
        let mut states = vec![journal.records()];
        journal.update(sample).await.unwrap();
        states.push(journal.records());
        journal.update(link_record(1)).await.unwrap();
        states.push(journal.records());
        journal
            .update(|records| {
                records.remove_share(r"\\files\share");
                records.formats.remove(r"\\?\Volume{1}\");
            })
            .await
            .unwrap();
        states.push(journal.records());
        let whole = fs::read(dir.path().join(FILE_NAME)).unwrap();
        let header = HEADER_2.len() + 1;
        for cut in header..=whole.len() {
            let crashed = tempfile::tempdir().unwrap();
            fs::write(crashed.path().join(FILE_NAME), &whole[..cut]).unwrap();
            let read = Journal::open(crashed.path()).unwrap().records();
            assert!(states.contains(&read), "cut at byte {cut} read as {read:?}");
            // The cut change is gone from the file too: what follows is
            // appended to whole changes.
            let reopened = Journal::open(crashed.path()).unwrap();
            reopened.update(link_record(9)).await.unwrap();
            let after = Journal::open(crashed.path()).unwrap().records();
            assert!(after.links.contains_key(&key(r"C:\pods\p9\mount")));
        }
    }

    #[tokio::test]
    async fn a_format_1_journal_is_read_and_rewritten_in_format_2() {
        let dir = tempfile::tempdir().unwrap();
        let print = Fingerprint::of("user", "secret").to_text();
        let text = format!(
            "{HEADER_1}\n\
             link\tC:\\pods\\p\\mount\tlocal\tC:\\staging\\s\n\
             stage\tC:\\staging\\s\t\\\\?\\Volume{{1}}\\\tdisk at LUN 3\n\
             format\t\\\\?\\Volume{{1}}\\\t1700000000\n\
             share\t\\\\files\\share\t1\t{print}\n\
             mapped\t\\\\files\\share\t\\\\files\\share\\a\n\
             lease\t\\\\files\\share\tpv-a\tC:\\staging\\a\t\\\\files\\share\\a\n"
        );
        fs::write(dir.path().join(FILE_NAME), text).unwrap();
        let journal = Journal::open(dir.path()).unwrap();
        let records = journal.records();
        assert_eq!(records.links.len(), 1);
        assert_eq!(records.stages.len(), 1);
        assert_eq!(records.formats.values().next(), Some(&1_700_000_000_000));
        assert!(records.has_lease(r"\\files\share", "pv-a"));
        assert!(records.is_mapped(r"\\files\share", r"\\files\share\a"));
        let now = fs::read_to_string(dir.path().join(FILE_NAME)).unwrap();
        assert!(now.starts_with(HEADER_2), "{now}");
        assert_eq!(Journal::open(dir.path()).unwrap().records(), records);
    }

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

    #[test]
    fn a_damaged_file_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(FILE_NAME);
        fs::write(&file, format!("{HEADER_2}\n+\tlink\tC:\\x\ncommit\n")).unwrap();
        let error = Journal::open(dir.path()).unwrap_err();
        assert!(error.to_string().contains("line 2"), "{error}");
        fs::write(&file, format!("{HEADER_1}\nlink\tC:\\x\n")).unwrap();
        assert!(Journal::open(dir.path()).is_err());
        fs::write(&file, "something else\n").unwrap();
        assert!(Journal::open(dir.path()).is_err());
    }
}
