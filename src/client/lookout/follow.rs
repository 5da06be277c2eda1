//! The background task of a negotiated group.

use std::sync::Weak;

use tokio::sync::watch;

use super::Lookout;
use crate::adapter::FromConnection;
use crate::availability::{until_served, Found, Pace, WaitLimit, MAX_LOOK_INTERVAL, YOUNG};

/// The background task of a negotiated group: follows the connection in
/// use, marks the group not served when it ends, and then looks for the
/// proxy, quietly and on the [`Pace`], until a look (its own or a
/// caller's) finds it. A version older than the policy's best gets its
/// settling look for a newer one when the grace of a proxy creating its
/// pipes has passed ([`Lookout::look_for_newer`]), and, while a newer
/// version's endpoint exists but fails, more on the slow pace. One per
/// group, for the life of the client: it holds only a `Weak` between looks
/// and stops once the client is dropped.
///
/// A group that was not served at connect is not looked for here (its
/// next call looks): a node may never serve it (iSCSI on most nodes).
pub(super) async fn follow<A: ?Sized + FromConnection + Send + Sync + 'static>(
    lookout: Weak<Lookout<A>>,
    mut changes: watch::Receiver<u64>,
) {
    let mut pace = Pace::default();
    let mut recovering = false;
    // Connections in a row that ended young: one is a proxy stopping or
    // restarting just after the connect (every short test), two are worth
    // a warning.
    let mut young_ends = 0u32;
    loop {
        changes.borrow_and_update();
        let Some((state, newer_due)) = lookout.upgrade().map(|l| {
            let state = l.state();
            let newer_due = l.newer_due(&state);
            (state, newer_due)
        }) else {
            return;
        };
        // A connection that already ended is followed too: its end is
        // then recorded at once.
        if let Some(channel) = state.served().and_then(|s| s.channel.as_ref()) {
            let (generation, found_at) = (state.generation, state.found_at);
            let ended = channel.ended();
            drop(state);
            let look_for_newer = async {
                match newer_due {
                    Some(due) => tokio::time::sleep_until(due.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = ended => {}
                changed = changes.changed() => match changed {
                    Ok(()) => continue,
                    Err(_) => return,
                },
                () = look_for_newer => {
                    if let Some(lookout) = lookout.upgrade() {
                        lookout.look_for_newer(generation).await;
                    }
                    continue;
                }
            }
            let Some(group) = lookout.upgrade().map(|l| {
                l.connection_ended(generation);
                l.group
            }) else {
                return;
            };
            recovering = true;
            let lived = found_at.elapsed();
            if lived >= YOUNG {
                pace.reset();
                young_ends = 0;
                continue;
            }
            young_ends = young_ends.saturating_add(1);
            match young_ends {
                1 => tracing::debug!(
                    %group,
                    lived_ms = lived.as_millis() as u64,
                    "the connection to CSI Proxy ended within a second of being made (the proxy stopped or restarted); looking for it again"
                ),
                2 => tracing::warn!(
                    %group,
                    "connections to CSI Proxy end as soon as they are made, twice in a row; looking again at most every {} ms",
                    MAX_LOOK_INTERVAL.as_millis()
                ),
                _ => {}
            }
            continue;
        }
        drop(state);
        if !recovering {
            // Nothing to look for until the state changes.
            if changes.changed().await.is_err() {
                return;
            }
            continue;
        }
        // Quiet looks until the group is served again (a connection found
        // here or by a caller, which the top of the loop then follows), or
        // the client is gone.
        let found = until_served(&mut pace, WaitLimit::QUIET, || async {
            let Some(lookout) = lookout.upgrade() else {
                return Found::Over(());
            };
            if lookout.state().served().is_none() {
                lookout.look_in_background().await;
            }
            match lookout.state().served() {
                Some(_) => Found::Served(()),
                None => Found::Absent {
                    error: (),
                    waiting_for: vec![lookout.group],
                },
            }
        })
        .await;
        if found.is_err() {
            return;
        }
        recovering = false;
    }
}
