//! The system group.

use async_trait::async_trait;

use super::not_implemented;
use crate::capability::Operation;
use crate::error::Result;

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
#[async_trait]
// The defaults answer `NotImplemented`, whatever the arguments.
#[allow(unused_variables)]
pub trait SystemApi: Send + Sync {
    /// The serial number in the host's BIOS.
    async fn get_bios_serial_number(&self) -> Result<String> {
        not_implemented(Operation::GetBiosSerialNumber)
    }

    /// Starts service `name` and waits (the proxy: up to 30 s) until it runs.
    async fn start_service(&self, name: &str) -> Result<()> {
        not_implemented(Operation::StartService)
    }

    /// Stops service `name` (with `force`, also the services that depend on
    /// it) and waits (the proxy: up to 30 s) until it has stopped.
    async fn stop_service(&self, name: &str, force: bool) -> Result<()> {
        not_implemented(Operation::StopService)
    }

    /// Display name, start type and status of service `name`.
    async fn get_service(&self, name: &str) -> Result<ServiceInfo> {
        not_implemented(Operation::GetService)
    }
}
