//! The node's names, and kubelet's operations on them: `Op`, what one
//! answered, and `perform`, which runs one with a driver's mounter.

use std::collections::BTreeSet;
use std::fmt;

use csi_proxy_client::api::{Secret, SmbRemotePath};
use csi_proxy_client::mount::{DiskAfterUnstage, DiskSelector, Mounter, SmbCredentials};
use csi_proxy_client::Error;

use super::{SHARE, STAGING_DRIVERS};
use crate::mounter::path;

pub(super) fn disk_number(disk: usize) -> u32 {
    disk as u32 + 1
}

pub(super) fn page83(disk: usize) -> String {
    format!("Google  pvc-d{disk}")
}

pub(super) fn staging(disk: usize, at: usize) -> String {
    let driver = STAGING_DRIVERS[at];
    format!(r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\{driver}\pv-d{disk}\globalmount")
}

pub(super) fn target(disk: usize) -> String {
    format!(r"C:\var\lib\kubelet\pods\pod-d{disk}\volumes\kubernetes.io~csi\pv-d{disk}\mount")
}

pub(super) fn smb_volume(vol: usize) -> String {
    format!("pv-s{vol}")
}

pub(super) fn smb_remote(vol: usize) -> String {
    format!(r"{SHARE}\pv-s{vol}")
}

pub(super) fn smb_staging(vol: usize) -> String {
    format!(r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\smb\pv-s{vol}\globalmount")
}

pub(super) fn parent(path: &str) -> &str {
    &path[..path.rfind('\\').expect("a path with a parent")]
}

/// A CSI node call, as kubelet makes it, or the `reconcile` of a driver
/// that restarted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Op {
    StageDisk {
        disk: usize,
        at: usize,
    },
    UnstageDisk {
        disk: usize,
        at: usize,
        offline: bool,
    },
    Publish {
        disk: usize,
        at: usize,
    },
    Unpublish {
        disk: usize,
    },
    /// Through the staging path `at`, or (`None`) the pod's link.
    Stats {
        disk: usize,
        at: Option<usize>,
    },
    /// With the size the controller grew the disk to, if it did.
    Expand {
        disk: usize,
        at: usize,
        required: Option<u64>,
    },
    StageSmb {
        vol: usize,
    },
    UnstageSmb {
        vol: usize,
    },
    Reconcile,
}

impl Op {
    /// Its kind, for the fault points taken in turn: a disk's first stage
    /// (partition and format) is a kind of its own.
    pub(super) fn kind(&self, raw_disk: bool) -> &'static str {
        match self {
            Op::StageDisk { .. } if raw_disk => "stage_disk (raw)",
            Op::StageDisk { .. } => "stage_disk",
            Op::UnstageDisk { offline: true, .. } => "unstage_disk (offline)",
            Op::UnstageDisk { .. } => "unstage_disk",
            Op::Publish { .. } => "publish",
            Op::Unpublish { .. } => "unpublish",
            Op::Stats { .. } => "stats",
            Op::Expand { .. } => "expand",
            Op::StageSmb { .. } => "stage_smb",
            Op::UnstageSmb { .. } => "unstage_smb",
            Op::Reconcile => "reconcile",
        }
    }

    /// The disk it works on.
    pub(super) fn disk(&self) -> Option<usize> {
        match *self {
            Op::StageDisk { disk, .. }
            | Op::UnstageDisk { disk, .. }
            | Op::Publish { disk, .. }
            | Op::Unpublish { disk }
            | Op::Stats { disk, .. }
            | Op::Expand { disk, .. } => Some(disk),
            _ => None,
        }
    }

    /// The SMB volume it stages, if it does.
    pub(super) fn smb_staged(&self) -> Option<usize> {
        match *self {
            Op::StageSmb { vol } => Some(vol),
            _ => None,
        }
    }

    /// The staging path whose mount it may change.
    pub(super) fn staging_changed(&self) -> Option<(usize, usize)> {
        match *self {
            Op::StageDisk { disk, at } | Op::UnstageDisk { disk, at, .. } => Some((disk, at)),
            _ => None,
        }
    }

    /// The SMB volume whose stage it changes.
    pub(super) fn smb_changed(&self) -> Option<usize> {
        match *self {
            Op::StageSmb { vol } | Op::UnstageSmb { vol } => Some(vol),
            _ => None,
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = |at: usize| STAGING_DRIVERS[at];
        match *self {
            Op::StageDisk { disk, at: a } => write!(f, "stage_disk(d{disk} at {})", at(a)),
            Op::UnstageDisk {
                disk,
                at: a,
                offline,
            } => write!(f, "unstage_disk(d{disk} at {}, offline={offline})", at(a)),
            Op::Publish { disk, at: a } => write!(f, "publish(d{disk} from {})", at(a)),
            Op::Unpublish { disk } => write!(f, "unpublish(d{disk})"),
            Op::Stats { disk, at: Some(a) } => write!(f, "stats(d{disk} at {})", at(a)),
            Op::Stats { disk, at: None } => write!(f, "stats(d{disk} through the pod's link)"),
            Op::Expand {
                disk,
                at: a,
                required,
            } => write!(f, "expand(d{disk} at {}, required {required:?})", at(a)),
            Op::StageSmb { vol } => write!(f, "stage_smb(pv-s{vol})"),
            Op::UnstageSmb { vol } => write!(f, "unstage_smb(pv-s{vol})"),
            Op::Reconcile => write!(f, "reconcile"),
        }
    }
}

/// What an operation answered that the test checks.
#[derive(Debug)]
pub(super) enum Reply {
    Done,
    Stats { total: u64, used: u64 },
    Expanded { total: u64 },
    Reconciled { failed: Vec<String> },
}

/// Runs `op` with `mounter` (on the driver's runtime).
pub(super) async fn perform(
    mounter: Mounter,
    op: Op,
    live: BTreeSet<String>,
) -> Result<Reply, Error> {
    let credentials = SmbCredentials::new("user", Secret::new("pw"));
    match op {
        Op::StageDisk { disk, at } => {
            let selector = DiskSelector::page83(page83(disk));
            (mounter
                .stage_disk(&selector, &path(&staging(disk, at)))
                .await)
                .map(|_| Reply::Done)
        }
        Op::UnstageDisk { disk, at, offline } => (mounter)
            .unstage_disk(
                &path(&staging(disk, at)),
                match offline {
                    true => DiskAfterUnstage::TakeOffline,
                    false => DiskAfterUnstage::KeepOnline,
                },
            )
            .await
            .map(|_| Reply::Done),
        Op::Publish { disk, at } => (mounter)
            .publish(&path(&staging(disk, at)), &path(&target(disk)))
            .await
            .map(|_| Reply::Done),
        Op::Unpublish { disk } => {
            (mounter.unpublish(&path(&target(disk))).await).map(|_| Reply::Done)
        }
        Op::Stats { disk, at } => {
            let at = at.map_or_else(|| target(disk), |at| staging(disk, at));
            let selector = DiskSelector::page83(page83(disk));
            let stats = mounter.stats(&selector, &path(&at)).await?;
            Ok(Reply::Stats {
                total: stats.total_bytes,
                used: stats.used_bytes,
            })
        }
        Op::Expand { disk, at, required } => {
            let (selector, at) = (DiskSelector::page83(page83(disk)), path(&staging(disk, at)));
            let expanded = mounter.expand(&selector, &at, required).await?;
            Ok(Reply::Expanded {
                total: expanded.total_bytes,
            })
        }
        Op::StageSmb { vol } => {
            let share = SmbRemotePath::new(smb_remote(vol)).unwrap();
            let at = path(&smb_staging(vol));
            (mounter
                .stage_smb(&smb_volume(vol), &share, &credentials, &at)
                .await)
                .map(|_| Reply::Done)
        }
        Op::UnstageSmb { vol } => (mounter)
            .unstage_smb(&smb_volume(vol), &path(&smb_staging(vol)))
            .await
            .map(|_| Reply::Done),
        Op::Reconcile => {
            let report = mounter
                .reconcile(move |volume| live.contains(volume))
                .await?;
            let failed = (report.failed.iter())
                .map(|(what, error)| format!("{what}: {error}"))
                .collect();
            Ok(Reply::Reconciled { failed })
        }
    }
}
