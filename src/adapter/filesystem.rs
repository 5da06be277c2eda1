//! Filesystem adapters.
//!
//! - [`ContextFilesystem`]: v1alpha1, v1beta1 — requests carry a
//!   `PathContext` (so `Rmdir.force` is field 3), responses a legacy
//!   `error` field ahead of the payload; `LinkPath` and `IsMountPoint`.
//! - [`PlainFilesystem`]: v1beta2, v1, v2alpha1.

use async_trait::async_trait;

use super::convert::legacy_error;
use super::WireClient;
use crate::api::{FilesystemApi, WindowsPath};
use crate::capability::Operation as Op;
use crate::error::Result;
use crate::wire::filesystem::{v1beta1 as context, v2alpha1 as plain};

pub(super) struct ContextFilesystem {
    wire: WireClient,
}

impl ContextFilesystem {
    pub fn new(wire: WireClient) -> Self {
        Self { wire }
    }
}

/// Which root an old proxy should check `path` against.
fn path_context(path: &WindowsPath) -> i32 {
    if path.is_under_pods() {
        context::PathContext::Pod as i32
    } else {
        context::PathContext::Plugin as i32
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl FilesystemApi for ContextFilesystem {
    async fn path_exists(&self, path: &WindowsPath) -> Result<bool> {
        let request = context::PathExistsRequest {
            path: path.to_string(),
            context: path_context(path),
        };
        let response: context::PathExistsResponse = self.wire.call(Op::PathExists, request).await?;
        legacy_error(Op::PathExists, response.error)?;
        Ok(response.exists)
    }

    async fn mkdir(&self, path: &WindowsPath) -> Result<()> {
        let request = context::MkdirRequest {
            path: path.to_string(),
            context: path_context(path),
        };
        let response: context::MkdirResponse = self.wire.call(Op::Mkdir, request).await?;
        legacy_error(Op::Mkdir, response.error)
    }

    async fn rmdir(&self, path: &WindowsPath, force: bool) -> Result<()> {
        let request = context::RmdirRequest {
            path: path.to_string(),
            context: path_context(path),
            force,
        };
        let response: context::RmdirResponse = self.wire.call(Op::Rmdir, request).await?;
        legacy_error(Op::Rmdir, response.error)
    }

    async fn rmdir_contents(&self, _path: &WindowsPath) -> Result<()> {
        Err(self.wire.unsupported(Op::RmdirContents))
    }

    async fn create_symlink(&self, target: &WindowsPath, link: &WindowsPath) -> Result<()> {
        let request = context::LinkPathRequest {
            source_path: target.to_string(),
            target_path: link.to_string(),
        };
        let response: context::LinkPathResponse =
            self.wire.call(Op::CreateSymlink, request).await?;
        legacy_error(Op::CreateSymlink, response.error)
    }

    async fn is_symlink(&self, path: &WindowsPath) -> Result<bool> {
        let request = context::IsMountPointRequest {
            path: path.to_string(),
        };
        let response: context::IsMountPointResponse =
            self.wire.call(Op::IsSymlink, request).await?;
        legacy_error(Op::IsSymlink, response.error)?;
        Ok(response.is_mount_point)
    }
}

pub(super) struct PlainFilesystem {
    wire: WireClient,
}

impl PlainFilesystem {
    pub fn new(wire: WireClient) -> Self {
        Self { wire }
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl FilesystemApi for PlainFilesystem {
    async fn path_exists(&self, path: &WindowsPath) -> Result<bool> {
        let request = plain::PathExistsRequest {
            path: path.to_string(),
        };
        let response: plain::PathExistsResponse = self.wire.call(Op::PathExists, request).await?;
        Ok(response.exists)
    }

    async fn mkdir(&self, path: &WindowsPath) -> Result<()> {
        let request = plain::MkdirRequest {
            path: path.to_string(),
        };
        let _: plain::MkdirResponse = self.wire.call(Op::Mkdir, request).await?;
        Ok(())
    }

    async fn rmdir(&self, path: &WindowsPath, force: bool) -> Result<()> {
        let request = plain::RmdirRequest {
            path: path.to_string(),
            force,
        };
        let _: plain::RmdirResponse = self.wire.call(Op::Rmdir, request).await?;
        Ok(())
    }

    async fn rmdir_contents(&self, path: &WindowsPath) -> Result<()> {
        let request = plain::RmdirContentsRequest {
            path: path.to_string(),
        };
        let _: plain::RmdirContentsResponse = self.wire.call(Op::RmdirContents, request).await?;
        Ok(())
    }

    async fn create_symlink(&self, target: &WindowsPath, link: &WindowsPath) -> Result<()> {
        let request = plain::CreateSymlinkRequest {
            source_path: target.to_string(),
            target_path: link.to_string(),
        };
        let _: plain::CreateSymlinkResponse = self.wire.call(Op::CreateSymlink, request).await?;
        Ok(())
    }

    async fn is_symlink(&self, path: &WindowsPath) -> Result<bool> {
        let request = plain::IsSymlinkRequest {
            path: path.to_string(),
        };
        let response: plain::IsSymlinkResponse = self.wire.call(Op::IsSymlink, request).await?;
        Ok(response.is_symlink)
    }
}
