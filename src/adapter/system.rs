//! The system adapter: v1alpha1 is the only version.

use super::fields::{AnswerField, Plain, ServiceName};
use super::layout::wire_adapter;
use crate::api::{ServiceInfo, ServiceStatus, StartType, SystemApi};
use crate::capability::Operation;
use crate::error::{Error, Result};
use crate::wire::system::v1alpha1 as wire;

/// An enum's number in an answer, read and written by one table of its
/// values: a number the client does not know is an invalid answer.
macro_rules! enum_field {
    ($kind:ident: $stable:ident = $wire:path, $what:literal, [$($variant:ident),+ $(,)?]) => {
        pub(crate) struct $kind;

        impl AnswerField for $kind {
            type Value = $stable;
            type Wire = i32;

            fn from_answer(operation: Operation, _: &'static str, wire: i32) -> Result<$stable> {
                use $wire as W;
                match W::try_from(wire) {
                    $(Ok(W::$variant) => Ok($stable::$variant),)+
                    Err(_) => Err(Error::invalid_response(
                        operation,
                        format!(concat!("unknown ", $what, " {}"), wire),
                    )),
                }
            }

            #[cfg(feature = "testing")]
            fn to_answer(value: $stable) -> i32 {
                use $wire as W;
                match value {
                    $($stable::$variant => W::$variant as i32,)+
                }
            }
        }
    };
}

enum_field!(StartTypeNumber: StartType = wire::StartType, "start type", [
    Boot, System, Automatic, Manual, Disabled,
]);
enum_field!(StatusNumber: ServiceStatus = wire::ServiceStatus, "service status", [
    Unknown,
    Stopped,
    StartPending,
    StopPending,
    Running,
    ContinuePending,
    PausePending,
    Paused,
]);

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
