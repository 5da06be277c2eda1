//! What the journal holds: links, stages, unfinished unstages and formats,
//! folders made, and per share its mapping, the paths mapped and the
//! volumes that lease it; each kind in a [`Table`], one row a record.

use super::table::Table;
use crate::api::{SmbRemotePath, TargetPortal, VolumeId, WindowsPath};
use crate::mount::fingerprint::Fingerprint;

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
    /// The CSI volume ID it was staged for, when the caller gave one: an
    /// unstage or unpublish that names another is refused.
    pub csi_volume: Option<String>,
}

/// A `PartitionDisk` that answered success on a disk seen blank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PartitionAnswer {
    /// The disk's number when it was partitioned.
    pub disk: u32,
    /// When the answer came, in milliseconds since the Unix epoch.
    pub answered: u64,
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

/// What the mounter knows of one share's global mapping; the paths it
/// mapped and the volumes that lease it are tables of their own
/// ([`Records::mapped`], [`Records::leases`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ShareRecord {
    /// Whether this mounter made the mapping (and so may remove it).
    pub ours: bool,
    /// The credentials it was made with, as a salted hash.
    pub fingerprint: Option<Fingerprint>,
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

/// An iSCSI target whose disks this mounter stages: where it is, and
/// whether this mounter logged in to it (and so may log out).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TargetRecord {
    pub portal: TargetPortal,
    pub iqn: String,
    pub ours: bool,
}

/// A share's row in a per-share table: its root and a path or volume.
pub(crate) type ShareRow = (String, String);

/// Everything recorded, keyed by lower-cased path or share root.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Records {
    pub links: Table<String, (WindowsPath, LinkTo)>,
    pub stages: Table<String, (WindowsPath, StageRecord)>,
    pub unstages: Table<String, UnstageRecord>,
    /// Formats whose outcome is unknown, by volume ID: when they were sent
    /// (milliseconds since the Unix epoch).
    pub formats: Table<String, u64>,
    /// What earlier builds wrote before sending `PartitionDisk`, by
    /// selector text: when it was sent. A request that may have failed
    /// proves nothing, so these rows are only read (a journal of an
    /// earlier build opens) and dropped with the selector's next stage.
    pub partitions: Table<String, u64>,
    /// `PartitionDisk`s that answered success on a disk seen with no
    /// volume just before, by selector text: which disk, and when. Moved
    /// to `partitioned` once the disk's volume is listed, if that is
    /// within the stage's volume wait of the answer.
    pub partition_answers: Table<String, PartitionAnswer>,
    /// Volumes on partitions this mounter made, by volume ID: the mounter's
    /// to format. The row goes when the stage is recorded.
    pub partitioned: Table<String, ()>,
    /// Folders this mounter made (staging folders it found missing), which
    /// `reconcile` may remove when they are left empty.
    pub made: Table<String, WindowsPath>,
    pub shares: Table<String, ShareRecord>,
    /// Every remote path asked to be mapped, by share root (proxies before
    /// v1.1.2 map each one), recorded before it is asked for.
    pub mapped: Table<ShareRow, ()>,
    /// The paths of `mapped` seen to work (a stage's link answered through
    /// them): only their removals teach how the proxy keys mappings.
    pub confirmed: Table<ShareRow, ()>,
    /// The volumes that use a share, by share root and volume key.
    pub leases: Table<ShareRow, Lease>,
    /// How the node's proxy keys SMB mappings, once seen.
    pub smb_mapping_key: Option<MappingKey>,
    /// iSCSI targets logged in to, by target key.
    pub targets: Table<String, TargetRecord>,
    /// The volumes staged from a target, by target key and volume: their
    /// staging paths.
    pub target_leases: Table<ShareRow, WindowsPath>,
}

/// The rows of a per-share table that belong to share `root`.
fn of_share<'a, V: Clone + PartialEq>(
    table: &'a Table<ShareRow, V>,
    root: &'a str,
) -> impl Iterator<Item = (&'a str, &'a V)> + 'a {
    (table.range_from((root.to_owned(), String::new())))
        .take_while(move |((share, _), _)| share == root)
        .map(|((_, second), value)| (second.as_str(), value))
}

/// The first row of a per-share table whose second key is `volume`: the
/// share (or target) it leases, and the lease.
fn leased_by<'a, V: Clone + PartialEq>(
    table: &'a Table<ShareRow, V>,
    volume: &str,
) -> Option<(&'a str, &'a V)> {
    (table.iter())
        .find(|((_, holder), _)| holder == volume)
        .map(|((key, _), lease)| (key.as_str(), lease))
}

/// Whether `path` is the path of key `path_key`.
fn at(path: &WindowsPath, path_key: &str) -> bool {
    super::key(path.as_str()) == path_key
}

fn row(root: &str, second: &str) -> ShareRow {
    (root.to_owned(), second.to_owned())
}

impl Records {
    /// The volumes that lease share `root`, with their leases.
    pub fn leases_of<'a>(&'a self, root: &'a str) -> impl Iterator<Item = (&'a str, &'a Lease)> {
        of_share(&self.leases, root)
    }

    /// Whether `volume` leases share `root`.
    pub fn has_lease(&self, root: &str, volume: &str) -> bool {
        self.leases.contains_key(&row(root, volume))
    }

    /// The share root whose lease `volume` holds, if any.
    pub fn share_leased_by(&self, volume: &str) -> Option<&str> {
        leased_by(&self.leases, volume).map(|(root, _)| root)
    }

    /// The share root whose lease `volume` holds for its stage at the
    /// path `staging_key`: a lease taken for another path is not this
    /// path's to release.
    pub fn share_leased_at(&self, volume: &str, staging_key: &str) -> Option<&str> {
        (self.leases.iter())
            .find(|((_, holder), lease)| holder == volume && at(&lease.staging, staging_key))
            .map(|((root, _), _)| root.as_str())
    }

    /// The remote paths mapped on share `root`.
    pub fn mapped_of<'a>(&'a self, root: &'a str) -> impl Iterator<Item = &'a str> {
        of_share(&self.mapped, root).map(|(remote, ())| remote)
    }

    pub fn is_mapped(&self, root: &str, remote: &str) -> bool {
        self.mapped.contains_key(&row(root, remote))
    }

    pub fn is_confirmed(&self, root: &str, remote: &str) -> bool {
        self.confirmed.contains_key(&row(root, remote))
    }

    pub fn add_lease(&mut self, root: &str, volume: &str, lease: Lease) {
        self.leases.insert(row(root, volume), lease);
    }

    pub fn drop_lease(&mut self, root: &str, volume: &str) {
        self.leases.remove(&row(root, volume));
    }

    pub fn add_mapped(&mut self, root: &str, remote: &str) {
        self.mapped.insert(row(root, remote), ());
    }

    pub fn drop_mapped(&mut self, root: &str, remote: &str) {
        self.mapped.remove(&row(root, remote));
        self.confirmed.remove(&row(root, remote));
    }

    pub fn confirm(&mut self, root: &str, remote: &str) {
        self.confirmed.insert(row(root, remote), ());
    }

    /// Forgets share `root`: its record, paths and leases.
    pub fn remove_share(&mut self, root: &str) {
        self.shares.remove(root);
        for table in [&mut self.mapped, &mut self.confirmed] {
            let rows: Vec<ShareRow> = of_share(table, root)
                .map(|(second, ())| row(root, second))
                .collect();
            for key in rows {
                table.remove(&key);
            }
        }
        let leases: Vec<ShareRow> = (self.leases_of(root))
            .map(|(volume, _)| row(root, volume))
            .collect();
        for key in leases {
            self.leases.remove(&key);
        }
    }

    /// The volumes staged from target `key`, with their staging paths.
    pub fn target_leases_of<'a>(
        &'a self,
        key: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a WindowsPath)> {
        of_share(&self.target_leases, key)
    }

    /// The target key whose lease `volume` holds, and its staging path.
    pub fn target_leased_by(&self, volume: &str) -> Option<(&str, &WindowsPath)> {
        leased_by(&self.target_leases, volume)
    }

    /// The target key whose lease `volume` holds for its stage at the
    /// path `staging_key`.
    pub fn target_leased_at(&self, volume: &str, staging_key: &str) -> Option<&str> {
        (self.target_leases.iter())
            .find(|((_, holder), staging)| holder == volume && at(staging, staging_key))
            .map(|((target, _), _)| target.as_str())
    }

    /// The CSI volume the records say is staged at the path `staging_key`:
    /// a disk's stage that named one, a share's lease, an iSCSI target's
    /// lease.
    pub fn csi_volume_at(&self, staging_key: &str) -> Option<&str> {
        let at = |staging: &WindowsPath| at(staging, staging_key);
        let disk =
            (self.stages.get(staging_key)).and_then(|(_, stage)| stage.csi_volume.as_deref());
        let share = || {
            (self.leases.iter())
                .find(|(_, lease)| at(&lease.staging))
                .map(|((_, volume), _)| volume.as_str())
        };
        let target = || {
            (self.target_leases.iter())
                .find(|(_, staging)| at(staging))
                .map(|((_, volume), _)| volume.as_str())
        };
        disk.or_else(share).or_else(target)
    }

    /// Records that `PartitionDisk` of `disk`, sent for `selector`,
    /// answered success at `answered` (milliseconds since the Unix epoch).
    pub fn partition_answered(&mut self, selector: &str, disk: u32, answered: u64) {
        let answer = PartitionAnswer { disk, answered };
        self.partition_answers.insert(selector.to_owned(), answer);
    }

    /// How many records there are.
    pub fn len(&self) -> usize {
        self.links.len()
            + self.stages.len()
            + self.unstages.len()
            + self.formats.len()
            + self.partitions.len()
            + self.partition_answers.len()
            + self.partitioned.len()
            + self.made.len()
            + self.shares.len()
            + self.mapped.len()
            + self.confirmed.len()
            + self.leases.len()
            + self.targets.len()
            + self.target_leases.len()
            + usize::from(self.smb_mapping_key.is_some())
    }
}
