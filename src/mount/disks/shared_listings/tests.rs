use super::*;
use crate::testing::FakeHost;

pub(super) fn node() -> (FakeHost, Arc<dyn DiskApi>, Arc<SharedListings>) {
    let host = FakeHost::builder().disk(1, "pd-1", 1 << 30).build();
    let disk: Arc<dyn DiskApi> = Arc::new(host.clone());
    (host, disk, Arc::new(SharedListings::default()))
}

/// `ListDiskIDs` for a finder asking now, on a task of its own.
pub(super) fn ids(
    listings: &Arc<SharedListings>,
    disk: &Arc<dyn DiskApi>,
) -> tokio::task::JoinHandle<Result<Ids>> {
    let (listings, disk) = (listings.clone(), disk.clone());
    tokio::spawn(async move { listings.ids(&disk, AfterRescan::default()).await })
}

/// Lets spawned finders ask: on tokio's paused clock (the tests that call
/// it start paused, and do no I/O), a sleep ends only once every task
/// waits, so each finder has gone as far as it can, whatever the load.
pub(super) async fn settle_down() {
    tokio::time::sleep(Duration::from_millis(20)).await;
}

#[tokio::test]
async fn waiting_finders_look_again_at_the_same_ticks() {
    let listings = SharedListings::default();
    let interval = Duration::from_millis(40);
    let next = listings.next_poll(interval);
    let now = Instant::now();
    assert!(next > now && next <= now + interval);
    tokio::time::sleep(Duration::from_millis(5)).await;
    // A finder that looked a little later listings again at the same tick,
    // unless that tick has just passed.
    let later = listings.next_poll(interval);
    assert!(later == next || (later == next + interval && Instant::now() >= next));
}
