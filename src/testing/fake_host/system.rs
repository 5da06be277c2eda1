//! The system group of the fake host.

use async_trait::async_trait;

use super::{host_error, FakeHost};
use crate::api::{ServiceInfo, ServiceStatus, StartType, SystemApi};
use crate::capability::Operation as Op;
use crate::error::Result;

impl FakeHost {
    fn with_service<T>(
        &self,
        op: Op,
        name: &str,
        f: impl FnOnce(&mut ServiceInfo) -> Result<T>,
    ) -> Result<T> {
        let mut state = self.state();
        let service = state
            .services
            .get_mut(&name.to_lowercase())
            .ok_or_else(|| host_error(op, format!("service {name:?} does not exist")))?;
        f(service)
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl SystemApi for FakeHost {
    async fn get_bios_serial_number(&self) -> Result<String> {
        Ok(self.state().bios_serial.clone())
    }

    async fn start_service(&self, name: &str) -> Result<()> {
        self.with_service(Op::StartService, name, |service| {
            if service.start_type == StartType::Disabled {
                return Err(host_error(
                    Op::StartService,
                    format!("service {name:?} is disabled"),
                ));
            }
            service.status = ServiceStatus::Running;
            Ok(())
        })
    }

    async fn stop_service(&self, name: &str, _force: bool) -> Result<()> {
        self.with_service(Op::StopService, name, |service| {
            service.status = ServiceStatus::Stopped;
            Ok(())
        })
    }

    async fn get_service(&self, name: &str) -> Result<ServiceInfo> {
        self.with_service(Op::GetService, name, |service| Ok(service.clone()))
    }
}
