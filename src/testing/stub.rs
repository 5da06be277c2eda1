//! A proxy that serves chosen group-versions and answers every call with
//! `Unimplemented`: enough to exercise negotiation and the transports.

use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::codegen::http;
use tonic::transport::server::Router;
use tonic::transport::Server;

use super::listen;
use crate::error::{Error, Result};
use crate::group::ApiGroup;
use crate::transport::Transport;
use crate::version::ApiVersion;
use crate::wire;

/// The message of every answer of a [`StubProxy`].
pub const STUB_MESSAGE: &str = "Not yet implemented";

/// A stand-in CSI Proxy that serves any set of group-versions on a
/// [`Transport`] and answers every method with `Unimplemented`
/// ([`STUB_MESSAGE`]). It records the gRPC path of every request, so a test
/// can check where calls went.
///
/// Each group-version is a real gRPC server on its own endpoint, built from
/// the generated services, so negotiation and transports run exactly as
/// against CSI Proxy. Dropping the proxy stops every server.
///
/// ```
/// # #[cfg(unix)]
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), csi_proxy_client::Error> {
/// use csi_proxy_client::testing::StubProxy;
/// use csi_proxy_client::{ApiGroup, ApiVersion, Negotiator, Transport};
///
/// let dir = tempfile::tempdir().unwrap();
/// let transport = Transport::unix_sockets(dir.path())?;
/// let mut proxy = StubProxy::new(transport.clone());
/// proxy.serve(ApiGroup::Disk, ApiVersion::V1BETA2).await?;
///
/// let negotiated = Negotiator::new(transport).negotiate(&[ApiGroup::Disk]).await?;
/// assert_eq!(negotiated.report().chosen(ApiGroup::Disk), Some(ApiVersion::V1BETA2));
/// # Ok(()) }
/// # #[cfg(not(unix))] fn main() {}
/// ```
#[derive(Debug)]
pub struct StubProxy {
    transport: Transport,
    served: Vec<Served>,
    requests: Arc<Mutex<Vec<String>>>,
}

#[derive(Debug)]
struct Served {
    group: ApiGroup,
    version: ApiVersion,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl StubProxy {
    /// A proxy on `transport` that serves nothing yet.
    pub fn new(transport: Transport) -> Self {
        Self {
            transport,
            served: Vec::new(),
            requests: Arc::default(),
        }
    }

    /// The transport it serves on.
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// Starts serving `group` `version` on its endpoint.
    pub async fn serve(&mut self, group: ApiGroup, version: ApiVersion) -> Result<()> {
        if !group.has_version(version) {
            return Err(Error::invalid_argument(
                "version",
                format!("CSI Proxy has no {group} {version}"),
            ));
        }
        let incoming = listen(&self.transport, group, version).await?;
        let requests = self.requests.clone();
        let record = tower::util::MapRequestLayer::new(move |request: http::Request<_>| {
            if let Ok(mut log) = requests.lock() {
                log.push(request.uri().path().to_owned());
            }
            request
        });
        let router = stub_router(Server::builder().layer(record), group, version);
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            if let Err(error) = router
                .serve_with_incoming_shutdown(incoming, shutdown)
                .await
            {
                tracing::warn!(%group, %version, %error, "stub server failed");
            }
        });
        self.served.push(Served {
            group,
            version,
            stop,
            task,
        });
        Ok(())
    }

    /// Serves every version in `versions`.
    pub async fn serve_all(
        &mut self,
        versions: impl IntoIterator<Item = (ApiGroup, ApiVersion)>,
    ) -> Result<()> {
        for (group, version) in versions {
            self.serve(group, version).await?;
        }
        Ok(())
    }

    /// Stops serving `group` `version` and waits until its endpoint is gone.
    /// Connections to it break; does nothing if it was not served.
    pub async fn stop(&mut self, group: ApiGroup, version: ApiVersion) {
        if let Some(at) = self
            .served
            .iter()
            .position(|s| s.group == group && s.version == version)
        {
            let served = self.served.remove(at);
            let _ = served.stop.send(());
            let _ = served.task.await;
        }
    }

    /// The group-versions being served.
    pub fn served(&self) -> Vec<(ApiGroup, ApiVersion)> {
        self.served.iter().map(|s| (s.group, s.version)).collect()
    }

    /// The gRPC path of every request received so far, in order, such as
    /// `/v1beta2.Disk/ListDiskLocations`.
    pub fn requests(&self) -> Vec<String> {
        self.requests
            .lock()
            .map(|log| log.clone())
            .unwrap_or_default()
    }

    /// Stops every server and waits until their endpoints are gone.
    pub async fn shutdown(mut self) {
        for served in std::mem::take(&mut self.served) {
            let _ = served.stop.send(());
            let _ = served.task.await;
        }
    }
}

impl Drop for StubProxy {
    fn drop(&mut self) {
        for served in &self.served {
            served.task.abort();
        }
    }
}

/// Answers every method of every version with tonic's default stubs.
struct Stub;

/// One row per group: its generated server module, server type and trait,
/// and its versions.
macro_rules! stub_services {
    ($( $group:ident : $module:ident :: $server:ident, $service:ident, [$($version:ident),+] );+ $(;)?) => {
        fn stub_router<L: Clone>(mut builder: Server<L>, group: ApiGroup, version: ApiVersion) -> Router<L> {
            match (group, version.to_string().as_str()) {
                $($(
                    (ApiGroup::$service, stringify!($version)) => {
                        builder.add_service(wire::$group::$version::$module::$server::new(Stub))
                    }
                )+)+
                // `serve` only lets versions of the group table through, and
                // a test checks that the table matches the generated modules.
                _ => unreachable!("{group} {version} has no generated service"),
            }
        }

        $($(
            impl wire::$group::$version::$module::$service for Stub {}
        )+)+
    };
}

stub_services! {
    disk: disk_server::DiskServer, Disk, [v1alpha1, v1beta1, v1beta2, v1beta3, v1];
    filesystem: filesystem_server::FilesystemServer, Filesystem, [v1alpha1, v1beta1, v1beta2, v1, v2alpha1];
    smb: smb_server::SmbServer, Smb, [v1alpha1, v1beta1, v1beta2, v1];
    volume: volume_server::VolumeServer, Volume, [v1alpha1, v1beta1, v1beta2, v1beta3, v1, v2alpha1];
    iscsi: iscsi_server::IscsiServer, Iscsi, [v1alpha1, v1alpha2];
    system: system_server::SystemServer, System, [v1alpha1];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_version_of_the_table_has_a_stub_service() {
        for group in ApiGroup::ALL {
            for &version in group.versions() {
                // Panics (unreachable!) if a table entry has no generated service.
                let _ = stub_router(Server::builder(), group, version);
            }
        }
    }
}
