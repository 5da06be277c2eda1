//! The contexts each staged volume was staged with, kept in a small file
//! beside the mounter's journal: `NodeGetVolumeStats` and
//! `NodeExpandVolume` carry neither the volume context nor the publish
//! context, and a driver that finds its disk by a LUN from the publish
//! context needs them to say which disk is the volume's, also after the
//! plugin restarted. Never a secret.
//!
//! The file is rewritten whole (a new file renamed over the old one) at
//! each change: a node has few volumes, and a stage happens once per
//! volume. One line per volume: the volume ID, then `p` (publish) and `v`
//! (volume) context entries, each field escaped.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use tokio::sync::Mutex;

/// The file's name in the state folder.
const FILE_NAME: &str = "csi-node-volumes";

/// What a volume was staged with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Contexts {
    pub volume: HashMap<String, String>,
    pub publish: HashMap<String, String>,
}

/// The volumes' contexts, and their file.
pub(crate) struct Recorded {
    file: PathBuf,
    volumes: Mutex<BTreeMap<String, Contexts>>,
}

impl Recorded {
    /// The records in `dir` (none if it has no file yet; the folder is
    /// made if missing).
    pub fn open(dir: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let file = dir.join(FILE_NAME);
        let volumes = match std::fs::read_to_string(&file) {
            Ok(text) => parse(&text),
            Err(error) if error.kind() == io::ErrorKind::NotFound => BTreeMap::new(),
            Err(error) => return Err(error),
        };
        Ok(Self {
            file,
            volumes: Mutex::new(volumes),
        })
    }

    /// What `volume` was staged with, if it is recorded.
    pub async fn get(&self, volume: &str) -> Option<Contexts> {
        self.volumes.lock().await.get(volume).cloned()
    }

    /// Records `contexts` for `volume` (written only if they changed).
    pub async fn set(&self, volume: &str, contexts: Contexts) -> io::Result<()> {
        let mut volumes = self.volumes.lock().await;
        if volumes.get(volume) == Some(&contexts) {
            return Ok(());
        }
        volumes.insert(volume.to_owned(), contexts);
        self.write(&volumes).await
    }

    /// Forgets `volume` (written only if it was recorded).
    pub async fn remove(&self, volume: &str) -> io::Result<()> {
        let mut volumes = self.volumes.lock().await;
        if volumes.remove(volume).is_none() {
            return Ok(());
        }
        self.write(&volumes).await
    }

    /// Writes `volumes` to a new file, synced, and renames it over the
    /// old one, on a thread of the blocking pool.
    async fn write(&self, volumes: &BTreeMap<String, Contexts>) -> io::Result<()> {
        let text = render(volumes);
        let file = self.file.clone();
        let written = tokio::task::spawn_blocking(move || {
            let new = file.with_extension("new");
            let mut out = std::fs::File::create(&new)?;
            out.write_all(text.as_bytes())?;
            out.sync_all()?;
            drop(out);
            std::fs::rename(&new, &file)
        });
        written.await.map_err(io::Error::other)?
    }
}

fn render(volumes: &BTreeMap<String, Contexts>) -> String {
    let mut text = String::new();
    for (volume, contexts) in volumes {
        text.push_str(&escape(volume));
        for (tag, map) in [("p", &contexts.publish), ("v", &contexts.volume)] {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort();
            for (key, value) in entries {
                text.push_str(&format!("\t{tag}\t{}\t{}", escape(key), escape(value)));
            }
        }
        text.push('\n');
    }
    text
}

/// The records of `text`; a line that does not read is skipped (with a
/// warning): its volume's stats then get empty contexts.
fn parse(text: &str) -> BTreeMap<String, Contexts> {
    let mut volumes = BTreeMap::new();
    for line in text.lines().filter(|line| !line.is_empty()) {
        match parse_line(line) {
            Some((volume, contexts)) => {
                volumes.insert(volume, contexts);
            }
            None => tracing::warn!(line, "a line of {FILE_NAME} that does not read is skipped"),
        }
    }
    volumes
}

fn parse_line(line: &str) -> Option<(String, Contexts)> {
    let mut fields = line.split('\t');
    let volume = unescape(fields.next()?)?;
    let mut contexts = Contexts::default();
    while let Some(tag) = fields.next() {
        let (key, value) = (unescape(fields.next()?)?, unescape(fields.next()?)?);
        match tag {
            "p" => contexts.publish.insert(key, value),
            "v" => contexts.volume.insert(key, value),
            _ => return None,
        };
    }
    Some((volume, contexts))
}

/// `%`, tab, CR and LF as `%25`, `%09`, `%0D`, `%0A`.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\t' => out.push_str("%09"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            c => out.push(c),
        }
    }
    out
}

fn unescape(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let code = rest.get(at + 1..at + 3)?;
        out.push(char::from(u8::from_str_radix(code, 16).ok()?));
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn contexts_outlive_a_restart_and_any_text_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let odd = "a\tb%c\nd\re";
        let contexts = Contexts {
            volume: HashMap::from([(odd.to_owned(), String::new())]),
            publish: HashMap::from([("lun".to_owned(), "3".to_owned())]),
        };
        let recorded = Recorded::open(dir.path()).unwrap();
        recorded.set(odd, contexts.clone()).await.unwrap();
        recorded.set("pv-2", Contexts::default()).await.unwrap();
        let again = Recorded::open(dir.path()).unwrap();
        assert_eq!(again.get(odd).await, Some(contexts));
        assert_eq!(again.get("pv-2").await, Some(Contexts::default()));
        again.remove(odd).await.unwrap();
        let third = Recorded::open(dir.path()).unwrap();
        assert_eq!(third.get(odd).await, None);
        assert!(third.get("pv-2").await.is_some());
        // A damaged line is skipped; the others stay.
        let file = dir.path().join(FILE_NAME);
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, format!("bad\tx\n{text}")).unwrap();
        assert!(Recorded::open(dir.path())
            .unwrap()
            .get("pv-2")
            .await
            .is_some());
    }
}
