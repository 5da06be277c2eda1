use super::super::tests::{ids, node, settle_down};
use super::super::AfterRescan;
use super::*;
use crate::capability::Operation;

#[tokio::test(start_paused = true)]
async fn who_asks_during_a_listing_shares_the_next_and_who_gives_up_is_not_waited_for() {
    let (host, disk, looks) = node();
    let held = host.hold_call(1);
    let first = ids(&looks, &disk);
    let (_, go) = held.await.unwrap();
    let (second, third) = (ids(&looks, &disk), ids(&looks, &disk));
    settle_down().await;
    go.send(()).unwrap();
    for finder in [first, second, third] {
        assert!(finder.await.unwrap().unwrap().contains_key(&1));
    }
    assert_eq!(host.calls_of(Operation::ListDiskIds), 2);

    // All who waited for the next listing gave up: none is sent.
    let held = host.hold_call(1);
    let first = ids(&looks, &disk);
    let (_, go) = held.await.unwrap();
    let gave_up = [ids(&looks, &disk), ids(&looks, &disk)];
    settle_down().await;
    for finder in gave_up {
        finder.abort();
    }
    settle_down().await;
    go.send(()).unwrap();
    first.await.unwrap().unwrap();
    settle_down().await;
    assert_eq!(host.calls_of(Operation::ListDiskIds), 3);
    assert!(!lock(&looks.ids.sends).in_flight);
}

#[test]
fn a_listing_whose_task_stops_fails_its_finders_and_the_next_is_sent_afresh() {
    let (host, disk, looks) = node();
    let runtime = || {
        let builder = &mut tokio::runtime::Builder::new_current_thread();
        builder.enable_all().build().unwrap()
    };
    // A finder's listing is on the host when its runtime shuts down.
    let first = runtime();
    let held = host.hold_call(1);
    let go = first.block_on(async {
        let _finder = ids(&looks, &disk);
        held.await.unwrap().1
    });
    drop(first);
    drop(go);
    let answers = looks.ids.answers.borrow().1.clone();
    let error = answers.unwrap().unwrap_err();
    assert!(matches!(error, Error::InProgress { .. }), "{error}");
    // The next look is not left waiting for it.
    let listed = runtime().block_on(looks.ids(&disk, AfterRescan::default()));
    assert!(listed.unwrap().contains_key(&1));
}
