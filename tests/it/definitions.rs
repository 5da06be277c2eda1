//! One definition per RPC: the operation a call is (its label, deadline
//! and retry rule), what goes on the wire, and the checks its arguments
//! get are the same whichever backend serves it.

use std::sync::Arc;
use std::time::Duration;

use csi_proxy_client::api::{
    IscsiAuth, Secret, SmbMapping, SmbRemotePath, TargetPortal, VolumeApi,
};
use csi_proxy_client::testing::{FakeHost, FakeProxy, ProxyRelease};
use csi_proxy_client::{ApiGroup, ApiVersion, Backends, CsiProxy, Error, Operation};

use crate::common::node::FakeNode;
use crate::common::{wait_until, TestNode};

/// A volume backend that implements nothing.
struct NoVolumes;

impl VolumeApi for NoVolumes {}

/// A fake host with a disk of two partitions, each with a volume.
fn host_with_partitions() -> FakeHost {
    FakeHost::builder().disk(3, "pd-1", 10 << 30).build()
}

#[tokio::test]
async fn a_whole_disk_listing_is_the_same_operation_in_every_layer() {
    // In-process: the handle's operation is the one FakeHost records.
    let host = host_with_partitions();
    let proxy = host.proxy();
    let volumes = proxy.volume().unwrap();
    volumes.list_volumes_on_disk(3, Some(0)).await.unwrap();
    assert_eq!(host.calls_of(Operation::ListVolumesOnDisk), 1);
    assert_eq!(host.calls_of(Operation::ListVolumesOnPartition), 0);
    volumes.list_volumes_on_disk(3, Some(1)).await.unwrap();
    assert_eq!(host.calls_of(Operation::ListVolumesOnPartition), 1);

    // Over the wire, at a version with the partition filter: the fake
    // proxy routes the RPC it received to the same operation.
    let node = TestNode::new();
    let host = host_with_partitions();
    let mut fake = FakeProxy::for_host(node.transport(), &host);
    fake.serve(ApiGroup::Volume, ApiVersion::V1).await.unwrap();
    let proxy = node.connect(ApiGroup::Volume, ApiVersion::V1).await;
    proxy
        .volume()
        .unwrap()
        .list_volumes_on_disk(3, Some(0))
        .await
        .unwrap();
    let received: Vec<_> = fake.calls().into_iter().map(|c| c.operation).collect();
    assert_eq!(received, [Some(Operation::ListVolumesOnDisk)]);
    assert_eq!(host.calls_of(Operation::ListVolumesOnDisk), 1);

    // A mock's default names the same operation.
    let mock = CsiProxy::from_backends(Backends {
        volume: Some(Arc::new(NoVolumes)),
        ..Backends::default()
    });
    match mock
        .volume()
        .unwrap()
        .list_volumes_on_disk(3, Some(0))
        .await
    {
        Err(Error::NotImplemented { operation }) => {
            assert_eq!(operation, Operation::ListVolumesOnDisk)
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn arguments_are_checked_before_any_backend_sees_them() {
    let host = FakeHost::default();
    let proxy = host.proxy();
    let portal = TargetPortal::new("10.0.0.5");
    let bad_iqn = "iqn.2026-11.example:t\n1";
    let iscsi = proxy.iscsi().unwrap();
    let refused = [
        iscsi
            .connect_target(&portal, bad_iqn, &IscsiAuth::None)
            .await
            .map(drop),
        iscsi.disconnect_target(&portal, bad_iqn).await,
        iscsi.get_target_disks(&portal, bad_iqn).await.map(drop),
        iscsi.add_target_portal(&TargetPortal::new("")).await,
        proxy
            .smb()
            .unwrap()
            .new_smb_global_mapping(&SmbMapping::new(
                SmbRemotePath::new(r"\\files\share").unwrap(),
                "",
                Secret::new("pw"),
            ))
            .await,
        proxy.system().unwrap().start_service("").await,
        proxy
            .disk()
            .unwrap()
            .get_disk_number_by_name("")
            .await
            .map(drop),
    ];
    for outcome in refused {
        assert!(
            matches!(outcome, Err(Error::InvalidArgument { .. })),
            "{outcome:?}"
        );
    }
    for op in [
        Operation::ConnectTarget,
        Operation::DisconnectTarget,
        Operation::GetTargetDisks,
        Operation::AddTargetPortal,
        Operation::NewSmbGlobalMapping,
        Operation::StartService,
        Operation::GetDiskNumberByName,
        Operation::ListDiskIds,
    ] {
        assert_eq!(host.calls_of(op), 0, "{op} reached the host");
    }
}

#[tokio::test]
async fn a_refused_argument_is_answered_at_once_while_the_proxy_is_away() {
    let host = FakeHost::default();
    let mut node = FakeNode::at(ProxyRelease::V1_3_0, &host).await;
    let deadline = Duration::from_secs(120);
    let proxy = node
        .client_builder()
        .read_deadline(deadline)
        .mutation_deadline(deadline)
        .connect()
        .await
        .unwrap();
    node.fake.stop_all().await;
    wait_until("the proxy is gone", || !proxy.is_served(ApiGroup::Iscsi)).await;

    // Nothing to wait for: the IQN is refused whether the proxy is there
    // or not. Before, the call waited for the proxy until its deadline and
    // answered `NotServed`.
    let iscsi = proxy.iscsi().unwrap();
    let portal = TargetPortal::new("10.0.0.5");
    let call = iscsi.disconnect_target(&portal, "iqn.2026-11.example:t\n1");
    let outcome = tokio::time::timeout(deadline / 4, call)
        .await
        .expect("the call waited for the proxy");
    assert!(
        matches!(outcome, Err(Error::InvalidArgument { .. })),
        "{outcome:?}"
    );
}
