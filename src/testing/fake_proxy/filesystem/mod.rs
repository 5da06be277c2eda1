//! The fake proxy's servers of the filesystem layouts, generated from the
//! catalogue (`context_filesystem.rs`, `plain_filesystem.rs`). Like CSI
//! Proxy from v1.0, they ignore the `PathContext` of old requests and
//! never fill the legacy `error` field: failures are gRPC statuses.

mod context_filesystem;
mod plain_filesystem;

use std::sync::Arc;

use crate::api::FilesystemApi;

/// The server of the context layout (v1alpha1, v1beta1).
pub(super) struct ContextFilesystem {
    pub api: Arc<dyn FilesystemApi>,
}

/// The server of the plain layout (v1beta2 on).
pub(super) struct PlainFilesystem {
    pub api: Arc<dyn FilesystemApi>,
}
