use super::*;
use crate::testing::{FakeHost, FakeProxy, LocalEndpoints};
use crate::transport::faults;

/// A fake proxy serving disk v1 and v1beta1, and a negotiator of it
/// with quick retries.
async fn node() -> (LocalEndpoints, FakeProxy, Negotiator) {
    let endpoints = LocalEndpoints::new().unwrap();
    let mut fake = FakeProxy::for_host(endpoints.transport(), &FakeHost::builder().build());
    fake.serve_all([
        (ApiGroup::Disk, ApiVersion::V1),
        (ApiGroup::Disk, ApiVersion::V1BETA1),
    ])
    .await
    .unwrap();
    let negotiator = Negotiator::new(endpoints.transport())
        .retry(RetryPolicy::default().with_initial_delay(Duration::from_millis(1)));
    (endpoints, fake, negotiator)
}

/// A server that disconnects between the open and the read of its
/// owner (`ERROR_PIPE_NOT_CONNECTED` on Windows) says nothing about
/// who it is: the attempt is made again, and the real proxy's newest
/// version is chosen, with no word of an untrusted server.
#[tokio::test]
async fn an_owner_read_that_fails_is_a_failed_attempt_made_again_not_a_verdict() {
    let (endpoints, _fake, negotiator) = node().await;
    let newest = endpoints
        .transport()
        .address(ApiGroup::Disk, ApiVersion::V1);
    faults::fail_owner_reads(&newest, 1);
    let negotiated = negotiator.negotiate(&[ApiGroup::Disk]).await.unwrap();
    let report = negotiated.report().group(ApiGroup::Disk).unwrap().clone();
    assert_eq!(
        report.chosen,
        Some(ApiVersion::V1),
        "{}",
        negotiated.report()
    );
    assert_eq!(
        report.attempts,
        [Attempt::new(
            ApiVersion::V1,
            &newest,
            AttemptOutcome::Connected
        )]
    );
}

/// An owner that cannot be read at all, attempt after attempt, is a
/// failure passed over for an older version (suspect), never called
/// untrusted.
#[tokio::test]
async fn an_owner_that_stays_unread_is_passed_over_as_suspect_not_untrusted() {
    let (endpoints, _fake, negotiator) = node().await;
    let newest = endpoints
        .transport()
        .address(ApiGroup::Disk, ApiVersion::V1);
    faults::fail_owner_reads(&newest, usize::MAX);
    let negotiated = negotiator.negotiate(&[ApiGroup::Disk]).await.unwrap();
    let report = negotiated.report().group(ApiGroup::Disk).unwrap().clone();
    faults::fail_owner_reads(&newest, 0);
    assert_eq!(
        report.chosen,
        Some(ApiVersion::V1BETA1),
        "{}",
        negotiated.report()
    );
    match &report.attempts[0].outcome {
        AttemptOutcome::Suspect(why) => {
            assert!(
                why.contains("owner of the server could not be read"),
                "{why}"
            )
        }
        other => panic!("{other:?}"),
    }
    assert!(report
        .attempts
        .iter()
        .all(|a| !matches!(a.outcome, AttemptOutcome::Untrusted(_))));
}

/// With nothing older served, the failure is the group's error, as
/// it was: a failed attempt, not an untrusted server.
#[tokio::test]
async fn an_owner_that_stays_unread_with_nothing_older_is_the_groups_failure() {
    let (endpoints, _fake, negotiator) = node().await;
    let newest = endpoints
        .transport()
        .address(ApiGroup::Disk, ApiVersion::V1);
    faults::fail_owner_reads(&newest, usize::MAX);
    let negotiated = negotiator
        .policy(VersionPolicy::default().pin(ApiGroup::Disk, ApiVersion::V1))
        .negotiate(&[ApiGroup::Disk])
        .await
        .unwrap();
    faults::fail_owner_reads(&newest, 0);
    let error = negotiated.connection(ApiGroup::Disk).unwrap_err();
    assert!(matches!(error, Error::Transport { .. }), "{error:?}");
    assert!(matches!(
        negotiated.report().group(ApiGroup::Disk).unwrap().attempts[0].outcome,
        AttemptOutcome::Failed(_)
    ));
}
