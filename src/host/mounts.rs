//! The seam between the volume group and the host's volume mount folders:
//! the Win32 mount point APIs CSI Proxy's host layer calls. [`OsMounts`]
//! calls them, and checks after a mount that the folder leads to the
//! volume, so a host that reports success and mounts nothing gets an
//! error, never a false success.

use std::io;
use std::os::windows::fs::MetadataExt;
use std::path::Path;

use windows::core::HSTRING;

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

    /// The unique name (`\\?\Volume{guid}\`) of `volume`, given by any of
    /// its names: a volume may have several GUID names, and a mount folder
    /// answers with the unique one.
    fn unique_name(&self, volume: &str) -> io::Result<String>;

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

/// Whether a mount-point reparse point leads to a volume (`\\?\Volume{...}\`,
/// as `read_link` gives its target) rather than to a directory, as a
/// junction does: the two share a tag.
fn leads_to_a_volume(target: &Path) -> bool {
    let target = target.to_string_lossy();
    let prefix = r"\\?\Volume{";
    let Some(rest) = (target.get(prefix.len()..))
        .filter(|_| target[..prefix.len()].eq_ignore_ascii_case(prefix))
    else {
        return false;
    };
    // The volume's root, `{guid}\` and nothing after: a junction may lead
    // to a folder of a volume by its GUID name.
    match rest.split_once('}') {
        Some((guid, root)) => {
            guid.len() == 36
                && guid.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
                && matches!(root, "" | "\\")
        }
        None => false,
    }
}

/// The unique volume name `GetVolumeNameForVolumeMountPointW` gives for
/// `path` (a mount folder, or a volume's name).
fn volume_name_for(path: &str) -> io::Result<String> {
    let mut name = [0u16; VOLUME_NAME_LENGTH];
    // SAFETY: a path, and a buffer of the length passed.
    unsafe { GetVolumeNameForVolumeMountPointW(&with_backslash(path), &mut name) }?;
    let end = name.iter().position(|&c| c == 0).unwrap_or(name.len());
    Ok(String::from_utf16_lossy(&name[..end]))
}

impl Mounts for OsMounts {
    fn mounted_at(&self, folder: &str) -> io::Result<Option<String>> {
        let meta = std::fs::symlink_metadata(folder)?;
        if meta.file_attributes() & REPARSE_POINT == 0 || reparse_tag(folder)? != TAG_MOUNT_POINT {
            return Ok(None);
        }
        // Told apart by where they lead, not by the error Windows gives a
        // junction's volume name (which differs with what it leads to).
        if !leads_to_a_volume(&std::fs::read_link(folder)?) {
            return Ok(None);
        }
        volume_name_for(folder).map(Some)
    }

    fn unique_name(&self, volume: &str) -> io::Result<String> {
        volume_name_for(volume)
    }

    fn mount(&self, folder: &str, volume: &str) -> io::Result<()> {
        let wanted = self.unique_name(volume)?;
        // SAFETY: two paths.
        unsafe { SetVolumeMountPointW(&with_backslash(folder), &HSTRING::from(volume)) }?;
        match self.mounted_at(folder) {
            Ok(Some(mounted)) if mounted.eq_ignore_ascii_case(&wanted) => Ok(()),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mount_point_leads_to_a_volume_and_a_junction_to_a_directory() {
        let volume = r"\\?\Volume{3a1c2b4d-0000-4000-8000-000000000003}\";
        assert!(leads_to_a_volume(Path::new(volume)));
        assert!(leads_to_a_volume(Path::new(&volume.to_lowercase())));
        let into_a_volume = r"\\?\Volume{3a1c2b4d-0000-4000-8000-000000000003}\data";
        for junction in [
            r"\\?\C:\var\lib\kubelet\x",
            r"C:\data",
            r"\\?\Volume{",
            into_a_volume,
        ] {
            assert!(!leads_to_a_volume(Path::new(junction)), "{junction}");
        }
    }
}
