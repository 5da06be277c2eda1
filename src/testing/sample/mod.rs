//! Any operation called with fixed, valid arguments, so that one loop can
//! sweep every operation of every version: to see what goes on the wire,
//! or what comes back from a server that answers anything (see
//! [`ScriptedServer`](super::ScriptedServer)).
//!
//! ```
//! use csi_proxy_client::testing::{sample, FakeHost};
//! use csi_proxy_client::Operation;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let proxy = FakeHost::default().proxy();
//! for &op in Operation::ALL {
//!     // The fake host has none of the sample disks, shares or targets.
//!     let _ = sample::call(&proxy, op).await;
//! }
//! # }
//! ```

use async_trait::async_trait;

use crate::api::{SmbRemotePath, TargetPortal, VolumeId, WindowsPath};
use crate::capability::Operation;
use crate::client::CsiProxy;
use crate::error::Result;
use crate::group::ApiGroup;

/// The disk the samples name.
pub const DISK: u32 = 3;

/// A plugin's staging path.
pub fn path() -> WindowsPath {
    WindowsPath::new(r"C:\var\lib\kubelet\plugins\sample\globalmount").unwrap()
}

/// A pod's volume path.
pub fn pod_path() -> WindowsPath {
    WindowsPath::new(r"C:\var\lib\kubelet\pods\uid\volumes\sample").unwrap()
}

/// A volume ID.
pub fn volume() -> VolumeId {
    VolumeId::new(r"\\?\Volume{11111111-2222-3333-4444-555555555555}\").unwrap()
}

/// An SMB share path (below the share's root).
pub fn share() -> SmbRemotePath {
    SmbRemotePath::new(r"\\files\share\dir").unwrap()
}

/// An iSCSI portal.
pub fn portal() -> TargetPortal {
    TargetPortal::new("10.0.0.5")
}

/// An iSCSI target at [`portal`].
pub const IQN: &str = "iqn.2026-11.example:target";

/// Calls `op` on `proxy` with the samples, and drops what it returned on
/// success.
pub async fn call(proxy: &CsiProxy, op: Operation) -> Result<()> {
    match op.group() {
        ApiGroup::Disk => proxy.disk()?.sample_call(op).await,
        ApiGroup::Filesystem => proxy.filesystem()?.sample_call(op).await,
        ApiGroup::Smb => proxy.smb()?.sample_call(op).await,
        ApiGroup::Volume => proxy.volume()?.sample_call(op).await,
        ApiGroup::Iscsi => proxy.iscsi()?.sample_call(op).await,
        ApiGroup::System => proxy.system()?.sample_call(op).await,
    }
}

mod calls;

/// A call of any of a group's operations with the samples (generated
/// from the RPC catalogue into `calls.rs`: each argument is the sample of
/// its name in [`by_name`], so a new RPC needs nothing here unless it
/// names a new argument, which fails to compile).
#[async_trait]
trait SampleCall {
    async fn sample_call(&self, op: Operation) -> Result<()>;
}

/// The sample of each argument name of the RPC catalogue, for the operation
/// being called.
mod by_name {
    use std::sync::LazyLock;

    use super::{DISK, IQN};
    use crate::api::WindowsPath;
    use crate::api::{IscsiAuth, Secret, SmbMapping, SmbRemotePath, TargetPortal, VolumeId};
    use crate::capability::Operation;

    static PATH: LazyLock<WindowsPath> = LazyLock::new(super::path);
    static POD_PATH: LazyLock<WindowsPath> = LazyLock::new(super::pod_path);
    static VOLUME: LazyLock<VolumeId> = LazyLock::new(super::volume);
    static SHARE: LazyLock<SmbRemotePath> = LazyLock::new(super::share);
    static PORTAL: LazyLock<TargetPortal> = LazyLock::new(super::portal);
    static MAPPING: LazyLock<SmbMapping> =
        LazyLock::new(|| SmbMapping::new(super::share(), "user", Secret::new("pw")));
    static AUTH: LazyLock<IscsiAuth> = LazyLock::new(|| IscsiAuth::OneWayChap {
        username: "chap-user".into(),
        secret: Secret::new("chap-secret-1"),
    });
    static MUTUAL_SECRET: LazyLock<Secret> = LazyLock::new(|| Secret::new("mutual-1"));

    pub fn disk(_: Operation) -> u32 {
        DISK
    }

    /// A partition only for the operation that lists one.
    pub fn partition(op: Operation) -> Option<u32> {
        (op == Operation::ListVolumesOnPartition).then_some(2)
    }

    pub fn online(_: Operation) -> bool {
        true
    }

    pub fn force(op: Operation) -> bool {
        op == Operation::Rmdir
    }

    pub fn page83(_: Operation) -> &'static str {
        "pd-1"
    }

    pub fn path(op: Operation) -> &'static WindowsPath {
        match op {
            Operation::IsSymlink => &POD_PATH,
            _ => &PATH,
        }
    }

    /// A staging folder: a volume's mount, a pod's link's target.
    pub fn target(_: Operation) -> &'static WindowsPath {
        &PATH
    }

    pub fn link(_: Operation) -> &'static WindowsPath {
        &POD_PATH
    }

    pub fn volume(_: Operation) -> &'static VolumeId {
        &VOLUME
    }

    pub fn size_bytes(_: Operation) -> u64 {
        1 << 30
    }

    pub fn mapping(_: Operation) -> &'static SmbMapping {
        &MAPPING
    }

    pub fn remote_path(_: Operation) -> &'static SmbRemotePath {
        &SHARE
    }

    pub fn portal(_: Operation) -> &'static TargetPortal {
        &PORTAL
    }

    pub fn iqn(_: Operation) -> &'static str {
        IQN
    }

    pub fn auth(_: Operation) -> &'static IscsiAuth {
        &AUTH
    }

    pub fn secret(_: Operation) -> &'static Secret {
        &MUTUAL_SECRET
    }

    /// A service's name.
    pub fn name(_: Operation) -> &'static str {
        "csiproxy"
    }
}
