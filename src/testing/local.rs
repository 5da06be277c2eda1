//! A private place for one test's endpoints, the same on every platform.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::Result;
use crate::transport::Transport;

/// Where one test's fake proxy listens and its client connects: Unix
/// sockets in a fresh temporary directory on Unix, Windows named pipes
/// under a name prefix of their own on Windows. The same test code runs
/// over sockets on Linux and over pipes on Windows, and tests running at
/// the same time never meet each other's endpoints.
///
/// Its transport trusts this process's own user to serve the endpoints
/// (see [`ServerTrust`](crate::transport::ServerTrust)): the fake proxies of tests run
/// as that user. Dropping it removes the socket directory (named pipes go
/// with their servers).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> csi_proxy_client::Result<()> {
/// use csi_proxy_client::testing::{FakeHost, FakeProxy, LocalEndpoints};
/// use csi_proxy_client::{ApiGroup, ApiVersion, CsiProxy};
///
/// let endpoints = LocalEndpoints::new()?;
/// let host = FakeHost::builder().disk(1, "pd-1", 10 << 30).build();
/// let mut fake = FakeProxy::new(endpoints.transport(), host.backends());
/// fake.serve(ApiGroup::Disk, ApiVersion::V1).await?;
///
/// let proxy = CsiProxy::builder()
///     .transport(endpoints.transport())
///     .connect()
///     .await?;
/// assert_eq!(proxy.disk()?.get_disk_number_by_name("pd-1").await?, 1);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct LocalEndpoints {
    transport: Transport,
    #[cfg(unix)]
    dir: std::path::PathBuf,
}

impl LocalEndpoints {
    /// A new place, unique in this machine: a directory under the
    /// system's temporary directory, or a pipe prefix naming this process.
    /// Fails if the directory cannot be made (or its socket paths would be
    /// too long: see [`Transport::unix_sockets`]).
    pub fn new() -> Result<Self> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let unique = format!(
            "csi-proxy-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        #[cfg(unix)]
        {
            let dir = std::env::temp_dir().join(unique);
            std::fs::create_dir_all(&dir).map_err(|e| {
                crate::Error::invalid_argument(
                    "socket directory",
                    format!("{}: {e}", dir.display()),
                )
            })?;
            let transport = match Transport::unix_sockets(&dir) {
                Ok(transport) => transport,
                Err(e) => {
                    let _ = std::fs::remove_dir_all(&dir);
                    return Err(e);
                }
            };
            Ok(Self { transport, dir })
        }
        #[cfg(windows)]
        {
            let prefix = format!(r"{}{unique}-", crate::transport::LOCAL_PIPE_PREFIX);
            // The fake proxies of tests run as this user.
            let trust = crate::transport::ServerTrust::default().trust_current_user()?;
            Ok(Self {
                transport: Transport::named_pipes_with_prefix(&prefix)?.trusting(trust),
            })
        }
    }

    /// The transport of these endpoints, for a fake proxy and its client.
    pub fn transport(&self) -> Transport {
        self.transport.clone()
    }
}

impl Drop for LocalEndpoints {
    fn drop(&mut self) {
        #[cfg(unix)]
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
