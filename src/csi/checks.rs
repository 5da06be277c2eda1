//! The checks of a request before any work, with the codes the CSI spec
//! gives: a missing field is `INVALID_ARGUMENT`; a capability the volume
//! cannot give (a raw block volume, several nodes on a disk, a read-only
//! use) is refused before anything is touched.

use std::collections::HashMap;

use crate::api::WindowsPath;
use crate::Status;

use super::driver::VolumeKind;
use super::v1::volume_capability::{access_mode::Mode, AccessType};
use super::v1::VolumeCapability;

/// `value`, which the request must have.
pub(crate) fn required<'a>(what: &str, value: &'a str) -> Result<&'a str, Status> {
    match value {
        "" => Err(Status::invalid_argument(format!("{what} is missing"))),
        value => Ok(value),
    }
}

/// The CSI spec's size limit of a string field (a volume ID).
pub(crate) const MAX_STRING_BYTES: usize = 128;
/// The CSI spec's size limit of a map field (a context), its keys and
/// values together.
pub(crate) const MAX_MAP_BYTES: usize = 4 << 10;

/// The request's volume ID: there, and within the spec's 128 bytes (it is
/// recorded in the journal and named in logs).
pub(crate) fn volume_id(value: &str) -> Result<&str, Status> {
    let value = required("volume_id", value)?;
    match value.len() > MAX_STRING_BYTES {
        true => Err(Status::invalid_argument(format!(
            "volume_id has {} bytes, more than the {MAX_STRING_BYTES} the CSI spec allows",
            value.len()
        ))),
        false => Ok(value),
    }
}

/// A context map within the spec's 4 KiB, keys and values together.
pub(crate) fn context(what: &str, map: &HashMap<String, String>) -> Result<(), Status> {
    let bytes: usize = map.iter().map(|(key, value)| key.len() + value.len()).sum();
    match bytes > MAX_MAP_BYTES {
        true => Err(Status::invalid_argument(format!(
            "{what} has {bytes} bytes, more than the {MAX_MAP_BYTES} the CSI spec allows"
        ))),
        false => Ok(()),
    }
}

/// A path the request must have, as Windows writes it.
pub(crate) fn path(what: &str, value: &str) -> Result<WindowsPath, Status> {
    Ok(WindowsPath::new(required(what, value)?)?)
}

/// A path at which a volume is looked for: one that cannot be a Windows
/// path holds no volume (`NOT_FOUND`, as the spec answers for a path
/// without the volume).
pub(crate) fn volume_path(value: &str) -> Result<WindowsPath, Status> {
    let value = required("volume_path", value)?;
    WindowsPath::new(value).map_err(|_| Status::not_found(format!("no volume at {value:?}")))
}

/// The capability is there, names a file system (raw block volumes are
/// not served: CSI Proxy cannot hand a pod a raw disk) and an access mode.
/// `INVALID_ARGUMENT` otherwise. Its file system type is checked with the
/// volume's kind, in [`usable`].
pub(crate) fn capability(capability: Option<&VolumeCapability>) -> Result<Mode, Status> {
    let capability =
        capability.ok_or_else(|| Status::invalid_argument("volume_capability is missing"))?;
    match capability.access_type {
        Some(AccessType::Mount(_)) => {}
        Some(AccessType::Block(_)) => {
            return Err(Status::invalid_argument(
                "raw block volumes are not served: CSI Proxy mounts file systems only",
            ))
        }
        None => {
            return Err(Status::invalid_argument(
                "volume_capability has no access type",
            ))
        }
    }
    let mode = capability
        .access_mode
        .as_ref()
        .and_then(|mode| Mode::try_from(mode.mode).ok())
        .unwrap_or(Mode::Unknown);
    match mode {
        Mode::Unknown => Err(Status::invalid_argument(
            "volume_capability has no access mode",
        )),
        mode => Ok(mode),
    }
}

/// Whether a volume of `kind` can be used with the capability's `mode`,
/// file system type and mount flags:
///
/// - a disk's (or an iSCSI disk's) file system type is empty or NTFS, in
///   any case: the mounter formats NTFS, the only one Windows mounts, and
///   a volume asked for as ext4 must not be formatted NTFS in its place
///   (`INVALID_ARGUMENT`; a share's type is not looked at, since nothing
///   formats it);
/// - several nodes only on a share, and never read-only (no CSI Proxy
///   call makes a link or a mount read-only, so a read-only volume would
///   be writable: docs/porting.md). `FAILED_PRECONDITION`, the spec's
///   "exceeds capabilities", otherwise.
pub(crate) fn usable(
    kind: VolumeKind,
    mode: Mode,
    capability: Option<&VolumeCapability>,
) -> Result<(), Status> {
    let fs_type = capability.and_then(|c| match &c.access_type {
        Some(AccessType::Mount(mount)) => Some(mount.fs_type.as_str()),
        _ => None,
    });
    if let Some(fs_type) = fs_type.filter(|_| kind.has_volume()) {
        if !(fs_type.is_empty() || fs_type.eq_ignore_ascii_case("ntfs")) {
            return Err(Status::invalid_argument(format!(
                "fs_type {fs_type:?}: a {} is formatted NTFS, the only file system Windows \
                 mounts; ask for \"ntfs\" or leave fs_type empty",
                kind_name(kind)
            )));
        }
    }
    let multi_node = matches!(
        mode,
        Mode::MultiNodeReaderOnly | Mode::MultiNodeSingleWriter | Mode::MultiNodeMultiWriter
    );
    if multi_node && !kind.multi_node() {
        return Err(Status::failed_precondition(format!(
            "access mode {}: a {} is attached to one node at a time",
            mode.as_str_name(),
            kind_name(kind)
        )));
    }
    if matches!(mode, Mode::SingleNodeReaderOnly | Mode::MultiNodeReaderOnly) {
        return Err(read_only(&format!("access mode {}", mode.as_str_name())));
    }
    let flags = capability.and_then(|c| match &c.access_type {
        Some(AccessType::Mount(mount)) => Some(&mount.mount_flags),
        _ => None,
    });
    if flags.is_some_and(|flags| flags.iter().any(|flag| flag == "ro")) {
        return Err(read_only("the mount flag ro"));
    }
    Ok(())
}

/// The refusal of a read-only use.
pub(crate) fn read_only(what: &str) -> Status {
    Status::failed_precondition(format!(
        "{what}: read-only volumes are not served, since CSI Proxy cannot make \
         a link or a mount read-only (the pod could write)"
    ))
}

fn kind_name(kind: VolumeKind) -> &'static str {
    match kind {
        VolumeKind::Disk => "disk",
        VolumeKind::Smb => "share",
        VolumeKind::Iscsi => "iSCSI disk",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::csi::v1::volume_capability::{AccessMode, BlockVolume, MountVolume};
    use crate::Code;

    fn mount(mode: Mode, flags: &[&str]) -> VolumeCapability {
        mount_as(mode, "", flags)
    }

    fn mount_as(mode: Mode, fs_type: &str, flags: &[&str]) -> VolumeCapability {
        VolumeCapability {
            access_mode: Some(AccessMode { mode: mode as i32 }),
            access_type: Some(AccessType::Mount(MountVolume {
                fs_type: fs_type.to_owned(),
                mount_flags: flags.iter().map(|f| (*f).to_owned()).collect(),
                ..MountVolume::default()
            })),
        }
    }

    #[test]
    fn a_disk_is_only_ever_ntfs() {
        use VolumeKind::{Disk, Iscsi, Smb};
        let code = |kind, fs_type| {
            let capability = mount_as(Mode::SingleNodeWriter, fs_type, &[]);
            usable(kind, Mode::SingleNodeWriter, Some(&capability))
                .err()
                .map(|s| s.code())
        };
        for fs_type in ["", "ntfs", "NTFS", "Ntfs"] {
            assert_eq!(code(Disk, fs_type), None, "{fs_type:?}");
            assert_eq!(code(Iscsi, fs_type), None, "{fs_type:?}");
        }
        for fs_type in ["ext4", "xfs", "refs", "fat32", " ntfs"] {
            assert_eq!(
                code(Disk, fs_type),
                Some(Code::InvalidArgument),
                "{fs_type:?}"
            );
            assert_eq!(
                code(Iscsi, fs_type),
                Some(Code::InvalidArgument),
                "{fs_type:?}"
            );
        }
        // Nothing formats a share.
        assert_eq!(code(Smb, "cifs"), None);
    }

    #[test]
    fn capabilities_are_checked_with_the_specs_codes() {
        let code = |c: Option<&VolumeCapability>| capability(c).unwrap_err().code();
        assert_eq!(code(None), Code::InvalidArgument);
        let block = VolumeCapability {
            access_mode: Some(AccessMode {
                mode: Mode::SingleNodeWriter as i32,
            }),
            access_type: Some(AccessType::Block(BlockVolume {})),
        };
        assert_eq!(code(Some(&block)), Code::InvalidArgument);
        assert_eq!(
            code(Some(&mount(Mode::Unknown, &[]))),
            Code::InvalidArgument
        );
        let writer = mount(Mode::SingleNodeWriter, &[]);
        assert_eq!(capability(Some(&writer)).unwrap(), Mode::SingleNodeWriter);

        let usable_code = |kind, mode, flags: &[&str]| {
            usable(kind, mode, Some(&mount(mode, flags)))
                .err()
                .map(|s| s.code())
        };
        use VolumeKind::{Disk, Smb};
        assert_eq!(usable_code(Disk, Mode::SingleNodeWriter, &[]), None);
        assert_eq!(usable_code(Disk, Mode::SingleNodeMultiWriter, &[]), None);
        assert_eq!(
            usable_code(Disk, Mode::MultiNodeMultiWriter, &[]),
            Some(Code::FailedPrecondition)
        );
        assert_eq!(usable_code(Smb, Mode::MultiNodeMultiWriter, &[]), None);
        assert_eq!(
            usable_code(Smb, Mode::MultiNodeReaderOnly, &[]),
            Some(Code::FailedPrecondition)
        );
        assert_eq!(
            usable_code(Disk, Mode::SingleNodeWriter, &["ro"]),
            Some(Code::FailedPrecondition)
        );
    }
}
