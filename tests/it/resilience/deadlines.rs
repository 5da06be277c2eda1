//! Deadlines against a slow backend: the read default, one per call and
//! one per operation, each reported as the deadline it was.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::common::slow::slow_volume_node;
use crate::common::wait_until;
use csi_proxy_client::testing::sample::volume;
use csi_proxy_client::{CallOptions, Error, Operation};

#[tokio::test]
async fn a_slow_backend_hits_the_deadline() {
    // The backend takes a minute: a call that waited for it shows.
    let (backend, node) = slow_volume_node(60_000).await;
    let proxy = node
        .client_builder()
        .read_deadline(Duration::from_millis(200))
        .connect()
        .await
        .unwrap();

    let started = Instant::now();
    match proxy.volume().unwrap().get_volume_stats(&volume()).await {
        Err(Error::Timeout { after, .. }) => assert_eq!(after, Duration::from_millis(200)),
        other => panic!("{other:?}"),
    }
    // Ended at its deadline, not with the backend's answer a minute on
    // (nor by waiting for the abandoned call to finish): the bound is the
    // behaviour, with room for a loaded machine.
    assert!(started.elapsed() < Duration::from_secs(20));

    // Per call, shorter still; the mutation's default would be minutes.
    let hasty = proxy.with_call_options(CallOptions::default().deadline(Duration::from_millis(50)));
    match hasty.volume().unwrap().format_volume(&volume()).await {
        Err(Error::Timeout { after, operation }) => {
            assert_eq!(after, Duration::from_millis(50));
            assert_eq!(operation, csi_proxy_client::Operation::FormatVolume);
        }
        other => panic!("{other:?}"),
    }
    // The request was sent all the same, and the host works on regardless.
    wait_until("sent", || backend.formats.load(Ordering::SeqCst) != 0).await;
    assert_eq!(backend.formats.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_partition_listing_has_a_deadline_of_its_own() {
    let (_backend, node) = slow_volume_node(300).await;
    let proxy = node
        .client_builder()
        .deadline(Operation::ListVolumesOnPartition, Duration::from_millis(50))
        .connect()
        .await
        .unwrap();
    let volume = proxy.volume().unwrap();
    match volume.list_volumes_on_disk(1, Some(1)).await {
        Err(Error::Timeout { operation, after }) => {
            assert_eq!(operation, Operation::ListVolumesOnPartition);
            assert_eq!(after, Duration::from_millis(50));
        }
        other => panic!("{other:?}"),
    }
    // The whole disk's listing keeps the read deadline.
    assert_eq!(volume.list_volumes_on_disk(1, None).await.unwrap(), []);
}
