//! The system adapter: v1alpha1 is the only version.

use async_trait::async_trait;

use super::WireClient;
use crate::api::{check_name, ServiceInfo, ServiceStatus, StartType, SystemApi};
use crate::capability::Operation as Op;
use crate::error::{Error, Result};
use crate::wire::system::v1alpha1 as wire;

pub(super) struct System {
    wire: WireClient,
}

impl System {
    pub fn new(wire: WireClient) -> Self {
        Self { wire }
    }
}

fn start_type(value: i32) -> Result<StartType> {
    Ok(match wire::StartType::try_from(value) {
        Ok(wire::StartType::Boot) => StartType::Boot,
        Ok(wire::StartType::System) => StartType::System,
        Ok(wire::StartType::Automatic) => StartType::Automatic,
        Ok(wire::StartType::Manual) => StartType::Manual,
        Ok(wire::StartType::Disabled) => StartType::Disabled,
        Err(_) => {
            return Err(Error::invalid_response(
                Op::GetService,
                format!("unknown start type {value}"),
            ))
        }
    })
}

fn service_status(value: i32) -> Result<ServiceStatus> {
    use wire::ServiceStatus as W;
    Ok(match W::try_from(value) {
        Ok(W::Unknown) => ServiceStatus::Unknown,
        Ok(W::Stopped) => ServiceStatus::Stopped,
        Ok(W::StartPending) => ServiceStatus::StartPending,
        Ok(W::StopPending) => ServiceStatus::StopPending,
        Ok(W::Running) => ServiceStatus::Running,
        Ok(W::ContinuePending) => ServiceStatus::ContinuePending,
        Ok(W::PausePending) => ServiceStatus::PausePending,
        Ok(W::Paused) => ServiceStatus::Paused,
        Err(_) => {
            return Err(Error::invalid_response(
                Op::GetService,
                format!("unknown service status {value}"),
            ))
        }
    })
}

#[async_trait]
impl SystemApi for System {
    async fn get_bios_serial_number(&self) -> Result<String> {
        let response: wire::GetBiosSerialNumberResponse = self
            .wire
            .call(Op::GetBiosSerialNumber, wire::GetBiosSerialNumberRequest {})
            .await?;
        Ok(response.serial_number)
    }

    async fn start_service(&self, name: &str) -> Result<()> {
        check_name("service name", name)?;
        let request = wire::StartServiceRequest {
            name: name.to_owned(),
        };
        let _: wire::StartServiceResponse = self.wire.call(Op::StartService, request).await?;
        Ok(())
    }

    async fn stop_service(&self, name: &str, force: bool) -> Result<()> {
        check_name("service name", name)?;
        let request = wire::StopServiceRequest {
            name: name.to_owned(),
            force,
        };
        let _: wire::StopServiceResponse = self.wire.call(Op::StopService, request).await?;
        Ok(())
    }

    async fn get_service(&self, name: &str) -> Result<ServiceInfo> {
        check_name("service name", name)?;
        let request = wire::GetServiceRequest {
            name: name.to_owned(),
        };
        let response: wire::GetServiceResponse = self.wire.call(Op::GetService, request).await?;
        Ok(ServiceInfo {
            display_name: response.display_name,
            start_type: start_type(response.start_type)?,
            status: service_status(response.status)?,
        })
    }
}
