//! The look at a share's root before the mounter first maps the share:
//! whether the share already answers on the node. Only a share Windows
//! refused makes a mapping made next the mounter's; anything else (the
//! share answers, or the look told nothing) leaves it someone else's.

use super::Shares;
use crate::api::{SmbRemotePath, WindowsPath};
use crate::error::Error;
use crate::host_cause::HostCause;

impl Shares {
    /// Whether Windows refused `share`'s root on the node: then no mapping
    /// of it is there (CSI Proxy's `IsSymlink` of `\\server\share\` is an
    /// `Lstat` as SYSTEM, which a mapping, or the computer account, lets
    /// through), and a mapping the next call makes is this mounter's. An
    /// answer, or a look that fails otherwise, is `false`: a mapping left
    /// behind is a leak, a mapping removed under its owner is not undone.
    pub(super) async fn share_refused(&self, share: &SmbRemotePath) -> bool {
        let Some(root) = WindowsPath::share_root_of(share) else {
            return false;
        };
        let looked = match self.proxy.filesystem() {
            Ok(filesystem) => filesystem.is_symlink(&root).await,
            Err(error) => Err(error),
        };
        match looked {
            Ok(_) => {
                tracing::info!(%share, "the share answers before its first mapping: not this mounter's");
                false
            }
            Err(error) if refuses_the_share(&error) => true,
            Err(error) => {
                tracing::warn!(%share, %error, "the look at the share's root told nothing: its mapping is taken as someone else's");
                false
            }
        }
    }
}

/// Whether a failed look at a share's root is Windows' refusal of the
/// share: no credentials for it (1326, 5, 65), no such server or share
/// (53, 67), the connection gone (64).
fn refuses_the_share(error: &Error) -> bool {
    matches!(error, Error::Host { .. })
        && matches!(
            error.host_cause(),
            Some(
                HostCause::LogonFailure
                    | HostCause::AccessDenied
                    | HostCause::NetworkPathNotFound
                    | HostCause::NetworkNameNotFound
                    | HostCause::NetworkNameDeleted
            )
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::Operation;
    use crate::error::Code;

    #[test]
    fn only_windows_refusing_the_share_counts_as_unmapped() {
        let host = |text: &str| Error::host(Operation::IsSymlink, Code::Unknown, text);
        for refused in [
            r"CreateFile \\srv\share\: The user name or password is incorrect.",
            r"GetFileAttributesEx \\srv\share\: The network name cannot be found.",
            r"Access is denied.",
            r"The network path was not found.",
        ] {
            assert!(refuses_the_share(&host(refused)), "{refused}");
        }
        for told_nothing in [
            "path is not within the working directories",
            "Generic failure",
            r"lstat \\srv\share\: The system cannot find the path specified.",
        ] {
            assert!(!refuses_the_share(&host(told_nothing)), "{told_nothing}");
        }
        assert!(!refuses_the_share(&Error::NotImplemented {
            operation: Operation::IsSymlink
        }));
    }
}
