//! The system group's checks.

use super::{is_host_error, Outcome, Steps, SystemFixture};
use crate::api::{ServiceStatus, SystemApi};
use crate::capability::Operation as O;

/// Checks `api` against the system rules on the BIOS and the service
/// `fixture` describes: the serial number is reported; the service stops
/// and starts again, and its display name and state are reported; an
/// unknown service is an error. The service is running afterwards.
pub async fn system(api: &dyn SystemApi, fixture: &SystemFixture) -> Outcome {
    let mut steps = Steps::default();
    let name = fixture.service.name.as_str();
    let state = |status| (fixture.service.display_name.clone(), status);
    let seen =
        |info: crate::Result<crate::api::ServiceInfo>| info.map(|i| (i.display_name, i.status));

    steps
        .answers(
            O::GetBiosSerialNumber,
            api.get_bios_serial_number(),
            fixture.bios_serial_number.clone(),
            "the BIOS serial number",
        )
        .await?;
    steps
        .ok(O::StopService, api.stop_service(name, false))
        .await?;
    steps
        .answers(
            O::GetService,
            async { seen(api.get_service(name).await) },
            state(ServiceStatus::Stopped),
            "after StopService",
        )
        .await?;
    steps.ok(O::StartService, api.start_service(name)).await?;
    steps
        .answers(
            O::GetService,
            async { seen(api.get_service(name).await) },
            state(ServiceStatus::Running),
            "after StartService",
        )
        .await?;
    steps
        .fails(
            O::GetService,
            api.get_service("conformance-no-such-service"),
            is_host_error,
            "an unknown service is an error",
        )
        .await?;
    steps.finish()
}
