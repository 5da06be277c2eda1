//! System: services decoded, and enum values no version defines rejected.

use super::{assert_invalid_response, pinned};
use csi_proxy_client::api::{ServiceStatus, StartType};
use csi_proxy_client::{wire, ApiGroup::System, ApiVersion as V, Operation};
use prost::Message;

#[tokio::test]
async fn services_are_decoded_and_unknown_enums_rejected() {
    let (_node, raw, proxy) = pinned(System, V::V1ALPHA1).await;
    let system = proxy.system().unwrap();
    raw.reply(wire::system::v1alpha1::GetServiceResponse {
        display_name: "CSI Proxy".into(),
        start_type: wire::system::v1alpha1::StartType::Automatic as i32,
        status: wire::system::v1alpha1::ServiceStatus::Running as i32,
    });
    let service = system.get_service("csiproxy").await.unwrap();
    assert_eq!(
        (
            service.display_name.as_str(),
            service.start_type,
            service.status
        ),
        ("CSI Proxy", StartType::Automatic, ServiceStatus::Running)
    );
    raw.reply(wire::system::v1alpha1::GetServiceResponse {
        start_type: 9,
        ..Default::default()
    });
    assert_invalid_response(system.get_service("csiproxy").await, Operation::GetService);
    raw.reply(wire::system::v1alpha1::GetServiceResponse {
        status: 42,
        ..Default::default()
    });
    assert_invalid_response(system.get_service("csiproxy").await, Operation::GetService);

    raw.reply(wire::system::v1alpha1::StopServiceResponse {});
    system.stop_service("csiproxy", true).await.unwrap();
    let stop = raw.requests().pop().unwrap();
    assert_eq!(stop.path, "/v1alpha1.System/StopService");
    let request = wire::system::v1alpha1::StopServiceRequest::decode(&stop.body[..]).unwrap();
    assert_eq!((request.name.as_str(), request.force), ("csiproxy", true));
}
