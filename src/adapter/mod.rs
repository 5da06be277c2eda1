//! The adapters: the stable group traits implemented on top of each wire
//! version.
//!
//! Versions of a group whose messages are identical on the wire form a
//! family (for example disk v1alpha1, v1beta1 and v1beta2, which all send
//! disk numbers as decimal strings). Each family is one adapter type that
//! translates between the stable types and that family's generated
//! messages; what differs between the versions of a family (the package in
//! the RPC path, renamed RPCs, missing RPCs) comes from the capability
//! table, through [`WireClient`]. So a version is one row in
//! [`for_connection`]'s table, and a new message layout is one new adapter.

mod convert;
mod disk;
mod filesystem;
mod iscsi;
mod smb;
mod system;
mod volume;
mod wire_client;

use std::sync::Arc;

pub(crate) use wire_client::{Deadlines, WireClient};

use crate::api::{DiskApi, FilesystemApi, IscsiApi, SmbApi, SystemApi, VolumeApi};
use crate::group::ApiGroup;
use crate::negotiate::Connection;
use crate::version::ApiVersion as V;

/// The adapter of one negotiated group, behind its trait.
#[derive(Clone)]
pub(crate) enum GroupApi {
    Disk(Arc<dyn DiskApi>),
    Filesystem(Arc<dyn FilesystemApi>),
    Smb(Arc<dyn SmbApi>),
    Volume(Arc<dyn VolumeApi>),
    Iscsi(Arc<dyn IscsiApi>),
    System(Arc<dyn SystemApi>),
}

/// The adapter for a negotiated connection: which family serves which
/// version.
pub(crate) fn for_connection(connection: &Connection, deadlines: Deadlines) -> GroupApi {
    let wire = WireClient::new(connection, deadlines);
    let version = connection.version();
    match connection.group() {
        ApiGroup::Disk => GroupApi::Disk(match version {
            V::V1ALPHA1 | V::V1BETA1 | V::V1BETA2 => Arc::new(disk::StringIdDisk::new(wire)),
            _ => Arc::new(disk::NumberedDisk::new(wire)),
        }),
        ApiGroup::Filesystem => GroupApi::Filesystem(match version {
            V::V1ALPHA1 | V::V1BETA1 => Arc::new(filesystem::ContextFilesystem::new(wire)),
            _ => Arc::new(filesystem::PlainFilesystem::new(wire)),
        }),
        ApiGroup::Smb => GroupApi::Smb(match version {
            V::V1ALPHA1 | V::V1BETA1 => Arc::new(smb::ErrorFieldSmb::new(wire)),
            _ => Arc::new(smb::PlainSmb::new(wire)),
        }),
        ApiGroup::Volume => GroupApi::Volume(match version {
            V::V1ALPHA1 | V::V1BETA1 | V::V1BETA2 => Arc::new(volume::StringIdVolume::new(wire)),
            _ => Arc::new(volume::NumberedVolume::new(wire)),
        }),
        ApiGroup::Iscsi => GroupApi::Iscsi(Arc::new(iscsi::Iscsi::new(wire))),
        ApiGroup::System => GroupApi::System(Arc::new(system::System::new(wire))),
    }
}
