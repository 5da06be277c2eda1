//! The adapters: the stable group traits implemented on top of each wire
//! version.
//!
//! Versions of a group whose messages are identical on the wire form a
//! family (for example disk v1alpha1, v1beta1 and v1beta2, which all send
//! disk numbers as decimal strings). Each family is one adapter type that
//! translates between the stable types and that family's generated
//! messages; what differs between the versions of a family (the package in
//! the RPC path, renamed RPCs, missing RPCs) comes from the capability
//! table, through [`WireClient`]. So a new version is one row of the wire
//! registry ([`crate::registry`]), and a new message layout is one new
//! adapter.

pub(crate) mod convert;
mod disk;
mod filesystem;
mod iscsi;
mod redact;

/// Also for the host backend: a provider may echo what it was sent.
#[cfg(all(windows, feature = "host-process"))]
pub(crate) use redact::redact;
mod smb;
pub(crate) mod system;
mod volume;
mod wire_client;

use std::sync::Arc;

pub(crate) use wire_client::WireClient;

use crate::api::{DiskApi, FilesystemApi, IscsiApi, SmbApi, SystemApi, VolumeApi};
use crate::negotiate::Connection;
use crate::registry::Layout;

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
