//! The six groups of a client: their lookouts ([`Groups`]), the backends
//! a caller gives instead of a proxy ([`Backends`]), and how a lookout is
//! made for each ([`MakeLookout`]).

use std::sync::Arc;

use super::behaviour::Behaviour;
use super::health::ServedBy;
use super::lookout::{AnyLookout, Lookout};
use crate::adapter::FromConnection;
use crate::api::{DiskApi, FilesystemApi, IscsiApi, SmbApi, SystemApi, VolumeApi};
use crate::group::ApiGroup;

/// The lookouts of the groups; a group not configured has none.
pub(super) struct Groups {
    pub disk: Option<Arc<Lookout<dyn DiskApi>>>,
    pub filesystem: Option<Arc<Lookout<dyn FilesystemApi>>>,
    pub smb: Option<Arc<Lookout<dyn SmbApi>>>,
    pub volume: Option<Arc<Lookout<dyn VolumeApi>>>,
    pub iscsi: Option<Arc<Lookout<dyn IscsiApi>>>,
    pub system: Option<Arc<Lookout<dyn SystemApi>>>,
    /// What the groups share: deadlines, retries, version change events.
    pub behaviour: Arc<Behaviour>,
}

impl Groups {
    /// A lookout per group, made by `make` from the group's backend (or
    /// from none: then a negotiation's).
    pub fn new(make: &impl MakeLookout, backends: Backends, behaviour: Arc<Behaviour>) -> Self {
        Self {
            disk: make.lookout(ApiGroup::Disk, backends.disk),
            filesystem: make.lookout(ApiGroup::Filesystem, backends.filesystem),
            smb: make.lookout(ApiGroup::Smb, backends.smb),
            volume: make.lookout(ApiGroup::Volume, backends.volume),
            iscsi: make.lookout(ApiGroup::Iscsi, backends.iscsi),
            system: make.lookout(ApiGroup::System, backends.system),
            behaviour,
        }
    }

    /// The lookout of `group`, whatever its trait.
    pub fn any(&self, group: ApiGroup) -> Option<&dyn AnyLookout> {
        fn any<A: ?Sized + FromConnection + Send + Sync + 'static>(
            lookout: &Option<Arc<Lookout<A>>>,
        ) -> Option<&dyn AnyLookout> {
            lookout.as_deref().map(|l| l as &dyn AnyLookout)
        }
        match group {
            ApiGroup::Disk => any(&self.disk),
            ApiGroup::Filesystem => any(&self.filesystem),
            ApiGroup::Smb => any(&self.smb),
            ApiGroup::Volume => any(&self.volume),
            ApiGroup::Iscsi => any(&self.iscsi),
            ApiGroup::System => any(&self.system),
        }
    }
}

/// Implementations to stand in for the groups, for
/// [`CsiProxy::from_backends`](crate::CsiProxy::from_backends).
#[derive(Clone, Default)]
pub struct Backends {
    /// The disk group.
    pub disk: Option<Arc<dyn DiskApi>>,
    /// The filesystem group.
    pub filesystem: Option<Arc<dyn FilesystemApi>>,
    /// The SMB group.
    pub smb: Option<Arc<dyn SmbApi>>,
    /// The volume group.
    pub volume: Option<Arc<dyn VolumeApi>>,
    /// The iSCSI group.
    pub iscsi: Option<Arc<dyn IscsiApi>>,
    /// The system group.
    pub system: Option<Arc<dyn SystemApi>>,
}

impl Backends {
    /// Whether `group` has a backend.
    pub(super) fn has(&self, group: ApiGroup) -> bool {
        match group {
            ApiGroup::Disk => self.disk.is_some(),
            ApiGroup::Filesystem => self.filesystem.is_some(),
            ApiGroup::Smb => self.smb.is_some(),
            ApiGroup::Volume => self.volume.is_some(),
            ApiGroup::Iscsi => self.iscsi.is_some(),
            ApiGroup::System => self.system.is_some(),
        }
    }

    /// The groups that have a backend, in [`ApiGroup::ALL`] order.
    pub(super) fn groups(&self) -> Vec<ApiGroup> {
        ApiGroup::ALL.into_iter().filter(|&g| self.has(g)).collect()
    }

    /// Only the backends of the groups `wanted` keeps.
    pub(super) fn keep(self, wanted: impl Fn(ApiGroup) -> bool) -> Self {
        Self {
            disk: self.disk.filter(|_| wanted(ApiGroup::Disk)),
            filesystem: self.filesystem.filter(|_| wanted(ApiGroup::Filesystem)),
            smb: self.smb.filter(|_| wanted(ApiGroup::Smb)),
            volume: self.volume.filter(|_| wanted(ApiGroup::Volume)),
            iscsi: self.iscsi.filter(|_| wanted(ApiGroup::Iscsi)),
            system: self.system.filter(|_| wanted(ApiGroup::System)),
        }
    }
}

/// Makes a group's lookout, whatever its trait: from a negotiation, or
/// from a backend given directly.
pub(super) trait MakeLookout {
    fn lookout<A: ?Sized + FromConnection + Send + Sync + 'static>(
        &self,
        group: ApiGroup,
        backend: Option<Arc<A>>,
    ) -> Option<Arc<Lookout<A>>>;
}

/// Lookouts of the backends given directly (mocks, or the host): always
/// served.
pub(super) struct Direct<'a>(pub &'a Arc<Behaviour>, pub ServedBy);

impl MakeLookout for Direct<'_> {
    fn lookout<A: ?Sized + FromConnection + Send + Sync + 'static>(
        &self,
        group: ApiGroup,
        backend: Option<Arc<A>>,
    ) -> Option<Arc<Lookout<A>>> {
        backend.map(|api| Lookout::direct(group, api, self.1, self.0.clone()))
    }
}
