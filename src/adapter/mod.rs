//! The adapters: the stable group traits implemented on top of each wire
//! version.
//!
//! Versions of a group whose messages are identical on the wire form a
//! family (for example disk v1alpha1, v1beta1 and v1beta2, which all send
//! disk numbers as decimal strings). Each family is one adapter type that
//! translates between the stable types and that family's generated
//! messages; what differs between the versions of a family (the package in
//! the RPC path, renamed RPCs, missing RPCs) comes from the capability
//! table, through [`WireClient`]. So a new version is one row in the
//! capability table (and in [`Layout::of`] if it starts a new layout), and a
//! new message layout is one new adapter.

pub(crate) mod convert;
mod disk;
mod filesystem;
mod iscsi;
mod smb;
pub(crate) mod system;
mod volume;
mod wire_client;

use std::sync::Arc;

pub(crate) use wire_client::WireClient;

use crate::api::{DiskApi, FilesystemApi, IscsiApi, SmbApi, SystemApi, VolumeApi};
use crate::group::ApiGroup;
use crate::negotiate::Connection;
use crate::version::ApiVersion;

/// The message layouts: versions of a group whose messages are identical on
/// the wire share one. Client adapters and the fake proxy's server adapters
/// are both chosen by it, so this is the one table of which version uses
/// which layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// disk v1alpha1, v1beta1, v1beta2
    DiskStringId,
    /// disk v1beta3, v1
    DiskNumbered,
    /// filesystem v1alpha1, v1beta1
    FilesystemContext,
    /// filesystem v1beta2, v1, v2alpha1
    FilesystemPlain,
    /// smb v1alpha1, v1beta1
    SmbErrorField,
    /// smb v1beta2, v1
    SmbPlain,
    /// volume v1alpha1, v1beta1, v1beta2
    VolumeStringId,
    /// volume v1beta3, v1, v2alpha1
    VolumeNumbered,
    /// iscsi v1alpha1, v1alpha2
    Iscsi,
    /// system v1alpha1
    System,
}

impl Layout {
    pub fn of(group: ApiGroup, version: ApiVersion) -> Self {
        let before = |v: ApiVersion| version < v;
        match group {
            ApiGroup::Disk if before(ApiVersion::V1BETA3) => Layout::DiskStringId,
            ApiGroup::Disk => Layout::DiskNumbered,
            ApiGroup::Filesystem if before(ApiVersion::V1BETA2) => Layout::FilesystemContext,
            ApiGroup::Filesystem => Layout::FilesystemPlain,
            ApiGroup::Smb if before(ApiVersion::V1BETA2) => Layout::SmbErrorField,
            ApiGroup::Smb => Layout::SmbPlain,
            ApiGroup::Volume if before(ApiVersion::V1BETA3) => Layout::VolumeStringId,
            ApiGroup::Volume => Layout::VolumeNumbered,
            ApiGroup::Iscsi => Layout::Iscsi,
            ApiGroup::System => Layout::System,
        }
    }
}

/// Builds the adapter of a group for a negotiated connection, by layout.
pub(crate) trait FromConnection {
    fn from_connection(connection: &Connection) -> Arc<Self>;
}

/// One `FromConnection` per group trait: which adapter serves which layout.
macro_rules! from_connection {
    ($($trait:ident => { $($layout:ident => $adapter:path),+ $(,)? })+) => {$(
        impl FromConnection for dyn $trait {
            fn from_connection(connection: &Connection) -> Arc<Self> {
                let wire = WireClient::new(connection);
                match Layout::of(connection.group(), connection.version()) {
                    $(Layout::$layout => Arc::new(<$adapter>::new(wire)),)+
                    other => unreachable!("{other:?} is not a layout of {}", connection.group()),
                }
            }
        }
    )+};
}

from_connection! {
    DiskApi => { DiskStringId => disk::StringIdDisk, DiskNumbered => disk::NumberedDisk }
    FilesystemApi => {
        FilesystemContext => filesystem::ContextFilesystem,
        FilesystemPlain => filesystem::PlainFilesystem,
    }
    SmbApi => { SmbErrorField => smb::ErrorFieldSmb, SmbPlain => smb::PlainSmb }
    VolumeApi => { VolumeStringId => volume::StringIdVolume, VolumeNumbered => volume::NumberedVolume }
    IscsiApi => { Iscsi => iscsi::Iscsi }
    SystemApi => { System => system::System }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_split_where_the_messages_change() {
        use ApiVersion as V;
        let disk: Vec<_> = ApiGroup::Disk
            .versions()
            .iter()
            .map(|&v| Layout::of(ApiGroup::Disk, v))
            .collect();
        assert_eq!(
            disk,
            [
                Layout::DiskStringId,
                Layout::DiskStringId,
                Layout::DiskStringId,
                Layout::DiskNumbered,
                Layout::DiskNumbered
            ]
        );
        assert_eq!(
            Layout::of(ApiGroup::Filesystem, V::V1BETA1),
            Layout::FilesystemContext
        );
        assert_eq!(
            Layout::of(ApiGroup::Filesystem, V::V1BETA2),
            Layout::FilesystemPlain
        );
        assert_eq!(Layout::of(ApiGroup::Smb, V::V1BETA2), Layout::SmbPlain);
        assert_eq!(
            Layout::of(ApiGroup::Volume, V::V1BETA2),
            Layout::VolumeStringId
        );
        assert_eq!(
            Layout::of(ApiGroup::Volume, V::V2ALPHA1),
            Layout::VolumeNumbered
        );
    }
}
