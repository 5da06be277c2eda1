//! The Identity service: the driver's name and version, the plugin's
//! capabilities, and `Probe`, which is ready while the proxy serves the
//! groups the driver's kinds need.

use std::collections::HashMap;

use tonic::{Request, Response};

use crate::{ApiGroup, Status};

use crate::csi::driver::NodeDriver;
use crate::csi::observe::observed;
use crate::csi::v1::identity_server::Identity;
use crate::csi::v1::*;
use crate::csi::NodeService;

/// How long `Probe` looks for groups not served before it answers.
const PROBE_LOOK: std::time::Duration = std::time::Duration::from_secs(2);

impl<D: NodeDriver> NodeService<D> {
    /// The groups the driver's kinds need.
    fn needed_groups(&self) -> Vec<ApiGroup> {
        let mut groups: Vec<ApiGroup> = Vec::new();
        for kind in self.inner.driver.kinds() {
            for group in kind.groups() {
                if !groups.contains(group) {
                    groups.push(*group);
                }
            }
        }
        groups
    }
}

#[crate::async_trait]
impl<D: NodeDriver> Identity for NodeService<D> {
    async fn get_plugin_info(
        &self,
        _: Request<GetPluginInfoRequest>,
    ) -> Result<Response<GetPluginInfoResponse>, Status> {
        observed("GetPluginInfo", "", async {
            Ok(Response::new(GetPluginInfoResponse {
                name: self.inner.driver.name().to_owned(),
                vendor_version: self.inner.driver.version().to_owned(),
                manifest: HashMap::new(),
            }))
        })
        .await
    }

    async fn get_plugin_capabilities(
        &self,
        _: Request<GetPluginCapabilitiesRequest>,
    ) -> Result<Response<GetPluginCapabilitiesResponse>, Status> {
        use plugin_capability::{service, volume_expansion, Service, Type, VolumeExpansion};
        observed("GetPluginCapabilities", "", async {
            let mut capabilities = Vec::new();
            if self.with_controller {
                capabilities.push(PluginCapability {
                    r#type: Some(Type::Service(Service {
                        r#type: service::Type::ControllerService as i32,
                    })),
                });
            }
            if self.has_volumes() {
                capabilities.push(PluginCapability {
                    r#type: Some(Type::VolumeExpansion(VolumeExpansion {
                        r#type: volume_expansion::Type::Online as i32,
                    })),
                });
            }
            Ok(Response::new(GetPluginCapabilitiesResponse {
                capabilities,
            }))
        })
        .await
    }

    async fn probe(&self, _: Request<ProbeRequest>) -> Result<Response<ProbeResponse>, Status> {
        observed("Probe", "", async {
            let proxy = self.inner.mounter.proxy();
            let groups = self.needed_groups();
            let mut ready = proxy.health().is_ready(&groups);
            if !ready {
                // A group never served (the proxy started after the
                // plugin) is looked for only when asked: look now, briefly.
                let looked = tokio::time::timeout(PROBE_LOOK, proxy.renegotiate()).await;
                if let Ok(Err(error)) = looked {
                    tracing::debug!(%error, "looking for the proxy");
                }
                ready = proxy.health().is_ready(&groups);
            }
            Ok(Response::new(ProbeResponse { ready: Some(ready) }))
        })
        .await
    }
}
