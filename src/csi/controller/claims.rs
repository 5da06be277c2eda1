//! The test controller's bookkeeping: the volumes it made, by name, and
//! every disk it ever claimed, so that no disk is claimed twice.

use std::collections::HashMap;

use crate::api::SmbRemotePath;
use crate::csi::driver::VolumeKind;
use crate::Status;

use super::naming::ControllerVolume;
use super::TestController;

/// A volume the controller made.
#[derive(Clone)]
pub(super) struct Claim {
    pub(super) kind: VolumeKind,
    pub(super) volume_id: String,
    pub(super) capacity: i64,
    /// `CreateVolume`'s volume context.
    pub(super) volume_context: HashMap<String, String>,
    /// `ControllerPublishVolume`'s publish context.
    pub(super) publish_context: HashMap<String, String>,
    /// A share volume's folder: the share and the folder's name on it.
    pub(super) folder: Option<(SmbRemotePath, String)>,
}

impl Claim {
    /// The claim of a volume of `kind` of `capacity` bytes, as `named`.
    pub(super) fn new(
        kind: VolumeKind,
        capacity: i64,
        named: ControllerVolume,
        folder: Option<(SmbRemotePath, String)>,
    ) -> Self {
        Self {
            kind,
            volume_id: named.volume_id,
            capacity,
            volume_context: named.volume_context,
            publish_context: named.publish_context,
            folder,
        }
    }
}

impl TestController {
    /// The claims, by volume name.
    pub(super) fn claims(&self) -> std::sync::MutexGuard<'_, HashMap<String, Claim>> {
        self.claims.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The claim of the volume `volume_id`, if the controller made it.
    pub(super) fn claim_of(&self, volume_id: &str) -> Option<Claim> {
        self.claims()
            .values()
            .find(|c| c.volume_id == volume_id)
            .cloned()
    }

    /// Refuses `named` for volume `name` when another volume has its ID (a
    /// driver's naming that gave two volumes one ID: neither could be
    /// told from the other), before anything is made or claimed.
    pub(super) fn check_unique(&self, name: &str, named: &ControllerVolume) -> Result<(), Status> {
        let claims = self.claims();
        let taken = claims
            .iter()
            .find(|(other, claim)| other.as_str() != name && claim.volume_id == named.volume_id);
        match taken {
            Some((other, _)) => Err(Status::internal(format!(
                "the driver's test volume IDs named volumes {other} and {name} alike, {:?}: \
                 an ID must name one volume",
                named.volume_id
            ))),
            None => Ok(()),
        }
    }

    /// The share folders it made.
    pub(super) fn folders(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<String>> {
        self.folders.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the disk of `identity` was claimed before.
    pub(super) fn was_claimed(&self, (key, value): &(String, String)) -> bool {
        let used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        used.contains(&format!("{key}:{value}"))
    }

    /// Notes that the disk of `identity` is claimed: never again.
    pub(super) fn mark_claimed(&self, (key, value): &(String, String)) {
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        used.insert(format!("{key}:{value}"));
    }
}
