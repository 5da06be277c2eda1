//! A share's gate: what must be decided once per share (making its first
//! mapping, making a stale one again, removing it with its last lease,
//! rotating its credentials) is done alone; every volume's own link and
//! folder work on a mapping known to work runs beside the others'.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{Mutex as AsyncMutex, OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

use super::SmbCredentials;
use crate::mount::fingerprint::{Fingerprint, Key};

/// What this process knows of a share's mapping.
#[derive(Debug, Default)]
pub(crate) struct MappingState {
    /// A stage's link answered through the mapping since this process made
    /// or found it, and nothing has removed it since: a volume may link
    /// through it beside the others.
    pub working: bool,
    /// Counts the times the mapping was made or removed, so that a volume
    /// that found it stale can tell whether another one has made it again
    /// meanwhile.
    pub generation: u64,
    /// The generation at which a volume last found its link refused and
    /// settled whether the mapping must go: the share's other volumes,
    /// refused at the same generation, need not ask again (after a
    /// reboot, every link of a share is refused at once).
    pub refusal_settled: Option<u64>,
}

impl MappingState {
    /// The mapping was made, or found working.
    pub fn made(&mut self) {
        self.working = true;
        self.generation += 1;
    }

    /// The mapping was removed, or may be broken.
    pub fn removed(&mut self) {
        self.working = false;
        self.generation += 1;
    }
}

/// One share's gate.
#[derive(Debug, Default)]
pub(crate) struct ShareGate {
    mapping: Arc<RwLock<MappingState>>,
    /// Held by the volume that may make the mapping: the others wait here.
    maker: AsyncMutex<()>,
    /// The fingerprint of the credentials last fingerprinted for the share,
    /// by their in-memory tag: made once, not once per volume.
    fingerprint: AsyncMutex<Option<(String, Fingerprint)>>,
    /// How many times the gate was held alone: what only a volume alone at
    /// it does (make or remove the mapping) may have been done between two
    /// readings that differ.
    held_alone: AtomicU64,
}

/// The gate held: beside other volumes, or alone.
pub(crate) enum Held {
    Beside(OwnedRwLockReadGuard<MappingState>),
    Alone(OwnedRwLockWriteGuard<MappingState>),
}

impl Held {
    pub fn state(&self) -> &MappingState {
        match self {
            Held::Beside(guard) => guard,
            Held::Alone(guard) => guard,
        }
    }

    /// The gate held alone (waiting for the volumes beside to finish).
    pub async fn alone(self, gate: &ShareGate) -> OwnedRwLockWriteGuard<MappingState> {
        match self {
            Held::Alone(guard) => guard,
            Held::Beside(guard) => {
                drop(guard);
                gate.alone().await
            }
        }
    }
}

impl ShareGate {
    /// Beside other volumes when the mapping is known to work; alone
    /// otherwise (this volume may have to make it). Volumes that find it
    /// not working queue for the right to make it, not for the gate
    /// itself: once the first of them has made it, the others go beside
    /// each other instead of one after another.
    pub async fn enter(&self) -> Held {
        loop {
            let beside = self.mapping.clone().read_owned().await;
            if beside.working {
                return Held::Beside(beside);
            }
            drop(beside);
            let _maker = self.maker.lock().await;
            let alone = self.alone().await;
            if !alone.working {
                return Held::Alone(alone);
            }
            // Made meanwhile: beside the others.
        }
    }

    /// The gate alone: for making, removing or rotating the mapping.
    pub async fn alone(&self) -> OwnedRwLockWriteGuard<MappingState> {
        let alone = self.mapping.clone().write_owned().await;
        self.held_alone.fetch_add(1, Ordering::SeqCst);
        alone
    }

    /// A mark of now, when no volume is alone at the gate: nothing of this
    /// process changes the mapping until the gate is next held alone
    /// ([`alone_once_since`](Self::alone_once_since)).
    pub fn quiet_mark(&self) -> Option<u64> {
        let _beside = self.mapping.try_read().ok()?;
        Some(self.held_alone.load(Ordering::SeqCst))
    }

    /// Whether the gate was held alone once only since `mark`: by the
    /// caller, who holds it alone now, and by no volume before it.
    pub fn alone_once_since(&self, mark: u64) -> bool {
        self.held_alone.load(Ordering::SeqCst) == mark + 1
    }

    /// The fingerprint of `credentials` under the node's `key`, made once
    /// per share and credentials.
    pub async fn fingerprint(&self, credentials: &SmbCredentials, key: &Key) -> Fingerprint {
        let tag = credentials.request_tag();
        let mut cached = self.fingerprint.lock().await;
        if let Some((known, print)) = cached.as_ref() {
            if *known == tag {
                return print.clone();
            }
        }
        let print = Fingerprint::of(key, &credentials.username, credentials.password.expose());
        *cached = Some((tag, print.clone()));
        print
    }
}

/// The gates of the shares in use, by share root.
#[derive(Debug, Default)]
pub(crate) struct ShareGates {
    gates: Mutex<HashMap<String, Arc<ShareGate>>>,
}

impl ShareGates {
    /// The gate of share `root`. Gates are kept for the process's life: a
    /// node uses few shares.
    pub fn of(&self, root: &str) -> Arc<ShareGate> {
        let mut gates = self.gates.lock().unwrap_or_else(|p| p.into_inner());
        gates.entry(root.to_owned()).or_default().clone()
    }
}
