//! Reading a journal file's text: format 1 (the records) or 2 (changes),
//! a change cut short after the last `commit` left out.

use super::records::Records;
use super::text::{self, COMMIT, HEADER_1, HEADER_2};

/// A journal file, read.
pub(super) struct Read {
    pub(super) records: Records,
    pub(super) format: u8,
    /// Bytes up to the end of the last whole change.
    pub(super) length: u64,
    /// Change lines in them (format 2).
    pub(super) lines: usize,
}

/// Reads a journal file's text: format 1 (the records) or 2 (changes). A
/// line that does not read is an error, except after the last `commit`,
/// where a crash may have cut a change short.
pub(super) fn read_text(text: &str) -> std::result::Result<Read, String> {
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
