//! Trust: who may serve an endpoint. Squatters are real servers owned by
//! someone else: on Unix, processes run as user `nobody` (the tests that
//! need one say so and pass over when not run as root); on Windows, pipes
//! that claim another owner. Wine lets a process name any owner; Windows
//! refuses an owner that is not the process's user or a group it may
//! stand for (`ERROR_INVALID_OWNER`, 1307) unless `SeRestorePrivilege` is
//! enabled, and there those tests pass over, saying so
//! (`a_pipe_claiming_system_or_administrators_is_refused_without_privileges_or_has_that_owner`
//! checks that premise, and that Wine lets them run). Squatters that are never opened
//! (a busy pipe, another user's file at a socket's path) need neither.

use std::time::Duration;

use crate::common::recorder::LogRecorder;
use csi_proxy_client::metrics::UNTRUSTED_SERVERS_TOTAL;
use csi_proxy_client::testing::{FakeProxy, LocalEndpoints};
use csi_proxy_client::transport::Transport;
use csi_proxy_client::{
    negotiate::AttemptOutcome,
    transport::{ServerOwner, ServerTrust},
    ApiGroup, ApiVersion as V, CsiProxy, Error,
};
#[cfg(windows)]
use csi_proxy_client::{
    negotiate::{Negotiator, VersionPolicy},
    RetryPolicy,
};

mod blocked;
mod squatters;
#[cfg(windows)]
mod windows_env;

use squatters::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_squatter_on_a_newer_version_is_passed_over_and_never_sees_a_password() {
    let Some((_place, transport)) = place_for_squatters() else {
        return;
    };
    // The node's proxy serves smb v1beta1 only; v1 is squatted.
    let mut fake = FakeProxy::for_host(transport.clone(), &host());
    fake.serve(ApiGroup::Smb, V::V1BETA1).await.unwrap();
    let Some(squatter) = squat(&transport, ApiGroup::Smb, V::V1).await else {
        return;
    };

    let proxy = CsiProxy::builder()
        .transport(transport.clone())
        .require(ApiGroup::Smb)
        .connect()
        .await
        .unwrap();
    assert_eq!(proxy.version(ApiGroup::Smb), Some(V::V1BETA1));
    proxy
        .smb()
        .unwrap()
        .new_smb_global_mapping(&mapping())
        .await
        .unwrap();
    let report = proxy.report();
    let smb = report.group(ApiGroup::Smb).unwrap();
    assert!(
        matches!(&smb.attempts[0].outcome, AttemptOutcome::Untrusted(owner) if !owner.is_empty()),
        "{report}"
    );
    assert!(report.to_string().contains("untrusted"), "{report}");
    // After a restart of the proxy, the group goes back to v1beta1,
    // never to the squatter.
    fake.restart([(ApiGroup::Smb, V::V1BETA1)]).await.unwrap();
    // A mapping sent before the client saw the old connection end is
    // cut off (outcome unknown, never sent again by the SDK): map
    // again until one goes through.
    let mut tries = 0;
    while let Err(e) = proxy
        .smb()
        .unwrap()
        .new_smb_global_mapping(&mapping())
        .await
    {
        assert!(
            matches!(
                e,
                Error::Transport {
                    maybe_sent: true,
                    ..
                }
            ) && tries < 20,
            "{e:?}"
        );
        tries += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(proxy.version(ApiGroup::Smb), Some(V::V1BETA1));
    tokio::time::sleep(Duration::from_millis(1200)).await; // past the look for newer
    assert_eq!(proxy.version(ApiGroup::Smb), Some(V::V1BETA1));
    assert!(fake.calls().iter().all(|c| c.version == V::V1BETA1));
    let received = squatter.received();
    assert!(
        received.is_empty(),
        "the squatter read {} bytes",
        received.len()
    );
    assert!(!received
        .windows(PASSWORD.len())
        .any(|w| w == PASSWORD.as_bytes()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_group_served_only_by_a_squatter_fails_connect_naming_pipe_and_owner() {
    let Some((_place, transport)) = place_for_squatters() else {
        return;
    };
    let Some(squatter) = squat(&transport, ApiGroup::Smb, V::V1).await else {
        return;
    };
    let connected = CsiProxy::builder()
        .transport(transport.clone())
        .require(ApiGroup::Smb)
        .wait_for_proxy(Duration::from_millis(300))
        .connect()
        .await;
    match connected {
        Err(Error::UntrustedServer {
            group,
            address,
            owner,
        }) => {
            assert_eq!(group, ApiGroup::Smb);
            assert_eq!(address, transport.address(ApiGroup::Smb, V::V1));
            #[cfg(unix)]
            assert_eq!(owner, ServerOwner::Uid(NOBODY));
            #[cfg(windows)]
            assert_eq!(owner, ServerOwner::Sid(SQUATTER_SID.into()));
        }
        other => panic!("{other:?}"),
    }
    assert!(squatter.received().is_empty());
}

/// A fake proxy run by a user the client does not trust by default is
/// refused, and served once the trust names that user.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_of_an_untrusted_owner_is_refused_until_the_trust_names_it() {
    let Some((place, transport)) = place_for_squatters() else {
        return;
    };
    // On Unix, `csiproxyctl fake` as user nobody.
    #[cfg(unix)]
    let (owner, _fake) = {
        let exe = std::path::Path::new(env!("CARGO_BIN_EXE_csiproxyctl"));
        let fake = as_nobody(exe, place.path().join("fake").to_str().unwrap())
            .args(["--socket-dir", place.path().to_str().unwrap()])
            .args(["fake", "--versions", "disk=v1"])
            .spawn()
            .unwrap();
        (ServerTrust::default().trust_uid(NOBODY), ChildGuard(fake))
    };
    // On Windows, a fake proxy in this process: its pipes are owned by
    // this process's user, whom the place's transport trusts.
    #[cfg(windows)]
    let (owner, transport, _fake) = {
        let _ = &place; // kept to the end of the test: the pipes' prefix
        let owner = ServerTrust::default().trust_current_user().unwrap();
        let transport = transport.trusting(ServerTrust::default());
        let mut fake = FakeProxy::for_host(transport.clone(), &host());
        fake.serve(ApiGroup::Disk, V::V1).await.unwrap();
        (owner, transport, fake)
    };

    let refused = CsiProxy::builder()
        .transport(transport.clone())
        .require(ApiGroup::Disk)
        .wait_for_proxy(Duration::from_secs(3))
        .connect()
        .await;
    assert!(
        matches!(
            refused,
            Err(Error::UntrustedServer {
                group: ApiGroup::Disk,
                ..
            })
        ),
        "{refused:?}"
    );
    let proxy = CsiProxy::builder()
        .transport(transport)
        .trust(owner)
        .require(ApiGroup::Disk)
        .wait_for_proxy(Duration::from_secs(10))
        .connect()
        .await
        .unwrap();
    assert_eq!(proxy.version(ApiGroup::Disk), Some(V::V1));
    assert!(proxy.disk().unwrap().list_disk_ids().await.is_ok());
}

/// csiproxyctl's probe shows an untrusted pipe as such.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_probe_shows_an_untrusted_endpoint() {
    if !can_run_as_another_user() {
        return;
    }
    let dir = shared_dir();
    let transport = Transport::unix_sockets(dir.path()).unwrap();
    let _squatter = squat(&transport, ApiGroup::Disk, V::V1).await.unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_csiproxyctl"))
        .args(["--socket-dir", dir.path().to_str().unwrap()])
        .args(["probe", "--json", "disk"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("untrusted: user 65534"), "{text}");
    // Named, it is trusted (and then fails: it speaks no HTTP/2).
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_csiproxyctl"))
        .args(["--socket-dir", dir.path().to_str().unwrap()])
        .args(["--trust-owner", "65534", "probe", "--json", "disk"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("untrusted"), "{text}");
}

/// Issue 46, item 4: a squatter passed over is counted at every look,
/// by group, version and reason (it is logged once per process).
#[tokio::test]
async fn passed_over_squatters_are_counted_at_every_look() {
    let Some((_place, transport)) = place_for_squatters() else {
        return;
    };
    let recorder = LogRecorder::default();
    let _local = metrics::set_default_local_recorder(&recorder);
    let mut fake = FakeProxy::for_host(transport.clone(), &host());
    fake.serve(ApiGroup::Disk, V::V1BETA1).await.unwrap();
    let Some(_squatter) = squat(&transport, ApiGroup::Disk, V::V1).await else {
        return;
    };
    let untrusted = [("group", "disk"), ("version", "v1"), ("reason", "owner")];
    for looks in 1..=2 {
        let proxy = CsiProxy::builder()
            .transport(transport.clone())
            .groups([ApiGroup::Disk])
            .require(ApiGroup::Disk)
            .connect()
            .await
            .unwrap();
        assert_eq!(proxy.version(ApiGroup::Disk), Some(V::V1BETA1));
        // At least once per connect's look (a look of the client's
        // own in the background may add to it).
        assert!(recorder.count(UNTRUSTED_SERVERS_TOTAL, &untrusted) >= looks);
    }
    // Nothing else was passed over.
    assert_eq!(
        recorder.count(UNTRUSTED_SERVERS_TOTAL, &[]),
        recorder.count(UNTRUSTED_SERVERS_TOTAL, &untrusted)
    );
}

/// Issue 46, item 4: `ServerTrust::system_only` trusts SYSTEM (root)
/// alone: a proxy of this process's user is refused until named, and
/// on Windows a pipe owned by Administrators, trusted by default, is
/// refused. Root is the one user `system_only` trusts on Unix, so run as
/// root (as CI runs) the refusal is checked as user `nobody`, in this
/// test binary again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn system_only_refuses_every_other_owner_until_widened() {
    #[cfg(unix)]
    if is_root() {
        pass_as_nobody(
            "negotiation::trust::system_only_refuses_the_own_user_until_named_as_nobody",
        );
        return;
    }
    let endpoints = LocalEndpoints::new().unwrap();
    let transport = endpoints.transport();
    system_only_refuses_the_own_user_until_named(&transport).await;

    #[cfg(windows)]
    if let Some(_administrators) = listen_claiming(
        &transport,
        ApiGroup::Volume,
        V::V1,
        ServerTrust::ADMINISTRATORS,
    )
    .await
    {
        let refused = |trust| refused_owner(&transport, ApiGroup::Volume, V::V1, trust);
        // Trusted by default: opened (and then silent, a timeout).
        assert_eq!(refused(ServerTrust::default()).await, None);
        assert_eq!(
            refused(ServerTrust::system_only()).await,
            Some(ServerOwner::Sid(ServerTrust::ADMINISTRATORS.into()))
        );
    }
}

/// The check above, run as `nobody` when the tests run as root.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run as user nobody by the test above, when the tests run as root"]
async fn system_only_refuses_the_own_user_until_named_as_nobody() {
    assert!(!is_root(), "system_only trusts root: run as another user");
    let endpoints = LocalEndpoints::new().unwrap();
    system_only_refuses_the_own_user_until_named(&endpoints.transport()).await;
}

/// A proxy of this process's user (not root) at `transport`: refused under
/// `system_only`, served once the user is named.
async fn system_only_refuses_the_own_user_until_named(transport: &Transport) {
    let mut fake = FakeProxy::for_host(transport.clone(), &host());
    fake.serve(ApiGroup::Disk, V::V1).await.unwrap();
    let refused = CsiProxy::builder()
        .transport(transport.clone())
        .trust(ServerTrust::system_only())
        .require(ApiGroup::Disk)
        .wait_for_proxy(Duration::from_millis(300))
        .connect()
        .await;
    assert!(
        matches!(
            refused,
            Err(Error::UntrustedServer {
                group: ApiGroup::Disk,
                ..
            })
        ),
        "{refused:?}"
    );
    let proxy = CsiProxy::builder()
        .transport(transport.clone())
        .trust(ServerTrust::system_only().trust_current_user().unwrap())
        .require(ApiGroup::Disk)
        .connect()
        .await
        .unwrap();
    assert_eq!(proxy.version(ApiGroup::Disk), Some(V::V1));
}

/// Issue 46, item 3: the premise of the owner check (docs/security.md),
/// which is as strong as the system's refusal to let a process name SYSTEM
/// or Administrators as its pipe's owner, since the check reads the owner a
/// pipe was made with. Wherever it runs, a pipe that claims either is
/// refused (`ERROR_INVALID_OWNER`) or made with that owner, as the check
/// reads it. On Windows, not elevated: refused. Under Wine, which gives a
/// pipe whatever owner it is made with: made, which the squatter tests CI
/// runs under Wine rest on (they would pass over if Wine refused). An
/// elevated process may name Administrators (and, with `SeRestorePrivilege`
/// enabled, anyone): there either holds.
#[cfg(windows)]
#[tokio::test]
async fn a_pipe_claiming_system_or_administrators_is_refused_without_privileges_or_has_that_owner()
{
    let endpoints = LocalEndpoints::new().unwrap();
    let transport = endpoints.transport();
    let wine = windows_env::wine_version();
    let elevated = windows_env::elevated();
    let owners = [
        (V::V1, ServerTrust::SYSTEM),
        (V::V1BETA1, ServerTrust::ADMINISTRATORS),
    ];
    for (version, sid) in owners {
        let made =
            csi_proxy_client::testing::listen_owned_by(&transport, ApiGroup::Disk, version, sid)
                .await;
        let _incoming = match made {
            Err(e) if is_invalid_owner(&e) => {
                assert!(
                    wine.is_none(),
                    "Wine {wine:?} refused a pipe owned by {sid}: the squatter tests would pass over"
                );
                continue;
            }
            Err(e) => panic!("a pipe owned by {sid}: {e}"),
            Ok(incoming) => {
                assert!(
                    wine.is_some() || elevated,
                    "a process without privileges made a pipe owned by {sid}: the owner check \
                     of docs/security.md rests on Windows refusing that"
                );
                incoming
            }
        };
        // Made: the check reads the owner claimed (system_only trusts
        // SYSTEM alone).
        let expected = (sid != ServerTrust::SYSTEM).then(|| ServerOwner::Sid(sid.into()));
        assert_eq!(
            refused_owner(
                &transport,
                ApiGroup::Disk,
                version,
                ServerTrust::system_only()
            )
            .await,
            expected,
            "a pipe owned by {sid}"
        );
    }
}

/// The owner for which `trust` refuses the server at `group` `version`,
/// or `None` where it is trusted (and opened; a silent server then times
/// out).
#[cfg(windows)]
async fn refused_owner(
    transport: &Transport,
    group: ApiGroup,
    version: V,
    trust: ServerTrust,
) -> Option<ServerOwner> {
    let negotiated = Negotiator::new(transport.clone().trusting(trust))
        .policy(VersionPolicy::default().pin(group, version))
        .retry(RetryPolicy::none())
        .connect_timeout(Duration::from_millis(300))
        .negotiate(&[group])
        .await
        .unwrap();
    match negotiated.connection(group) {
        Err(Error::UntrustedServer { owner, .. }) => Some(owner),
        _ => None,
    }
}
