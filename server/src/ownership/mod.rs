//! One owner per room across instances: the heartbeat that says this
//! instance is alive, taking rooms over (on request, from dead instances,
//! from owners that released them), handing rooms over when asked or when
//! shutting down. The fence itself — the owner and epoch every room write
//! is checked against — lives in the store (see ARCHITECTURE.md,
//! "Ownership").
//!
//! Rooms follow requests: a request for a room held by another live
//! instance asks that instance to hand it over and takes it once released,
//! so a room ends up on the instance the load balancer sends its players
//! to.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use jumpgate_protocol::ErrorCode;
use tokio::time::Instant;

use crate::code::RoomCode;
use crate::lifecycle::Lifecycle;
use crate::outbound::Refusal;
use crate::registry::Registry;
use crate::room::{RoomHandle, RoomStopped};
use crate::solo::SoloHandle;
use crate::store::{Fence, Orphan, Store, StoreError};
use crate::sync::lock;

mod doubt;
mod handover;
mod heartbeat;
mod home;

pub use doubt::DeathWatch;
pub use handover::hand_over_all;
use handover::{check_all_owners, check_owner, hand_over};
pub use heartbeat::{mark_ready, start_heartbeat, stop_heartbeat};
pub use home::Homes;
pub(crate) use home::named_here;

/// How often the rooms of dead instances and released rooms are looked for.
const SWEEP_EVERY: Duration = Duration::from_secs(1);
/// Most orphans looked at per list and sweep.
const SWEEP_BATCH: usize = 100;
/// Rooms taken over at once by one instance.
const ADOPT_AT_ONCE: usize = 16;
/// How often a waiting request asks the owner again to hand the room over.
const ASK_AGAIN: Duration = Duration::from_millis(500);
/// How often a waiting request looks at the fence.
const POLL: Duration = Duration::from_millis(25);

/// The settings ownership reads.
#[derive(Debug, Clone)]
pub struct OwnershipSettings {
    /// This instance, as fences and heartbeats name it.
    pub instance_id: Arc<str>,
    pub heartbeat_ttl: Duration,
    pub redis_timeout: Duration,
    /// Hand a room back to its home once the home has been up this long.
    pub return_home_after: Option<Duration>,
    /// The least time the side to move gets after a takeover.
    pub resume_grace: Duration,
    /// Rooms read and claimed per batch at start.
    pub resume_batch: usize,
}

/// What taking, keeping and giving up rooms across instances works with:
/// the store's fences, the rooms running here, the lifecycle (nothing is
/// taken while draining), and this instance's view of the others.
#[derive(Debug)]
pub struct Ownership {
    pub settings: OwnershipSettings,
    pub store: Arc<dyn Store>,
    pub registry: Arc<Registry>,
    pub lifecycle: Lifecycle,
    /// Whether an expired heartbeat is taken as a dead instance just now.
    pub deaths: DeathWatch,
    /// Where the rooms running here belong.
    pub homes: Homes,
    /// One lock per room being taken over, so it is claimed once here.
    adoptions: std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Rooms this process is asking another instance to hand over: a room
    /// handed to us is one of these (a planned move), not one whose asker
    /// died before taking it.
    asking: std::sync::Mutex<HashSet<String>>,
}

impl Ownership {
    pub fn new(
        settings: OwnershipSettings,
        store: Arc<dyn Store>,
        registry: Arc<Registry>,
        lifecycle: Lifecycle,
    ) -> Ownership {
        Ownership {
            settings,
            store,
            registry,
            lifecycle,
            deaths: DeathWatch::default(),
            homes: Homes::default(),
            adoptions: std::sync::Mutex::default(),
            asking: std::sync::Mutex::default(),
        }
    }

    /// The lock under which room `id` is taken over here.
    pub(crate) fn adoption_lock(&self, id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = lock(&self.adoptions);
        if locks.len() > 1024 {
            locks.retain(|_, lock| Arc::strong_count(lock) > 1);
        }
        locks.entry(id.to_owned()).or_default().clone()
    }

    /// The room with this code: running here, or taken over (see
    /// [`acquire`]). `Ok(None)`: no open lobby has that code. `may_ask`:
    /// whether a live owner may be asked to hand it over.
    pub async fn acquire_room(
        self: &Arc<Self>,
        code: &str,
        may_ask: bool,
    ) -> Result<Option<RoomHandle>, Refusal> {
        let Some(code) = RoomCode::parse(code) else {
            return Ok(None);
        };
        acquire(self, code.as_str(), may_ask, || self.registry.room(&code)).await
    }

    /// Asks the lobby with this code (taken over, or loaded, if it does not
    /// run here) for something and waits for its answer. `Ok(None)`: no
    /// open lobby has that code, or it does not show itself to this request.
    pub async fn ask_room<T, F>(
        self: &Arc<Self>,
        code: &str,
        may_ask: bool,
        ask: impl FnOnce(RoomHandle) -> F,
    ) -> Result<Option<T>, Refusal>
    where
        F: Future<Output = Result<Option<T>, RoomStopped>>,
    {
        let Some(handle) = self.acquire_room(code, may_ask).await? else {
            return Ok(None);
        };
        // A room that stops before answering moved just now: ask again.
        ask(handle).await.map_err(|RoomStopped| {
            Refusal::new(
                ErrorCode::RoomUnavailable,
                "the lobby moved between server instances just now; try again",
            )
        })
    }

    /// The player's unfinished solo game: running here, or taken over;
    /// `named` is the room the connection named in its address.
    pub async fn acquire_solo(
        self: &Arc<Self>,
        player: &str,
        named: Option<&str>,
    ) -> Result<Option<SoloHandle>, Refusal> {
        if let Some(handle) = self.registry.solo_of(player) {
            if named.is_some_and(|n| n == handle.id()) {
                named_here(self, handle.id());
            }
            return Ok(Some(handle));
        }
        if !self.store.is_durable() {
            return Ok(None);
        }
        let id = match self.store.solo_of(player).await {
            Ok(Some(id)) => id,
            Ok(None) => return Ok(None),
            Err(_) => {
                return Err(Refusal::new(
                    ErrorCode::StorageUnavailable,
                    "your solo game could not be looked up just now; try again",
                ));
            }
        };
        // Only a connection that names the game may have it handed over.
        let may_ask = named == Some(id.as_str());
        acquire(self, &id, may_ask, || {
            self.registry.solo_of(player).filter(|h| h.id() == id)
        })
        .await
    }
}

/// What taking a room over came to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Adoption {
    /// The room runs here now (or already did).
    Adopted,
    /// Someone else changed the fence first, or the room is gone.
    Lost,
    /// Claimed, but the stored room does not resume: listed for the
    /// operator.
    Unresumable,
    /// Claimed, and closed: a solo game replaced by a newer one, or
    /// already closed by its previous owner (see
    /// [`crate::solo::close_discarded`]).
    Closed,
}

fn unavailable() -> Refusal {
    Refusal::new(
        ErrorCode::RoomUnavailable,
        "the room is moving between server instances; reconnect naming it and try again shortly",
    )
}

fn storage_unavailable() -> Refusal {
    Refusal::new(
        ErrorCode::StorageUnavailable,
        "the room's owner could not be read just now; try again",
    )
}

/// Finds the room or solo game `id` here, taking it over if it has no live
/// owner and, if `may_ask`, asking its live owner to hand it over (else it
/// waits, in case the owner is dying, then answers `room_unavailable`, and
/// the client comes back naming the room, which the balancer sends where
/// the room's players are). `local` looks it up
/// among this instance's rooms. `Ok(None)`: no open room has that id.
pub async fn acquire<H>(
    state: &Arc<Ownership>,
    id: &str,
    may_ask: bool,
    local: impl Fn() -> Option<H>,
) -> Result<Option<H>, Refusal> {
    if let Some(handle) = local() {
        if may_ask {
            home::named_here(state, id);
        }
        return Ok(Some(handle));
    }
    if !state.store.is_durable() || state.registry.is_unresumable(id) {
        return Ok(None);
    }
    let deadline = Instant::now() + state.settings.heartbeat_ttl + Duration::from_secs(2);
    let mut asked: Option<Instant> = None;
    let _asking = Asking::new(state, id, may_ask);
    loop {
        if let Some(handle) = local() {
            return Ok(Some(handle));
        }
        if state.lifecycle.is_draining() || Instant::now() >= deadline {
            return Err(unavailable());
        }
        let fence = match state.store.fence(id).await {
            Ok(Some(fence)) => fence,
            Ok(None) => return Ok(None),
            Err(_) => return Err(storage_unavailable()),
        };
        let live_owner = match owner_if_alive(state, &fence).await {
            Ok(owner) => owner,
            Err(_) => return Err(storage_unavailable()),
        };
        match live_owner {
            None => match adopt(state, id, &fence).await {
                Ok(Adoption::Adopted | Adoption::Lost | Adoption::Closed) => continue,
                Ok(Adoption::Unresumable) => return Ok(None),
                Err(_) => return Err(storage_unavailable()),
            },
            Some(owner) => {
                // Without the right to ask, wait only in case the owner is
                // dying (its heartbeat running out).
                if may_ask && asked.is_none_or(|t| t.elapsed() >= ASK_AGAIN) {
                    tracing::debug!(room = %id, %owner, "asking the owner to hand the room over");
                    let me = &state.settings.instance_id;
                    let _ = state.store.ask_handover(&owner, id, me).await;
                    asked = Some(Instant::now());
                }
                tokio::time::sleep(POLL).await;
            }
        }
    }
}

/// Notes, while a request may ask for a room, that this process asks for
/// it (see `Ownership::asking`).
struct Asking<'a> {
    state: &'a Ownership,
    id: Option<String>,
}

impl<'a> Asking<'a> {
    fn new(state: &'a Ownership, id: &str, may_ask: bool) -> Asking<'a> {
        let id = may_ask.then(|| id.to_owned());
        if let Some(id) = &id {
            lock(&state.asking).insert(id.clone());
        }
        Asking { state, id }
    }
}

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        if let Some(id) = &self.id {
            lock(&self.state.asking).remove(id);
        }
    }
}

/// The room's owner if it is another instance whose heartbeat is current
/// (or expired while deaths are doubted: see [`DeathWatch`]). A room
/// released, owned by a dead instance, or owned by this instance without
/// running here is free to claim.
async fn owner_if_alive(state: &Ownership, fence: &Fence) -> Result<Option<String>, StoreError> {
    match &fence.owner {
        None => Ok(None),
        Some(owner) if **owner == *state.settings.instance_id => Ok(None),
        Some(owner) => {
            // While deaths are doubted every owner counts as alive: no
            // need to ask.
            let alive = state.deaths.doubts() || state.store.is_alive(owner).await?;
            Ok(alive.then(|| owner.clone()))
        }
    }
}

/// Claims a room whose fence is still `seen`, loads it and starts its task.
/// One adoption per room at a time on this instance.
async fn adopt(state: &Arc<Ownership>, id: &str, seen: &Fence) -> Result<Adoption, StoreError> {
    let lock = state.adoption_lock(id);
    let _held = lock.lock().await;
    if state.registry.runs(id) {
        return Ok(Adoption::Adopted);
    }
    let me = &state.settings.instance_id;
    let Some(owner) = state.store.claim(id, seen, me).await? else {
        return Ok(Adoption::Lost);
    };
    let stored = state.store.load(id).await;
    start_claimed(state, id, seen, owner, stored).await
}

/// Starts the task of a room this instance has just claimed at `owner`
/// (from the fence `seen`), from `stored`, the room as read after the
/// claim; the caller holds the room's adoption lock. A stored room that
/// does not resume is listed for the operator; a replaced or closed solo
/// game is closed.
pub(crate) async fn start_claimed(
    state: &Arc<Ownership>,
    id: &str,
    seen: &Fence,
    owner: crate::store::OwnerEpoch,
    stored: Result<Option<crate::store::StoredRoom>, StoreError>,
) -> Result<Adoption, StoreError> {
    let me = &state.settings.instance_id;
    let stored = match stored {
        Ok(Some(stored)) => stored,
        Ok(None) => return Ok(Adoption::Lost),
        // Stored bytes this server cannot read: kept, listed for the
        // operator, never retried in a loop.
        Err(StoreError::Unreadable(reason)) => {
            state.registry.list_unresumable(id, reason, None);
            return Ok(Adoption::Unresumable);
        }
        Err(e) => return Err(e),
    };
    // A room handed to this instance on its request moved in a moment, its
    // clock stored to the millisecond: it keeps its deadline. Any other
    // takeover follows an owner that died, froze or shut down: the side to
    // move gets at least the resume grace. (So nobody can stretch a clock
    // by making a room move: only a handover follows a request.)
    let named = lock(&state.asking).contains(id);
    let handed_here = seen.handed && seen.owner.as_deref() == Some(&**me) && named;
    let grace = if handed_here {
        Duration::ZERO
    } else {
        state.settings.resume_grace
    };
    let stakes = crate::lobby::stranded_stakes(&stored.record);
    let started = match crate::solo::solo_record(&stored.record) {
        Some(record) => {
            // Only the game its identity's note names is resumed (a game
            // found without a note is noted, as before notes expired): a
            // replaced game left open, by a close that was not stored, is
            // closed now, never resumed in place of the current one.
            let noted = state
                .store
                .index_solo_unless_noted(&record.owner, id)
                .await?;
            if record.closed || noted.as_deref().is_some_and(|n| n != id) {
                return match crate::solo::close_discarded(
                    record,
                    owner,
                    &state.registry.solo_deps().settings,
                    &*state.store,
                    &*state.registry.solo_deps().boards,
                )
                .await
                {
                    Ok(()) => {
                        tracing::info!(game = %id, "closed a replaced solo game left open");
                        Ok(Adoption::Closed)
                    }
                    Err(crate::store::WriteError::Unavailable(e)) => Err(e),
                    Err(_) => Ok(Adoption::Lost),
                };
            }
            state.registry.spawn_solo(record, owner).map(|_| ())
        }
        None => state
            .registry
            .resume_room(stored, owner, grace)
            .map(|_| ())
            .map_err(|e| format!("room {id}: {e}")),
    };
    match started {
        Ok(()) => {
            let how = Arrival::of(seen, me);
            crate::metrics::METRICS.room_takeovers.inc();
            crate::metrics::METRICS
                .rooms_received
                .with_label_values(&[how.name()])
                .inc();
            // A handed room's fence names this instance (or nobody): the
            // giver logs its own side ("handed over").
            let previous_owner = match how {
                Arrival::DeadOwner | Arrival::Restart => seen.owner.as_deref().unwrap_or(""),
                Arrival::Handover | Arrival::Woken => "",
            };
            tracing::info!(room = %id, how = how.name(), previous_owner, "took the room over");
            home::settle_on_claim(state, id, seen, named, handed_here).await;
            Ok(Adoption::Adopted)
        }
        Err(reason) => {
            state.registry.list_unresumable(id, reason, stakes);
            Ok(Adoption::Unresumable)
        }
    }
}

/// How a room came to this instance, as `rooms_received_total` counts it
/// (on the receiving side, which is still running to be scraped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// Its owner gave it up: to this instance on request, or to anyone
    /// (at its shutdown).
    Handover,
    /// Its owner's heartbeat had expired (killed, frozen, cut off).
    DeadOwner,
    /// This instance id owned it before a restart.
    Restart,
    /// An unloaded correspondence lobby, loaded again.
    Woken,
}

impl Arrival {
    /// Every value's name, for the metric's labels.
    pub(crate) const NAMES: &[&str] = &["handover", "dead_owner", "restart", "woken"];

    fn of(seen: &Fence, me: &str) -> Arrival {
        match seen.owner.as_deref() {
            _ if seen.parked => Arrival::Woken,
            None => Arrival::Handover,
            Some(owner) if owner == me && seen.handed => Arrival::Handover,
            Some(owner) if owner == me => Arrival::Restart,
            Some(_) => Arrival::DeadOwner,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// Takes over one room found on an orphan list, if it is still free, and
/// takes it off the list (`true`) unless it must be tried again.
async fn adopt_orphan(state: &Arc<Ownership>, orphan: &Orphan) -> Result<bool, StoreError> {
    let Some(fence) = state.store.fence(&orphan.code).await? else {
        // Closed or expired: nothing to adopt.
        state.store.forget_orphan(orphan).await?;
        return Ok(true);
    };
    let me = &*state.settings.instance_id;
    let ours = fence.owner.as_deref() == Some(me);
    if state.registry.runs(&orphan.code) {
        if ours {
            // Running here, as the store says: an entry of our own list
            // stays (it is how others find the room if we die).
            if orphan.dead_owner.as_deref() == Some(me) {
                return Ok(false);
            }
        } else {
            // A task here that lost the room (claimed while this instance
            // looked dead): it stops now; the room is looked at again.
            check_owner(state, &orphan.code).await;
            return Ok(false);
        }
    } else if owner_if_alive(state, &fence).await?.is_none() {
        match adopt(state, &orphan.code, &fence).await? {
            // Someone else moved first: look again next time.
            Adoption::Lost => return Ok(false),
            // Now ours and listed under us: keep our own entry.
            Adoption::Adopted if orphan.dead_owner.as_deref() == Some(me) => return Ok(true),
            Adoption::Adopted | Adoption::Unresumable | Adoption::Closed => {}
        }
    } else if state.deaths.doubts() {
        // Its owner may be dead after all: look again once deaths are
        // believed.
        return Ok(false);
    }
    state.store.forget_orphan(orphan).await?;
    Ok(true)
}

/// Takes over a batch of orphans, several at a time (each is a few round
/// trips to Redis); returns how many are off their lists.
async fn adopt_orphans(state: &Arc<Ownership>, orphans: Vec<Orphan>) -> usize {
    use futures_util::StreamExt;
    futures_util::stream::iter(orphans)
        .map(|orphan| async move {
            if state.lifecycle.is_draining() {
                return false;
            }
            match adopt_orphan(state, &orphan).await {
                Ok(done) => done,
                Err(e) => {
                    tracing::debug!(room = %orphan.code, error = %e, "orphan not adopted yet");
                    false
                }
            }
        })
        .buffer_unordered(ADOPT_AT_ONCE)
        .filter(|done| std::future::ready(*done))
        .count()
        .await
}

/// Loads unloaded rooms whose timer is due (a correspondence lobby's
/// expiry, or the end of its break), several at a time; returns how many
/// are off the dormant list. An entry for a room that runs somewhere, or is
/// gone, is simply dropped: a room lists itself again when it unloads.
async fn wake_dormant(state: &Arc<Ownership>, due: Vec<crate::store::Dormant>) -> usize {
    use futures_util::StreamExt;
    futures_util::stream::iter(due)
        .map(|entry| async move {
            if state.lifecycle.is_draining() {
                return false;
            }
            let woken = async {
                if let Some(fence) = state.store.fence(&entry.code).await?
                    && !state.registry.runs(&entry.code)
                    && owner_if_alive(state, &fence).await?.is_none()
                {
                    match adopt(state, &entry.code, &fence).await? {
                        Adoption::Lost => return Ok(false),
                        Adoption::Adopted => crate::metrics::METRICS.rooms_woken.inc(),
                        Adoption::Unresumable | Adoption::Closed => {}
                    }
                }
                state.store.forget_dormant(&entry).await?;
                Ok::<_, StoreError>(true)
            };
            match woken.await {
                Ok(done) => done,
                Err(e) => {
                    tracing::debug!(room = %entry.code, error = %e, "dormant room not loaded yet");
                    false
                }
            }
        })
        .buffer_unordered(ADOPT_AT_ONCE)
        .filter(|done| std::future::ready(*done))
        .count()
        .await
}

/// Starts the tasks that keep ownership going until the instance drains:
/// the sweep for orphans, and answering handover requests.
pub fn spawn_background(state: &Arc<Ownership>) {
    if !state.store.is_durable() {
        return;
    }
    let sweep = state.clone();
    tokio::spawn(async move {
        let mut full = false;
        while !sweep.lifecycle.is_draining() {
            // A full batch means more may be waiting: go on at once.
            if !full {
                tokio::time::sleep(SWEEP_EVERY).await;
            }
            let orphans = match sweep
                .store
                .orphans(&sweep.settings.instance_id, SWEEP_BATCH)
                .await
            {
                Ok(orphans) => orphans,
                Err(e) => {
                    tracing::debug!(error = %e, "cannot look for orphaned rooms now");
                    full = false;
                    continue;
                }
            };
            let batch = orphans.len();
            let done = adopt_orphans(&sweep, orphans).await;
            full = batch >= SWEEP_BATCH && done > 0;
        }
    });
    let wake = state.clone();
    tokio::spawn(async move {
        let mut full = false;
        while !wake.lifecycle.is_draining() {
            if !full {
                tokio::time::sleep(SWEEP_EVERY).await;
            }
            let due = match wake
                .store
                .dormant_due(crate::sync::now_ms(), SWEEP_BATCH)
                .await
            {
                Ok(due) => due,
                Err(e) => {
                    tracing::debug!(error = %e, "cannot look for dormant rooms now");
                    full = false;
                    continue;
                }
            };
            let batch = due.len();
            let done = wake_dormant(&wake, due).await;
            full = batch >= SWEEP_BATCH && done > 0;
        }
    });
    if let Some(after) = state.settings.return_home_after {
        tokio::spawn(home::return_rooms_home(state.clone(), after));
    }
    let listen = state.clone();
    tokio::spawn(async move {
        let mut requests = listen.store.handover_requests(&listen.settings.instance_id);
        while let Some(request) = requests.recv().await {
            let (id, to) = match request.split_once(' ') {
                Some((id, to)) => (id.to_owned(), Some(to.to_owned())),
                None => (request, None),
            };
            let state = listen.clone();
            tokio::spawn(async move { hand_over(&state, &id, to).await });
        }
    });
}
