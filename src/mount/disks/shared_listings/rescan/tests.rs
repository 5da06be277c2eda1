use super::super::tests::{node, settle_down};
use super::*;
use crate::capability::Operation;

const IDS: Wants = Wants {
    locations: false,
    ids: true,
};
const LOCATIONS: Wants = Wants {
    locations: true,
    ids: false,
};
/// Longer than any test: one poll interval throughout.
const HOUR: Duration = Duration::from_secs(3_600);

#[tokio::test(start_paused = true)]
async fn a_rescan_is_joined_and_sent_once_a_poll_interval() {
    let (host, disk, looks) = node();
    let held = host.hold_call(1);
    let rescan = |wants| {
        let (looks, disk) = (looks.clone(), disk.clone());
        tokio::spawn(async move { looks.rescan(&disk, HOUR, wants).await })
    };
    let first = rescan(IDS);
    let (operation, go) = held.await.unwrap();
    assert_eq!(operation, Operation::Rescan);
    let joined = [rescan(IDS), rescan(IDS)];
    // One that gives up before the rescan ends is sent no listing.
    let gave_up = rescan(LOCATIONS);
    settle_down().await;
    gave_up.abort();
    settle_down().await;
    go.send(()).unwrap();

    let after = first.await.unwrap();
    assert_eq!(after.ids, Some(1), "sent as the rescan ended");
    assert_eq!(after.locations, None, "nobody looks at locations");
    for joiner in joined {
        assert_eq!(joiner.await.unwrap(), after, "one listing for all");
    }
    // Those finders read that listing: one call.
    for _ in 0..3 {
        looks.ids(&disk, after).await.unwrap();
    }
    assert_eq!(host.calls_of(Operation::ListDiskIds), 1);
    assert_eq!(host.calls_of(Operation::ListDiskLocations), 0);
    // In the same poll interval, a rescan is skipped: a plain look.
    assert_eq!(rescan(IDS).await.unwrap(), AfterRescan::default());
    assert_eq!(host.rescans(), 1);
}
