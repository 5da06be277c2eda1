//! The fake proxy the parts measure against, in a child process of its
//! own (this program, started with `--serve`) so that the CPU time and
//! memory measured here are the client's, and the two clients of it: the
//! SDK's, and a raw tonic `Channel` to one socket.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use csi_proxy_client::testing::FakeProxy;
use csi_proxy_client::{
    api::{DiskApi, DiskIds},
    async_trait,
    transport::Transport,
    ApiGroup, ApiVersion, CsiProxy, RetryPolicy,
};
use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint, Uri};

/// A trivial backend: two disks, no work.
pub struct TwoDisks;

#[async_trait]
impl DiskApi for TwoDisks {
    async fn list_disk_ids(&self) -> csi_proxy_client::Result<BTreeMap<u32, DiskIds>> {
        let ids = |p: &str| DiskIds {
            page83: p.into(),
            serial_number: "sn".into(),
        };
        Ok(BTreeMap::from([(0, ids("disk-0")), (1, ids("disk-1"))]))
    }
}

/// Child mode: serve `set` ("all" or "oldest") in `dir` until killed.
pub async fn serve(dir: &Path, set: &str) {
    let transport = Transport::unix_sockets(dir).unwrap();
    let host = csi_proxy_client::testing::FakeHost::default();
    let mut backends = host.backends();
    backends.disk = Some(Arc::new(TwoDisks));
    let mut fake = FakeProxy::new(transport, backends);
    match set {
        "all" => fake.serve_everything().await.unwrap(),
        _ => fake
            .serve_all(ApiGroup::ALL.iter().map(|&g| (g, g.versions()[0])))
            .await
            .unwrap(),
    }
    println!("ready");
    std::future::pending::<()>().await;
}

/// A fake proxy in a child process.
pub struct Node {
    child: Child,
    pub dir: tempfile::TempDir,
}

impl Node {
    pub fn start(set: &str) -> Node {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--serve", dir.path().to_str().unwrap(), set])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready");
        Node { child, dir }
    }

    pub fn transport(&self) -> Transport {
        Transport::unix_sockets(self.dir.path()).unwrap()
    }

    pub fn socket(&self, group: ApiGroup, version: ApiVersion) -> String {
        self.transport().address(group, version)
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A raw tonic channel to one socket, as a driver without the SDK would open it.
pub async fn raw_channel(socket: String) -> Channel {
    Endpoint::from_static("http://raw")
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let socket = socket.clone();
            async move {
                tokio::net::UnixStream::connect(socket)
                    .await
                    .map(TokioIo::new)
            }
        }))
        .await
        .unwrap()
}

pub async fn connect_sdk(node: &Node) -> CsiProxy {
    CsiProxy::builder()
        .transport(node.transport())
        .retry(RetryPolicy::none())
        .connect()
        .await
        .unwrap()
}
