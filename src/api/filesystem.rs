//! The filesystem group.

use super::define::group_trait;
use super::WindowsPath;

// The group's trait, made of its RPC list (`src/rpcs/filesystem.rs`).
crate::rpcs::filesystem_rpcs!(group_trait);
