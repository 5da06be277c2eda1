//! Serving gRPC routes on the endpoints of chosen group-versions: the
//! lifecycle shared by [`StubProxy`](super::StubProxy) and
//! [`FakeProxy`](super::FakeProxy).

use std::sync::{Arc, Mutex};

use tokio::task::JoinHandle;
use tonic::codegen::http;
use tonic::service::Routes;
use tonic::transport::Server;

use super::listen;
use super::startup::Startup;
use crate::error::{Error, Result};
use crate::group::ApiGroup;
use crate::transport::Transport;
use crate::version::ApiVersion;

#[derive(Debug)]
struct Served {
    group: ApiGroup,
    version: ApiVersion,
    task: JoinHandle<()>,
}

/// A fake proxy that can serve one group-version at a time.
pub(crate) trait ServeOne {
    fn serve_one(
        &mut self,
        group: ApiGroup,
        version: ApiVersion,
    ) -> impl std::future::Future<Output = Result<()>> + Send;
}

/// Serves each of `versions` in turn, in the order and with the gaps of
/// `startup`, stopping at the first failure.
pub(crate) async fn serve_each<P: ServeOne>(
    proxy: &mut P,
    versions: impl IntoIterator<Item = (ApiGroup, ApiVersion)>,
    startup: Startup,
) -> Result<()> {
    let mut versions: Vec<_> = versions.into_iter().collect();
    startup.order.arrange(&mut versions);
    for (i, (group, version)) in versions.into_iter().enumerate() {
        if i > 0 && !startup.gap.is_zero() {
            tokio::time::sleep(startup.gap).await;
        }
        proxy.serve_one(group, version).await?;
    }
    Ok(())
}

/// The servers of one fake proxy, one per served group-version.
#[derive(Debug)]
pub(crate) struct Endpoints {
    transport: Transport,
    served: Vec<Served>,
    paths: Arc<Mutex<Vec<String>>>,
}

impl Endpoints {
    pub fn new(transport: Transport) -> Self {
        Self {
            transport,
            served: Vec::new(),
            paths: Arc::default(),
        }
    }

    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// Serves the routes `make_routes` builds on the endpoint of `group`
    /// `version`; it is called only for a version the group has, and only
    /// if the endpoint is not served yet.
    pub async fn serve(
        &mut self,
        group: ApiGroup,
        version: ApiVersion,
        make_routes: impl FnOnce() -> Result<Routes>,
    ) -> Result<()> {
        if !group.has_version(version) {
            return Err(Error::invalid_argument(
                "version",
                format!("CSI Proxy has no {group} {version}"),
            ));
        }
        if self.is_serving(group, version) {
            return Ok(());
        }
        let routes = make_routes()?;
        let incoming = listen(&self.transport, group, version).await?;
        let paths = self.paths.clone();
        let record = tower::util::MapRequestLayer::new(move |request: http::Request<_>| {
            if let Ok(mut log) = paths.lock() {
                log.push(request.uri().path().to_owned());
            }
            request
        });
        let router = Server::builder().layer(record).add_routes(routes);
        let task = tokio::spawn(async move {
            if let Err(error) = router.serve_with_incoming(incoming).await {
                tracing::warn!(%group, %version, %error, "fake proxy endpoint failed");
            }
        });
        self.served.push(Served {
            group,
            version,
            task,
        });
        Ok(())
    }

    pub fn is_serving(&self, group: ApiGroup, version: ApiVersion) -> bool {
        self.served
            .iter()
            .any(|s| s.group == group && s.version == version)
    }

    /// Stops serving `group` `version` and waits until its endpoint is gone.
    pub async fn stop(&mut self, group: ApiGroup, version: ApiVersion) {
        if let Some(at) = self
            .served
            .iter()
            .position(|s| s.group == group && s.version == version)
        {
            Self::stop_one(self.served.remove(at)).await;
        }
    }

    /// Stops every endpoint and waits until they are gone.
    pub async fn stop_all(&mut self) {
        for served in std::mem::take(&mut self.served) {
            Self::stop_one(served).await;
        }
    }

    /// Like a proxy process dying: the listener goes, and with it (see
    /// `ServerStream`) every connection, including calls in flight.
    async fn stop_one(served: Served) {
        served.task.abort();
        let _ = served.task.await;
    }

    pub fn served(&self) -> Vec<(ApiGroup, ApiVersion)> {
        self.served.iter().map(|s| (s.group, s.version)).collect()
    }

    /// The gRPC path of every request received so far, in order.
    pub fn paths(&self) -> Vec<String> {
        self.paths.lock().map(|log| log.clone()).unwrap_or_default()
    }
}

impl Drop for Endpoints {
    fn drop(&mut self) {
        for served in &self.served {
            served.task.abort();
        }
    }
}
