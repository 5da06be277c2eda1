//! Server side of the system layout (v1alpha1).

use std::sync::Arc;

use async_trait::async_trait;

use super::codec::{decode, host, name, reply, Answer};
use super::WireServer;
use crate::api::{ServiceStatus, StartType, SystemApi};
use crate::capability::Operation as Op;
use crate::wire::system::v1alpha1 as wire;

fn start_type(value: StartType) -> wire::StartType {
    match value {
        StartType::Boot => wire::StartType::Boot,
        StartType::System => wire::StartType::System,
        StartType::Automatic => wire::StartType::Automatic,
        StartType::Manual => wire::StartType::Manual,
        StartType::Disabled => wire::StartType::Disabled,
    }
}

fn status(value: ServiceStatus) -> wire::ServiceStatus {
    match value {
        ServiceStatus::Unknown => wire::ServiceStatus::Unknown,
        ServiceStatus::Stopped => wire::ServiceStatus::Stopped,
        ServiceStatus::StartPending => wire::ServiceStatus::StartPending,
        ServiceStatus::StopPending => wire::ServiceStatus::StopPending,
        ServiceStatus::Running => wire::ServiceStatus::Running,
        ServiceStatus::ContinuePending => wire::ServiceStatus::ContinuePending,
        ServiceStatus::PausePending => wire::ServiceStatus::PausePending,
        ServiceStatus::Paused => wire::ServiceStatus::Paused,
    }
}

pub(super) struct System(pub Arc<dyn SystemApi>);

#[async_trait]
impl WireServer for System {
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
                    start_type: start_type(info.start_type) as i32,
                    status: status(info.status) as i32,
                })
            }
            _ => Err(super::unroutable(op)),
        }
    }
}
