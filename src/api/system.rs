//! The system group.

use super::declare::define_group_traits;

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

/// The system group's one declaration (see `api::declare`).
macro_rules! system_group {
    ($then:ident $(($($extra:tt)*))?) => { $then! { ($($($extra)*)?)
        /// The system group: host facts and Windows services.
        ///
        /// ```
        /// use std::sync::Arc;
        /// use csi_proxy_client::{async_trait, Result, SystemApi};
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
        pub trait SystemApi, backend SystemBackend {
            /// The serial number in the host's BIOS.
            fn get_bios_serial_number(&self) -> String = GetBiosSerialNumber;

            /// Starts service `name` and waits (the proxy: up to 30 s) until it runs.
            fn start_service(&self, name: &str) -> () = StartService;

            /// Stops service `name` (with `force`, also the services that depend on
            /// it) and waits (the proxy: up to 30 s) until it has stopped.
            fn stop_service(&self, name: &str, force: bool) -> () = StopService;

            /// Display name, start type and status of service `name`.
            fn get_service(&self, name: &str) -> crate::api::ServiceInfo = GetService;
        }
    } };
}
pub(crate) use system_group;

system_group!(define_group_traits);
