//! Reading a journal file: format 1 (the records) or 2 (changes, each
//! block of them sealed by its length and checksum). A block cut short or
//! torn at the end is left out; a damaged one before whole ones is an
//! error.

use super::records::Records;
use super::text::{self, digest, COMMIT, HEADER_1, HEADER_2};

/// A journal file, read.
pub(super) struct Read {
    pub(super) records: Records,
    pub(super) format: u8,
    /// Bytes up to the end of the last whole change.
    pub(super) length: u64,
    /// Change lines in them (format 2).
    pub(super) lines: usize,
}

/// How a `commit` line ends a change.
enum Seal {
    /// A bare `commit`, as earlier builds wrote it: no checksum.
    Bare,
    /// The change's length in bytes and checksum.
    Sealed(usize, String),
}

/// The seal of `line`, if it is a `commit` line.
fn seal_of(line: &str) -> Option<Seal> {
    let mut fields = line.split('\t');
    if fields.next() != Some(COMMIT) {
        return None;
    }
    match (fields.next(), fields.next(), fields.next()) {
        (None, _, _) => Some(Seal::Bare),
        (Some(length), Some(hash), None) => Some(Seal::Sealed(
            length.parse().unwrap_or(usize::MAX),
            hash.to_owned(),
        )),
        // Not a seal this version writes: it seals nothing.
        _ => Some(Seal::Sealed(usize::MAX, String::new())),
    }
}

/// Whether `body` is the change `seal` sealed.
fn whole(body: &[u8], seal: &Seal) -> bool {
    match seal {
        Seal::Bare => true,
        Seal::Sealed(length, hash) => body.len() == *length && digest(body) == *hash,
    }
}

/// Whether a sealed change that checks out starts anywhere in `rest`.
fn whole_change_in(rest: &[u8]) -> bool {
    let mut start = 0;
    let mut at = 0;
    for line in rest.split_inclusive(|b| *b == b'\n') {
        let line_start = at;
        at += line.len();
        let Some(text) = line
            .strip_suffix(b"\n")
            .and_then(|l| std::str::from_utf8(l).ok())
        else {
            continue;
        };
        match seal_of(text) {
            Some(seal @ Seal::Sealed(..)) if whole(&rest[start..line_start], &seal) => return true,
            Some(_) => start = at,
            None => {}
        }
    }
    false
}

/// Reads a journal file: format 1 (the records) or 2 (changes). A line
/// of a whole change that does not read (a record of a newer build) is an
/// error; a change cut short or damaged is left out, with what follows it.
pub(super) fn read_bytes(bytes: &[u8]) -> std::result::Result<Read, String> {
    let mut lines = bytes.split_inclusive(|b| *b == b'\n').enumerate();
    let first = lines
        .next()
        .map(|(_, line)| line.strip_suffix(b"\n").unwrap_or(line));
    let format = match first {
        Some(line) if line == HEADER_1.as_bytes() => 1,
        Some(line) if line == HEADER_2.as_bytes() => 2,
        _ => {
            return Err(format!(
                "its first line is not {HEADER_2:?} (nor {HEADER_1:?})"
            ))
        }
    };
    let mut read = Read {
        records: Records::default(),
        format,
        length: first.map_or(0, |line| line.len() as u64 + 1),
        lines: 0,
    };
    let mut at = read.length as usize;
    let mut change_start = at;
    let mut change = Vec::new();
    for (number, whole_line) in lines {
        let line_start = at;
        at += whole_line.len();
        let Some(line) = whole_line.strip_suffix(b"\n") else {
            break; // cut short
        };
        let located = |why: String| {
            let text = String::from_utf8_lossy(line);
            format!("line {}: {why}: {text:?}", number + 1)
        };
        let Ok(line) = std::str::from_utf8(line) else {
            if format == 1 {
                return Err(located("not text".into()));
            }
            // Judged at its `commit`: a torn change may hold anything.
            change.push(Err(located("not text".into())));
            read.lines += 1;
            continue;
        };
        if format == 1 {
            if line.is_empty() {
                continue;
            }
            let fields = text::fields(line);
            let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
            let row = text::read_row(&fields).map_err(located)?;
            read.records.apply(row, true);
            read.length = at as u64;
            continue;
        }
        if let Some(seal) = seal_of(line) {
            if !whole(&bytes[change_start..line_start], &seal) {
                // A torn last write is left out. Whole blocks after a
                // damaged one are no crash's doing (each write is synced
                // before the next): dropping them would bring back records
                // they removed, so nothing is trusted.
                if whole_change_in(&bytes[at..]) {
                    return Err(located(
                        "a block of changes is damaged (its checksum does not match) and \
                         whole ones follow it: the disk, not a crash, changed it"
                            .into(),
                    ));
                }
                break;
            }
            let newer = matches!(seal, Seal::Sealed(..));
            for parsed in change.drain(..) {
                let (present, row) = parsed.map_err(|why: String| match newer {
                    // A whole change this version cannot read.
                    true => format!("{why} (a whole change: written by a newer build?)"),
                    false => why,
                })?;
                read.records.apply(row, present);
            }
            read.lines += 1;
            read.length = at as u64;
            change_start = at;
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
    use std::fs;

    use super::super::tests::{link_record, sample};
    use super::super::{key, Journal, FILE_NAME};
    use super::*;
    use crate::mount::fingerprint::Fingerprint;

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
        let print = Fingerprint::of(&[7; 32], "user", "secret").to_text();
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
    async fn a_torn_last_block_is_dropped_and_damage_before_whole_blocks_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(FILE_NAME);
        let journal = Journal::open(dir.path()).unwrap();
        journal.update(link_record(1)).await.unwrap();
        let before = journal.records();
        let length = fs::metadata(&file).unwrap().len() as usize;
        journal.update(link_record(2)).await.unwrap();
        drop(journal);
        let whole = fs::read(&file).unwrap();
        // A torn write: the last block's bytes damaged (not even text),
        // its seal intact.
        let mut torn = whole.clone();
        torn[length + 3] = 0xff;
        torn[length + 4] = b'X';
        fs::write(&file, &torn).unwrap();
        let reopened = Journal::open(dir.path()).unwrap();
        assert_eq!(reopened.records(), before, "the torn block is left out");
        reopened.update(link_record(3)).await.unwrap();
        let after = Journal::open(dir.path()).unwrap().records();
        assert!(after.links.contains_key(&key(r"C:\pods\p3\mount")));
        assert!(!after.links.contains_key(&key(r"C:\pods\p2\mount")));
        // Damage in a block that whole ones follow: nothing is trusted.
        let mut damaged = whole.clone();
        damaged[HEADER_2.len() + 5] ^= 0x20;
        fs::write(&file, &damaged).unwrap();
        let error = Journal::open(dir.path()).unwrap_err().to_string();
        assert!(error.contains("checksum does not match"), "{error}");
        assert!(error.contains(&file.display().to_string()), "{error}");
        assert!(error.contains("nothing was done"), "{error}");
    }

    #[test]
    fn a_whole_block_this_version_cannot_read_names_a_newer_build() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(FILE_NAME);
        let lines = "+\tsnapshot\tC:\\x\n";
        let text = format!("{HEADER_2}\n{lines}{}", super::super::text::seal(lines));
        fs::write(&file, text).unwrap();
        let error = Journal::open(dir.path()).unwrap_err();
        assert!(
            matches!(error, crate::Error::Configuration { .. }),
            "{error}"
        );
        let error = error.to_string();
        assert!(error.contains("written by a newer build"), "{error}");
        assert!(error.contains("nothing was done"), "{error}");
        // And the file is as it was.
        assert!(fs::read_to_string(&file).unwrap().contains("snapshot"));
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
