//! One conformance suite, three backends: the in-memory `FakeHost`
//! directly, and the `FakeProxy` at every one of the 23 wire versions, over
//! Unix sockets here and over named pipes when built for Windows (under
//! Wine, see `scripts/test-windows.sh`).

mod common;

use common::scenario::{expected_unsupported, seeded_host, versions_with, Scenario};
use common::{every_version, TestNode};
use csi_proxy_client::testing::{FakeHost, FakeProxy};
use csi_proxy_client::{ApiGroup, ApiVersion, CsiProxy, Error, Operation, VersionPolicy};

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

// ---- one behaviour, every backend -----------------------------------------

/// The outcome of `check` on a fresh `host()`: directly, then through the
/// fake proxy at every version of `group` (the other groups at their
/// newest). Each entry is labelled with where it ran; the check gets the
/// host too, to look at its state.
async fn on_every_backend<T, F, Fut>(
    group: ApiGroup,
    host: impl Fn() -> FakeHost,
    check: F,
) -> Vec<(String, T)>
where
    F: Fn(CsiProxy, FakeHost) -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let direct = host();
    let mut outcomes = vec![("directly".to_owned(), check(direct.proxy(), direct).await)];
    for &version in group.versions() {
        let node = TestNode::new();
        let host = host();
        let mut fake = FakeProxy::for_host(node.transport(), &host);
        fake.serve_all(versions_with(group, version)).await.unwrap();
        let proxy = CsiProxy::builder()
            .transport(node.transport())
            .policy(VersionPolicy::default().allow_preview(version.is_preview()))
            .connect()
            .await
            .unwrap();
        assert_eq!(proxy.version(group), Some(version));
        outcomes.push((format!("{group} {version}"), check(proxy, host).await));
        fake.shutdown().await;
    }
    outcomes
}

/// Checks that every backend's outcome is `expected`.
fn assert_all<T: PartialEq + std::fmt::Debug>(outcomes: &[(String, T)], expected: T) {
    for (backend, outcome) in outcomes {
        assert_eq!(outcome, &expected, "{backend}");
    }
}

/// The error's variant name and, for a host error, its code: what every
/// backend must agree on.
fn kind<T>(result: csi_proxy_client::Result<T>) -> String {
    match result {
        Ok(_) => "ok".into(),
        Err(Error::Host { code, .. }) => format!("Host({code:?})"),
        Err(e) => format!("{e:?}")
            .split([' ', '{', '('])
            .next()
            .unwrap()
            .to_owned(),
    }
}

#[tokio::test]
async fn an_unknown_page83_is_not_found_on_every_version() {
    let outcomes = on_every_backend(ApiGroup::Disk, seeded_host, |proxy, _| async move {
        kind(
            proxy
                .disk()
                .unwrap()
                .get_disk_number_by_name("no-such-disk")
                .await,
        )
    })
    .await;
    assert_all(&outcomes, "NotFound".to_owned());
}
