//! A fake node for the tests: a `StubProxy` serving chosen group-versions
//! on Unix sockets in a temporary directory (or, on Windows, on named pipes
//! under a prefix of their own), and a client-side helper that calls one
//! RPC of any group-version through its generated client. A node whose
//! proxy is a `FakeProxy` instead is a [`node::FakeNode`].

#[rustfmt::skip] // generated (tests/generated_code.rs)
mod clients;
pub mod node;
pub mod recorder;
pub mod scenario;
pub mod slow;

pub use clients::call_one;
pub use csi_proxy_client::testing::STUB_MESSAGE;
use csi_proxy_client::testing::{ScriptedServer, StubProxy};
use csi_proxy_client::{
    negotiate::VersionPolicy, transport::Transport, ApiGroup, ApiVersion, CsiProxy, CsiProxyBuilder,
};

/// `text` as a Windows path; a path the SDK refuses is a mistake in the
/// test.
pub fn path(text: &str) -> csi_proxy_client::api::WindowsPath {
    csi_proxy_client::api::WindowsPath::new(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// A node with a chosen set of CSI Proxy endpoints.
pub struct TestNode {
    proxy: StubProxy,
    #[cfg(unix)]
    _dir: tempfile::TempDir,
}

impl TestNode {
    pub fn new() -> Self {
        #[cfg(unix)]
        {
            let dir = tempfile::tempdir().expect("temporary directory");
            let transport = Transport::unix_sockets(dir.path()).expect("socket transport");
            Self {
                proxy: StubProxy::new(transport),
                _dir: dir,
            }
        }
        #[cfg(windows)]
        {
            use std::sync::atomic::{AtomicUsize, Ordering};
            // Pipe names are global to the machine: give each node its own.
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let prefix = format!(r"\\.\pipe\csi-test-{}-{n}-", std::process::id());
            // The node's stub proxy runs as this user.
            let trust = csi_proxy_client::transport::ServerTrust::default()
                .trust_current_user()
                .expect("current user");
            let transport = Transport::named_pipes_with_prefix(&prefix)
                .expect("pipe transport")
                .trusting(trust);
            Self {
                proxy: StubProxy::new(transport),
            }
        }
    }

    /// A node serving `versions`.
    pub async fn serving(versions: &[(ApiGroup, ApiVersion)]) -> Self {
        let mut node = Self::new();
        node.proxy
            .serve_all(versions.iter().copied())
            .await
            .expect("serve");
        node
    }

    /// A node serving every version of every group, as CSI Proxy v1.3 does.
    pub async fn serving_everything() -> Self {
        Self::serving(&every_version()).await
    }

    pub fn transport(&self) -> Transport {
        self.proxy.transport().clone()
    }

    /// The gRPC paths the node's servers saw, in order.
    pub fn paths(&self) -> Vec<String> {
        self.proxy.requests()
    }

    pub async fn serve(&mut self, group: ApiGroup, version: ApiVersion) {
        self.proxy.serve(group, version).await.expect("serve");
    }

    pub async fn stop(&mut self, group: ApiGroup, version: ApiVersion) {
        self.proxy.stop(group, version).await;
    }

    /// A scripted raw server on the endpoint of `group` `version`.
    pub async fn raw(&self, group: ApiGroup, version: ApiVersion) -> ScriptedServer {
        ScriptedServer::start(self.proxy.transport(), group, version)
            .await
            .expect("serve the scripted endpoint")
    }

    /// A client of the node, to be set as the test wants.
    pub fn client_builder(&self) -> CsiProxyBuilder {
        CsiProxy::builder().transport(self.transport())
    }

    /// A client of the node with every default.
    pub async fn client(&self) -> CsiProxy {
        self.client_builder().connect().await.unwrap()
    }

    /// A client with `group` pinned to `version`.
    pub async fn connect(&self, group: ApiGroup, version: ApiVersion) -> CsiProxy {
        self.client_builder()
            .policy(VersionPolicy::default().pin(group, version))
            .groups([group])
            .require(group)
            .connect()
            .await
            .unwrap_or_else(|e| panic!("connect {group} {version}: {e}"))
    }
}

pub fn every_version() -> Vec<(ApiGroup, ApiVersion)> {
    ApiGroup::ALL
        .iter()
        .flat_map(|&g| g.versions().iter().map(move |&v| (g, v)))
        .collect()
}

/// Waits until `done` holds, checking every 2 ms; fails the test with
/// `what` after 10 s.
pub async fn wait_until(what: &str, done: impl Fn() -> bool) {
    let started = std::time::Instant::now();
    while !done() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "never: {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
}

/// How long the client waits for a group the proxy may still be creating
/// (the crate's `PIPE_GRACE`): a call or connect that answers "at once"
/// answers well within it, one that waited it out does not.
pub const PIPE_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Runs `call` `tries` times, one after the other; returns the last
/// answer and the quickest run's time. For a bound that is the behaviour
/// ("at once, not after a wait"): a wait the code makes shows in every
/// run, a stall of a loaded machine (or of Wine) in one run does not.
pub async fn quickest_of<T, Fut>(
    tries: usize,
    mut call: impl FnMut() -> Fut,
) -> (T, std::time::Duration)
where
    Fut: std::future::Future<Output = T>,
{
    assert!(tries > 0, "at least one try");
    let mut quickest = std::time::Duration::MAX;
    let mut last = None;
    for _ in 0..tries {
        let started = std::time::Instant::now();
        last = Some(call().await);
        quickest = quickest.min(started.elapsed());
    }
    (last.expect("tried"), quickest)
}
