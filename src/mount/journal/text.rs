//! The journal's lines: one tab-separated line a record, `%`-escaped, the
//! same in both formats. Format 1 holds the records themselves; format 2
//! holds changes, `+` (the record is so) or `-` (it is gone) before the
//! record's line, each change ended by a `commit` line.

use super::records::{Lease, PartitionAnswer, TargetRecord};
use super::records::{
    LinkTo, MappingKey, Records, ShareRecord, ShareRow, StageRecord, UnstageRecord,
};
use crate::api::{SmbRemotePath, TargetPortal, VolumeId, WindowsPath};
use crate::mount::fingerprint::Fingerprint;

/// The first line of a format 1 file: the records, rewritten whole.
pub(super) const HEADER_1: &str = "csi-proxy-client mounter journal 1";
/// The first line of a format 2 file: changes, appended.
pub(super) const HEADER_2: &str = "csi-proxy-client mounter journal 2";
/// The first word of the line that ends a change: the lines before it
/// since the last one count only with it. Written as [`seal`] writes it;
/// a bare `commit` (earlier builds) is read too.
pub(super) const COMMIT: &str = "commit";

/// The `commit` line that ends the block of changes made of `lines`
/// (whole lines, each with its line feed; the changes one write appends):
/// their length in bytes and the first 16 hex digits of their SHA-256, so
/// that a block a torn write damaged is told from a whole one.
pub(super) fn seal(lines: &str) -> String {
    format!("{COMMIT}\t{}\t{}\n", lines.len(), digest(lines.as_bytes()))
}

/// The first 16 hex digits of the SHA-256 of `bytes`.
pub(super) fn digest(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let hash = Sha256::digest(bytes);
    crate::mount::fingerprint::hex(&hash[..8])
}

/// One record, read from its line.
#[derive(Debug)]
pub(super) enum Row {
    Link(String, (WindowsPath, LinkTo)),
    Stage(String, (WindowsPath, StageRecord)),
    Unstage(String, UnstageRecord),
    Made(String, WindowsPath),
    Rule(MappingKey),
    Format(String, u64),
    Partition(String, u64),
    PartitionAnswered(String, PartitionAnswer),
    Partitioned(String),
    Share(String, ShareRecord),
    Mapped(ShareRow),
    Confirmed(ShareRow),
    Lease(ShareRow, Lease),
    Target(String, TargetRecord),
    TargetLease(ShareRow, WindowsPath),
}

impl Records {
    /// Makes `row` so (`present`) or gone.
    pub(super) fn apply(&mut self, row: Row, present: bool) {
        fn set<K: Ord + Clone, V: Clone + PartialEq>(
            table: &mut super::table::Table<K, V>,
            key: K,
            value: V,
            present: bool,
        ) {
            match present {
                true => drop(table.insert(key, value)),
                false => drop(table.remove(&key)),
            }
        }
        match row {
            Row::Link(key, value) => set(&mut self.links, key, value, present),
            Row::Stage(key, value) => set(&mut self.stages, key, value, present),
            Row::Unstage(key, value) => set(&mut self.unstages, key, value, present),
            Row::Made(key, value) => set(&mut self.made, key, value, present),
            Row::Format(key, value) => set(&mut self.formats, key, value, present),
            Row::Partition(key, value) => set(&mut self.partitions, key, value, present),
            Row::PartitionAnswered(key, value) => {
                set(&mut self.partition_answers, key, value, present)
            }
            Row::Partitioned(key) => set(&mut self.partitioned, key, (), present),
            Row::Share(key, value) => set(&mut self.shares, key, value, present),
            Row::Mapped(key) => set(&mut self.mapped, key, (), present),
            Row::Confirmed(key) => set(&mut self.confirmed, key, (), present),
            Row::Lease(key, value) => set(&mut self.leases, key, value, present),
            Row::Target(key, value) => set(&mut self.targets, key, value, present),
            Row::TargetLease(key, value) => set(&mut self.target_leases, key, value, present),
            Row::Rule(rule) => self.smb_mapping_key = present.then_some(rule),
        }
    }

    /// Every record as a format 2 line that makes it so (`+`), each ended
    /// by a line feed: a whole file's worth of changes.
    pub(super) fn lines(&self) -> String {
        let mut out = String::new();
        let mut push = |line: String| {
            out.push_str("+\t");
            out.push_str(&line);
        };
        for (link, to) in self.links.values() {
            push(link_line(link, to));
        }
        for (staging, stage) in self.stages.values() {
            push(stage_line(staging, stage));
        }
        for unstage in self.unstages.values() {
            push(unstage_line(unstage));
        }
        for folder in self.made.values() {
            push(line(&["made", folder.as_str()]));
        }
        if let Some(rule) = self.smb_mapping_key {
            push(rule_line(rule));
        }
        for (volume, sent) in self.formats.iter() {
            push(format_line(volume, *sent));
        }
        for (selector, sent) in self.partitions.iter() {
            push(partition_line(selector, *sent));
        }
        for (selector, answer) in self.partition_answers.iter() {
            push(answer_line(selector, answer));
        }
        for (volume, ()) in self.partitioned.iter() {
            push(line(&["partitioned", volume]));
        }
        for (share, record) in self.shares.iter() {
            push(share_line(share, record));
        }
        for ((share, remote), ()) in self.mapped.iter() {
            push(line(&["mapped", share, remote]));
        }
        for ((share, remote), ()) in self.confirmed.iter() {
            push(line(&["mapped-ok", share, remote]));
        }
        for ((share, volume), lease) in self.leases.iter() {
            push(lease_line(share, volume, lease));
        }
        for (target, record) in self.targets.iter() {
            push(target_line(target, record));
        }
        for ((target, volume), staging) in self.target_leases.iter() {
            push(line(&["target-lease", target, volume, staging.as_str()]));
        }
        out
    }

    /// The changes made since the last call, as format 2 lines without
    /// their `commit` (empty when nothing changed); `rule` is the mapping
    /// rule before them.
    pub(super) fn take_changes(&mut self, rule: Option<MappingKey>) -> String {
        let mut out = String::new();
        let mut change = |now: Option<String>, was: Option<String>| match (now, was) {
            (Some(now), _) => {
                out.push_str("+\t");
                out.push_str(&now);
            }
            (None, Some(was)) => {
                out.push_str("-\t");
                out.push_str(&was);
            }
            (None, None) => {}
        };
        for (_, was, now) in self.links.take_touched() {
            let text = |(link, to): &(WindowsPath, LinkTo)| link_line(link, to);
            change(now.map(text), was.as_ref().map(text));
        }
        for (_, was, now) in self.stages.take_touched() {
            let text = |(staging, stage): &(WindowsPath, StageRecord)| stage_line(staging, stage);
            change(now.map(text), was.as_ref().map(text));
        }
        for (_, was, now) in self.unstages.take_touched() {
            change(now.map(unstage_line), was.as_ref().map(unstage_line));
        }
        for (_, was, now) in self.made.take_touched() {
            let text = |folder: &WindowsPath| line(&["made", folder.as_str()]);
            change(now.map(text), was.as_ref().map(text));
        }
        for (volume, was, now) in self.formats.take_touched() {
            let text = |sent: &u64| format_line(&volume, *sent);
            change(now.map(text), was.as_ref().map(text));
        }
        for (selector, was, now) in self.partitions.take_touched() {
            let text = |sent: &u64| partition_line(&selector, *sent);
            change(now.map(text), was.as_ref().map(text));
        }
        for (selector, was, now) in self.partition_answers.take_touched() {
            let text = |answer: &PartitionAnswer| answer_line(&selector, answer);
            change(now.map(text), was.as_ref().map(text));
        }
        for (volume, was, now) in self.partitioned.take_touched() {
            let text = |()| line(&["partitioned", &volume]);
            change(now.map(|_| text(())), was.map(text));
        }
        for (share, was, now) in self.shares.take_touched() {
            let text = |record: &ShareRecord| share_line(&share, record);
            change(now.map(text), was.as_ref().map(text));
        }
        for ((share, remote), was, now) in self.mapped.take_touched() {
            let text = |()| line(&["mapped", &share, &remote]);
            change(now.map(|_| text(())), was.map(text));
        }
        for ((share, remote), was, now) in self.confirmed.take_touched() {
            let text = |()| line(&["mapped-ok", &share, &remote]);
            change(now.map(|_| text(())), was.map(text));
        }
        for ((share, volume), was, now) in self.leases.take_touched() {
            let text = |lease: &Lease| lease_line(&share, &volume, lease);
            change(now.map(text), was.as_ref().map(text));
        }
        for (target, was, now) in self.targets.take_touched() {
            let text = |record: &TargetRecord| target_line(&target, record);
            change(now.map(text), was.as_ref().map(text));
        }
        for ((target, volume), was, now) in self.target_leases.take_touched() {
            let text =
                |staging: &WindowsPath| line(&["target-lease", &target, &volume, staging.as_str()]);
            change(now.map(text), was.as_ref().map(text));
        }
        if self.smb_mapping_key != rule {
            change(self.smb_mapping_key.map(rule_line), rule.map(rule_line));
        }
        out
    }
}

fn link_line(link: &WindowsPath, to: &LinkTo) -> String {
    match to {
        LinkTo::Local(target) => line(&["link", link.as_str(), "local", target.as_str()]),
        LinkTo::Smb(remote) => line(&["link", link.as_str(), "smb", remote.as_str()]),
    }
}

fn stage_line(staging: &WindowsPath, stage: &StageRecord) -> String {
    let mut fields = vec![
        "stage",
        staging.as_str(),
        stage.volume.as_str(),
        &stage.selector,
    ];
    // Written only when there is one, so that a stage without one reads
    // as it did before the field was added.
    if let Some(csi_volume) = &stage.csi_volume {
        fields.push(csi_volume);
    }
    line(&fields)
}

fn unstage_line(unstage: &UnstageRecord) -> String {
    let volume = unstage.volume.as_ref().map_or("-", VolumeId::as_str);
    let offline = if unstage.offline { "1" } else { "0" };
    line(&["unstage", unstage.staging.as_str(), volume, offline])
}

fn rule_line(rule: MappingKey) -> String {
    match rule {
        MappingKey::ShareRoot => line(&["rule", "smb-mapping-key", "share-root"]),
        MappingKey::ExactPath => line(&["rule", "smb-mapping-key", "exact-path"]),
    }
}

fn format_line(volume: &str, sent: u64) -> String {
    line(&["format-ms", volume, &sent.to_string()])
}

fn partition_line(selector: &str, sent: u64) -> String {
    line(&["partition-ms", selector, &sent.to_string()])
}

fn answer_line(selector: &str, answer: &PartitionAnswer) -> String {
    let (disk, answered) = (answer.disk.to_string(), answer.answered.to_string());
    line(&["partition-answered", selector, &disk, &answered])
}

fn share_line(share: &str, record: &ShareRecord) -> String {
    let ours = if record.ours { "1" } else { "0" };
    let print = (record.fingerprint.as_ref()).map_or("-".to_owned(), Fingerprint::to_text);
    line(&["share", share, ours, &print])
}

fn lease_line(share: &str, volume: &str, lease: &Lease) -> String {
    line(&[
        "lease",
        share,
        volume,
        lease.staging.as_str(),
        lease.remote.as_str(),
    ])
}

fn target_line(target: &str, record: &TargetRecord) -> String {
    let port = record.portal.port.to_string();
    let ours = if record.ours { "1" } else { "0" };
    let address = record.portal.address.as_str();
    line(&["target", target, address, &port, &record.iqn, ours])
}

/// `fields`, escaped and tab-separated, with a line feed.
fn line(fields: &[&str]) -> String {
    let mut out = String::new();
    for (index, field) in fields.iter().enumerate() {
        if index > 0 {
            out.push('\t');
        }
        escape_into(&mut out, field);
    }
    out.push('\n');
    out
}

/// The fields of a line, unescaped.
pub(super) fn fields(line: &str) -> Vec<String> {
    line.split('\t').map(unescape).collect()
}

/// Reads a record's line (its fields, without a `+` or `-`).
pub(super) fn read_row(fields: &[&str]) -> Result<Row, String> {
    let path = |text: &str| WindowsPath::new(text).map_err(|e| e.to_string());
    let remote = |text: &str| SmbRemotePath::new(text).map_err(|e| e.to_string());
    let number = |text: &str| text.parse::<u64>().map_err(|e| e.to_string());
    let volume_id = |text: &str| VolumeId::new(text).map_err(|e| e.to_string());
    let key = super::key;
    let share_row = |share: &str, second: &str| ((*share).to_owned(), second.to_owned());
    Ok(match fields {
        ["link", link, "local", target] => {
            Row::Link(key(link), (path(link)?, LinkTo::Local(path(target)?)))
        }
        ["link", link, "smb", target] => {
            Row::Link(key(link), (path(link)?, LinkTo::Smb(remote(target)?)))
        }
        ["stage", staging, volume, selector, csi_volume @ ..] if csi_volume.len() <= 1 => {
            let stage = StageRecord {
                volume: volume_id(volume)?,
                selector: (*selector).to_owned(),
                csi_volume: csi_volume.first().map(|id| (*id).to_owned()),
            };
            Row::Stage(key(staging), (path(staging)?, stage))
        }
        ["unstage", staging, volume, offline] => Row::Unstage(
            key(staging),
            UnstageRecord {
                staging: path(staging)?,
                volume: match *volume {
                    "-" => None,
                    volume => Some(volume_id(volume)?),
                },
                offline: *offline == "1",
            },
        ),
        ["made", folder] => Row::Made(key(folder), path(folder)?),
        ["rule", "smb-mapping-key", "share-root"] => Row::Rule(MappingKey::ShareRoot),
        ["rule", "smb-mapping-key", "exact-path"] => Row::Rule(MappingKey::ExactPath),
        ["format-ms", volume, sent] => Row::Format((*volume).to_owned(), number(sent)?),
        ["partition-ms", selector, sent] => Row::Partition((*selector).to_owned(), number(sent)?),
        ["partition-answered", selector, disk, answered] => Row::PartitionAnswered(
            (*selector).to_owned(),
            PartitionAnswer {
                disk: disk.parse().map_err(|e| format!("disk: {e}"))?,
                answered: number(answered)?,
            },
        ),
        ["partitioned", volume] => Row::Partitioned((*volume).to_owned()),
        // Written in whole seconds by format 1 before.
        ["format", volume, sent] => {
            Row::Format((*volume).to_owned(), number(sent)?.saturating_mul(1_000))
        }
        ["share", share, ours, print] => Row::Share(
            (*share).to_owned(),
            ShareRecord {
                ours: *ours == "1",
                fingerprint: match *print {
                    "-" => None,
                    text => Some(Fingerprint::from_text(text)?),
                },
            },
        ),
        ["mapped", share, mapped] => Row::Mapped(share_row(share, remote(mapped)?.as_str())),
        ["mapped-ok", share, mapped] => Row::Confirmed(share_row(share, remote(mapped)?.as_str())),
        ["lease", share, volume, staging, mapped] => Row::Lease(
            share_row(share, volume),
            Lease {
                staging: path(staging)?,
                remote: remote(mapped)?,
            },
        ),
        ["target", target, address, port, iqn, ours] => Row::Target(
            (*target).to_owned(),
            TargetRecord {
                portal: TargetPortal::new(*address)
                    .with_port(port.parse().map_err(|e| format!("port: {e}"))?),
                iqn: (*iqn).to_owned(),
                ours: *ours == "1",
            },
        ),
        ["target-lease", target, volume, staging] => {
            Row::TargetLease(share_row(target, volume), path(staging)?)
        }
        _ => return Err("not a record this version writes".to_owned()),
    })
}

/// `%`, tab, line feed and carriage return as `%XX`: volume keys are the
/// CO's strings and may hold anything.
fn escape_into(out: &mut String, field: &str) {
    for c in field.chars() {
        match c {
            '%' | '\t' | '\n' | '\r' => out.push_str(&format!("%{:02X}", c as u32)),
            c => out.push(c),
        }
    }
}

fn unescape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let code = rest
            .get(at + 1..at + 3)
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match code {
            Some(byte) => {
                out.push(char::from(byte));
                rest = &rest[at + 3..];
            }
            None => {
                out.push('%');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partition_answer_reads_back_and_an_old_request_stays_apart() {
        let mut records = Records::default();
        records.partition_answered("disk at LUN 3", 7, 1_700_000_000_123);
        // An earlier build's record of a request sent, which proves nothing.
        records
            .partitions
            .insert("disk at LUN 4".into(), 1_700_000_000_001);
        let mut again = Records::default();
        for line in records.lines().lines() {
            let fields = fields(line.strip_prefix("+\t").unwrap());
            let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
            again.apply(read_row(&fields).unwrap(), true);
        }
        let answer = again.partition_answers.get("disk at LUN 3").copied();
        assert_eq!(
            answer.map(|answer| (answer.disk, answer.answered)),
            Some((7, 1_700_000_000_123))
        );
        assert!(again.partition_answers.get("disk at LUN 4").is_none());
        assert_eq!(
            again.partitions.get("disk at LUN 4"),
            Some(&1_700_000_000_001)
        );
        assert!(read_row(&["partition-answered", "disk at LUN 3", "x", "1"]).is_err());
    }

    #[test]
    fn escapes_undo_themselves() {
        for text in ["a\tb", "100%", "%09", "x\ny\r", "%", "%z"] {
            let mut escaped = String::new();
            escape_into(&mut escaped, text);
            assert_eq!(unescape(&escaped), text);
        }
    }
}
