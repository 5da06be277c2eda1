//! A CSI Controller for tests only (feature `testing`), so that csi-sanity
//! can run a volume's whole life against a node plugin:
//! [`TestController`].
//!
//! This file holds the controller and what it keeps. Beside it:
//! `ids.rs` (its volume IDs, which the node service resolves),
//! `claims.rs` (the volumes it made, and the disks it used),
//! `disks.rs` (the disks a create could claim, and their capacity),
//! `shares.rs` (a share volume's folder, made and removed on the node),
//! `calls.rs` (the Controller service's calls).

mod calls;
mod claims;
mod disks;
mod ids;
mod naming;
mod shares;

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use crate::mount::Mounter;
use crate::CsiProxy;

use super::driver::VolumeKind;
use claims::Claim;

pub(crate) use ids::{is_work_volume, test_volume};
pub(crate) use naming::VolumeIds;
pub use naming::{ControllerVolume, TestVolume};

/// A CSI Controller for tests only, so that csi-sanity can run a volume's
/// whole life against a node plugin
/// ([`NodePlugin::test_controller`](super::NodePlugin::test_controller),
/// or `--controller`; docs/node-plugin.md). It works against any proxy
/// whose host has spare raw disks (or a share), not only a fake one.
///
/// - `CreateVolume` claims an unused disk of the node through the SDK
///   (online, with no volume on it, never claimed before by this process:
///   a disk a volume used keeps that volume's data, and an offline one may
///   be such a disk), one create at a time; a size no free disk has is
///   `OUT_OF_RANGE`, a multi-node access mode `INVALID_ARGUMENT`. With a
///   `share` parameter (for a driver that serves shares), it makes a
///   folder named after the volume on that share instead (one that is
///   not there yet: an existing folder is `ALREADY_EXISTS`, never
///   adopted, since a delete removes it with what it holds), as
///   csi-driver-smb's controller does, with the create's secrets
///   `username` and `password`.
/// - `DeleteVolume` releases the claim, and removes a share volume's
///   folder (with what it holds) when the delete's secrets say how to
///   reach the share; without them the folder stays, as csi-driver-smb
///   does.
/// - `ControllerPublishVolume` answers how the node finds the disk (its
///   page 0x83 ID, or its LUN when it has none) as the publish context,
///   as a cloud's attach would.
/// - `ListVolumes` pages through the claims; `GetCapacity` adds up the
///   disks a create could still claim.
///
/// Its volume IDs are its own (`csi-test:...`), which the node service
/// resolves itself, unless the driver names them as its own controller
/// would ([`with_volume_ids`](Self::with_volume_ids)): then every volume
/// goes through the driver's [`NodeDriver::volume`](super::NodeDriver::volume),
/// as in a cluster. Either way the driver is asked for the IDs csi-sanity
/// makes up (and must answer `NOT_FOUND` for them). Claims live in this
/// process only: a real controller is the cloud's.
///
/// A share's folder is made (and removed) on the node, through the SDK:
/// the node's mounter stages the share at a link of the controller's own
/// (`C:\var\lib\kubelet\plugins\<driver>\controller\<hash of the
/// folder's name>`), the folder is made through that link with `Mkdir`
/// (removed with `Rmdir`), and the share is unstaged again. So the share's
/// mapping is the one the node's volumes of the share use: made if no
/// volume has it, and removed at the unstage only if no volume uses it.
pub struct TestController {
    proxy: CsiProxy,
    /// The node's mounter, through which the controller reaches shares.
    mounter: Mounter,
    node_id: String,
    /// The driver's name: its folder under kubelet's plugins.
    driver: String,
    /// The kinds of volumes the node serves.
    kinds: Vec<VolumeKind>,
    /// By volume name.
    claims: Mutex<HashMap<String, Claim>>,
    /// Every disk ever claimed, by identity: never claimed again.
    used: Mutex<HashSet<String>>,
    /// One create at a time, so that two never claim one disk.
    creating: tokio::sync::Mutex<()>,
    /// The share folders it made (lower-cased `\\server\share\folder`),
    /// noted before each is made: never one that was there already.
    folders: Mutex<HashSet<String>>,
    /// The driver's naming of the volumes, if it gave one.
    volume_ids: Option<VolumeIds>,
}

impl TestController {
    /// The controller of node `node_id`, whose plugin is the driver
    /// `driver` serving `kinds` of volumes with `mounter` (and its
    /// proxy).
    pub fn new(
        mounter: Mounter,
        node_id: impl Into<String>,
        driver: impl Into<String>,
        kinds: &[VolumeKind],
    ) -> Self {
        Self {
            proxy: mounter.proxy().clone(),
            mounter,
            node_id: node_id.into(),
            driver: driver.into(),
            kinds: kinds.to_vec(),
            claims: Mutex::default(),
            used: Mutex::default(),
            creating: tokio::sync::Mutex::default(),
            folders: Mutex::default(),
            volume_ids: None,
        }
    }

    /// Names each volume it makes as `ids` says, as the driver's own
    /// controller would (its ID, volume context and publish context), in
    /// place of the controller's own `csi-test:` IDs: so the node service
    /// asks the driver's [`NodeDriver::volume`](super::NodeDriver::volume)
    /// for csi-sanity's volumes too. See
    /// [`NodePlugin::test_volume_ids`](super::NodePlugin::test_volume_ids).
    #[must_use]
    pub fn with_volume_ids(
        mut self,
        ids: impl Fn(&TestVolume) -> ControllerVolume + Send + Sync + 'static,
    ) -> Self {
        self.volume_ids = Some(std::sync::Arc::new(ids));
        self
    }
}
