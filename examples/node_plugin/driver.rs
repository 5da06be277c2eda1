//! The example driver's own rules, all a driver writes for its node
//! plugin: its name, the kinds of volumes it serves, and what a volume ID
//! and its contexts name on the node. A disk is named by its ID:
//! `disk:page83:<id>` (the page 0x83 ID, which no context overrides) or
//! `disk:lun:<lun>` (a LUN, narrowed to a page 0x83 ID when the publish or
//! volume context carries one, since a LUN may repeat across adapters);
//! a folder on a
//! share is `smb:<\\server\share\folder>` (or, for a folder too long for
//! an ID, the volume context's `source`), mapped with the node-stage
//! secrets `username` and `password`. A real driver's IDs name its
//! cloud's disks; the rest (checks, codes, the mounter's calls, serving)
//! is the library's. `controller_ids` names the test controller's volumes
//! as this driver's controller would, so that csi-sanity reaches
//! `volume` with them.

use csi_proxy_client::api::SmbRemotePath;
use csi_proxy_client::csi::{ControllerVolume, TestVolume};
use csi_proxy_client::csi::{NodeDriver, Volume, VolumeKind, VolumeRequest};
use csi_proxy_client::mount::DiskSelector;
use csi_proxy_client::Status;

/// The name this plugin registers with kubelet.
pub const DRIVER_NAME: &str = "node-plugin.example.csi-proxy-client.rs";

/// The example's own flag, beside the library's.
pub const KIND_USAGE: &str =
    "  --kind KINDS           the volumes served: disk, smb or disk,smb (default: disk)";

/// A driver of disks, of shares (as azuredisk and csi-driver-smb are), or
/// of both.
pub struct ExampleDriver {
    kinds: Vec<VolumeKind>,
}

impl ExampleDriver {
    /// The driver of `kinds`: `disk`, `smb`, or both, comma-separated.
    pub fn of_kind(kinds: &str) -> Result<Self, String> {
        let mut parsed = Vec::new();
        for kind in kinds.split(',') {
            let kind = match kind.trim() {
                "disk" => VolumeKind::Disk,
                "smb" => VolumeKind::Smb,
                other => return Err(format!("--kind {other}: disk, smb or disk,smb")),
            };
            if !parsed.contains(&kind) {
                parsed.push(kind);
            }
        }
        Ok(Self { kinds: parsed })
    }

    /// The driver `--kind` names in `args` (default: disks), taking the
    /// flag out: what is left is the library's (`NodePlugin::args`).
    pub fn from_args(args: &mut Vec<String>) -> Result<Self, String> {
        let mut kinds = "disk".to_owned();
        while let Some(at) = args
            .iter()
            .position(|a| a == "--kind" || a.starts_with("--kind="))
        {
            let flag = args.remove(at);
            kinds = match flag.strip_prefix("--kind=") {
                Some(value) => value.to_owned(),
                None if at < args.len() => args.remove(at),
                None => return Err("--kind needs a value: disk, smb or disk,smb".into()),
            };
        }
        Self::of_kind(&kinds)
    }
}

/// The ID and contexts this driver's controller would give a volume the
/// test controller made: a disk by its page 0x83 ID, with its LUN in the
/// publish context as an attach reports it (which `volume` does not need:
/// the ID names the disk); a share's folder by its path.
pub fn controller_ids(made: &TestVolume) -> ControllerVolume {
    match made {
        TestVolume::Disk { page83, lun, .. } if !page83.is_empty() => {
            ControllerVolume::new(format!("disk:page83:{page83}")).with_publish_context("lun", lun)
        }
        TestVolume::Disk { lun, .. } => {
            ControllerVolume::new(format!("disk:lun:{lun}")).with_publish_context("lun", lun)
        }
        TestVolume::Share(folder) => match format!("smb:{folder}") {
            // CSI's IDs have at most 128 bytes: a longer folder is named
            // by its hash, and found in the volume context.
            id if id.len() <= 128 => ControllerVolume::new(id),
            _ => ControllerVolume::new(format!("smb:#{:016x}", fnv1a(folder.as_str())))
                .with_volume_context("source", folder.as_str()),
        },
        // A kind this driver does not serve: an ID it answers NOT_FOUND for.
        _ => ControllerVolume::new("unknown"),
    }
}

/// The 64-bit FNV-1a hash of `text`, lower-cased: the same in every build
/// (std's hasher may change between Rust releases).
fn fnv1a(text: &str) -> u64 {
    text.to_lowercase()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        })
}

impl NodeDriver for ExampleDriver {
    fn name(&self) -> &str {
        DRIVER_NAME
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn kinds(&self) -> &[VolumeKind] {
        &self.kinds
    }

    fn volume(&self, request: &VolumeRequest<'_>) -> Result<Volume, Status> {
        let id = request.volume_id;
        // An ID this driver never made: no such volume.
        let unknown = || Status::not_found(format!("no volume {id:?} on this driver"));
        // The ID names the disk; a context only narrows a LUN, which may
        // repeat across adapters, to the disk's page 0x83 ID. A LUN in a
        // context never overrides the page 0x83 ID of the ID itself.
        let page83_in_context = || {
            [request.publish_context, request.volume_context]
                .into_iter()
                .find_map(|context| context.get("page83"))
        };
        if let Some(page83) = id.strip_prefix("disk:page83:") {
            Ok(Volume::Disk(DiskSelector::page83(page83)))
        } else if let Some(lun) = id.strip_prefix("disk:lun:") {
            Ok(Volume::Disk(match page83_in_context() {
                Some(page83) => DiskSelector::page83(page83),
                None => DiskSelector::lun(lun),
            }))
        } else if let Some(share) = id.strip_prefix("smb:") {
            // A folder too long for the ID is in the volume context.
            let share = request
                .volume_context
                .get("source")
                .map_or(share, String::as_str);
            let share = SmbRemotePath::new(share).map_err(|_| unknown())?;
            // `None`: the node-stage secrets `username` and `password`.
            Ok(Volume::Smb(share, None))
        } else {
            Err(unknown())
        }
    }
}
