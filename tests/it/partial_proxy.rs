//! A node whose proxy serves only some groups (SMB and iSCSI are absent on
//! many nodes), and a client set up in a way that cannot work: each call
//! is answered at once with what is true, never at the end of its
//! deadline. Over Unix sockets here, and over named pipes when built for
//! Windows.

use std::time::{Duration, Instant};

use crate::common::node::FakeNode;
use crate::common::{quickest_of, TestNode, PIPE_GRACE};
use csi_proxy_client::{api::SmbRemotePath, ApiGroup, ApiVersion as V, CsiProxy, Error};

/// A proxy serving disk v1 and filesystem v1 only, and a default client
/// of every group.
async fn disk_and_filesystem_only() -> (FakeNode, CsiProxy) {
    let node = FakeNode::serving([(ApiGroup::Disk, V::V1), (ApiGroup::Filesystem, V::V1)]).await;
    let proxy = node.client().await;
    (node, proxy)
}

#[tokio::test]
async fn a_group_the_node_lacks_is_not_served_at_once() {
    let (_node, proxy) = disk_and_filesystem_only().await;
    // Past the grace for a proxy still creating its pipes.
    tokio::time::sleep(PIPE_GRACE).await;

    let share = SmbRemotePath::new(r"\\server\share").unwrap();
    let ((), quickest) = quickest_of(3, || async {
        let err = proxy
            .smb()
            .unwrap()
            .remove_smb_global_mapping(&share)
            .await
            .unwrap_err();
        match &err {
            Error::NotServed { group, tried } => {
                assert_eq!(*group, ApiGroup::Smb);
                assert!(
                    tried.iter().any(|t| t.contains("csi-proxy-smb-v1")),
                    "{tried:?}"
                );
            }
            other => panic!("{other}"),
        }
        let err = proxy
            .iscsi()
            .unwrap()
            .list_target_portals()
            .await
            .unwrap_err();
        assert!(matches!(err, Error::NotServed { .. }), "{err}");
    })
    .await;
    // The bound is the behaviour: at once, not after the grace; the
    // quickest of three rounds, so that a stall of the machine is not
    // taken for a wait.
    assert!(quickest < PIPE_GRACE, "{quickest:?}");
    // The groups that are there work as ever.
    proxy.disk().unwrap().list_disk_ids().await.unwrap();
}

#[tokio::test]
async fn a_group_whose_pipe_comes_within_the_grace_is_waited_for() {
    let mut node = FakeNode::serving([(ApiGroup::Disk, V::V1)]).await;
    let proxy = node.client().await;
    // The proxy has only just appeared: its SMB pipe follows a moment later.
    let late = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        node.fake.serve(ApiGroup::Smb, V::V1).await.unwrap();
        node
    });
    let share = SmbRemotePath::new(r"\\server\share").unwrap();
    // Answered by the proxy (the fake host has no such mapping), not by a
    // "not served".
    let result = proxy.smb().unwrap().remove_smb_global_mapping(&share).await;
    assert!(matches!(result, Err(Error::Host { .. })), "{result:?}");
    assert_eq!(proxy.version(ApiGroup::Smb), Some(V::V1));
    let node = late.await.unwrap();
    assert_eq!(
        node.fake.calls().last().unwrap().rpc,
        "RemoveSmbGlobalMapping"
    );
}

#[tokio::test]
async fn a_required_group_is_still_waited_for_at_connect() {
    let node = FakeNode::serving([(ApiGroup::Disk, V::V1)]).await;
    let wait = Duration::from_millis(600);
    let started = Instant::now();
    let err = node
        .client_builder()
        .require(ApiGroup::Smb)
        .wait_for_proxy(wait)
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotServed { .. }), "{err}");
    assert!(started.elapsed() >= wait, "{:?}", started.elapsed());
}

#[tokio::test]
async fn of_required_groups_still_missing_the_first_required_is_named() {
    let node = TestNode::new();
    for (first, second) in [
        (ApiGroup::Smb, ApiGroup::Disk),
        (ApiGroup::Disk, ApiGroup::Smb),
    ] {
        let err = node
            .client_builder()
            .require(first)
            .require(second)
            .wait_for_proxy(Duration::from_millis(100))
            .connect()
            .await
            .unwrap_err();
        match err {
            Error::NotServed { group, .. } => assert_eq!(group, first),
            other => panic!("{other}"),
        }
    }
}

#[cfg(unix)]
#[tokio::test]
async fn a_required_endpoint_that_turns_up_broken_ends_the_wait_for_the_others() {
    // Disk and SMB are required and neither is there; while connect waits,
    // disk's endpoint appears as a plain file. That is the answer, at once,
    // although SMB is still missing and the wait has most of a minute to go.
    const WAIT: Duration = Duration::from_secs(60);
    let node = TestNode::new();
    let dir = node.transport().socket_dir().unwrap().to_owned();
    let started = Instant::now();
    let connecting = tokio::spawn(
        node.client_builder()
            .require(ApiGroup::Smb)
            .require(ApiGroup::Disk)
            .wait_for_proxy(WAIT)
            .connect(),
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    std::fs::write(dir.join("csi-proxy-disk-v1"), b"").unwrap();
    let err = connecting.await.unwrap().unwrap_err();
    match &err {
        Error::Configuration { setting, .. } => {
            assert!(setting.ends_with("csi-proxy-disk-v1"), "{setting}")
        }
        other => panic!("{other}"),
    }
    // The bound is the behaviour: well short of the end of the wait, which
    // a connect that went on waiting for SMB would see out; half of it
    // leaves a loaded machine ample room.
    assert!(started.elapsed() < WAIT / 2, "{:?}", started.elapsed());
}

#[cfg(unix)]
#[tokio::test]
async fn an_endpoint_path_that_is_no_socket_is_a_configuration_error_at_once() {
    let node = TestNode::new();
    let dir = node.transport().socket_dir().unwrap().to_owned();
    std::fs::write(dir.join("csi-proxy-disk-v1"), b"").unwrap();
    std::fs::create_dir(dir.join("csi-proxy-volume-v1")).unwrap();

    let started = Instant::now();
    let err = node
        .client_builder()
        .require(ApiGroup::Disk)
        .connect()
        .await
        .unwrap_err();
    match &err {
        Error::Configuration { setting, reason } => {
            assert!(setting.ends_with("csi-proxy-disk-v1"), "{setting}");
            assert!(reason.contains("file"), "{reason}");
        }
        other => panic!("{other}"),
    }
    // Without requiring it: the call says so, at once.
    let proxy = node.client().await;
    let err = proxy
        .volume()
        .unwrap()
        .list_volumes_on_disk(1, None)
        .await
        .unwrap_err();
    match &err {
        Error::Configuration { reason, .. } => assert!(reason.contains("directory"), "{reason}"),
        other => panic!("{other}"),
    }
    // The bound is the behaviour: well under the read deadline (30 s) a
    // call that waited for the endpoint to become a socket would see out,
    // with room for a loaded machine.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(err.csi_code(), tonic::Code::FailedPrecondition);
    assert!(!err.is_retryable());
}

#[tokio::test]
async fn a_connect_attempt_is_bounded_once_by_the_connect_timeout() {
    // Accepts and never answers: the attempt runs into its timeout, which
    // bounds opening and the handshake together.
    let node = TestNode::new();
    let mut incoming = csi_proxy_client::testing::listen(&node.transport(), ApiGroup::Disk, V::V1)
        .await
        .unwrap();
    let held = tokio::spawn(async move {
        use tokio_stream::StreamExt;
        let mut streams = Vec::new();
        while let Some(Ok(stream)) = incoming.next().await {
            streams.push(stream);
        }
    });
    // Long enough that the work around it is small beside it: the bound
    // below is the behaviour.
    let timeout = Duration::from_secs(2);
    let started = Instant::now();
    let err = node
        .client_builder()
        .groups([ApiGroup::Disk])
        .require(ApiGroup::Disk)
        .retry(csi_proxy_client::RetryPolicy::none())
        .connect_timeout(timeout)
        .connect()
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, Error::ConnectTimeout { .. }), "{err}");
    assert!(took >= timeout, "{took:?}");
    assert!(took < timeout * 2, "one timeout, not two: {took:?}");
    held.abort();
}
