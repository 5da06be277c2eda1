//! The system group's RPCs (see [the module](super)).

/// The system group's RPCs, each defined once (see [the module](super)).
macro_rules! system_rpcs {
    ($then:ident $($carry:tt)*) => {
        $then! {
            $($carry)*
            {
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
            trait SystemApi: System => SystemOperation;

            /// The serial number in the host's BIOS.
            fn get_bios_serial_number(&self) -> String = {
                /// The BIOS serial number.
                GetBiosSerialNumber = "GetBIOSSerialNumber", Reads,
                    [V1ALPHA1 => Native("GetBIOSSerialNumber")]
            };

            /// Starts service `name` and waits (the proxy: up to 30 s) until it runs.
            fn start_service(&self, name: &str) -> () = {
                /// Start a service.
                StartService = "StartService", Mutates, [V1ALPHA1 => Native("StartService")]
            }
            check { check_name("service name", name) };

            /// Stops service `name` (with `force`, also the services that depend on
            /// it) and waits (the proxy: up to 30 s) until it has stopped.
            fn stop_service(&self, name: &str, force: bool) -> () = {
                /// Stop a service.
                StopService = "StopService", Mutates, [V1ALPHA1 => Native("StopService")]
            }
            check { check_name("service name", name) };

            /// Display name, start type and status of service `name`.
            fn get_service(&self, name: &str) -> ServiceInfo = {
                /// A service's start type and status.
                GetService = "GetService", Reads, [V1ALPHA1 => Native("GetService")]
            }
            check { check_name("service name", name) };
            }
        }
    };
}
pub(crate) use system_rpcs;
