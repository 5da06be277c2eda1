//! A staged share's size and use: `share_stats`. No CSI Proxy release can
//! measure a share (its calls take a volume ID, and a share has none), so
//! the node measures the share itself, through a [`ShareSpace`].

use std::time::Duration;

use super::journal::key;
use super::{FsStats, Mounter};
use crate::api::{SmbRemotePath, WindowsPath};
use crate::error::{Error, Result};

/// How long a measure may take: a share's server that stopped answering
/// must not hold kubelet's periodic stats call.
pub(super) const MEASURE_DEADLINE: Duration = Duration::from_secs(10);

/// Share measures under way at once, the most.
pub(super) const MEASURES_AT_ONCE: usize = 4;

/// Measures the space of an SMB share's folder as this node sees it:
/// [`MounterBuilder::share_space`](super::MounterBuilder::share_space).
///
/// The default, [`NodeShareSpace`], asks Windows in-process; a
/// [`FakeHost`](crate::testing::FakeHost) answers from the sizes it keeps.
pub trait ShareSpace: Send + Sync + 'static {
    /// The size and use of the share that holds `folder`
    /// (`\\server\share\folder`), or `None` where this node cannot tell
    /// (the share is not reachable from this process, or the platform has
    /// no way to ask). It may block: the mounter calls it off the runtime's
    /// threads, and gives up after 10 seconds.
    fn measure(&self, folder: &SmbRemotePath) -> Option<FsStats>;
}

/// The node's own reading of a share's space: on Windows,
/// `GetDiskFreeSpaceExW` on the folder's UNC path, which the process
/// reaches through the node's SMB global mapping (a HostProcess container
/// does; whether a plugin in a Windows container does depends on the
/// node, and where it does not, the answer is `None`); elsewhere nothing
/// (`None`).
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeShareSpace;

impl ShareSpace for NodeShareSpace {
    #[cfg(windows)]
    fn measure(&self, folder: &SmbRemotePath) -> Option<FsStats> {
        use windows_sys::Win32::Storage::FileSystem::GetDiskFreeSpaceExW;
        // A folder's path must end with a backslash for a UNC root.
        let path = format!("{}\\", folder.as_str().trim_end_matches('\\'));
        let wide: Vec<u16> = path.encode_utf16().chain([0]).collect();
        let (mut available, mut total, mut free) = (0u64, 0u64, 0u64);
        // SAFETY: `wide` is NUL-terminated and outlives the call; the
        // three out-pointers are valid u64s.
        let ok =
            unsafe { GetDiskFreeSpaceExW(wide.as_ptr(), &mut available, &mut total, &mut free) };
        // The total and the bytes available are the caller's, within its
        // quota; the free bytes are the whole volume's: used is the first
        // two's difference.
        let _ = free;
        (ok != 0 && total > 0).then(|| FsStats {
            total_bytes: total,
            used_bytes: total.saturating_sub(available),
            available_bytes: available,
        })
    }

    #[cfg(not(windows))]
    fn measure(&self, _folder: &SmbRemotePath) -> Option<FsStats> {
        None
    }
}

impl Mounter {
    /// `NodeGetVolumeStats` of the share folder `share`, at `volume_path`
    /// (its staging path or a published link): the share's size and use as
    /// this node sees it ([`ShareSpace`]), or `None` when the node cannot
    /// measure it. A path that does not lead, through the links this
    /// mounter made, to that share's staging link is [`Error::NotFound`]:
    /// the request's volume is not there.
    pub async fn share_stats(
        &self,
        share: &SmbRemotePath,
        volume_path: &WindowsPath,
    ) -> Result<Option<FsStats>> {
        let staged = self.inner.paths.share_behind(volume_path);
        if staged.is_none_or(|staged| key(staged.as_str()) != key(share.as_str())) {
            return Err(Error::NotFound {
                what: format!("the share {share} at {volume_path}"),
            });
        }
        Ok(self.inner.shares.measure(share).await)
    }
}
