//! The mounter's records on the node: what it made (links, stages, SMB
//! mappings), who uses each mapping (leases), and the steps of operations
//! that must be finished after a failure or a restart. CSI Proxy can tell
//! none of these (it has no readlink, no list of mappings), so the mounter
//! keeps them in one small file in a folder the driver chooses, rewritten
//! whole and renamed into place at each change: a crash leaves the old
//! records or the new ones, never half.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::fingerprint::Fingerprint;
use crate::api::{SmbRemotePath, VolumeId, WindowsPath};
use crate::error::{Error, Result};

/// The first line of the file: what it is, and the version of its format.
const HEADER: &str = "csi-proxy-client mounter journal 1";
/// The file's name in the state folder.
const FILE_NAME: &str = "mounter-journal";

/// Where a link this mounter made leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum LinkTo {
    /// A folder on the node (a publish target's staging path).
    Local(WindowsPath),
    /// A path on an SMB share (a staging path's share folder).
    Smb(SmbRemotePath),
}

/// A block volume this mounter mounted at a staging path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StageRecord {
    pub volume: VolumeId,
    /// The disk selector it was staged for, as text.
    pub selector: String,
}

/// An unstage begun and not finished: what is left to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UnstageRecord {
    pub staging: WindowsPath,
    /// The volume whose disk to take offline (its number is asked anew).
    pub volume: Option<VolumeId>,
    pub offline: bool,
}

/// A volume that uses a share: its staging link and the path it maps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Lease {
    pub staging: WindowsPath,
    pub remote: SmbRemotePath,
}

/// What the mounter knows of one share's global mapping.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ShareRecord {
    /// Whether this mounter made the mapping (and so may remove it).
    pub ours: bool,
    /// The credentials it was made with, as a salted hash.
    pub fingerprint: Option<Fingerprint>,
    /// Every remote path asked to be mapped (proxies before v1.1.2 map
    /// each one), recorded before it is asked for.
    pub mapped: BTreeSet<String>,
    /// The paths of `mapped` seen to work (a stage's link answered
    /// through them): only their removals teach how the proxy keys
    /// mappings.
    pub confirmed: BTreeSet<String>,
    /// The volumes that use it, by volume key.
    pub leases: BTreeMap<String, Lease>,
}

/// Everything recorded, keyed by lower-cased path or share root.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Records {
    pub links: BTreeMap<String, (WindowsPath, LinkTo)>,
    pub stages: BTreeMap<String, (WindowsPath, StageRecord)>,
    pub unstages: BTreeMap<String, UnstageRecord>,
    /// Formats whose outcome is unknown, by volume ID: when they were sent
    /// (milliseconds since the Unix epoch).
    pub formats: BTreeMap<String, u64>,
    pub shares: BTreeMap<String, ShareRecord>,
    /// Folders this mounter made (staging folders it found missing), which
    /// `reconcile` may remove when they are left empty.
    pub made: BTreeMap<String, WindowsPath>,
    /// How the node's proxy keys SMB mappings, once seen: by the share's
    /// root (v1.1.2 and later), or by the exact path mapped (before).
    pub smb_mapping_key: Option<MappingKey>,
}

/// How a proxy keys SMB global mappings: the rule changed in v1.1.2, under
/// the same wire versions, so it is learned from what removals answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MappingKey {
    /// `\\server\share`, whatever path was mapped (v1.1.2 and later).
    ShareRoot,
    /// The exact path mapped (before v1.1.2).
    ExactPath,
}

/// The key of a path or share in the records.
pub(crate) fn key(text: &str) -> String {
    text.trim_end_matches('\\').to_lowercase()
}

/// The records, in memory and in their file.
#[derive(Debug)]
pub(crate) struct Journal {
    file: PathBuf,
    records: Mutex<Records>,
}

impl Journal {
    /// Opens the journal in `dir` (made if missing), reading what an earlier
    /// run recorded.
    pub fn open(dir: &Path) -> Result<Self> {
        fs::create_dir_all(dir).map_err(|e| unusable(dir, "cannot make it", &e))?;
        let file = dir.join(FILE_NAME);
        let records = match fs::read_to_string(&file) {
            Ok(text) => parse(&text).map_err(|why| Error::Configuration {
                setting: format!("mounter journal {}", file.display()),
                reason: format!(
                    "{why}; move it away to start afresh (what it recorded is then forgotten)"
                ),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Records::default(),
            Err(e) => return Err(unusable(&file, "cannot read it", &e)),
        };
        Ok(Self {
            file,
            records: Mutex::new(records),
        })
    }

    /// A copy of the records, for work that changes them as it goes.
    pub fn read(&self) -> Records {
        self.lock().clone()
    }

    /// What `look` finds in the records, without copying them: for the
    /// lookups every call makes.
    pub fn view<T>(&self, look: impl FnOnce(&Records) -> T) -> T {
        look(&self.lock())
    }

    /// Changes the records with `change` and writes them out; nothing
    /// changes when writing fails.
    pub fn update<T>(&self, change: impl FnOnce(&mut Records) -> T) -> Result<T> {
        let mut records = self.lock();
        let mut next = records.clone();
        let answer = change(&mut next);
        if next != *records {
            self.write(&next)?;
            *records = next;
        }
        Ok(answer)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Records> {
        self.records.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self, records: &Records) -> Result<()> {
        let fresh = self.file.with_extension("new");
        let written = (|| {
            let mut out = fs::File::create(&fresh)?;
            out.write_all(render(records).as_bytes())?;
            out.sync_all()?;
            fs::rename(&fresh, &self.file)
        })();
        written.map_err(|e| unusable(&self.file, "cannot write it", &e))
    }
}

fn unusable(path: &Path, what: &str, error: &std::io::Error) -> Error {
    Error::Configuration {
        setting: format!("mounter state folder {}", path.display()),
        reason: format!("{what}: {error}"),
    }
}

/// The records as text: a header, then one tab-separated line a record.
fn render(records: &Records) -> String {
    let mut lines = vec![HEADER.to_owned()];
    let mut line = |fields: &[&str]| {
        let escaped: Vec<String> = fields.iter().map(|f| escape(f)).collect();
        lines.push(escaped.join("\t"));
    };
    for (link, to) in records.links.values() {
        match to {
            LinkTo::Local(target) => line(&["link", link.as_str(), "local", target.as_str()]),
            LinkTo::Smb(remote) => line(&["link", link.as_str(), "smb", remote.as_str()]),
        }
    }
    for (staging, stage) in records.stages.values() {
        line(&[
            "stage",
            staging.as_str(),
            stage.volume.as_str(),
            &stage.selector,
        ]);
    }
    for unstage in records.unstages.values() {
        let volume = unstage.volume.as_ref().map_or("-", VolumeId::as_str);
        let offline = if unstage.offline { "1" } else { "0" };
        line(&["unstage", unstage.staging.as_str(), volume, offline]);
    }
    for folder in records.made.values() {
        line(&["made", folder.as_str()]);
    }
    match records.smb_mapping_key {
        Some(MappingKey::ShareRoot) => line(&["rule", "smb-mapping-key", "share-root"]),
        Some(MappingKey::ExactPath) => line(&["rule", "smb-mapping-key", "exact-path"]),
        None => {}
    }
    for (volume, sent) in &records.formats {
        line(&["format-ms", volume, &sent.to_string()]);
    }
    for (share, record) in &records.shares {
        let ours = if record.ours { "1" } else { "0" };
        let print = record
            .fingerprint
            .as_ref()
            .map_or("-".to_owned(), Fingerprint::to_text);
        line(&["share", share, ours, &print]);
        for remote in &record.mapped {
            line(&["mapped", share, remote]);
        }
        for remote in &record.confirmed {
            line(&["mapped-ok", share, remote]);
        }
        for (volume, lease) in &record.leases {
            line(&[
                "lease",
                share,
                volume,
                lease.staging.as_str(),
                lease.remote.as_str(),
            ]);
        }
    }
    lines.push(String::new());
    lines.join("\n")
}

/// Reads what [`render`] wrote; any line it would not write is an error.
fn parse(text: &str) -> std::result::Result<Records, String> {
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, HEADER)) => {}
        _ => return Err(format!("its first line is not {HEADER:?}")),
    }
    let mut records = Records::default();
    for (number, line) in lines {
        if line.is_empty() {
            continue;
        }
        let fields: Vec<String> = line.split('\t').map(unescape).collect();
        let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
        read_line(&mut records, &fields)
            .map_err(|why| format!("line {}: {why}: {line:?}", number + 1))?;
    }
    Ok(records)
}

fn read_line(records: &mut Records, fields: &[&str]) -> std::result::Result<(), String> {
    let path = |text: &str| WindowsPath::new(text).map_err(|e| e.to_string());
    let remote = |text: &str| SmbRemotePath::new(text).map_err(|e| e.to_string());
    let number = |text: &str| text.parse::<u64>().map_err(|e| e.to_string());
    let volume_id = |text: &str| VolumeId::new(text).map_err(|e| e.to_string());
    match fields {
        ["link", link, "local", target] => {
            records
                .links
                .insert(key(link), (path(link)?, LinkTo::Local(path(target)?)));
        }
        ["link", link, "smb", target] => {
            records
                .links
                .insert(key(link), (path(link)?, LinkTo::Smb(remote(target)?)));
        }
        ["stage", staging, volume, selector] => {
            let stage = StageRecord {
                volume: volume_id(volume)?,
                selector: (*selector).to_owned(),
            };
            records.stages.insert(key(staging), (path(staging)?, stage));
        }
        ["unstage", staging, volume, offline] => {
            let unstage = UnstageRecord {
                staging: path(staging)?,
                volume: match *volume {
                    "-" => None,
                    volume => Some(volume_id(volume)?),
                },
                offline: *offline == "1",
            };
            records.unstages.insert(key(staging), unstage);
        }
        ["made", folder] => {
            records.made.insert(key(folder), path(folder)?);
        }
        ["rule", "smb-mapping-key", "share-root"] => {
            records.smb_mapping_key = Some(MappingKey::ShareRoot);
        }
        ["rule", "smb-mapping-key", "exact-path"] => {
            records.smb_mapping_key = Some(MappingKey::ExactPath);
        }
        ["format-ms", volume, sent] => {
            records.formats.insert((*volume).to_owned(), number(sent)?);
        }
        // Written in whole seconds before.
        ["format", volume, sent] => {
            let millis = number(sent)?.saturating_mul(1_000);
            records.formats.insert((*volume).to_owned(), millis);
        }
        ["share", share, ours, print] => {
            let record = records.shares.entry((*share).to_owned()).or_default();
            record.ours = *ours == "1";
            record.fingerprint = match *print {
                "-" => None,
                text => Some(Fingerprint::from_text(text)?),
            };
        }
        ["mapped", share, mapped] => {
            let record = records.shares.entry((*share).to_owned()).or_default();
            record.mapped.insert(remote(mapped)?.as_str().to_owned());
        }
        ["mapped-ok", share, mapped] => {
            let record = records.shares.entry((*share).to_owned()).or_default();
            record.confirmed.insert(remote(mapped)?.as_str().to_owned());
        }
        ["lease", share, volume, staging, mapped] => {
            let lease = Lease {
                staging: path(staging)?,
                remote: remote(mapped)?,
            };
            let record = records.shares.entry((*share).to_owned()).or_default();
            record.leases.insert((*volume).to_owned(), lease);
        }
        _ => return Err("not a record this version writes".to_owned()),
    }
    Ok(())
}

/// `%`, tab, line feed and carriage return as `%XX`: volume keys are the
/// CO's strings and may hold anything.
fn escape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    for c in field.chars() {
        match c {
            '%' | '\t' | '\n' | '\r' => out.push_str(&format!("%{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out
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

    fn sample() -> Records {
        let staging = WindowsPath::new(r"C:\var\lib\kubelet\plugins\d\pv-1\globalmount").unwrap();
        let target = WindowsPath::new(r"C:\var\lib\kubelet\pods\p\volumes\v\mount").unwrap();
        let remote = SmbRemotePath::new(r"\\files\share\sub").unwrap();
        let mut records = Records::default();
        records.links.insert(
            key(target.as_str()),
            (target.clone(), LinkTo::Local(staging.clone())),
        );
        records.stages.insert(
            key(staging.as_str()),
            (
                staging.clone(),
                StageRecord {
                    volume: VolumeId::new(r"\\?\Volume{1}\").unwrap(),
                    selector: "disk at LUN 3".into(),
                },
            ),
        );
        records.unstages.insert(
            key(staging.as_str()),
            UnstageRecord {
                staging: staging.clone(),
                volume: Some(VolumeId::new(r"\\?\Volume{1}\").unwrap()),
                offline: true,
            },
        );
        records
            .formats
            .insert(r"\\?\Volume{1}\".into(), 1_700_000_000);
        records.smb_mapping_key = Some(MappingKey::ShareRoot);
        let share = records.shares.entry(r"\\files\share".into()).or_default();
        share.ours = true;
        share.fingerprint = Some(Fingerprint::of("user", "secret"));
        share.mapped.insert(remote.as_str().to_owned());
        share.confirmed.insert(remote.as_str().to_owned());
        share
            .leases
            .insert("vol\tid%1".into(), Lease { staging, remote });
        records
    }

    #[test]
    fn records_survive_a_round_trip_through_their_file() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open(dir.path()).unwrap();
        let records = sample();
        journal.update(|r| *r = records.clone()).unwrap();
        let again = Journal::open(dir.path()).unwrap();
        assert_eq!(again.read(), records);
        let text = fs::read_to_string(dir.path().join(FILE_NAME)).unwrap();
        assert!(!text.contains("secret"), "{text}");
    }

    #[test]
    fn a_damaged_file_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join(FILE_NAME),
            format!("{HEADER}\nlink\tC:\\x\n"),
        )
        .unwrap();
        let error = Journal::open(dir.path()).unwrap_err();
        assert!(error.to_string().contains("line 2"), "{error}");
        fs::write(dir.path().join(FILE_NAME), "something else\n").unwrap();
        assert!(Journal::open(dir.path()).is_err());
    }

    #[test]
    fn a_format_recorded_in_seconds_reads_as_milliseconds() {
        let text = format!("{HEADER}\nformat\t\\\\?\\Volume{{1}}\\\t1700000000\n");
        let records = parse(&text).unwrap();
        assert_eq!(records.formats.values().next(), Some(&1_700_000_000_000));
    }

    #[test]
    fn escapes_undo_themselves() {
        for text in ["a\tb", "100%", "%09", "x\ny\r", "%", "%z"] {
            assert_eq!(unescape(&escape(text)), text);
        }
    }
}
