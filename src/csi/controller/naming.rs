//! How the test controller names its volumes: by default with IDs of its
//! own, which the node service resolves itself; or as the driver's own
//! controller would ([`NodePlugin::test_volume_ids`](crate::csi::NodePlugin::test_volume_ids)),
//! so that csi-sanity's volumes go through the driver's
//! [`NodeDriver::volume`](crate::csi::NodeDriver::volume).

use std::collections::HashMap;
use std::sync::Arc;

use crate::api::SmbRemotePath;
use crate::Status;

use super::ids::{smb_volume_id, SHARE_CONTEXT, TEST_VOLUME};

/// A volume the [`TestController`](super::TestController) made, to be
/// named as the driver's controller would name it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TestVolume {
    /// A disk of the node that a create claimed, where the disk group
    /// lists it.
    #[non_exhaustive]
    Disk {
        /// Its page 0x83 ID; empty when it has none.
        page83: String,
        /// Its adapter (a LUN may repeat across adapters).
        adapter: String,
        /// Its target on the adapter.
        target: String,
        /// Its LUN.
        lun: String,
    },
    /// A folder that a create made on a share (`\\server\share\folder`).
    Share(SmbRemotePath),
}

impl TestVolume {
    /// The disk with page 0x83 ID `page83` (empty for none) at `adapter`,
    /// `target`, `lun`: for a driver's test of its naming.
    pub fn disk(
        page83: impl Into<String>,
        adapter: impl Into<String>,
        target: impl Into<String>,
        lun: impl Into<String>,
    ) -> Self {
        Self::Disk {
            page83: page83.into(),
            adapter: adapter.into(),
            target: target.into(),
            lun: lun.into(),
        }
    }
}

impl TestVolume {
    /// How a disk is told from the others (`page83` and its page 0x83 ID,
    /// else `lun` and its LUN, which may repeat across adapters); a share
    /// by its folder.
    pub(super) fn identity(&self) -> (&'static str, String) {
        match self {
            TestVolume::Disk { page83, .. } if !page83.is_empty() => ("page83", page83.clone()),
            TestVolume::Disk { lun, .. } => ("lun", lun.clone()),
            TestVolume::Share(folder) => ("share", folder.to_string()),
        }
    }
}

/// The ID and contexts a driver's own controller gives a volume: what
/// `CreateVolume` answers (the ID and the volume context) and what
/// `ControllerPublishVolume` answers (the publish context, as a cloud's
/// attach reports where the disk is).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ControllerVolume {
    /// The CSI volume ID.
    pub volume_id: String,
    /// `CreateVolume`'s volume context.
    pub volume_context: HashMap<String, String>,
    /// `ControllerPublishVolume`'s publish context.
    pub publish_context: HashMap<String, String>,
}

impl ControllerVolume {
    /// The volume `volume_id`, with empty contexts.
    pub fn new(volume_id: impl Into<String>) -> Self {
        Self {
            volume_id: volume_id.into(),
            ..Self::default()
        }
    }

    /// With `key` = `value` in the volume context.
    pub fn with_volume_context(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.volume_context.insert(key.into(), value.into());
        self
    }

    /// With `key` = `value` in the publish context.
    pub fn with_publish_context(
        mut self,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Self {
        self.publish_context.insert(key.into(), value.into());
        self
    }
}

/// A driver's naming of the test controller's volumes.
pub(crate) type VolumeIds = Arc<dyn Fn(&TestVolume) -> ControllerVolume + Send + Sync>;

/// The volume `made` as `ids` names it (the test controller's own IDs
/// without it), checked against the spec's limits.
pub(super) fn named_as(
    made: &TestVolume,
    ids: Option<&VolumeIds>,
) -> Result<ControllerVolume, Status> {
    let Some(ids) = ids else {
        return Ok(own_name(made));
    };
    let named = ids(made);
    let bad = |why: &str| {
        Status::internal(format!(
            "the driver's test volume IDs named {made:?} {:?}: {why}",
            named.volume_id
        ))
    };
    if named.volume_id.is_empty() {
        return Err(bad("an empty ID"));
    }
    if named.volume_id.len() > crate::csi::checks::MAX_STRING_BYTES {
        return Err(bad("an ID longer than the spec's 128 bytes"));
    }
    Ok(named)
}

/// The test controller's own name of `made`: an ID the node service
/// resolves itself, the disk's identity (its page 0x83 ID, else its LUN,
/// which may repeat across adapters) or the share's folder in both
/// contexts.
fn own_name(made: &TestVolume) -> ControllerVolume {
    let (id, key, value) = match made {
        TestVolume::Share(remote) => (smb_volume_id(remote), SHARE_CONTEXT, remote.to_string()),
        disk => {
            let (key, value) = disk.identity();
            (format!("{TEST_VOLUME}disk:{key}:{value}"), key, value)
        }
    };
    ControllerVolume::new(id)
        .with_volume_context(key, value.clone())
        .with_publish_context(key, value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drivers_ids_are_held_to_the_specs_limits() {
        let disk = TestVolume::disk("", "1", "0", "3");
        let own = named_as(&disk, None).unwrap();
        assert_eq!(own.volume_id, "csi-test:disk:lun:3");
        assert_eq!(own.publish_context["lun"], "3");
        let long: VolumeIds = Arc::new(|_| ControllerVolume::new("x".repeat(129)));
        assert_eq!(
            named_as(&disk, Some(&long)).unwrap_err().code(),
            crate::Code::Internal
        );
        let empty: VolumeIds = Arc::new(|_| ControllerVolume::default());
        assert_eq!(
            named_as(&disk, Some(&empty)).unwrap_err().code(),
            crate::Code::Internal
        );
    }
}
