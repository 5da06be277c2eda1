//! Failures and delays planned for the n-th call of an operation.

use std::time::Duration;

use super::{host_failure, mapping, on_release, path};
use crate::common::{wait_until, TestNode};
use csi_proxy_client::api::{DiskApi, SmbApi, VolumeApi};
use csi_proxy_client::testing::{FakeHost, FakeProxy, ProxyRelease, WindowsError};
use csi_proxy_client::{CsiProxy, Error, Operation};

#[test]
fn windows_errors_have_the_standard_english_text() {
    let texts = [
        (2, "The system cannot find the file specified."),
        (3, "The system cannot find the path specified."),
        (5, "Access is denied."),
        (19, "The media is write protected."),
        (53, "The network path was not found."),
        (64, "The specified network name is no longer available."),
        (65, "Network access is denied."),
        (67, "The network name cannot be found."),
        (85, "The local device name is already in use."),
        (87, "The parameter is incorrect."),
        (
            1219,
            "Multiple connections to a server or shared resource by the same user, using more \
             than one user name, are not allowed. Disconnect all previous connections to the \
             server or shared resource and try again.",
        ),
        (1326, "The user name or password is incorrect."),
        (
            1450,
            "Insufficient system resources exist to complete the requested service.",
        ),
    ];
    for (code, text) in texts {
        let error = WindowsError::new(code);
        assert_eq!((error.code(), error.message()), (code, text));
    }
    assert_eq!(WindowsError::WRITE_PROTECT, 19);
    assert_eq!(WindowsError::SESSION_CREDENTIAL_CONFLICT, 1219);
    let custom = WindowsError::with_message(5, "Format-Volume: Access is denied.");
    assert_eq!(custom.message(), "Format-Volume: Access is denied.");
    assert!(WindowsError::new(99_999).message().contains("99999"));
    match custom.into_error(Operation::FormatVolume) {
        Error::Host {
            operation: Operation::FormatVolume,
            message,
            os_code: Some(5),
            ..
        } => assert_eq!(message, "Format-Volume: Access is denied."),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn the_nth_call_fails_and_changes_nothing() {
    let host = FakeHost::builder()
        .disk(1, "d1", 10 << 30)
        .disk(2, "d2", 10 << 30)
        .disk(3, "d3", 10 << 30)
        .build();
    host.partition_disk(1).await.unwrap();
    // Counted from now: the second call from here fails, then the next.
    host.fail_call(Operation::PartitionDisk, 2, WindowsError::new(1117));
    host.fail_call(Operation::PartitionDisk, 3, WindowsError::new(21));
    host.partition_disk(2).await.unwrap();
    let (operation, message, os_code) = host_failure(host.partition_disk(3).await);
    assert_eq!(operation, Operation::PartitionDisk);
    assert_eq!(message, WindowsError::new(1117).message());
    assert_eq!(os_code, Some(1117));
    assert!(!host.disk(3).unwrap().partitioned, "nothing changed");
    let (_, _, os_code) = host_failure(host.partition_disk(3).await);
    assert_eq!(os_code, Some(21));
    host.partition_disk(3).await.unwrap();
    assert!(host.disk(3).unwrap().partitioned);
    assert_eq!(
        host.calls_of(Operation::PartitionDisk),
        5,
        "failed ones too"
    );
    assert_eq!(host.calls_of(Operation::FormatVolume), 0);

    // Reads fail too, and other operations are not touched.
    host.fail_call(Operation::ListVolumesOnDisk, 1, WindowsError::new(1450));
    assert!(host.list_volumes_on_disk(1, None).await.is_err());
    assert_eq!(host.list_volumes_on_disk(1, None).await.unwrap().len(), 1);
    assert_eq!(host.calls_of(Operation::ListVolumesOnDisk), 2);
}

#[test]
#[should_panic(expected = "counted from 1")]
fn the_zeroth_call_is_a_mistake() {
    FakeHost::default().fail_call(Operation::Rescan, 0, WindowsError::new(5));
}

#[tokio::test]
async fn over_the_wire_only_the_text_of_a_failure_survives() {
    // A password that does not occur in the text: the SDK masks secrets in
    // SMB errors.
    let host = FakeHost::builder()
        .smb_share(r"\\srv\data", "u", "s3cr3t")
        .build();
    let (_node, _fake, proxy) = on_release(&host, ProxyRelease::LATEST).await;
    let text = "New-SmbGlobalMapping: The network name cannot be found.";
    host.fail_call(
        Operation::NewSmbGlobalMapping,
        1,
        WindowsError::with_message(67, text),
    );
    let smb = proxy.smb().unwrap();
    let (operation, message, os_code) = host_failure(
        smb.new_smb_global_mapping(&mapping(r"\\srv\data", "u", "s3cr3t"))
            .await,
    );
    assert_eq!(
        (operation, message.as_str(), os_code),
        (Operation::NewSmbGlobalMapping, text, None)
    );
    assert!(host.smb_mappings().is_empty());
    smb.new_smb_global_mapping(&mapping(r"\\srv\data", "u", "s3cr3t"))
        .await
        .unwrap();
    assert_eq!(host.calls_of(Operation::NewSmbGlobalMapping), 2);
}

const DELAY: Duration = Duration::from_millis(300);

/// On tokio's paused clock (the fake host waits on it, and no I/O is
/// done): the caller gives up at 10 ms, before the delay is over, whatever
/// the load.
#[tokio::test(start_paused = true)]
async fn delayed_work_is_done_after_the_caller_stopped_waiting() {
    let host = FakeHost::builder()
        .disk(1, "d", 10 << 30)
        .disk(2, "e", 10 << 30)
        .dir(r"C:\var\lib\kubelet\staging")
        .smb_share(r"\\srv\data", "u", "p")
        .build();
    let impatient = Duration::from_millis(10);
    let gave_up = |what: &str, r: Result<_, tokio::time::error::Elapsed>| {
        assert!(r.is_err(), "{what} answered before its delay");
    };

    host.delay_call(Operation::PartitionDisk, 1, DELAY);
    gave_up(
        "PartitionDisk",
        tokio::time::timeout(impatient, host.partition_disk(1)).await,
    );
    assert!(!host.disk(1).unwrap().partitioned, "not yet");
    wait_until("disk 1 partitioned", || host.disk(1).unwrap().partitioned).await;

    let id = host.list_volumes_on_disk(1, None).await.unwrap().remove(0);
    host.delay_call(Operation::FormatVolume, 1, DELAY);
    gave_up(
        "FormatVolume",
        tokio::time::timeout(impatient, host.format_volume(&id)).await,
    );
    assert!(!host.volume(&id).unwrap().formatted, "not yet");
    wait_until("formatted", || host.volume(&id).unwrap().formatted).await;

    let staging = path(r"C:\var\lib\kubelet\staging");
    host.delay_call(Operation::MountVolume, 1, DELAY);
    gave_up(
        "MountVolume",
        tokio::time::timeout(impatient, host.mount_volume(&id, &staging)).await,
    );
    wait_until("mounted", || !host.volume(&id).unwrap().mounts.is_empty()).await;

    let size = host.volume(&id).unwrap().size_bytes;
    assert!(host.set_disk_size(1, 20 << 30));
    host.delay_call(Operation::ResizeVolume, 1, DELAY);
    gave_up(
        "ResizeVolume",
        tokio::time::timeout(impatient, host.resize_volume(&id, 0)).await,
    );
    wait_until("grown", || host.volume(&id).unwrap().size_bytes > size).await;

    host.delay_call(Operation::NewSmbGlobalMapping, 1, DELAY);
    let map = mapping(r"\\srv\data", "u", "p");
    gave_up(
        "NewSmbGlobalMapping",
        tokio::time::timeout(impatient, host.new_smb_global_mapping(&map)).await,
    );
    wait_until("mapped", || !host.smb_mappings().is_empty()).await;

    // A caller that waits gets the answer, after the delay; a delay and a
    // failure planned for one call: it fails after the delay.
    host.delay_call(Operation::PartitionDisk, 1, DELAY);
    host.fail_call(Operation::PartitionDisk, 1, WindowsError::new(1117));
    let started = tokio::time::Instant::now();
    let (_, _, os_code) = host_failure(host.partition_disk(2).await);
    assert_eq!(started.elapsed(), DELAY);
    assert_eq!(os_code, Some(1117));
    assert!(!host.disk(2).unwrap().partitioned);
}

const LATENCY: Duration = Duration::from_millis(200);

/// How long `call` takes, on tokio's clock.
async fn timed<T>(call: impl std::future::Future<Output = T>) -> (T, Duration) {
    let started = tokio::time::Instant::now();
    let answer = call.await;
    (answer, started.elapsed())
}

/// On paused time (the fake host waits on tokio's clock, and no I/O is
/// done): each wait is exactly what the host adds, whatever the load.
#[tokio::test(start_paused = true)]
async fn a_latency_delays_every_call_and_concurrent_calls_overlap() {
    let host = FakeHost::builder().disk(1, "d", 10 << 30).build();
    host.set_latency(Operation::ListDiskIds, LATENCY);
    assert_eq!(host.latency(Operation::ListDiskIds), LATENCY);
    assert_eq!(host.latency(Operation::Rescan), Duration::ZERO);
    for call in 1..=3 {
        let (ids, took) = timed(host.list_disk_ids()).await;
        let ids = ids.unwrap();
        assert!(
            ids.values().any(|d| d.page83 == "d"),
            "call {call}: {ids:?}"
        );
        assert_eq!(took, LATENCY, "call {call}");
    }
    // Other operations wait nothing.
    let (_, took) = timed(host.rescan()).await;
    assert_eq!(took, Duration::ZERO, "a rescan");

    // Eight callers side by side each wait on their own: together one
    // latency, not eight.
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let host = host.clone();
        calls.spawn(async move { host.list_disk_ids().await });
    }
    let (answers, took) = timed(calls.join_all()).await;
    assert!(answers.iter().all(|ids| ids.is_ok()));
    assert_eq!(took, LATENCY, "8 concurrent calls");
    assert_eq!(host.calls_of(Operation::ListDiskIds), 11);

    // A delay planned for a call adds to the latency; a failure comes
    // after both.
    host.delay_call(Operation::ListDiskIds, 1, LATENCY);
    host.fail_call(Operation::ListDiskIds, 1, WindowsError::new(1117));
    let (failed, took) = timed(host.list_disk_ids()).await;
    assert_eq!(host_failure(failed).2, Some(1117));
    assert_eq!(took, 2 * LATENCY);

    // Zero removes it; set_latencies sets several at once.
    host.set_latencies([
        (Operation::ListDiskIds, Duration::ZERO),
        (Operation::PartitionDisk, LATENCY),
    ]);
    assert_eq!(host.latency(Operation::ListDiskIds), Duration::ZERO);
    let (_, took) = timed(host.list_disk_ids()).await;
    assert_eq!(took, Duration::ZERO);
    let (partitioned, took) = timed(host.partition_disk(1)).await;
    partitioned.unwrap();
    assert_eq!(took, LATENCY);
    assert!(host.disk(1).unwrap().partitioned);
}

#[tokio::test]
async fn a_format_outlives_the_deadline_of_the_client_over_the_wire() {
    let host = FakeHost::builder()
        .partitioned_disk(1, "d", 10 << 30)
        .build();
    let id = host.volumes_on(1).remove(0);
    let node = TestNode::new();
    let mut fake = FakeProxy::for_host(node.transport(), &host);
    fake.serve_everything().await.unwrap();
    let proxy = CsiProxy::builder()
        .transport(node.transport())
        .deadline(Operation::FormatVolume, Duration::from_millis(50))
        .connect()
        .await
        .unwrap();
    host.delay_call(Operation::FormatVolume, 1, DELAY);
    let volume = proxy.volume().unwrap();
    let error = volume.format_volume(&id).await.unwrap_err();
    assert!(matches!(error, Error::Timeout { .. }), "{error:?}");
    assert!(!host.volume(&id).unwrap().formatted, "not yet");
    wait_until("formatted after the client gave up", || {
        host.volume(&id).unwrap().formatted
    })
    .await;
    // The retry finds it formatted: no second format.
    assert!(volume.is_volume_formatted(&id).await.unwrap());
    assert_eq!(host.calls_of(Operation::FormatVolume), 1);
}
