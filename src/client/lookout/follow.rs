//! The background task of a negotiated group.

use std::future::Future;
use std::sync::Weak;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::Lookout;
use crate::adapter::FromConnection;
use crate::availability::{until_served, Found, Pace, WaitLimit, MAX_LOOK_INTERVAL, YOUNG};
use crate::group::ApiGroup;

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
    changes: watch::Receiver<u64>,
) {
    let mut follower = Follower {
        lookout,
        changes,
        pace: Pace::default(),
        recovering: false,
        young_ends: 0,
    };
    while follower.turn().await.is_some() {}
}

/// What the background task keeps between its turns.
struct Follower<A: ?Sized> {
    lookout: Weak<Lookout<A>>,
    /// Tells of each change of the group's state.
    changes: watch::Receiver<u64>,
    /// The pace of quiet looks.
    pace: Pace,
    /// A connection ended, and no look has found the proxy since.
    recovering: bool,
    /// Connections in a row that ended young: one is a proxy stopping or
    /// restarting just after the connect (every short test), two are
    /// worth a warning.
    young_ends: u32,
}

/// The connection in use, as the task follows it.
struct Followed<E> {
    generation: u64,
    found_at: Instant,
    /// Ready once the connection has ended (at once if it already has).
    ended: E,
    /// When the settling look for a newer version is due, if it is.
    newer_due: Option<Instant>,
}

impl<A: ?Sized + FromConnection + Send + Sync + 'static> Follower<A> {
    /// One turn, by the group's state: follow its connection until
    /// something happens, or look for the proxy until it is found, or wait
    /// for a change. `None` once the client is gone.
    async fn turn(&mut self) -> Option<()> {
        self.changes.borrow_and_update();
        let followed = {
            let lookout = self.lookout.upgrade()?;
            let state = lookout.state();
            let channel = state.served().and_then(|s| s.channel.as_ref());
            channel.map(|channel| Followed {
                generation: state.generation,
                found_at: state.found_at,
                ended: channel.ended(),
                newer_due: lookout.newer_due(&state),
            })
        };
        match followed {
            Some(followed) => self.follow_connection(followed).await,
            None if self.recovering => self.look_until_served().await,
            // Nothing to look for until the state changes.
            None => self.changes.changed().await.ok(),
        }
    }

    /// Waits for the connection to end, the state to change or the look
    /// for a newer version to fall due, and does what each asks.
    async fn follow_connection(
        &mut self,
        followed: Followed<impl Future<Output = ()>>,
    ) -> Option<()> {
        let look_for_newer = async {
            match followed.newer_due {
                Some(due) => tokio::time::sleep_until(due.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = followed.ended => {}
            changed = self.changes.changed() => return changed.ok(),
            () = look_for_newer => {
                let lookout = self.lookout.upgrade()?;
                lookout.look_for_newer(followed.generation).await;
                return Some(());
            }
        }
        let group = {
            let lookout = self.lookout.upgrade()?;
            lookout.connection_ended(followed.generation);
            lookout.group
        };
        self.recovering = true;
        self.count_end(group, followed.found_at.elapsed());
        Some(())
    }

    /// Counts a connection that ended after living `lived`: one that lived
    /// long starts the pace afresh; young ones in a row are reported.
    fn count_end(&mut self, group: ApiGroup, lived: Duration) {
        if lived >= YOUNG {
            self.pace.reset();
            self.young_ends = 0;
            return;
        }
        self.young_ends = self.young_ends.saturating_add(1);
        match self.young_ends {
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
    }

    /// Quiet looks until the group is served again (a connection found
    /// here or by a caller, which the next turn follows), or the client is
    /// gone.
    async fn look_until_served(&mut self) -> Option<()> {
        let lookout = &self.lookout;
        let found = until_served(&mut self.pace, WaitLimit::QUIET, || async {
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
        found.ok()?;
        self.recovering = false;
        Some(())
    }
}
