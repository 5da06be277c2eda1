//! Server side of the filesystem layouts, made of the adapters' tables
//! (`src/adapter/filesystem.rs`). Like CSI Proxy from v1.0, the server
//! ignores the `PathContext` of old requests and never fills the legacy
//! `error` field: failures are gRPC statuses.

use std::sync::Arc;

use super::layout::wire_server;
use crate::adapter::fields::*;
use crate::adapter::filesystem::{context_filesystem, plain_filesystem};
use crate::api::FilesystemApi;

pub(super) struct ContextFilesystem {
    pub api: Arc<dyn FilesystemApi>,
}

context_filesystem!(wire_server ContextFilesystem: FilesystemOperation);

pub(super) struct PlainFilesystem {
    pub api: Arc<dyn FilesystemApi>,
}

plain_filesystem!(wire_server PlainFilesystem: FilesystemOperation);
