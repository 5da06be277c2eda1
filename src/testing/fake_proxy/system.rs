//! Server side of the system layout (v1alpha1).

use std::sync::Arc;

use async_trait::async_trait;

use super::codec::{decode, host, name, reply, Answer};
use super::routing::WireServer;
use crate::adapter::system::{start_type_to_wire, status_to_wire};
use crate::api::SystemApi;
use crate::capability::SystemOperation as Op;
use crate::wire::system::v1alpha1 as wire;

pub(super) struct System(pub Arc<dyn SystemApi>);

#[async_trait]
impl WireServer<Op> for System {
    async fn handle(&self, op: Op, body: &[u8]) -> Answer {
        let api = &self.0;
        match op {
            Op::GetBiosSerialNumber => {
                let serial_number = host!(api.get_bios_serial_number());
                reply(wire::GetBiosSerialNumberResponse { serial_number })
            }
            Op::StartService => {
                let request: wire::StartServiceRequest = decode(body)?;
                name("service name", &request.name)?;
                host!(api.start_service(&request.name));
                reply(wire::StartServiceResponse {})
            }
            Op::StopService => {
                let request: wire::StopServiceRequest = decode(body)?;
                name("service name", &request.name)?;
                host!(api.stop_service(&request.name, request.force));
                reply(wire::StopServiceResponse {})
            }
            Op::GetService => {
                let request: wire::GetServiceRequest = decode(body)?;
                name("service name", &request.name)?;
                let info = host!(api.get_service(&request.name));
                reply(wire::GetServiceResponse {
                    display_name: info.display_name,
                    start_type: start_type_to_wire(info.start_type),
                    status: status_to_wire(info.status),
                })
            }
        }
    }
}
