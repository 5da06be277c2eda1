//! One conformance suite, three backends: the in-memory `FakeHost`
//! directly, and the `FakeProxy` at every one of the 23 wire versions, over
//! Unix sockets here and over named pipes when built for Windows (under
//! Wine, see `scripts/test-windows.sh`).

mod common;

use common::scenario::{expected_unsupported, seeded_host, versions_with, Scenario};
use common::{every_version, TestNode};
use csi_proxy_client::testing::FakeProxy;
use csi_proxy_client::{ApiGroup, ApiVersion, CsiProxy, Operation, VersionPolicy};

#[tokio::test]
async fn the_node_flow_runs_on_the_fake_host_directly() {
    let host = seeded_host();
    let proxy = host.proxy();
    let unsupported = Scenario::new(&proxy).run(Some(&host)).await;
    assert!(unsupported.is_empty(), "{unsupported:?}");
}

#[tokio::test]
async fn the_node_flow_runs_over_the_wire_at_every_version() {
    let mut ran = 0;
    for (group, version) in every_version() {
        let node = TestNode::new();
        let host = seeded_host();
        let mut fake = FakeProxy::for_host(node.transport(), &host);
        fake.serve_all(versions_with(group, version)).await.unwrap();
        let proxy = CsiProxy::builder()
            .transport(node.transport())
            .policy(VersionPolicy::default().allow_preview(version.is_preview()))
            .connect()
            .await
            .unwrap();
        assert_eq!(proxy.version(group), Some(version), "negotiated {group}");

        let unsupported = Scenario::new(&proxy).run(Some(&host)).await;
        assert_eq!(
            unsupported,
            expected_unsupported(&proxy),
            "{group} {version}"
        );

        // Every call reached the version negotiated for its group.
        for call in fake.calls() {
            assert_eq!(Some(call.version), proxy.version(call.group), "{call:?}");
            assert!(
                call.operation.is_some(),
                "{call:?} is not an RPC of its version"
            );
        }
        fake.shutdown().await;
        ran += 1;
    }
    assert_eq!(ran, 23);
}

#[tokio::test]
async fn the_oldest_versions_lack_exactly_what_the_table_says() {
    let node = TestNode::new();
    let host = seeded_host();
    let mut fake = FakeProxy::for_host(node.transport(), &host);
    let oldest: Vec<_> = ApiGroup::ALL
        .iter()
        .map(|&g| (g, ApiVersion::V1ALPHA1))
        .collect();
    fake.serve_all(oldest).await.unwrap();
    let proxy = CsiProxy::builder()
        .transport(node.transport())
        .connect()
        .await
        .unwrap();
    let unsupported = Scenario::new(&proxy).run(Some(&host)).await;
    use Operation as O;
    assert_eq!(
        unsupported,
        [
            O::ListDiskIds,
            O::GetDiskStats,
            O::SetDiskState,
            O::GetDiskState,
            O::RmdirContents,
            O::ListVolumesOnPartition,
            O::GetVolumeStats,
            O::GetDiskNumberFromVolumeId,
            O::GetVolumeIdFromTargetPath,
            O::WriteVolumeCache,
            O::GetClosestVolumeIdFromTargetPath,
            O::SetMutualChapSecret,
        ]
    );
}
