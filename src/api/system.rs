//! The system group.

use super::define::group_trait;
use crate::capability::Operation;

/// When Windows starts a service.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StartType {
    /// By the boot loader.
    Boot,
    /// During kernel initialisation.
    System,
    /// At system start.
    Automatic,
    /// On request.
    Manual,
    /// Never.
    Disabled,
}

/// The state a Windows service is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServiceStatus {
    /// The proxy could not tell.
    Unknown,
    /// Stopped.
    Stopped,
    /// Starting.
    StartPending,
    /// Stopping.
    StopPending,
    /// Running.
    Running,
    /// Resuming.
    ContinuePending,
    /// Pausing.
    PausePending,
    /// Paused.
    Paused,
}

/// A Windows service as [`SystemApi::get_service`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceInfo {
    /// The display name.
    pub display_name: String,
    /// When it starts.
    pub start_type: StartType,
    /// What it is doing.
    pub status: ServiceStatus,
}

/// The system group's RPCs, each defined once: its method, its arguments,
/// its answer, its [`Operation`] and the checks its arguments get before
/// anything is sent. `system_rpcs!(m)` hands the list to the macro `m`:
/// [`group_trait`](super::define) makes the trait of it, and the client
/// its handle.
macro_rules! system_rpcs {
    ($then:ident) => {
        $then! {
            /// The system group: host facts and Windows services.
            ///
            /// ```
            /// use std::sync::Arc;
            /// use csi_proxy_client::{api::SystemApi, async_trait, Result};
            ///
            /// struct Serial;
            ///
            /// #[async_trait]
            /// impl SystemApi for Serial {
            ///     async fn get_bios_serial_number(&self) -> Result<String> {
            ///         Ok("SN-1".into())
            ///     }
            /// }
            ///
            /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<()> {
            /// let system: Arc<dyn SystemApi> = Arc::new(Serial);
            /// assert_eq!(system.get_bios_serial_number().await?, "SN-1");
            /// # Ok(()) }
            /// ```
            trait SystemApi;

            /// The serial number in the host's BIOS.
            fn get_bios_serial_number(&self) -> String = Operation::GetBiosSerialNumber;

            /// Starts service `name` and waits (the proxy: up to 30 s) until it runs.
            fn start_service(&self, name: &str) -> () = Operation::StartService,
                check crate::api::check_name("service name", name);

            /// Stops service `name` (with `force`, also the services that depend on
            /// it) and waits (the proxy: up to 30 s) until it has stopped.
            fn stop_service(&self, name: &str, force: bool) -> () = Operation::StopService,
                check crate::api::check_name("service name", name);

            /// Display name, start type and status of service `name`.
            fn get_service(&self, name: &str) -> ServiceInfo = Operation::GetService,
                check crate::api::check_name("service name", name);
        }
    };
}
pub(crate) use system_rpcs;

system_rpcs!(group_trait);
