//! The system group of the fake host.

use async_trait::async_trait;

use super::{host_error, FakeHost};
use crate::api::{ServiceInfo, ServiceStatus, StartType, SystemApi};
use crate::capability::Operation as Op;
use crate::error::Result;

impl FakeHost {
    /// One call of `op` on service `name`.
    async fn with_service<T: Send + 'static>(
        &self,
        op: Op,
        name: &str,
        f: impl FnOnce(&str, &mut ServiceInfo) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let name = name.to_owned();
        self.host_call(op, move |state| {
            let service = state
                .services
                .get_mut(&name.to_lowercase())
                .ok_or_else(|| host_error(op, format!("service {name:?} does not exist")))?;
            f(&name, service)
        })
        .await
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl SystemApi for FakeHost {
    async fn get_bios_serial_number(&self) -> Result<String> {
        self.host_call(Op::GetBiosSerialNumber, |state| {
            Ok(state.bios_serial.clone())
        })
        .await
    }

    async fn start_service(&self, name: &str) -> Result<()> {
        self.with_service(Op::StartService, name, |name, service| {
            if service.start_type == StartType::Disabled {
                return Err(host_error(
                    Op::StartService,
                    format!("service {name:?} is disabled"),
                ));
            }
            service.status = ServiceStatus::Running;
            Ok(())
        })
        .await
    }

    async fn stop_service(&self, name: &str, _force: bool) -> Result<()> {
        self.with_service(Op::StopService, name, |_, service| {
            service.status = ServiceStatus::Stopped;
            Ok(())
        })
        .await
    }

    async fn get_service(&self, name: &str) -> Result<ServiceInfo> {
        self.with_service(Op::GetService, name, |_, service| Ok(service.clone()))
            .await
    }
}
