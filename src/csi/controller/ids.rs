//! The test controller's volume IDs, and those of its work on a share:
//! the node service resolves the first itself, and the mounter's
//! reconcile leaves the second alone.

use std::collections::HashMap;

use crate::api::SmbRemotePath;
use crate::csi::driver::Volume;
use crate::mount::DiskSelector;
use crate::Status;

/// How the test controller's volume IDs begin: `csi-test:disk:page83:<ID>`,
/// `csi-test:disk:lun:<LUN>`, `csi-test:smb:<\\server\share\folder>`, or
/// for a folder whose ID would pass the CSI spec's 128 bytes,
/// `csi-test:smb:#<hash of the folder>` with the folder in the volume
/// context's [`SHARE_CONTEXT`].
pub(super) const TEST_VOLUME: &str = "csi-test:";

/// The volume context key of a share volume's folder.
pub(super) const SHARE_CONTEXT: &str = "csi-test/share";

/// The volume ID of the share folder `remote`: the folder itself, or its
/// hash where that would pass the spec's limit.
pub(super) fn smb_volume_id(remote: &SmbRemotePath) -> String {
    let plain = format!("{TEST_VOLUME}smb:{remote}");
    match plain.len() <= crate::csi::checks::MAX_STRING_BYTES {
        true => plain,
        false => format!(
            "{TEST_VOLUME}smb:#{:016x}",
            fnv1a(&remote.as_str().to_lowercase())
        ),
    }
}

/// The 64-bit FNV-1a hash of `text`: a short name, the same in every run.
pub(super) fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The volume a test controller's volume ID names, if it is one of
/// theirs: the node service resolves these itself when it serves a
/// [`TestController`](super::TestController), and asks the driver for
/// any other.
pub(crate) fn test_volume(
    volume_id: &str,
    context: &HashMap<String, String>,
) -> Option<Result<Volume, Status>> {
    let rest = volume_id.strip_prefix(TEST_VOLUME)?;
    let unknown = || Status::not_found(format!("no volume {volume_id:?}"));
    let volume = if rest.starts_with("smb:#") {
        // The folder is in the context, and must be the one hashed.
        let remote = context.get(SHARE_CONTEXT).map(SmbRemotePath::new);
        match remote {
            Some(Ok(remote)) if smb_volume_id(&remote) == volume_id => {
                Ok(Volume::Smb(remote, None))
            }
            _ => Err(unknown()),
        }
    } else if let Some(lun) = rest.strip_prefix("disk:lun:") {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_folders_id_is_its_hash_within_the_specs_limit() {
        let short = SmbRemotePath::new(r"\\files\data\pv-1").unwrap();
        assert_eq!(smb_volume_id(&short), r"csi-test:smb:\\files\data\pv-1");
        let long = SmbRemotePath::new(format!(r"\\files\data\{}", "a".repeat(128))).unwrap();
        let id = smb_volume_id(&long);
        assert!(id.len() <= 128 && id.starts_with("csi-test:smb:#"), "{id}");
        let context: HashMap<_, _> = [(SHARE_CONTEXT.to_owned(), long.to_string())].into();
        let resolved = test_volume(&id, &context).unwrap().unwrap();
        assert!(matches!(resolved, Volume::Smb(share, None) if share == long));
        // Without the folder, or with another one, it is no volume.
        let other: HashMap<_, _> = [(SHARE_CONTEXT.to_owned(), short.to_string())].into();
        for context in [HashMap::new(), other] {
            let answer = test_volume(&id, &context).unwrap();
            assert_eq!(answer.unwrap_err().code(), crate::Code::NotFound);
        }
    }
}
