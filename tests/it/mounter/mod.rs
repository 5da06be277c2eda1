//! The mounter (`csi_proxy_client::mount`), one test a line of the
//! scenario table in `docs/mounting.md`: over a fake proxy on real
//! endpoints (Unix sockets here, named pipes under Wine), at the CSI Proxy
//! releases whose rules differ, with a fake host that misbehaves.

mod block;
mod codes;
mod faults;
mod hardening;
mod iscsi;
mod leases;
mod recovery;
mod round_trips;
mod shared_looks;
mod smb;
mod storm;
mod upstream;

use std::ops::{Deref, DerefMut};
use std::time::Duration;

use crate::common::node::FakeNode;
pub use crate::common::path;
use csi_proxy_client::api::{Secret, SmbRemotePath};
use csi_proxy_client::mount::{DiskSelector, Mounter, SmbCredentials, Staged};
use csi_proxy_client::testing::{FakeHost, FakeHostBuilder, ProxyRelease, WindowsError};
use csi_proxy_client::{CsiProxy, Operation};

pub const GIB: u64 = 1 << 30;
pub const PAGE83: &str = "Google  pvc-1";
pub const STAGING: &str = r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\pd\pv1\globalmount";
pub const STAGING_2: &str = r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\pd\pv2\globalmount";
pub const TARGET: &str = r"C:\var\lib\kubelet\pods\p1\volumes\kubernetes.io~csi\pv1\mount";
pub const TARGET_2: &str = r"C:\var\lib\kubelet\pods\p2\volumes\kubernetes.io~csi\pv1\mount";

/// A node: a fake host behind a fake proxy at a release (the
/// [`FakeNode`] it derefs to), and a mounter with its journal in a folder
/// of its own.
pub struct Node {
    pub host: FakeHost,
    pub mounter: Mounter,
    node: FakeNode,
    state: tempfile::TempDir,
}

impl Deref for Node {
    type Target = FakeNode;

    fn deref(&self) -> &FakeNode {
        &self.node
    }
}

impl DerefMut for Node {
    fn deref_mut(&mut self) -> &mut FakeNode {
        &mut self.node
    }
}

impl Node {
    /// `host` (the kubelet folders added) behind a proxy at `release`.
    pub async fn on(release: ProxyRelease, host: FakeHostBuilder) -> Node {
        let host = host
            .dir(r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\pd\pv1")
            .dir(r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\pd\pv2")
            .dir(r"C:\var\lib\kubelet\pods\p1\volumes\kubernetes.io~csi\pv1")
            .dir(r"C:\var\lib\kubelet\pods\p2\volumes\kubernetes.io~csi\pv1")
            .build();
        let node = FakeNode::at(release, &host).await;
        let state = tempfile::tempdir().unwrap();
        let mounter = mounter(node.client().await, state.path());
        Node {
            host,
            mounter,
            node,
            state,
        }
    }

    /// One raw 10 GiB disk with [`PAGE83`] at LUN 1, at `release`.
    pub async fn with_disk(release: ProxyRelease) -> Node {
        Node::on(release, FakeHost::builder().disk(1, PAGE83, 10 * GIB)).await
    }

    /// kubelet's NodeStageVolume of the disk of [`PAGE83`] at `staging`:
    /// what the stage found.
    pub async fn stage(&self, staging: &str) -> Staged {
        let staged = self.mounter.stage_disk(&page83(), &path(staging)).await;
        staged.unwrap()
    }

    /// [`Node::stage`], then NodePublishVolume of the volume at `target`:
    /// what the stage found.
    pub async fn stage_and_publish(&self, staging: &str, target: &str) -> Staged {
        let staged = self.stage(staging).await;
        let published = self.mounter.publish(&path(staging), &path(target)).await;
        published.unwrap();
        staged
    }

    /// The driver restarts: a new client and mounter, the same journal.
    pub async fn restart_driver(&mut self) {
        self.mounter = mounter(self.client().await, self.state.path());
    }

    /// A second mounter on the same node with its own journal (another
    /// driver).
    pub async fn other_driver(&self, state: &std::path::Path) -> Mounter {
        mounter(self.client().await, state)
    }

    /// The journal folder.
    pub fn state_dir(&self) -> &std::path::Path {
        self.state.path()
    }

    /// The RPCs the proxy received since the last call, forgotten.
    pub fn take_rpcs(&self) -> Vec<String> {
        let rpcs = self.fake.calls().into_iter().map(|c| c.rpc).collect();
        self.fake.clear_calls();
        rpcs
    }

    /// Every host call takes `latency` (on tokio's clock): calls sent side
    /// by side overlap, so that their depth shows.
    pub fn uniform_latency(&self, latency: Duration) {
        (self.host).set_latencies(Operation::ALL.iter().map(|&op| (op, latency)));
    }

    /// How many calls of `op` the host received.
    pub fn host_calls(&self, op: Operation) -> usize {
        self.host.calls_of(op)
    }

    /// The host's next disk state change (an unstage's offline) fails with
    /// a device I/O error.
    pub fn fail_next_offline(&self) {
        let failure = WindowsError::new(WindowsError::IO_DEVICE);
        self.host.fail_call(Operation::SetDiskState, 1, failure);
    }
}

/// The disk of [`PAGE83`].
pub fn page83() -> DiskSelector {
    DiskSelector::page83(PAGE83)
}

/// A mounter with the short waits a test wants.
pub fn mounter(proxy: CsiProxy, state: &std::path::Path) -> Mounter {
    Mounter::builder(proxy, state)
        .poll_interval(Duration::from_millis(10))
        .disk_wait(Duration::from_millis(300))
        .volume_wait(Duration::from_secs(2))
        .build()
        .unwrap()
}

/// The share the SMB tests stage folders of; it takes `user` / `pw`.
pub const SHARE_ROOT: &str = r"\\files\share";

/// Folder `folder` of [`SHARE_ROOT`].
pub fn share(folder: &str) -> SmbRemotePath {
    SmbRemotePath::new(format!(r"{SHARE_ROOT}\{folder}")).unwrap()
}

/// The share's user with `password`.
pub fn creds_with(password: &str) -> SmbCredentials {
    SmbCredentials::new("user", Secret::new(password))
}

/// The share's user with the password the host has.
pub fn creds() -> SmbCredentials {
    creds_with("pw")
}

/// A host with [`SHARE_ROOT`] and its folders `a` and `b`, for each SMB
/// test file to add its own to.
pub fn host_with_share() -> FakeHostBuilder {
    FakeHost::builder()
        .smb_share(SHARE_ROOT, "user", "pw")
        .share_folder(r"\\files\share\a")
        .share_folder(r"\\files\share\b")
}

/// The releases whose rules differ for the mounter: v0.2.2 (free space in
/// VolumeStats), v1.1.1 (full-path SMB mappings, a mount of the same
/// volume refused, no resize threshold), and the newest.
pub fn releases() -> [ProxyRelease; 3] {
    [
        ProxyRelease::V0_2_2,
        "v1.1.1".parse().unwrap(),
        ProxyRelease::LATEST,
    ]
}
