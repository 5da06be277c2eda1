//! A proxy that serves chosen group-versions and answers every call with
//! `Unimplemented`: enough to exercise negotiation and the transports.

use tonic::service::Routes;

use super::endpoints::{serve_each, Endpoints, ServeOne};
use super::startup::Startup;
use crate::error::Result;
use crate::group::ApiGroup;
use crate::transport::Transport;
use crate::version::ApiVersion;

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
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), csi_proxy_client::Error> {
/// use csi_proxy_client::testing::{LocalEndpoints, StubProxy};
/// use csi_proxy_client::{negotiate::Negotiator, ApiGroup, ApiVersion};
///
/// let endpoints = LocalEndpoints::new()?;
/// let transport = endpoints.transport();
/// let mut proxy = StubProxy::new(transport.clone());
/// proxy.serve(ApiGroup::Disk, ApiVersion::V1BETA2).await?;
///
/// let negotiated = Negotiator::new(transport).negotiate(&[ApiGroup::Disk]).await?;
/// assert_eq!(negotiated.report().chosen(ApiGroup::Disk), Some(ApiVersion::V1BETA2));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct StubProxy {
    endpoints: Endpoints,
}

impl StubProxy {
    /// A proxy on `transport` that serves nothing yet.
    pub fn new(transport: Transport) -> Self {
        Self {
            endpoints: Endpoints::new(transport),
        }
    }

    /// The transport it serves on.
    pub fn transport(&self) -> &Transport {
        self.endpoints.transport()
    }

    /// Starts serving `group` `version` on its endpoint.
    pub async fn serve(&mut self, group: ApiGroup, version: ApiVersion) -> Result<()> {
        self.endpoints
            .serve(group, version, || Ok(stub_routes(group, version)))
            .await
    }

    /// Serves every version in `versions`.
    pub async fn serve_all(
        &mut self,
        versions: impl IntoIterator<Item = (ApiGroup, ApiVersion)>,
    ) -> Result<()> {
        serve_each(self, versions, Startup::default()).await
    }

    /// Stops serving `group` `version` and waits until its endpoint is gone.
    /// Connections to it break; does nothing if it was not served.
    pub async fn stop(&mut self, group: ApiGroup, version: ApiVersion) {
        self.endpoints.stop(group, version).await;
    }

    /// The group-versions being served.
    pub fn served(&self) -> Vec<(ApiGroup, ApiVersion)> {
        self.endpoints.served()
    }

    /// The gRPC path of every request received so far, in order, such as
    /// `/v1beta2.Disk/ListDiskLocations`.
    pub fn requests(&self) -> Vec<String> {
        self.endpoints.paths()
    }

    /// Stops every server and waits until their endpoints are gone.
    pub async fn shutdown(mut self) {
        self.endpoints.stop_all().await;
    }
}

impl ServeOne for StubProxy {
    async fn serve_one(&mut self, group: ApiGroup, version: ApiVersion) -> Result<()> {
        self.serve(group, version).await
    }
}

/// The routes to the stub service of `group` `version` (generated with
/// the wire code: `wire::stubs`).
fn stub_routes(group: ApiGroup, version: ApiVersion) -> Routes {
    // `serve` only lets versions of the registry through.
    crate::wire::stubs::stub_routes(group.as_str(), &version.to_string())
        .unwrap_or_else(|| unreachable!("{group} {version} has no generated service"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_version_of_the_table_has_a_stub_service() {
        for group in ApiGroup::ALL {
            for &version in group.versions() {
                // Panics (unreachable!) if a table entry has no generated service.
                let _ = stub_routes(group, version);
            }
        }
    }
}
