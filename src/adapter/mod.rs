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
//! registry ([`crate::registry`]), and a new message layout is one
//! `layout` line in its group's catalogue (and how it carries each RPC):
//! its adapter, `Layout`'s variant and the arm of `adapter_for` that builds
//! it (`layouts.rs`) are generated from it.

pub(crate) mod convert;
pub(crate) mod disk;
pub(crate) mod fields;
pub(crate) mod filesystem;
pub(crate) mod iscsi;
mod layouts;
pub(crate) mod smb;
pub(crate) mod system;
pub(crate) mod volume;
mod wire_client;

use std::sync::Arc;

pub(crate) use wire_client::WireClient;

use layouts::adapter_for;

use crate::api::{DiskApi, FilesystemApi, IscsiApi, SmbApi, SystemApi, VolumeApi};
use crate::error::{Error, Result};
use crate::negotiate::Connection;
use crate::registry::Layout;

/// Builds the adapter of a group for a negotiated connection, by layout.
pub(crate) trait FromConnection {
    /// The adapter of `connection`'s layout; an error if the layout is
    /// another group's, which the registry's rows rule out (the tests that
    /// connect at every version, `tests/it/capabilities.rs`, would fail).
    fn from_connection(connection: &Connection) -> Result<Arc<Self>>;
}

/// An adapter of some group, as `adapter_for` (generated from the
/// catalogue's layouts, in `layouts.rs`) builds it.
enum Adapter {
    Disk(Arc<dyn DiskApi>),
    Filesystem(Arc<dyn FilesystemApi>),
    Smb(Arc<dyn SmbApi>),
    Volume(Arc<dyn VolumeApi>),
    Iscsi(Arc<dyn IscsiApi>),
    System(Arc<dyn SystemApi>),
}

/// `FromConnection` for each group trait, from its variant of [`Adapter`].
macro_rules! from_connection {
    ($($trait:ident => $variant:ident),+ $(,)?) => {$(
        impl FromConnection for dyn $trait {
            fn from_connection(connection: &Connection) -> Result<Arc<Self>> {
                let (group, version) = (connection.group(), connection.version());
                match adapter_for(Layout::of(group, version), WireClient::new(connection)) {
                    Adapter::$variant(adapter) => Ok(adapter),
                    _ => Err(Error::Configuration {
                        setting: format!("the registry's row of {group} {version}"),
                        reason: "it gives another group's layout".to_owned(),
                    }),
                }
            }
        }
    )+};
}

from_connection! {
    DiskApi => Disk,
    FilesystemApi => Filesystem,
    SmbApi => Smb,
    VolumeApi => Volume,
    IscsiApi => Iscsi,
    SystemApi => System,
}
