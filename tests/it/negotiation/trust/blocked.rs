//! Endpoints a squatter keeps from the client without ever being opened
//! (a busy pipe, a file at a socket's path, an endpoint that denies
//! access): no owner can be read, and the group falls back past them.

use std::time::{Duration, Instant};

use crate::common::recorder::LogRecorder;
use csi_proxy_client::metrics::UNTRUSTED_SERVERS_TOTAL;
use csi_proxy_client::testing::{FakeProxy, LocalEndpoints};
use csi_proxy_client::{
    negotiate::AttemptOutcome, transport::Transport, ApiGroup, ApiVersion as V, CsiProxy,
    RetryPolicy,
};

use super::squatters::*;

/// An endpoint a squatter keeps closed to the client without it ever
/// being opened: on Windows a pipe of one instance that another client
/// holds (`ERROR_PIPE_BUSY` to everyone else), on Unix a file at the
/// socket's path (`nobody`'s when run as root). No owner can be read.
struct Blocked {
    #[cfg(windows)]
    _pipe: (
        tokio::net::windows::named_pipe::NamedPipeServer,
        tokio::net::windows::named_pipe::NamedPipeClient,
    ),
}

async fn block(transport: &Transport, group: ApiGroup, version: V) -> Blocked {
    let address = transport.address(group, version);
    #[cfg(windows)]
    {
        use tokio::net::windows::named_pipe::{ClientOptions, ServerOptions};
        let server = ServerOptions::new()
            .first_pipe_instance(true)
            .max_instances(1)
            .create(&address)
            .unwrap();
        let taken = ClientOptions::new().open(&address).unwrap();
        server.connect().await.unwrap();
        Blocked {
            _pipe: (server, taken),
        }
    }
    #[cfg(unix)]
    {
        std::fs::write(&address, b"not a socket").unwrap();
        if is_root() {
            std::os::unix::fs::chown(&address, Some(NOBODY), Some(NOBODY)).unwrap();
        }
        Blocked {}
    }
}

/// Issue 46, item 1: a squatter on a newer version that cannot be
/// opened (busy, or no socket) used to end the group there, and
/// `connect` failed on a node that serves an older version. Now the
/// older version is used, the newer endpoint is reported as suspect
/// and counted, and a busy pipe is waited for once, not once per
/// retry.
#[tokio::test]
async fn a_squatter_that_keeps_a_newer_version_busy_or_closed_does_not_keep_the_group_from_an_older_one(
) {
    let recorder = LogRecorder::default();
    let _local = metrics::set_default_local_recorder(&recorder);
    let endpoints = LocalEndpoints::new().unwrap();
    let transport = endpoints.transport();
    let mut fake = FakeProxy::for_host(transport.clone(), &host());
    fake.serve(ApiGroup::Smb, V::V1BETA1).await.unwrap();
    let _blocked = block(&transport, ApiGroup::Smb, V::V1).await;

    let connect_timeout = Duration::from_secs(1);
    // Ten attempts, the first and nine retries, would take ten timeouts.
    let retries = 9;
    let started = Instant::now();
    let proxy = CsiProxy::builder()
        .transport(transport.clone())
        .require(ApiGroup::Smb)
        .retry(RetryPolicy::default().with_max_retries(retries))
        .connect_timeout(connect_timeout)
        .wait_for_proxy(Duration::from_secs(10))
        .connect()
        .await
        .unwrap();
    let took = started.elapsed();
    assert_eq!(proxy.version(ApiGroup::Smb), Some(V::V1BETA1));
    // Waited for once, not once per attempt: the bound is the behaviour,
    // halfway between one timeout and ten.
    assert!(took < 5 * connect_timeout, "took {took:?}");
    proxy
        .smb()
        .unwrap()
        .new_smb_global_mapping(&mapping())
        .await
        .unwrap();
    assert!(fake.calls().iter().all(|c| c.version == V::V1BETA1));

    let report = proxy.report();
    let smb = report.group(ApiGroup::Smb).unwrap();
    match &smb.attempts[0].outcome {
        AttemptOutcome::Suspect(why) => {
            #[cfg(windows)]
            assert!(why.contains("timed out"), "{why}");
            #[cfg(unix)]
            assert!(why.contains("not a socket"), "{why}");
        }
        other => panic!("{other:?}\n{report}"),
    }
    assert!(report.to_string().contains("v1 (suspect: "), "{report}");
    let suspect = [("group", "smb"), ("version", "v1"), ("reason", "suspect")];
    assert!(
        recorder.count(UNTRUSTED_SERVERS_TOTAL, &suspect) >= 1,
        "{:?}",
        recorder.updates()
    );
}

/// The same for an endpoint that denies the client access: on Unix a
/// socket without permissions; on Windows a DACL that denies the client,
/// which Wine does not enforce. Root is let in everywhere, so run as root
/// (as CI runs) the check runs as user `nobody`, in this test binary
/// again.
#[cfg(unix)]
#[tokio::test]
async fn a_newer_version_that_denies_access_does_not_keep_the_group_from_an_older_one() {
    if is_root() {
        pass_as_nobody("negotiation::trust::blocked::a_newer_version_that_denies_access_as_nobody");
    } else {
        a_newer_version_that_denies_access().await;
    }
}

/// The check above, run as `nobody` when the tests run as root.
#[cfg(unix)]
#[tokio::test]
#[ignore = "run as user nobody by the test above, when the tests run as root"]
async fn a_newer_version_that_denies_access_as_nobody() {
    assert!(!is_root(), "root is let in everywhere: run as another user");
    a_newer_version_that_denies_access().await;
}

#[cfg(unix)]
async fn a_newer_version_that_denies_access() {
    use std::os::unix::fs::PermissionsExt;
    let endpoints = LocalEndpoints::new().unwrap();
    let transport = endpoints.transport();
    let mut fake = FakeProxy::for_host(transport.clone(), &host());
    fake.serve(ApiGroup::Smb, V::V1BETA1).await.unwrap();
    let address = transport.address(ApiGroup::Smb, V::V1);
    let _closed = std::os::unix::net::UnixListener::bind(&address).unwrap();
    std::fs::set_permissions(&address, std::fs::Permissions::from_mode(0o000)).unwrap();

    let proxy = CsiProxy::builder()
        .transport(transport.clone())
        .require(ApiGroup::Smb)
        .wait_for_proxy(Duration::from_secs(10))
        .connect()
        .await
        .unwrap();
    assert_eq!(proxy.version(ApiGroup::Smb), Some(V::V1BETA1));
    let report = proxy.report();
    let smb = report.group(ApiGroup::Smb).unwrap();
    assert!(
        matches!(&smb.attempts[0].outcome, AttemptOutcome::Suspect(why) if why.contains("denied")),
        "{report}"
    );
}
