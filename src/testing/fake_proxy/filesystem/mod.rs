//! The fake proxy's servers of the filesystem layouts, generated from the
//! catalogue (`context_filesystem.rs`, `plain_filesystem.rs`). Like CSI
//! Proxy from v1.0, they ignore the `PathContext` of old requests and
//! never fill the legacy `error` field: failures are gRPC statuses.

mod context_filesystem;
mod plain_filesystem;

pub(super) use context_filesystem::ContextFilesystemServer;
pub(super) use plain_filesystem::PlainFilesystemServer;
