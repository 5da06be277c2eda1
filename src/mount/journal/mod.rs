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

mod file;
mod folder;
mod read;
mod records;
mod table;
mod text;

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::watch;

use crate::error::{Error, Result};
use file::JournalFile;
/// The state folder made owner-only, checked, and held by this process.
#[cfg(feature = "csi")]
pub(crate) use folder::open as hold_state_folder;

pub(crate) use records::{
    Lease, LinkTo, MappingKey, Records, ShareRecord, StageRecord, TargetRecord, UnstageRecord,
};

/// The file's name in the state folder.
const FILE_NAME: &str = "mounter-journal";
/// Failed writes remembered for the callers still to hear of them.
const FAILURES_KEPT: usize = 16;

/// The key of a path or share in the records: every spelling Windows
/// opens as one folder has the same key, so that a record is found
/// whichever spelling kubelet or a caller uses.
pub(crate) fn key(text: &str) -> String {
    crate::api::same_object_key(text)
}

/// The records, in memory and in their file.
#[derive(Debug)]
pub(crate) struct Journal {
    shared: Arc<Shared>,
    /// The node-local secret beside the journal that keys credential
    /// fingerprints.
    key: crate::mount::fingerprint::Key,
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
    /// Opens the journal in `dir` (made owner-only if missing, refused if
    /// others may write to it, and held by this process alone), reading
    /// what an earlier run recorded.
    pub fn open(dir: &Path) -> Result<Self> {
        folder::open(dir)?;
        let key = folder::credential_key(dir)?;
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
            key,
        })
    }

    /// The key of the credential fingerprints the journal records.
    pub fn credential_key(&self) -> &crate::mount::fingerprint::Key {
        &self.key
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
                // Sealed as one block with the changes written with it.
                state.queue.push_str(&lines);
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
                // One seal for the changes written (and synced) together:
                // a torn write damages the last block only.
                None => file.append(&format!("{lines}{}", text::seal(&lines)), count),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{SmbRemotePath, VolumeId, WindowsPath};
    use crate::mount::fingerprint::Fingerprint;
    use std::fs;

    fn path(text: &str) -> WindowsPath {
        WindowsPath::new(text).unwrap()
    }

    pub(super) fn sample(records: &mut Records) {
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
            csi_volume: Some("pv\t-1%".into()),
        };
        (records.stages).insert(key(staging.as_str()), (staging.clone(), stage));
        records
            .partitions
            .insert("disk at LUN 3".into(), 1_700_000_000_001);
        (records.partitioned).insert(r"\\?\Volume{2}\".into(), ());
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
            fingerprint: Some(Fingerprint::of(&[7; 32], "user", "secret")),
        };
        records.shares.insert(root.into(), share);
        records.add_mapped(root, remote.as_str());
        records.confirm(root, remote.as_str());
        let lease = Lease { staging, remote };
        records.add_lease(root, "vol\tid%1", lease);
    }

    pub(super) fn link_record(n: usize) -> impl FnOnce(&mut Records) {
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
        assert_eq!(again.records().len(), 11);
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
}
