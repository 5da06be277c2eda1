//! The `metrics` feature: what a call, a negotiation and a version change
//! record, checked with a recorder that logs every update.

use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::common::node::FakeNode;
use crate::common::recorder::LogRecorder;
use crate::common::scenario::seeded_host;
use crate::common::slow::slow_volume_node;
use crate::common::{every_version, wait_until};
use csi_proxy_client::metrics::{
    API_VERSION, CALLS_TOTAL, CALL_DURATION_SECONDS, GROUP_SERVED, NEGOTIATIONS_TOTAL,
    VERSION_CHANGES_TOTAL,
};
use csi_proxy_client::{
    api::{Secret, SmbMapping, SmbRemotePath, WindowsPath},
    ApiGroup, ApiVersion as V, CallOptions, CsiProxy, Error, Operation,
};

/// A client of `node` for `groups`, requiring the first, as a driver
/// connects.
async fn connect(node: &FakeNode, groups: &[ApiGroup]) -> CsiProxy {
    (node.client_builder().groups(groups.iter().copied()))
        .require(groups[0])
        .connect()
        .await
        .unwrap()
}

/// A node whose fake proxy serves `versions` of the seeded host, and a
/// client of it for `groups`.
async fn node_serving(versions: &[(ApiGroup, V)], groups: &[ApiGroup]) -> (FakeNode, CsiProxy) {
    let node = FakeNode::serving(versions.iter().copied()).await;
    let proxy = connect(&node, groups).await;
    (node, proxy)
}

fn calls(recorder: &LogRecorder, labels: &[(&str, &str)]) -> u64 {
    recorder.count(CALLS_TOTAL, labels)
}

/// The labels of one call series.
fn call_series<'a>(
    group: &'a str,
    version: &'a str,
    method: &'a str,
    outcome: &'a str,
) -> [(&'a str, &'a str); 4] {
    [
        ("group", group),
        ("version", version),
        ("method", method),
        ("outcome", outcome),
    ]
}

#[tokio::test]
async fn each_call_is_counted_and_timed_by_group_version_method_and_outcome() {
    let recorder = LogRecorder::default();
    let _local = metrics::set_default_local_recorder(&recorder);
    let served = [(ApiGroup::Disk, V::V1), (ApiGroup::Smb, V::V1)];
    let (_node, proxy) = node_serving(&served, &[ApiGroup::Disk, ApiGroup::Smb]).await;

    let disk = proxy.disk().unwrap();
    disk.list_disk_locations().await.unwrap();
    disk.list_disk_locations().await.unwrap();
    let unknown = disk.get_disk_number_by_name("no such page83").await;
    assert!(
        matches!(unknown, Err(Error::NotFound { .. })),
        "{unknown:?}"
    );
    let share = SmbRemotePath::new(r"\\files\share").unwrap();
    let wrong = SmbMapping::new(share, "smb-user", Secret::new("not-the-password"));
    let refused = proxy.smb().unwrap().new_smb_global_mapping(&wrong).await;
    assert!(matches!(refused, Err(Error::Host { .. })), "{refused:?}");

    let disk_v1 = [("group", "disk"), ("version", "v1")];
    let ok = [
        &disk_v1[..],
        &[("method", "ListDiskLocations"), ("outcome", "ok")],
    ]
    .concat();
    assert_eq!(calls(&recorder, &ok), 2);
    let not_found = [("method", "GetDiskNumberByName"), ("outcome", "not_found")];
    assert_eq!(calls(&recorder, &[&disk_v1[..], &not_found].concat()), 1);
    let host_error = call_series("smb", "v1", "NewSmbGlobalMapping", "host");
    assert_eq!(calls(&recorder, &host_error), 1);
    assert_eq!(calls(&recorder, &[]), 4, "one count per call");

    let durations = recorder.samples(
        CALL_DURATION_SECONDS,
        &[&disk_v1[..], &[("method", "ListDiskLocations")]].concat(),
    );
    assert_eq!(durations.len(), 2);
    assert!(
        durations.iter().all(|&s| s > 0.0 && s < 30.0),
        "{durations:?}"
    );
    assert_eq!(recorder.samples(CALL_DURATION_SECONDS, &[]).len(), 4);

    // Described at connect, with Prometheus units.
    assert_eq!(recorder.unit(CALLS_TOTAL), Some(metrics::Unit::Count));
    assert_eq!(
        recorder.unit(CALL_DURATION_SECONDS),
        Some(metrics::Unit::Seconds)
    );
}

#[tokio::test]
async fn a_recorder_installed_after_the_first_calls_gets_the_next_ones() {
    let (_node, proxy) = node_serving(&[(ApiGroup::Disk, V::V1)], &[ApiGroup::Disk]).await;
    let disk = proxy.disk().unwrap();
    disk.list_disk_ids().await.unwrap();

    let first = LogRecorder::default();
    {
        let _local = metrics::set_default_local_recorder(&first);
        disk.list_disk_ids().await.unwrap();
        disk.list_disk_ids().await.unwrap();
    }
    let second = LogRecorder::default();
    let _local = metrics::set_default_local_recorder(&second);
    disk.list_disk_ids().await.unwrap();

    let ok = [("method", "ListDiskIDs"), ("outcome", "ok")];
    assert_eq!(calls(&first, &ok), 2);
    assert_eq!(calls(&second, &ok), 1);
    assert_eq!(second.samples(CALL_DURATION_SECONDS, &[]).len(), 1);
}

#[tokio::test]
async fn negotiations_and_the_versions_served_are_recorded_per_group() {
    let recorder = LogRecorder::default();
    let _local = metrics::set_default_local_recorder(&recorder);
    let groups = [ApiGroup::Disk, ApiGroup::Smb];
    let _served = node_serving(&[(ApiGroup::Disk, V::V1BETA2)], &groups).await;

    let served = [("group", "disk"), ("result", "served")];
    assert_eq!(recorder.count(NEGOTIATIONS_TOTAL, &served), 1);
    let missing = [("group", "smb"), ("result", "not_served")];
    assert_eq!(recorder.count(NEGOTIATIONS_TOTAL, &missing), 1);
    assert_eq!(
        recorder.gauge(API_VERSION, &[("group", "disk"), ("version", "v1beta2")]),
        Some(1.0)
    );
    assert_eq!(
        recorder.gauge(GROUP_SERVED, &[("group", "disk")]),
        Some(1.0)
    );
    assert_eq!(recorder.gauge(GROUP_SERVED, &[("group", "smb")]), Some(0.0));
    assert_eq!(recorder.gauge(API_VERSION, &[("group", "smb")]), None);
    assert_eq!(recorder.count(VERSION_CHANGES_TOTAL, &[]), 0);
}

#[tokio::test]
async fn a_call_past_its_deadline_is_a_timeout() {
    let recorder = LogRecorder::default();
    let _local = metrics::set_default_local_recorder(&recorder);
    let (_backend, node) = slow_volume_node(5_000).await;
    let proxy = connect(&node, &[ApiGroup::Volume]).await;

    let volume = csi_proxy_client::api::VolumeId::new("vol-1").unwrap();
    let quick = CallOptions::default().deadline(Duration::from_millis(100));
    let result = proxy
        .with_call_options(quick)
        .volume()
        .unwrap()
        .get_volume_stats(&volume)
        .await;
    assert!(matches!(result, Err(Error::Timeout { .. })), "{result:?}");

    let timeout = call_series("volume", "v1", "GetVolumeStats", "timeout");
    assert_eq!(calls(&recorder, &timeout), 1);
    let took = recorder.samples(CALL_DURATION_SECONDS, &[("method", "GetVolumeStats")]);
    assert!(
        matches!(took[..], [s] if (0.1..5.0).contains(&s)),
        "{took:?}"
    );
}

#[tokio::test]
async fn a_call_its_caller_stops_waiting_for_is_cancelled() {
    let recorder = LogRecorder::default();
    let _local = metrics::set_default_local_recorder(&recorder);
    let (_backend, node) = slow_volume_node(5_000).await;
    let proxy = connect(&node, &[ApiGroup::Volume]).await;

    let volume = csi_proxy_client::api::VolumeId::new("vol-1").unwrap();
    let handle = proxy.volume().unwrap();
    let call = handle.get_volume_stats(&volume);
    let gave_up = tokio::time::timeout(Duration::from_millis(100), call).await;
    assert!(gave_up.is_err(), "the backend takes 5 s");

    let cancelled = call_series("volume", "v1", "GetVolumeStats", "cancelled");
    assert_eq!(calls(&recorder, &cancelled), 1);
    assert_eq!(calls(&recorder, &[]), 1);
}

#[tokio::test]
async fn an_operation_the_version_lacks_is_unsupported_and_a_missing_proxy_has_no_version() {
    let recorder = LogRecorder::default();
    let _local = metrics::set_default_local_recorder(&recorder);
    let old = V::V1ALPHA1;
    assert!(Operation::GetDiskState.available_since().unwrap() > old);
    let groups = [ApiGroup::Disk, ApiGroup::Volume];
    let (_node, proxy) = node_serving(&[(ApiGroup::Disk, old)], &groups).await;

    // No volume endpoint: the call waits for one until its deadline (it
    // comes within the grace of a proxy that just appeared).
    let quick = CallOptions::default().deadline(Duration::from_millis(100));
    let waited = proxy
        .with_call_options(quick)
        .volume()
        .unwrap()
        .list_volumes_on_disk(1, None)
        .await;
    assert!(matches!(waited, Err(Error::NotServed { .. })), "{waited:?}");
    let away = [
        ("group", "volume"),
        ("version", "none"),
        ("outcome", "not_served"),
    ];
    assert_eq!(calls(&recorder, &away), 1);

    let result = proxy.disk().unwrap().get_disk_state(1).await;
    assert!(
        matches!(result, Err(Error::Unsupported { .. })),
        "{result:?}"
    );
    let unsupported = call_series("disk", "v1alpha1", "GetDiskState", "unsupported");
    assert_eq!(calls(&recorder, &unsupported), 1);
    let looked = [("group", "volume"), ("result", "not_served")];
    assert!(
        recorder.count(NEGOTIATIONS_TOTAL, &looked) >= 2,
        "connect and the call look"
    );
}

#[tokio::test]
async fn a_refused_argument_is_counted_at_once_without_waiting_for_the_proxy() {
    let recorder = LogRecorder::default();
    let _local = metrics::set_default_local_recorder(&recorder);
    // The system group is not served: a call with good arguments would
    // wait for it.
    let groups = [ApiGroup::Disk, ApiGroup::System];
    let (_node, proxy) = node_serving(&[(ApiGroup::Disk, V::V1)], &groups).await;

    let system = proxy.system().unwrap();
    let mut call = system.start_service("");
    let mut context = Context::from_waker(Waker::noop());
    let Poll::Ready(refused) = call.as_mut().poll(&mut context) else {
        panic!("a refused argument is answered on the call's first poll");
    };
    assert!(
        matches!(refused, Err(Error::InvalidArgument { .. })),
        "{refused:?}"
    );
    let series = call_series("system", "none", "StartService", "invalid_argument");
    assert_eq!(calls(&recorder, &series), 1);
    assert_eq!(calls(&recorder, &[]), 1);
}

#[tokio::test]
async fn a_version_change_is_counted_and_moves_the_version_gauge() {
    let recorder = LogRecorder::default();
    let _local = metrics::set_default_local_recorder(&recorder);
    let served = [(ApiGroup::Volume, V::V1BETA1)];
    let (mut node, proxy) = node_serving(&served, &[ApiGroup::Volume]).await;

    node.fake
        .restart([(ApiGroup::Volume, V::V1), (ApiGroup::Volume, V::V1BETA1)])
        .await
        .unwrap();
    proxy
        .volume()
        .unwrap()
        .list_volumes_on_disk(1, None)
        .await
        .unwrap();

    // Gone and back on v1 (or swapped at once, if the call found the new
    // proxy before the end of the old connection was recorded).
    let to_v1 = [("group", "volume"), ("to", "v1")];
    assert_eq!(recorder.count(VERSION_CHANGES_TOTAL, &to_v1), 1);
    let gone = [("group", "volume"), ("from", "v1beta1"), ("to", "none")];
    let all = recorder.count(VERSION_CHANGES_TOTAL, &[]);
    assert_eq!(all, 1 + recorder.count(VERSION_CHANGES_TOTAL, &gone));
    let gauge = |version| recorder.gauge(API_VERSION, &[("group", "volume"), ("version", version)]);
    assert_eq!(gauge("v1beta1"), Some(0.0));
    assert_eq!(gauge("v1"), Some(1.0));
    assert_eq!(
        recorder.gauge(GROUP_SERVED, &[("group", "volume")]),
        Some(1.0)
    );
    let served = [("group", "volume"), ("result", "served")];
    assert_eq!(recorder.count(NEGOTIATIONS_TOTAL, &served), 2);
    let ok = [
        ("version", "v1"),
        ("method", "ListVolumesOnDisk"),
        ("outcome", "ok"),
    ];
    assert_eq!(calls(&recorder, &ok), 1);
}

#[tokio::test]
async fn the_served_gauge_follows_the_connection_and_the_proxys_return_without_any_call() {
    let recorder = LogRecorder::default();
    let _local = metrics::set_default_local_recorder(&recorder);
    let (mut node, proxy) = node_serving(&[(ApiGroup::Disk, V::V1)], &[ApiGroup::Disk]).await;
    let served = || recorder.gauge(GROUP_SERVED, &[("group", "disk")]);
    assert_eq!(served(), Some(1.0));

    node.fake.stop_all().await;
    wait_until("the gauge says not served", || served() == Some(0.0)).await;
    assert!(!proxy.is_served(ApiGroup::Disk));
    let v1 = [("group", "disk"), ("version", "v1")];
    assert_eq!(recorder.gauge(API_VERSION, &v1), Some(0.0));
    // Nobody called: the gauges followed the connection, not a look; and
    // the looks in the background while the proxy is away are not counted.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(recorder.count(NEGOTIATIONS_TOTAL, &[]), 1);

    // Back: the look in the background that finds it is counted, and the
    // gauges follow, still with no call.
    node.fake.serve(ApiGroup::Disk, V::V1).await.unwrap();
    wait_until("the gauge says served again", || served() == Some(1.0)).await;
    assert_eq!(recorder.gauge(API_VERSION, &v1), Some(1.0));
    let found = [("group", "disk"), ("result", "served")];
    assert_eq!(recorder.count(NEGOTIATIONS_TOTAL, &found), 2);
    assert_eq!(recorder.count(NEGOTIATIONS_TOTAL, &[]), 2);
    assert_eq!(calls(&recorder, &[]), 0);
}

#[tokio::test]
async fn no_label_ever_carries_a_path_a_secret_or_a_message() {
    let recorder = LogRecorder::default();
    let _local = metrics::set_default_local_recorder(&recorder);
    let node = FakeNode::serving(every_version()).await;
    let proxy = node
        .client_builder()
        .require(ApiGroup::Filesystem)
        .connect()
        .await
        .unwrap();

    let secret = "hunter2-in-a-label";
    let outside = WindowsPath::new(r"C:\Windows\secret-dir").unwrap();
    let mapping = SmbMapping::new(
        SmbRemotePath::new(r"\\files\share").unwrap(),
        "smb-user",
        Secret::new(secret),
    )
    .with_local_path(outside.clone());
    let filesystem = proxy.filesystem().unwrap();
    assert!(filesystem.mkdir(&outside).await.is_err());
    assert!(proxy
        .smb()
        .unwrap()
        .new_smb_global_mapping(&mapping)
        .await
        .is_err());
    assert!(filesystem.path_exists(&outside).await.is_err());
    assert!(proxy
        .disk()
        .unwrap()
        .get_disk_number_by_name(secret)
        .await
        .is_err());

    let versions: Vec<String> = ApiGroup::ALL
        .iter()
        .flat_map(|g| g.versions())
        .map(|v| v.to_string())
        .collect();
    let words = [
        "none",
        "given",
        "host",
        "ok",
        "timeout",
        "transport",
        "not_served",
        "untrusted_server",
        "unsupported",
        "invalid_argument",
        "invalid_response",
        "not_found",
        "permission_denied",
        "configuration",
        "not_implemented",
        "served",
        "failed",
    ];
    let updates = recorder.updates();
    assert!(updates.len() > 10);
    for update in &updates {
        for (key, value) in &update.labels {
            let allowed = match key.as_str() {
                "group" => ApiGroup::ALL.iter().any(|g| g.as_str() == value),
                "version" | "from" | "to" => versions.contains(value) || words.contains(&&**value),
                "method" => Operation::ALL.iter().any(|op| op.name() == value),
                "outcome" | "result" => words.contains(&&**value),
                _ => false,
            };
            assert!(allowed, "{}: label {key}={value:?}", update.name);
            assert!(!value.contains(secret) && !value.contains("secret-dir"));
        }
    }
}

#[tokio::test]
async fn mocks_given_directly_are_labelled_direct_and_show_no_proxy_gauges() {
    let recorder = LogRecorder::default();
    let _local = metrics::set_default_local_recorder(&recorder);
    let host = seeded_host();
    let proxy = CsiProxy::from_backends(host.backends());
    proxy.disk().unwrap().list_disk_ids().await.unwrap();

    let direct = call_series("disk", "given", "ListDiskIDs", "ok");
    assert_eq!(calls(&recorder, &direct), 1);
    assert_eq!(recorder.gauge(GROUP_SERVED, &[]), None);
    assert_eq!(recorder.count(NEGOTIATIONS_TOTAL, &[]), 0);
}
