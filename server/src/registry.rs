//! The rooms and solo games running in this process: where a request finds
//! them, how they are started (new, resumed from the store, or taken over),
//! and the stored ones that could not be resumed, kept for the operator.
//! Which instance *may* run a room is decided elsewhere (`ownership`); this
//! only holds what runs here.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::code::RoomCode;
use crate::identity::Identity;
use crate::lobby::{LobbyOptions, ResumeError, StrandedStakes};
use crate::room::{Room, RoomDeps, RoomHandle};
use crate::solo::{SoloDeps, SoloHandle, SoloRecord};
use crate::store::{OwnerEpoch, StoredRoom};
use crate::sync::lock;

/// The running rooms and solo games, and what it takes to start more.
#[derive(Debug)]
pub struct Registry {
    rooms: Mutex<HashMap<RoomCode, RoomHandle>>,
    /// Solo games by the identity that plays them.
    solos: Mutex<HashMap<String, SoloHandle>>,
    /// Stored lobbies and games that could not be resumed: kept in the
    /// store untouched and listed for the operator.
    unresumable: Mutex<Vec<Unresumable>>,
    room_deps: RoomDeps,
    solo_deps: SoloDeps,
}

/// A stored lobby or solo game that could not be resumed.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Unresumable {
    pub code: String,
    pub reason: String,
    /// Stakes it may still hold in escrow, and how to release them
    /// (`POST /api/admin/rooms/{code}/settle`).
    pub stakes: Option<StrandedStakes>,
}

impl Registry {
    pub fn new(room_deps: RoomDeps, solo_deps: SoloDeps) -> Registry {
        Registry {
            rooms: Mutex::default(),
            solos: Mutex::default(),
            unresumable: Mutex::default(),
            room_deps,
            solo_deps,
        }
    }

    /// What every solo game is given (closing a discarded one needs it too).
    pub fn solo_deps(&self) -> &SoloDeps {
        &self.solo_deps
    }

    /// The room with this code, if its task runs here.
    pub fn room(&self, code: &RoomCode) -> Option<RoomHandle> {
        lock(&self.rooms)
            .get(code)
            .filter(|h| h.is_running())
            .cloned()
    }

    /// Whether the room or solo game `id` runs here.
    pub fn runs(&self, id: &str) -> bool {
        RoomCode::parse(id).is_some_and(|c| self.room(&c).is_some())
            || self.solo_by_id(id).is_some()
    }

    /// The codes and solo ids of everything running here.
    pub fn running_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = lock(&self.rooms)
            .values()
            .filter(|h| h.is_running())
            .map(|h| h.code().to_string())
            .collect();
        ids.extend(
            lock(&self.solos)
                .values()
                .filter(|h| h.is_running())
                .map(|h| h.id().to_owned()),
        );
        ids
    }

    /// The solo game with this id, if its task runs here.
    pub fn solo_by_id(&self, id: &str) -> Option<SoloHandle> {
        lock(&self.solos)
            .values()
            .find(|h| h.id() == id && h.is_running())
            .cloned()
    }

    /// The identity's unfinished solo game, if its task still runs.
    pub fn solo_of(&self, player: &str) -> Option<SoloHandle> {
        lock(&self.solos)
            .get(player)
            .filter(|h| h.is_running())
            .cloned()
    }

    /// Starts the task of a solo game, owned here at `owner`, and registers
    /// it under its player.
    pub fn spawn_solo(&self, record: SoloRecord, owner: OwnerEpoch) -> Result<SoloHandle, String> {
        let player = record.owner.clone();
        let (handle, task) = crate::solo::SoloGame::start(record, owner, &self.solo_deps)?;
        lock(&self.solos).insert(player, handle.clone());
        tokio::spawn(task);
        Ok(handle)
    }

    /// Starts the task of a room resumed from the store, claimed at
    /// `owner`; the side to move gets at least `grace`.
    pub fn resume_room(
        self: &std::sync::Arc<Self>,
        stored: StoredRoom,
        owner: OwnerEpoch,
        grace: std::time::Duration,
    ) -> Result<RoomCode, ResumeError> {
        let room = Room::resume(stored, owner, grace, &self.room_deps)?;
        let code = room.code().clone();
        self.spawn(room);
        Ok(code)
    }

    /// Starts a room task with a fresh code; returns its handle and invite.
    pub fn create_room(
        self: &std::sync::Arc<Self>,
        options: LobbyOptions,
        host: &Identity,
    ) -> (RoomHandle, Option<String>) {
        let code = {
            let mut rooms = lock(&self.rooms);
            rooms.retain(|_, h| h.is_running());
            let kept = lock(&self.unresumable);
            loop {
                // A code another instance holds is refused by the first
                // write (which claims a new room only if nothing is stored).
                let code = RoomCode::generate();
                if !rooms.contains_key(&code) && !kept.iter().any(|u| u.code == code.as_str()) {
                    break code;
                }
            }
        };
        tracing::info!(room = %code, rule_set = %options.rule_set, "lobby created");
        let room = Room::new(code, options, host, &self.room_deps);
        let invite = room.invite().map(str::to_owned);
        (self.spawn(room), invite)
    }

    fn spawn(self: &std::sync::Arc<Self>, room: Room) -> RoomHandle {
        let code = room.code().clone();
        let (handle, task) = room.start();
        lock(&self.rooms).insert(code.clone(), handle.clone());
        let span = tracing::info_span!("room", code = %code);
        let registry = self.clone();
        let run = async move {
            task.await;
            // Out of the registry at once (unloaded rooms above all, which
            // must leave nothing behind), unless the code runs again.
            let mut rooms = lock(&registry.rooms);
            if rooms.get(&code).is_some_and(|h| !h.is_running()) {
                rooms.remove(&code);
            }
        };
        tokio::spawn(tracing::Instrument::instrument(run, span));
        handle
    }

    /// Whether `id` was found unresumable here.
    pub fn is_unresumable(&self, id: &str) -> bool {
        lock(&self.unresumable).iter().any(|u| u.code == id)
    }

    /// The stored rooms found unresumable here.
    pub fn unresumable(&self) -> Vec<Unresumable> {
        lock(&self.unresumable).clone()
    }

    /// Lists a stored room that does not resume: kept in the store
    /// untouched, shown to the operator, never dropped silently.
    pub fn list_unresumable(&self, id: &str, reason: String, stakes: Option<StrandedStakes>) {
        tracing::error!(room = %id, %reason, "could not resume; kept in the store and listed at /api/admin/rooms/unresumable");
        let mut list = lock(&self.unresumable);
        if !list.iter().any(|u| u.code == id) {
            crate::metrics::METRICS.rooms_unresumable.inc();
            list.push(Unresumable {
                code: id.to_owned(),
                reason,
                stakes,
            });
        }
    }
}
