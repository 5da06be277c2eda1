//! The system group's RPCs, one method each (the form: `catalogue/README.md`).

use crate::adapter::fields::ServiceName;
use crate::adapter::system::{StartTypeNumber, StatusNumber};
use crate::api::{check_name, ServiceInfo};

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
#[group(System, operations = SystemOperation)]
#[layout(AlphaSystem, wire = crate::wire::system::v1alpha1, doc = "v1alpha1: the one system layout, of the group's only version.")]
trait SystemApi {
    /// The serial number in the host's BIOS.
    #[operation(
        GetBiosSerialNumber,
        name = "GetBIOSSerialNumber",
        effect = Reads,
        doc = "The BIOS serial number.",
        since(V1ALPHA1 = Native("GetBIOSSerialNumber"))
    )]
    #[wire(
        AlphaSystem,
        request = GetBiosSerialNumberRequest {},
        response = GetBiosSerialNumberResponse { serial_number }
    )]
    async fn get_bios_serial_number(&self) -> Result<String>;

    /// Starts service `name` and waits (the proxy: up to 30 s) until it runs.
    #[operation(
        StartService,
        name = "StartService",
        effect = Mutates,
        doc = "Start a service.",
        since(V1ALPHA1 = Native("StartService"))
    )]
    #[check(check_name("service name", name))]
    #[wire(
        AlphaSystem,
        request = StartServiceRequest { name: ServiceName(name) },
        response = StartServiceResponse {}
    )]
    async fn start_service(&self, name: &str) -> Result<()>;

    /// Stops service `name` (with `force`, also the services that depend on
    /// it) and waits (the proxy: up to 30 s) until it has stopped.
    #[operation(
        StopService,
        name = "StopService",
        effect = Mutates,
        doc = "Stop a service.",
        since(V1ALPHA1 = Native("StopService"))
    )]
    #[check(check_name("service name", name))]
    #[wire(
        AlphaSystem,
        request = StopServiceRequest { name: ServiceName(name), force },
        response = StopServiceResponse {}
    )]
    async fn stop_service(&self, name: &str, force: bool) -> Result<()>;

    /// Display name, start type and status of service `name`.
    #[operation(
        GetService,
        name = "GetService",
        effect = Reads,
        doc = "A service's start type and status.",
        since(V1ALPHA1 = Native("GetService"))
    )]
    #[check(check_name("service name", name))]
    #[wire(
        AlphaSystem,
        request = GetServiceRequest { name: ServiceName(name) },
        response = GetServiceResponse {
            display_name,
            start_type: StartTypeNumber(start_type),
            status: StatusNumber(status),
        },
        answer = ServiceInfo { display_name, start_type, status }
    )]
    async fn get_service(&self, name: &str) -> Result<ServiceInfo>;
}
