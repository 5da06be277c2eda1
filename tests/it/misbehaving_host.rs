//! The fake host misbehaving on demand, as real nodes do: the rules of
//! older CSI Proxy releases, failed and delayed calls, disks offline or
//! read-only, SMB mappings broken, disconnected or made by someone else,
//! and reboots. Each rule directly through the group traits and, where the
//! wire matters, through a fake proxy.

mod disks;
mod faults;
mod reboot;
mod releases;
mod smb;

use crate::common::path;
use crate::common::TestNode;
use csi_proxy_client::api::{SmbMapping, SmbRemotePath};
use csi_proxy_client::testing::{FakeHost, FakeProxy, ProxyRelease};
use csi_proxy_client::{api::Secret, Code, CsiProxy, Error, Operation, Result};

const KUBELET: &str = r"C:\var\lib\kubelet";

fn share(remote: &str) -> SmbRemotePath {
    SmbRemotePath::new(remote).unwrap_or_else(|e| panic!("{remote}: {e}"))
}

fn mapping(remote: &str, user: &str, password: &str) -> SmbMapping {
    SmbMapping::new(share(remote), user, Secret::new(password))
}

/// The operation, message and Windows code of a host failure; panics on
/// anything else.
fn host_failure<T: std::fmt::Debug>(result: Result<T>) -> (Operation, String, Option<i32>) {
    match result {
        Err(Error::Host {
            operation,
            code: Code::Unknown,
            message,
            os_code,
            ..
        }) => (operation, message, os_code),
        other => panic!("expected a host failure, got {other:?}"),
    }
}

/// `host` behind a fake proxy of CSI Proxy `release`, and a client of it.
async fn on_release(host: &FakeHost, release: ProxyRelease) -> (TestNode, FakeProxy, CsiProxy) {
    let node = TestNode::new();
    let mut fake = FakeProxy::for_host(node.transport(), host);
    fake.serve_release(release)
        .await
        .expect("serve the release");
    let proxy = CsiProxy::builder()
        .transport(node.transport())
        .connect()
        .await
        .expect("connect");
    (node, fake, proxy)
}
