//! The system adapter: v1alpha1 is the only version.

use super::fields::{AnswerField, Plain, ServiceName};
use super::layout::wire_adapter;
use crate::api::{ServiceInfo, ServiceStatus, StartType, SystemApi};
use crate::capability::Operation;
use crate::error::{Error, Result};
use crate::wire::system::v1alpha1 as wire;

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

/// An enum's number in an answer, read by its table.
macro_rules! enum_field {
    ($kind:ident, $stable:ident, $from_wire:ident, $to_wire:ident, $what:literal) => {
        pub(crate) struct $kind;

        impl AnswerField for $kind {
            type Value = $stable;
            type Wire = i32;

            fn from_answer(operation: Operation, _: &'static str, wire: i32) -> Result<$stable> {
                $from_wire(wire).ok_or_else(|| {
                    Error::invalid_response(
                        operation,
                        format!(concat!("unknown ", $what, " {}"), wire),
                    )
                })
            }

            #[cfg(feature = "testing")]
            fn to_answer(value: $stable) -> i32 {
                $to_wire(value)
            }
        }
    };
}

enum_field!(
    StartTypeNumber,
    StartType,
    start_type_from_wire,
    start_type_to_wire,
    "start type"
);
enum_field!(
    StatusNumber,
    ServiceStatus,
    status_from_wire,
    status_to_wire,
    "service status"
);

/// The layout's table (see `super::layout`).
macro_rules! system_layout {
    ($then:ident $($carry:tt)*) => {
        $then! { $($carry)* {
            /// v1alpha1, the only version.
            System: SystemApi in crate::wire::system::v1alpha1;

            fn get_bios_serial_number() -> String
                = GetBiosSerialNumber: GetBiosSerialNumberRequest {}
                -> GetBiosSerialNumberResponse { serial_number: Plain<String> } => (serial_number);
            fn start_service(name: &str) -> ()
                = StartService: StartServiceRequest { name: name as ServiceName }
                -> StartServiceResponse {} => ();
            fn stop_service(name: &str, force: bool) -> ()
                = StopService: StopServiceRequest {
                    name: name as ServiceName,
                    force: force as Plain<bool>
                }
                -> StopServiceResponse {} => ();
            fn get_service(name: &str) -> ServiceInfo
                = GetService: GetServiceRequest { name: name as ServiceName }
                -> GetServiceResponse {
                    display_name: Plain<String>,
                    start_type: StartTypeNumber,
                    status: StatusNumber
                }
                => (ServiceInfo { display_name, start_type, status });
        } }
    };
}
#[cfg(feature = "testing")] // for the fake proxy
pub(crate) use system_layout;

system_layout!(wire_adapter);
