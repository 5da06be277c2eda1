//! The system adapter: v1alpha1 is the only version.

use async_trait::async_trait;

use super::WireClient;
use crate::api::{ServiceInfo, ServiceStatus, StartType, SystemApi};
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

/// One table per enum, read both ways: by the client adapter and by the
/// fake proxy's server side.
macro_rules! enum_table {
    ($from_wire:ident, $to_wire:ident, $stable:ident, $wire:path, [$($variant:ident),+ $(,)?]) => {
        /// The stable value of a wire number, if the number is known.
        pub(crate) fn $from_wire(value: i32) -> Option<$stable> {
            use $wire as W;
            match W::try_from(value).ok()? {
                $(W::$variant => Some($stable::$variant),)+
            }
        }

        /// The wire number of a stable value.
        #[cfg_attr(not(feature = "testing"), allow(dead_code))] // for the fake proxy
        pub(crate) fn $to_wire(value: $stable) -> i32 {
            use $wire as W;
            match value {
                $($stable::$variant => W::$variant as i32,)+
            }
        }
    };
}

enum_table!(
    start_type_from_wire,
    start_type_to_wire,
    StartType,
    wire::StartType,
    [Boot, System, Automatic, Manual, Disabled]
);
enum_table!(
    status_from_wire,
    status_to_wire,
    ServiceStatus,
    wire::ServiceStatus,
    [
        Unknown,
        Stopped,
        StartPending,
        StopPending,
        Running,
        ContinuePending,
        PausePending,
        Paused
    ]
);

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl SystemApi for System {
    async fn get_bios_serial_number(&self) -> Result<String> {
        let response: wire::GetBiosSerialNumberResponse = self
            .wire
            .call(Op::GetBiosSerialNumber, wire::GetBiosSerialNumberRequest {})
            .await?;
        Ok(response.serial_number)
    }

    async fn start_service(&self, name: &str) -> Result<()> {
        let request = wire::StartServiceRequest {
            name: name.to_owned(),
        };
        let _: wire::StartServiceResponse = self.wire.call(Op::StartService, request).await?;
        Ok(())
    }

    async fn stop_service(&self, name: &str, force: bool) -> Result<()> {
        let request = wire::StopServiceRequest {
            name: name.to_owned(),
            force,
        };
        let _: wire::StopServiceResponse = self.wire.call(Op::StopService, request).await?;
        Ok(())
    }

    async fn get_service(&self, name: &str) -> Result<ServiceInfo> {
        let request = wire::GetServiceRequest {
            name: name.to_owned(),
        };
        let response: wire::GetServiceResponse = self.wire.call(Op::GetService, request).await?;
        Ok(ServiceInfo {
            display_name: response.display_name,
            start_type: start_type_from_wire(response.start_type).ok_or_else(|| {
                Error::invalid_response(
                    Op::GetService,
                    format!("unknown start type {}", response.start_type),
                )
            })?,
            status: status_from_wire(response.status).ok_or_else(|| {
                Error::invalid_response(
                    Op::GetService,
                    format!("unknown service status {}", response.status),
                )
            })?,
        })
    }
}
