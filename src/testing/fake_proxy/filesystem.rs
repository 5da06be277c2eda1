//! Server side of the filesystem layouts. Like CSI Proxy from v1.0, the
//! server ignores the `PathContext` of old requests and never fills the
//! legacy `error` field: failures are gRPC statuses.

use std::sync::Arc;

use async_trait::async_trait;

use super::codec::{decode, host, path, reply, Answer};
use super::routing::WireServer;
use crate::api::FilesystemApi;
use crate::capability::FilesystemOperation as Op;
use crate::wire::filesystem::{v1beta1 as context, v2alpha1 as plain};

pub(super) struct ContextFilesystem(pub Arc<dyn FilesystemApi>);

#[async_trait]
impl WireServer<Op> for ContextFilesystem {
    async fn handle(&self, op: Op, body: &[u8]) -> Answer {
        let api = &self.0;
        match op {
            Op::PathExists => {
                let request: context::PathExistsRequest = decode(body)?;
                let exists = host!(api.path_exists(&path(&request.path)?));
                reply(context::PathExistsResponse {
                    error: String::new(),
                    exists,
                })
            }
            Op::Mkdir => {
                let request: context::MkdirRequest = decode(body)?;
                host!(api.mkdir(&path(&request.path)?));
                reply(context::MkdirResponse::default())
            }
            Op::Rmdir => {
                let request: context::RmdirRequest = decode(body)?;
                host!(api.rmdir(&path(&request.path)?, request.force));
                reply(context::RmdirResponse::default())
            }
            Op::CreateSymlink => {
                let request: context::LinkPathRequest = decode(body)?;
                host!(
                    api.create_symlink(&path(&request.source_path)?, &path(&request.target_path)?)
                );
                reply(context::LinkPathResponse::default())
            }
            Op::IsSymlink => {
                let request: context::IsMountPointRequest = decode(body)?;
                let is_mount_point = host!(api.is_symlink(&path(&request.path)?));
                reply(context::IsMountPointResponse {
                    error: String::new(),
                    is_mount_point,
                })
            }
            // Not in this layout.
            Op::RmdirContents => Err(super::routing::not_in_layout(op)),
        }
    }
}

pub(super) struct PlainFilesystem(pub Arc<dyn FilesystemApi>);

#[async_trait]
impl WireServer<Op> for PlainFilesystem {
    async fn handle(&self, op: Op, body: &[u8]) -> Answer {
        let api = &self.0;
        match op {
            Op::PathExists => {
                let request: plain::PathExistsRequest = decode(body)?;
                let exists = host!(api.path_exists(&path(&request.path)?));
                reply(plain::PathExistsResponse { exists })
            }
            Op::Mkdir => {
                let request: plain::MkdirRequest = decode(body)?;
                host!(api.mkdir(&path(&request.path)?));
                reply(plain::MkdirResponse {})
            }
            Op::Rmdir => {
                let request: plain::RmdirRequest = decode(body)?;
                host!(api.rmdir(&path(&request.path)?, request.force));
                reply(plain::RmdirResponse {})
            }
            Op::RmdirContents => {
                let request: plain::RmdirContentsRequest = decode(body)?;
                host!(api.rmdir_contents(&path(&request.path)?));
                reply(plain::RmdirContentsResponse {})
            }
            Op::CreateSymlink => {
                let request: plain::CreateSymlinkRequest = decode(body)?;
                host!(
                    api.create_symlink(&path(&request.source_path)?, &path(&request.target_path)?)
                );
                reply(plain::CreateSymlinkResponse {})
            }
            Op::IsSymlink => {
                let request: plain::IsSymlinkRequest = decode(body)?;
                let is_symlink = host!(api.is_symlink(&path(&request.path)?));
                reply(plain::IsSymlinkResponse { is_symlink })
            }
        }
    }
}
