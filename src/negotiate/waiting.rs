//! Negotiation that waits for the proxy, on the availability rules
//! ([`until_served`], the [`Pace`], [`is_worth_waiting_for`],
//! [`PIPE_GRACE`]): [`Negotiator::negotiate_waiting`], and
//! `Backend::Automatic`'s negotiation before the host takes what the proxy
//! lacks ([`negotiate_settled`]).

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::{Negotiated, Negotiator};
use crate::availability::{
    is_worth_waiting_for, until_served, Found, Pace, WaitLimit, BACKGROUND_CONNECT_TIMEOUT,
    PIPE_GRACE,
};
use crate::error::{Error, Result};
use crate::group::ApiGroup;

/// [`Negotiator::negotiate_waiting`]: negotiates `groups`, then again the
/// groups still missing, on the pace, until none is missing (see
/// [`still_missing`]) or `wait` has passed.
pub(crate) async fn negotiate_waiting(
    negotiator: &Negotiator,
    groups: &[ApiGroup],
    required: &[ApiGroup],
    wait: Duration,
) -> Result<Negotiated> {
    // What the looks found so far, and the groups still missing.
    let so_far = Mutex::new((Negotiated::default(), groups.to_vec()));
    let waited = until_served(&mut Pace::default(), WaitLimit::announced(wait), || async {
        let missing = lock(&so_far).1.clone();
        let found = match negotiator.negotiate(&missing).await {
            Ok(found) => found,
            Err(error) => return Found::Over(error),
        };
        let (negotiated, missing) = &mut *lock(&so_far);
        negotiated.merge(found);
        *missing = still_missing(negotiated, groups, required);
        match missing.first() {
            None => Found::Served(()),
            // At the deadline the caller reads each group's outcome
            // from what was found, not this error.
            Some(&group) => Found::Absent {
                error: Error::NotServed {
                    group,
                    tried: Vec::new(),
                },
                waiting_for: missing.clone(),
            },
        }
    })
    .await;
    match waited {
        Err(error) if !is_worth_waiting_for(&error) => Err(error),
        _ => Ok(so_far
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
            .0),
    }
}

/// `Backend::Automatic`'s negotiation, before the host takes what the
/// proxy does not serve: `groups`, and while the proxy is away (none of
/// them served) again on the pace, for up to `start_wait`; then, once it
/// serves any of them, the groups still missing again on the pace, quietly,
/// until [`PIPE_GRACE`] has passed since the last one was found. A proxy
/// creates its pipes one after the other, so a group missing in that
/// moment may only not be there yet; one still missing after it, the
/// proxy lacks. A group whose endpoint exists but fails is not looked for
/// again (the proxy has it).
pub(crate) async fn negotiate_settled(
    negotiator: &Negotiator,
    groups: &[ApiGroup],
    start_wait: Duration,
) -> Result<Negotiated> {
    let negotiated = negotiate_waiting(negotiator, groups, &[], start_wait).await?;
    let missing = |negotiated: &Negotiated| -> Vec<ApiGroup> {
        let absent = |g: &&ApiGroup| matches!(negotiated.connection(**g), Err(e) if is_worth_waiting_for(&e));
        groups.iter().filter(absent).copied().collect()
    };
    let served_any = groups.iter().any(|&g| negotiated.connection(g).is_ok());
    if !served_any || missing(&negotiated).is_empty() {
        return Ok(negotiated);
    }
    let quiet = negotiator.for_background(BACKGROUND_CONNECT_TIMEOUT);
    // What was found so far, and when a group was last found.
    let so_far = Mutex::new((negotiated, Instant::now()));
    let mut pace = Pace::default();
    pace.next_delay(); // the look just made
    until_served(&mut pace, WaitLimit::QUIET, || async {
        let still = missing(&lock(&so_far).0);
        if still.is_empty() {
            return Found::Served(());
        }
        let found = match quiet.negotiate(&still).await {
            Ok(found) => found,
            Err(error) => return Found::Over(error),
        };
        let more = still.iter().any(|&g| found.connection(g).is_ok());
        let (negotiated, last_found) = &mut *lock(&so_far);
        negotiated.merge(found);
        if more {
            *last_found = Instant::now();
        } else if last_found.elapsed() >= PIPE_GRACE {
            return Found::Served(());
        }
        Found::Absent {
            error: Error::NotServed {
                group: still[0],
                tried: Vec::new(),
            },
            waiting_for: still,
        }
    })
    .await?;
    Ok(so_far
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
        .0)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The groups to look for again: those of `required` that are absent
/// (none once one of them failed otherwise), or with `required` empty,
/// every absent group of `groups` while none is served.
fn still_missing(
    negotiated: &Negotiated,
    groups: &[ApiGroup],
    required: &[ApiGroup],
) -> Vec<ApiGroup> {
    let absent =
        |g: &&ApiGroup| matches!(negotiated.connection(**g), Err(e) if is_worth_waiting_for(&e));
    if required.is_empty() {
        if groups.iter().any(|&g| negotiated.connection(g).is_ok()) {
            return Vec::new();
        }
        return groups.iter().filter(absent).copied().collect();
    }
    let failed = required
        .iter()
        .any(|&g| matches!(negotiated.connection(g), Err(e) if !is_worth_waiting_for(&e)));
    if failed {
        return Vec::new();
    }
    required.iter().filter(absent).copied().collect()
}
