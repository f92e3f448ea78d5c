//! Where each room belongs: its *home* is the instance the balancer was
//! last seen sending its players to, and a room running elsewhere goes
//! back there once that instance is alive again (a restarted instance gets
//! its rooms back).
//!
//! The balancer routes by room code on a consistent-hash ring the
//! instances cannot compute, so the home is learnt, never guessed: only a
//! request that names the room (and so was routed by its code) sets it,
//! and only in two cases:
//! - a request here names a room that has no home yet, and the room runs
//!   here or its live owner handed it over for that request (a room without
//!   a home taken from a dead or departed owner gets none: the request may
//!   have come here only because that owner is out of the ring);
//! - a request here names a room whose home is up (running and ready, see
//!   [`crate::store::Store::up`]) yet the balancer sent the request here:
//!   the ring moved, and this instance becomes its home.
//!
//! A room taken from a dead owner, released by an owner that shut down, or
//! handed between stand-ins while its home is down keeps its home: the
//! instance standing in holds it until the home has been up again for
//! `--return-home-after-ms`, then hands it back (its members reconnect
//! once, as for any move). A home that is up but not where the ring sends
//! the players costs one more move at most: the instance they reach asks
//! for the room, gets it, and becomes its home.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::ownership::Ownership;
use crate::store::Fence;
use crate::sync::lock;

/// The homes of the rooms running here, where known (rooms created here
/// have none until a request names them). A room taken up here without a
/// home is noted as having none (`None`): it learns its home only from a
/// handover by a live owner, never from the requests that reach it here
/// (they may come here only because its previous owner is out of the
/// ring).
#[derive(Debug, Default)]
pub struct Homes {
    by_room: Mutex<HashMap<String, Option<String>>>,
}

impl Homes {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Option<String>>> {
        lock(&self.by_room)
    }

    fn knows(&self, id: &str) -> bool {
        self.lock().contains_key(id)
    }

    /// Notes what is known of a room's home: an instance, or none.
    fn note(&self, id: &str, home: Option<String>) {
        self.lock().insert(id.to_owned(), home);
    }

    /// Forgets a room's home: the next request naming it looks again.
    fn forget(&self, id: &str) {
        self.lock().remove(id);
    }

    /// The rooms running here whose home is another instance.
    fn away(&self, state: &Ownership) -> Vec<(String, String)> {
        let me = &*state.settings.instance_id;
        let running: std::collections::HashSet<String> =
            state.registry.running_ids().into_iter().collect();
        let mut homes = self.lock();
        homes.retain(|id, _| running.contains(id));
        homes
            .iter()
            .filter_map(|(id, home)| home.as_ref().map(|home| (id, home)))
            .filter(|(_, home)| home.as_str() != me)
            .map(|(id, home)| (id.clone(), home.clone()))
            .collect()
    }
}

/// What claiming a room does to its home.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HomeChange {
    /// The room keeps the home its fence names (or none).
    Keep,
    /// This instance becomes its home.
    Here,
    /// This instance becomes its home unless one is named meanwhile.
    HereIfUnset,
}

/// How a claim by `me` of a room whose fence was `seen` changes its home:
/// `named`, the claim serves a request naming the room; `asked_here`, its
/// live owner handed it over for that request; `home_up`, whether the home
/// the fence names is running and ready.
///
/// A room claimed for a request naming it while its home is up moves home
/// (the ring sends its players here now). While its home is down, starting
/// or draining, every instance holding it is a stand-in, however many
/// times it moves.
pub(crate) fn change_on_claim(
    seen: &Fence,
    me: &str,
    named: bool,
    asked_here: bool,
    home_up: bool,
) -> HomeChange {
    match seen.home.as_deref() {
        None if named && asked_here => HomeChange::HereIfUnset,
        None => HomeChange::Keep,
        Some(home) if home == me => HomeChange::Keep,
        Some(_) if named && home_up => HomeChange::Here,
        Some(_) => HomeChange::Keep,
    }
}

/// Records the home of a room just claimed here (see [`change_on_claim`]).
/// A store error leaves the home as it was: the room runs anyway.
pub(crate) async fn settle_on_claim(
    state: &Ownership,
    id: &str,
    seen: &Fence,
    named: bool,
    asked_here: bool,
) {
    let me = &*state.settings.instance_id;
    let home_up = match seen.home.as_deref() {
        Some(home) if named && home != me => {
            match state.store.up(&[home.to_owned()]).await {
                Ok(up) => up.first() == Some(&true),
                // Unknown: kept, the safe side (at worst one more move).
                Err(_) => false,
            }
        }
        _ => false,
    };
    let home = match change_on_claim(seen, me, named, asked_here, home_up) {
        HomeChange::Keep => seen.home.clone(),
        change => {
            let only_if_unset = change == HomeChange::HereIfUnset;
            match state.store.set_home(id, me, me, only_if_unset).await {
                Ok(home) => home,
                Err(e) => {
                    tracing::debug!(room = %id, error = %e, "home not recorded");
                    return;
                }
            }
        }
    };
    // Taken up without a home: none is learnt here (see `Homes`).
    state.homes.note(id, home);
}

/// A request named a room running here: if it has no known home, this
/// instance becomes it (once per room; in the background).
pub(crate) fn named_here(state: &Arc<Ownership>, id: &str) {
    if !state.store.is_durable() || state.homes.knows(id) {
        return;
    }
    // Noted at once so that one write goes out per room.
    state
        .homes
        .note(id, Some(state.settings.instance_id.to_string()));
    let state = state.clone();
    let id = id.to_owned();
    tokio::spawn(async move {
        let me = &*state.settings.instance_id;
        // Not recorded (a store error, or no longer ours): forgotten, so the
        // next request naming it tries again.
        let home: Option<String> = state
            .store
            .set_home(&id, me, me, true)
            .await
            .unwrap_or_default();
        match home {
            Some(home) => state.homes.note(&id, Some(home)),
            None => state.homes.forget(&id),
        }
    });
}

/// How often the homes of rooms running here are looked at.
const HOMES_EVERY: Duration = Duration::from_secs(1);
/// Most rooms handed back per look (the players of each reconnect at
/// once, so a restarted instance is not met by all of them together).
const BACK_PER_LOOK: usize = 50;

/// Hands rooms running here back to their homes once each home has been
/// up for `after` (long enough for the balancer to have it in its ring
/// again), `BACK_PER_LOOK` a second at most. Never while this instance
/// drains or doubts deaths (an outage of the store: see
/// [`super::DeathWatch`]).
pub(crate) async fn return_rooms_home(state: Arc<Ownership>, after: Duration) {
    let mut up_since: HashMap<String, Instant> = HashMap::new();
    while !state.lifecycle.is_draining() {
        tokio::time::sleep(HOMES_EVERY).await;
        let away = state.homes.away(&state);
        let mut instances: Vec<String> = away.iter().map(|(_, home)| home.clone()).collect();
        instances.sort();
        instances.dedup();
        up_since.retain(|home, _| instances.contains(home));
        let Ok(up) = state.store.up(&instances).await else {
            continue;
        };
        for (home, up) in instances.iter().zip(up) {
            if up {
                up_since.entry(home.clone()).or_insert_with(Instant::now);
            } else {
                up_since.remove(home);
            }
        }
        let due: Vec<(String, String)> = away
            .into_iter()
            .filter(|(_, home)| up_since.get(home).is_some_and(|t| t.elapsed() >= after))
            .take(BACK_PER_LOOK)
            .collect();
        if due.is_empty() || state.lifecycle.is_draining() || state.deaths.doubts() {
            continue;
        }
        hand_back(&state, due).await;
    }
}

/// Hands each room to its home, a few at a time.
async fn hand_back(state: &Arc<Ownership>, rooms: Vec<(String, String)>) {
    use futures_util::StreamExt;
    futures_util::stream::iter(rooms)
        .for_each_concurrent(16, |(id, home)| async move {
            state.homes.forget(&id);
            if super::hand_over(state, &id, Some(home.clone())).await {
                crate::metrics::METRICS.rooms_sent_home.inc();
                tracing::info!(room = %id, to = %home, "handed back to the instance it belongs on");
            } else {
                // Not released (the store did not answer): tried again at
                // the next look, if it still runs here.
                state.homes.note(&id, Some(home));
            }
        })
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fence(home: Option<&str>) -> Fence {
        Fence {
            owner: None,
            epoch: 3,
            handed: false,
            parked: false,
            wake: None,
            home: home.map(str::to_owned),
        }
    }

    #[test]
    fn a_room_asked_for_here_moves_home_while_its_home_is_up() {
        // The balancer sent a request naming it here although its home
        // runs and is ready: the ring moved.
        let seen = fence(Some("b"));
        assert_eq!(
            change_on_claim(&seen, "c", true, false, true),
            HomeChange::Here
        );
        assert_eq!(
            change_on_claim(&seen, "c", true, true, true),
            HomeChange::Here
        );
    }

    #[test]
    fn a_stand_in_keeps_the_home_while_it_is_down_or_not_ready() {
        let seen = fence(Some("b"));
        // Asked for while its home is dead, starting or draining.
        assert_eq!(
            change_on_claim(&seen, "c", true, false, false),
            HomeChange::Keep
        );
        assert_eq!(
            change_on_claim(&seen, "c", true, true, false),
            HomeChange::Keep
        );
        // Taken by the sweep, whatever its home does.
        assert_eq!(
            change_on_claim(&seen, "c", false, false, true),
            HomeChange::Keep
        );
        assert_eq!(
            change_on_claim(&seen, "c", false, false, false),
            HomeChange::Keep
        );
    }

    #[test]
    fn a_room_without_a_home_gets_one_only_from_a_live_owner() {
        let seen = fence(None);
        // Handed over by its live owner for a request naming it.
        assert_eq!(
            change_on_claim(&seen, "c", true, true, false),
            HomeChange::HereIfUnset
        );
        // Taken from a dead or departed owner: the request may have come
        // here only because that owner is out of the ring.
        assert_eq!(
            change_on_claim(&seen, "c", true, false, false),
            HomeChange::Keep
        );
        // Found by the sweep: none is guessed.
        assert_eq!(
            change_on_claim(&seen, "c", false, false, false),
            HomeChange::Keep
        );
    }

    #[test]
    fn a_room_coming_home_stays_home() {
        let seen = fence(Some("b"));
        assert_eq!(
            change_on_claim(&seen, "b", true, true, true),
            HomeChange::Keep
        );
    }
}
