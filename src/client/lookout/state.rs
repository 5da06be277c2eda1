//! What a group has now: served (the adapter, its version and connection)
//! or not, and since when.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use crate::adapter::FromConnection;
use crate::error::{Error, Result};
use crate::group::ApiGroup;
use crate::negotiate::Connection;
use crate::transport::ProxyChannel;
use crate::version::ApiVersion;

/// What a group has now. Replaced whole on every change, so readers see
/// one consistent picture without locking.
pub(crate) struct SlotState<A: ?Sized> {
    /// Counts changes; a caller that saw generation `g` fail only looks
    /// again if nobody else did since.
    pub generation: u64,
    pub(super) presence: Presence<A>,
    /// Since when the group is served, or not served.
    pub(super) since: SystemTime,
    /// When this state was found.
    pub(super) found_at: Instant,
}

/// Served, or why not.
pub(super) enum Presence<A: ?Sized> {
    Served(Served<A>),
    /// What the last look found; `None` when the connection ended and
    /// nobody has looked since.
    Absent(Option<Error>),
}

pub(super) struct Served<A: ?Sized> {
    pub(super) api: Arc<A>,
    /// `None` for a backend given directly (a mock).
    pub(super) version: Option<ApiVersion>,
    pub(super) channel: Option<ProxyChannel>,
}

impl<A: ?Sized> Served<A> {
    /// Whether calls can still go to it: a closed connection sends nothing.
    pub(super) fn is_open(&self) -> bool {
        self.channel.as_ref().is_none_or(|c| !c.is_closed())
    }
}

impl<A: ?Sized> SlotState<A> {
    pub(super) fn served(&self) -> Option<&Served<A>> {
        match &self.presence {
            Presence::Served(served) => Some(served),
            Presence::Absent(_) => None,
        }
    }

    /// What is served, if calls can go to it now.
    pub(super) fn open(&self) -> Option<&Served<A>> {
        self.served().filter(|s| s.is_open())
    }

    /// The adapter, if calls can go to it now.
    pub fn usable(&self) -> Option<&Arc<A>> {
        self.open().map(|s| &s.api)
    }

    /// The adapter, if the group is served, even if its connection ended.
    pub fn api(&self) -> Option<&Arc<A>> {
        self.served().map(|s| &s.api)
    }

    /// Whether this state is what a look found (not a connection that
    /// ended since).
    pub(super) fn was_looked_for(&self) -> bool {
        !matches!(self.presence, Presence::Absent(None))
    }

    /// What this state says of the group, as a result.
    pub(super) fn outcome(&self, group: ApiGroup) -> Result<()> {
        match &self.presence {
            Presence::Served(_) => Ok(()),
            Presence::Absent(Some(error)) => Err(error.clone()),
            Presence::Absent(None) => Err(Error::NotServed {
                group,
                tried: Vec::new(),
            }),
        }
    }
}

/// What a look's outcome makes of the group.
pub(super) fn presence_of<A: ?Sized + FromConnection>(outcome: Result<Connection>) -> Presence<A> {
    let served = outcome.and_then(|connection| Ok((A::from_connection(&connection)?, connection)));
    match served {
        Ok((api, connection)) => Presence::Served(Served {
            api,
            version: Some(connection.version()),
            channel: Some(connection.channel()),
        }),
        Err(e) => Presence::Absent(Some(e)),
    }
}
