//! When an expired heartbeat may be taken as a dead instance: not for one
//! TTL after this instance itself lost the store (see [`DeathWatch`]).

use std::time::Duration;

use crate::sync::lock;
use tokio::time::Instant;

/// Whether this instance may believe the store when it says another
/// instance is dead. After this instance lost the store (its beats failed)
/// or found its own heartbeat lapsed, every instance's heartbeat may have
/// run out through no fault of theirs (a Redis outage or restart longer
/// than the TTL): until one TTL after its own beats are stored again, in
/// which every live instance has beaten again, an expired heartbeat is not
/// taken as a death, and no room moves between live instances.
#[derive(Debug, Default)]
pub struct DeathWatch(std::sync::Mutex<Doubt>);

#[derive(Debug, Default, Clone, Copy)]
enum Doubt {
    /// The store's word is believed.
    #[default]
    Believed,
    /// Beats are failing: doubted until one is stored again.
    UntilStored,
    /// Doubted until then.
    Until(Instant),
}

impl DeathWatch {
    pub(super) fn beat_failed(&self) {
        *lock(&self.0) = Doubt::UntilStored;
    }

    /// A beat was stored; `lapsed`: the previous one had expired.
    pub(super) fn beat_stored(&self, lapsed: bool, ttl: Duration) {
        let mut doubt = lock(&self.0);
        if lapsed || matches!(*doubt, Doubt::UntilStored) {
            *doubt = Doubt::Until(Instant::now() + ttl);
        }
    }

    /// Whether an expired heartbeat may mean a live instance now.
    pub fn doubts(&self) -> bool {
        let mut doubt = lock(&self.0);
        match *doubt {
            Doubt::Believed => false,
            Doubt::UntilStored => true,
            Doubt::Until(t) if Instant::now() < t => true,
            Doubt::Until(_) => {
                *doubt = Doubt::Believed;
                false
            }
        }
    }
}
