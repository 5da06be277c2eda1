//! The Identity and Node services on the mounter: each handler checks its
//! request, asks the driver what the volume is, and makes one mounter
//! call. Every SDK error becomes the status the CSI spec gives it in that
//! call ([`Error::csi_status_for`]), from its type, never its text.
//!
//! This file holds [`NodeService`] and what its handlers share: the
//! driver, the mounter, the volume a request names. The handlers are
//! beside it: `identity.rs` (Identity), `node.rs` (the Node service's
//! calls, capabilities and info), `stage.rs` (stage and unstage),
//! `publish.rs` (publish and unpublish), `usage.rs` (stats and expand).

mod identity;
mod node;
mod publish;
mod stage;
mod usage;

use std::path::Path;
use std::sync::Arc;

use crate::mount::Mounter;
use crate::{CsiNodeCall, Error, Status};

use super::driver::{NodeDriver, Volume, VolumeRequest};
use super::recorded::Recorded;
use super::v1::identity_server::IdentityServer;
use super::v1::node_server::NodeServer;

/// The CSI Identity and Node services of a driver, on a [`Mounter`]:
/// everything of a node plugin but the driver's own rules
/// ([`NodeDriver`]) and the serving ([`serve`](super::serve),
/// [`NodePlugin`](super::NodePlugin)). Cheap to clone.
///
/// | CSI call | what the service does |
/// |---|---|
/// | `NodeStageVolume` | checks the request, asks [`NodeDriver::volume`], checks the access mode, runs [`NodeDriver::before_stage`], stages the disk, share or iSCSI target, runs [`NodeDriver::after_stage`] |
/// | `NodeUnstageVolume` | [`Mounter::unstage`] (the journal says what is staged), with [`NodeDriver::disk_after_unstage`] |
/// | `NodePublishVolume` | checks the request (read-only is refused), asks [`NodeDriver::volume`], [`Mounter::publish`] |
/// | `NodeUnpublishVolume` | [`Mounter::unpublish`] |
/// | `NodeGetVolumeStats`, `NodeExpandVolume` | asks [`NodeDriver::volume`] with the stage's contexts; [`Mounter::stats`], [`Mounter::expand`] for that volume only; a share: [`Mounter::share_stats`] (a usage with nothing set where the node cannot measure it), and nothing to grow |
/// | `NodeGetCapabilities` | `STAGE_UNSTAGE_VOLUME` and `GET_VOLUME_STATS`; `EXPAND_VOLUME` for a driver of disks or iSCSI volumes |
/// | `NodeGetInfo` | [`NodeDriver::node_info`] |
/// | `GetPluginInfo`, `GetPluginCapabilities` | the driver's name and version; the controller (when served) and online expansion |
/// | `Probe` | ready while the proxy (or the host) serves the groups of the driver's kinds ([`Health::is_ready`](crate::health::Health::is_ready)); when not, it looks for them first (up to 2 s) |
///
/// Each call runs in a tracing span `csi_call` (`method`, `volume_id`,
/// `code`, `duration_ms`) and, with the `metrics` feature, counts in
/// [`CSI_CALLS_TOTAL`](super::CSI_CALLS_TOTAL) and
/// [`CSI_CALL_DURATION_SECONDS`](super::CSI_CALL_DURATION_SECONDS).
/// kubelet's repeats of a call still running join it (the mounter's
/// rule), and a call kubelet gave up on finishes on the node.
pub struct NodeService<D> {
    inner: Arc<Inner<D>>,
    /// Whether a Controller is served beside.
    with_controller: bool,
    /// The test controller's volumes are resolved by it, not the driver.
    #[cfg(feature = "testing")]
    test_volumes: bool,
}

impl<D> Clone for NodeService<D> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            with_controller: self.with_controller,
            #[cfg(feature = "testing")]
            test_volumes: self.test_volumes,
        }
    }
}

struct Inner<D> {
    driver: D,
    mounter: Mounter,
    node_id: String,
    recorded: Recorded,
}

impl<D: NodeDriver> NodeService<D> {
    /// The services of `driver` on `mounter`, answering `NodeGetInfo` for
    /// `node_id` ([`NodeDriver::node_info`]). The contexts of staged
    /// volumes are kept in `state_dir`, the mounter's folder (a file of
    /// their own beside its journal).
    ///
    /// # Errors
    ///
    /// [`Error::Configuration`] when `state_dir` cannot be made or read.
    pub fn new(
        driver: D,
        mounter: Mounter,
        node_id: impl Into<String>,
        state_dir: impl AsRef<Path>,
    ) -> crate::Result<Self> {
        let state_dir = state_dir.as_ref();
        let recorded = Recorded::open(state_dir).map_err(|error| Error::Configuration {
            setting: format!("state folder {}", state_dir.display()),
            reason: format!("the node service cannot keep its records there: {error}"),
        })?;
        Ok(Self {
            inner: Arc::new(Inner {
                driver,
                mounter,
                node_id: node_id.into(),
                recorded,
            }),
            with_controller: false,
            #[cfg(feature = "testing")]
            test_volumes: false,
        })
    }

    /// Says in `GetPluginCapabilities` that a Controller service is
    /// served beside (on the same endpoint).
    pub fn with_controller_service(mut self) -> Self {
        self.with_controller = true;
        self
    }

    /// Resolves the volumes of [`TestController`](super::TestController)
    /// itself, before asking the driver.
    #[cfg(feature = "testing")]
    pub(crate) fn resolving_test_volumes(mut self) -> Self {
        self.test_volumes = true;
        self
    }

    /// The driver.
    pub fn driver(&self) -> &D {
        &self.inner.driver
    }

    /// The mounter.
    pub fn mounter(&self) -> &Mounter {
        &self.inner.mounter
    }

    /// The Identity service, for a tonic server of the driver's own.
    pub fn identity_server(&self) -> IdentityServer<Self> {
        IdentityServer::new(self.clone())
    }

    /// The Node service, for a tonic server of the driver's own.
    pub fn node_server(&self) -> NodeServer<Self> {
        NodeServer::new(self.clone())
    }

    /// Whether the driver serves a kind with a volume of its own.
    fn has_volumes(&self) -> bool {
        self.inner
            .driver
            .kinds()
            .iter()
            .any(|kind| kind.has_volume())
    }

    /// The volume the request names: the test controller's, or the
    /// driver's answer.
    fn volume(&self, request: &VolumeRequest<'_>) -> Result<Volume, Status> {
        #[cfg(feature = "testing")]
        if self.test_volumes {
            let test = super::controller::test_volume(request.volume_id, request.volume_context);
            if let Some(volume) = test {
                return volume;
            }
        }
        self.inner.driver.volume(request)
    }
}

/// The status of an SDK error in `call`.
fn answer(call: CsiNodeCall) -> impl Fn(Error) -> Status {
    move |error| error.csi_status_for(call)
}

#[cfg(test)]
mod tests {
    use crate::csi::VolumeKind;
    use crate::ApiGroup;

    #[test]
    fn kinds_need_their_groups() {
        assert!(VolumeKind::Iscsi.groups().contains(&ApiGroup::Iscsi));
        assert!(!VolumeKind::Smb.has_volume());
    }
}
