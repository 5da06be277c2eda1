//! The test controller's volume IDs, and those of its work on a share:
//! the node service resolves the first itself, and the mounter's
//! reconcile leaves the second alone.

use crate::api::SmbRemotePath;
use crate::csi::driver::Volume;
use crate::mount::DiskSelector;
use crate::Status;

/// How the test controller's volume IDs begin: `csi-test:disk:page83:<ID>`,
/// `csi-test:disk:lun:<LUN>`, `csi-test:smb:<\\server\share\folder>`.
pub(super) const TEST_VOLUME: &str = "csi-test:";

/// The volume a test controller's volume ID names, if it is one of
/// theirs: the node service resolves these itself when it serves a
/// [`TestController`](super::TestController), and asks the driver for
/// any other.
pub(crate) fn test_volume(volume_id: &str) -> Option<Result<Volume, Status>> {
    let rest = volume_id.strip_prefix(TEST_VOLUME)?;
    let unknown = || Status::not_found(format!("no volume {volume_id:?}"));
    let volume = if let Some(lun) = rest.strip_prefix("disk:lun:") {
        Ok(Volume::Disk(DiskSelector::lun(lun)))
    } else if let Some(page83) = rest.strip_prefix("disk:page83:") {
        Ok(Volume::Disk(DiskSelector::page83(page83)))
    } else if let Some(share) = rest.strip_prefix("smb:") {
        SmbRemotePath::new(share)
            .map(|share| Volume::Smb(share, None))
            .map_err(|_| unknown())
    } else {
        Err(unknown())
    };
    Some(volume)
}

/// How the mounter's volume IDs of the controller's work on a share begin:
/// never a CSI volume's ID (`smb:`, `disk:`).
pub(super) const WORK_VOLUME: &str = "controller-work:";

/// Whether `volume` (a mounter's volume ID) is the controller's work on a
/// share, not a CSI volume: a stage of it that a crash left behind is not
/// live ([`Mounter::reconcile`](crate::mount::Mounter::reconcile)).
pub(crate) fn is_work_volume(volume: &str) -> bool {
    volume.starts_with(WORK_VOLUME)
}
