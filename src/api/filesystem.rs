//! The filesystem group.

use super::define::group_trait;
use super::WindowsPath;

crate::rpcs::filesystem_rpcs!(group_trait);
