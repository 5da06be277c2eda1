//! The host backend: the groups served in-process, through the Windows
//! APIs CSI Proxy's own host layer uses, for drivers that run as
//! HostProcess containers with no proxy (feature `host-process`, Windows
//! only). See `docs/host-process.md` for what each operation does and
//! where it was verified.
//!
//! Every call runs on a blocking thread (`on_host`), so a deadline stops
//! the caller's wait while the host work may go on, as it does behind a
//! proxy. With no proxy behind it, this backend is the last check: paths
//! are held to the working directories as the proxy's server layer holds
//! them. Arguments are checked before they get here, as on the proxy
//! path: every call comes through a `CsiProxy` handle, which runs the
//! checks of its group's catalogue entries (`catalogue/<group>.rs`).

mod devices;
mod disk;
mod filesystem;
mod in_flight;
mod iscsi;
mod links;
mod mounts;
mod on_host;
mod smb;
mod system;
mod volume;
mod wmi;

use std::sync::Arc;

use crate::api::{DiskApi, FilesystemApi, IscsiApi, SmbApi, SystemApi, VolumeApi};
use crate::group::ApiGroup;

use links::OsLinks;

/// The host backend as the rest of the crate sees it: its one way in.
/// What it serves, which of its calls are stuck, and whether this process
/// may do host work at all; everything else in `host` is its own.
pub(crate) struct HostBackend;

impl HostBackend {
    /// The six groups over the real host; local paths must lie under
    /// `working_dirs`.
    pub fn groups(working_dirs: &[String]) -> HostGroups {
        HostGroups::new(working_dirs.to_vec())
    }

    /// The host calls of `group` whose callers stopped waiting and that
    /// still run in this process (any client's), with the process's limit
    /// they count against.
    pub fn stuck(group: ApiGroup) -> Option<in_flight::Stuck> {
        in_flight::stuck(group)
    }

    /// Whether this process's token is elevated (an administrator, or
    /// `NT AUTHORITY\SYSTEM`): what storage work on the host needs.
    pub fn is_elevated() -> bool {
        process_is_elevated()
    }
}

/// The groups the host backend serves, over the real host
/// ([`HostBackend::groups`]).
pub(crate) struct HostGroups {
    pub disk: Arc<dyn DiskApi>,
    pub filesystem: Arc<dyn FilesystemApi>,
    pub iscsi: Arc<dyn IscsiApi>,
    pub smb: Arc<dyn SmbApi>,
    pub system: Arc<dyn SystemApi>,
    pub volume: Arc<dyn VolumeApi>,
}

impl HostGroups {
    /// The host's groups; local paths must lie under `working_dirs`.
    fn new(working_dirs: Vec<String>) -> Self {
        let wmi = Arc::new(wmi::OsWmi);
        let reachable = Arc::new(smb::share_answers);
        Self {
            disk: Arc::new(disk::HostDisk::new(
                wmi.clone(),
                Arc::new(devices::OsDevices),
            )),
            filesystem: Arc::new(
                filesystem::HostFilesystem::new(working_dirs.clone(), OsLinks)
                    .with_mappings(smb::MappingLook::new(wmi.clone())),
            ),
            iscsi: Arc::new(iscsi::HostIscsi::new(wmi.clone())),
            smb: Arc::new(smb::HostSmb::new(
                wmi.clone(),
                Arc::new(OsLinks),
                working_dirs,
                reachable,
            )),
            system: Arc::new(system::HostSystem::new(wmi.clone())),
            volume: Arc::new(volume::HostVolume::new(
                wmi,
                Arc::new(mounts::OsMounts),
                Arc::new(OsLinks),
            )),
        }
    }
}

/// Whether this process's token is elevated (an administrator, or
/// `NT AUTHORITY\SYSTEM`): what storage work on the host needs.
fn process_is_elevated() -> bool {
    use windows::Win32::Foundation::{CloseHandle, HANDLE};
    use windows::Win32::Security::{
        GetTokenInformation, TokenElevation, TOKEN_ELEVATION, TOKEN_QUERY,
    };
    use windows::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

    let mut token = HANDLE::default();
    // SAFETY: the pseudo-handle of this process, and a handle to fill.
    if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) }.is_err() {
        return false;
    }
    let mut elevation = TOKEN_ELEVATION::default();
    let mut size = 0u32;
    // SAFETY: an open token, and a buffer of the structure's size.
    let queried = unsafe {
        GetTokenInformation(
            token,
            TokenElevation,
            Some((&mut elevation as *mut TOKEN_ELEVATION).cast()),
            std::mem::size_of::<TOKEN_ELEVATION>() as u32,
            &mut size,
        )
    };
    // SAFETY: the token was opened above and is closed once.
    let _ = unsafe { CloseHandle(token) };
    queried.is_ok() && elevation.TokenIsElevated != 0
}

#[cfg(all(test, feature = "testing"))]
mod tests;
