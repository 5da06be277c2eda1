//! The seam between the volume group and the host's volume mount folders:
//! the Win32 mount point APIs CSI Proxy's host layer calls. [`OsMounts`]
//! calls them, and checks after a mount that the folder leads to the
//! volume, so a host that reports success and mounts nothing gets an
//! error, never a false success.

use std::io;
use std::os::windows::fs::MetadataExt;

use windows::core::HSTRING;

use super::on_host::win32_code;
use windows::Win32::Storage::FileSystem::{
    DeleteVolumeMountPointW, FindClose, FindFirstFileW, GetVolumeNameForVolumeMountPointW,
    SetVolumeMountPointW, WIN32_FIND_DATAW,
};

/// How the volume group sees and makes mount folders. Folders are given
/// without a trailing `\`; volumes as `\\?\Volume{guid}\`.
pub(crate) trait Mounts: Send + Sync + 'static {
    /// The volume mounted at `folder`, if it is a volume mount folder;
    /// `None` for anything else that is there. A missing `folder` is an
    /// error (`NotFound`).
    fn mounted_at(&self, folder: &str) -> io::Result<Option<String>>;

    /// Mounts `volume` at the empty directory `folder`.
    fn mount(&self, folder: &str, volume: &str) -> io::Result<()>;

    /// Removes the mount point at `folder`, leaving the directory.
    fn unmount(&self, folder: &str) -> io::Result<()>;
}

/// The host's mount folders.
pub(crate) struct OsMounts;

/// `FILE_ATTRIBUTE_REPARSE_POINT`.
const REPARSE_POINT: u32 = 0x400;
/// `IO_REPARSE_TAG_MOUNT_POINT`: a volume mount folder, or a junction.
const TAG_MOUNT_POINT: u32 = 0xA000_0003;
/// What `GetVolumeNameForVolumeMountPointW` answers for a folder that is
/// no volume's: `ERROR_INVALID_PARAMETER`, `ERROR_NOT_A_REPARSE_POINT`.
const NOT_A_VOLUME: [Option<i32>; 2] = [Some(87), Some(4390)];
/// The longest volume name, `\\?\Volume{guid}\`, with room to spare.
const VOLUME_NAME_LENGTH: usize = 64;

/// `folder` with the trailing `\` the mount point APIs want.
fn with_backslash(folder: &str) -> HSTRING {
    HSTRING::from(format!("{}\\", folder.trim_end_matches('\\')))
}

/// The reparse tag of `path`, which is a reparse point.
fn reparse_tag(path: &str) -> io::Result<u32> {
    // FindFirstFileW wants no trailing `\` (and `WindowsPath` has no
    // wildcards).
    let path = HSTRING::from(path.trim_end_matches('\\'));
    let mut found = WIN32_FIND_DATAW::default();
    // SAFETY: a path and a structure to fill; the handle is closed below.
    let handle = unsafe { FindFirstFileW(&path, &mut found) }?;
    // SAFETY: the handle FindFirstFileW opened, closed once.
    let _ = unsafe { FindClose(handle) };
    Ok(found.dwReserved0)
}

impl Mounts for OsMounts {
    fn mounted_at(&self, folder: &str) -> io::Result<Option<String>> {
        let meta = std::fs::symlink_metadata(folder)?;
        if meta.file_attributes() & REPARSE_POINT == 0 || reparse_tag(folder)? != TAG_MOUNT_POINT {
            return Ok(None);
        }
        let mut name = [0u16; VOLUME_NAME_LENGTH];
        // SAFETY: a path, and a buffer of the length passed.
        match unsafe { GetVolumeNameForVolumeMountPointW(&with_backslash(folder), &mut name) } {
            Ok(()) => {
                let end = name.iter().position(|&c| c == 0).unwrap_or(name.len());
                Ok(Some(String::from_utf16_lossy(&name[..end])))
            }
            // A junction has the same tag but no volume.
            Err(e) if NOT_A_VOLUME.contains(&win32_code(&e)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn mount(&self, folder: &str, volume: &str) -> io::Result<()> {
        // SAFETY: two paths.
        unsafe { SetVolumeMountPointW(&with_backslash(folder), &HSTRING::from(volume)) }?;
        match self.mounted_at(folder) {
            Ok(Some(mounted)) if mounted.eq_ignore_ascii_case(volume) => Ok(()),
            found => {
                // Whatever was made goes, since the answer is that nothing was.
                let _ = self.unmount(folder);
                let found = match found {
                    Ok(Some(other)) => format!("leads to {other}"),
                    Ok(None) => "is no mount point".to_owned(),
                    Err(error) => format!("cannot be read ({error})"),
                };
                Err(io::Error::other(format!(
                    "the host reported the volume mounted, but {folder} {found}"
                )))
            }
        }
    }

    fn unmount(&self, folder: &str) -> io::Result<()> {
        // SAFETY: a path.
        unsafe { DeleteVolumeMountPointW(&with_backslash(folder)) }.map_err(io::Error::from)
    }
}
