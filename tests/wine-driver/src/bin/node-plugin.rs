//! The driver's node plugin, for disks and SMB shares: a disk is the one
//! at the LUN its controller's attach reports in the publish context; a
//! share's folder is in the volume context (`source`), its credentials the
//! node-stage secrets `username` and `password`. Everything else (checks,
//! the mounter, serving) is the SDK's.

use std::collections::HashMap;
use std::process::ExitCode;

use csi_proxy_client::api::SmbRemotePath;
use csi_proxy_client::csi::{NodeDriver, NodePlugin, ServeError, Volume, VolumeKind, VolumeRequest};
use csi_proxy_client::mount::DiskSelector;
use csi_proxy_client::Status;

struct Driver;

impl NodeDriver for Driver {
    fn name(&self) -> &str {
        "wine-driver.example"
    }
    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }
    fn kinds(&self) -> &[VolumeKind] {
        &[VolumeKind::Disk, VolumeKind::Smb]
    }
    fn volume(&self, request: &VolumeRequest<'_>) -> Result<Volume, Status> {
        let unknown = || Status::not_found(format!("no volume {}", request.volume_id));
        let context = |map: &HashMap<String, String>, key: &str| map.get(key).cloned();
        if request.volume_id.starts_with("disk-") {
            let lun = context(request.publish_context, "lun").ok_or_else(unknown)?;
            return Ok(Volume::Disk(DiskSelector::lun(lun)));
        }
        if request.volume_id.starts_with("smb-") {
            let folder = context(request.volume_context, "source").ok_or_else(unknown)?;
            let folder = SmbRemotePath::new(folder).map_err(|_| unknown())?;
            return Ok(Volume::Smb(folder, None));
        }
        Err(unknown())
    }
}

/// Its controller's names, given to the SDK's test controller under
/// csi-sanity: a disk by where it is (adapter, target, LUN), with its LUN
/// in the publish context; a share's folder by a hash of its path (an ID
/// has at most 128 bytes), the folder in the volume context.
#[cfg(feature = "sanity")]
fn controller_ids(
    made: &csi_proxy_client::csi::TestVolume,
) -> csi_proxy_client::csi::ControllerVolume {
    use csi_proxy_client::csi::{ControllerVolume, TestVolume};
    match made {
        TestVolume::Disk {
            adapter,
            target,
            lun,
            ..
        } => ControllerVolume::new(format!("disk-{adapter}-{target}-{lun}"))
            .with_publish_context("lun", lun),
        TestVolume::Share(folder) => {
            // FNV-1a: the same hash in every build.
            let path = folder.as_str().to_lowercase();
            let hash = path.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
                (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
            });
            ControllerVolume::new(format!("smb-{hash:016x}"))
                .with_volume_context("source", folder.as_str())
        }
        _ => ControllerVolume::new("unknown"),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let plugin = NodePlugin::new(Driver);
    #[cfg(feature = "sanity")]
    let plugin = plugin.test_volume_ids(controller_ids);
    let outcome = match plugin.args(std::env::args().skip(1)) {
        Err(ServeError::Help(usage)) => {
            println!("{usage}");
            return ExitCode::SUCCESS;
        }
        Err(error) => Err(error),
        Ok(plugin) => plugin.run().await,
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("node-plugin: {error}");
            ExitCode::from(2)
        }
    }
}
