//! How a room keeps the store in step: conditional writes (the record, or
//! a move appended without it), unknown outcomes resolved by re-sending,
//! reloading when the store has moved on.

use tokio::time::Instant;

use super::{Room, storage_unavailable, wall_clock};
use crate::lobby::Phase;
use crate::outbound::{Outbound, Refusal};
use crate::store::{MoveAppend, MoveEffects, RoomWrite, WriteError};
use jumpgate_protocol::ServerMessage;

impl Room {
    /// Sends the lobby and everything pending to the store, conditional on
    /// the version last known stored. Every change bumps `version` first;
    /// resending an unchanged version sends the very same record. On an
    /// unknown outcome the change stays in memory, unshown, until a later
    /// write (the same one, or one that includes it) is confirmed. A change
    /// that is one move and nothing else is appended to the move log
    /// without the record (see [`Room::appends_move`]).
    pub(super) async fn persist(&mut self) -> Result<(), WriteError> {
        self.lobby.stamp_decisions(crate::sync::now_ms());
        if let Some(effects) = self.appends_move() {
            return self.append_move(effects).await;
        }
        let closed = self.can_close();
        // A finished lobby's keys expire a while after, unless it stays open
        // for days: a correspondence lobby lives until it closes.
        let expires = closed || !self.lobby.is_correspondence();
        // "My games" follows the seats: listed under each seat holder not
        // yet listed, unlisted for those who left (all of them once the
        // lobby closes).
        let seats: Vec<String> = if closed {
            Vec::new()
        } else {
            self.lobby
                .seats
                .iter()
                .flatten()
                .map(|s| s.id.clone())
                .collect()
        };
        let seated: Vec<String> = seats
            .iter()
            .filter(|id| !self.indexed.contains(id))
            .cloned()
            .collect();
        let unseated: Vec<String> = self
            .indexed
            .iter()
            .filter(|id| !seats.contains(id))
            .cloned()
            .collect();
        let finished = matches!(self.lobby.phase, Phase::Finished | Phase::Ended);
        let version = self.lobby.version;
        // The record of a failed attempt at this version is sent again as
        // it was (its deadlines would differ if rebuilt); the write takes
        // it and the pending moves, and gives them back if it fails.
        let record = match self.last_attempt.take() {
            Some((v, record)) if v == version => record,
            _ => self.lobby.to_record(wall_clock()),
        };
        let write = RoomWrite {
            code: self.lobby.code.to_string(),
            owner: self.owner.clone(),
            expected_version: self.stored_version,
            version,
            record,
            moves: std::mem::take(&mut self.lobby.pending_moves),
            // A finished game's PDN is dated when it is stored: the day
            // (UTC) it ended, give or take a retry.
            finished_games: dated(&self.lobby.pending_games),
            open: !closed,
            expire_after: (closed || (finished && expires)).then_some(self.settings.finished_ttl),
            seated,
            unseated,
        };
        let result = self.store.write(&write).await;
        match result {
            Ok(()) => {
                self.indexed = seats;
                self.lobby.pending_games.clear();
                self.lobby.moves_since_record = 0;
                self.caught_up(version);
                Ok(())
            }
            Err(e) => {
                self.last_attempt = Some((version, write.record));
                self.lobby.pending_moves = write.moves;
                Err(self.not_stored(e))
            }
        }
    }

    /// The effects to append the change with, if it is one move and
    /// nothing else: the only pending move, the only change since the
    /// version stored (so the record stored plus this move is the lobby),
    /// its game still in play (a move that ends a game changes the series
    /// and is written with the record), and the record not due for a
    /// rewrite (`--compact-every`). A retry of the same version decides
    /// the same way and sends the same effects.
    fn appends_move(&self) -> Option<MoveEffects> {
        let lobby = &self.lobby;
        let [m] = lobby.pending_moves.as_slice() else {
            return None;
        };
        if self.stored_version == 0
            || lobby.version != self.stored_version + 1
            || !lobby.pending_games.is_empty()
            || !lobby.game_in_play()
            || lobby.moves_since_record + 1 >= self.settings.compact_every
        {
            return None;
        }
        if let Some(effects) = m.effects.as_ref().filter(|e| e.version == lobby.version) {
            return Some(effects.clone());
        }
        lobby.move_effects(wall_clock())
    }

    /// Appends the pending move with its effects, conditional and fenced
    /// like a record write.
    async fn append_move(&mut self, effects: MoveEffects) -> Result<(), WriteError> {
        let version = self.lobby.version;
        let mut moves = std::mem::take(&mut self.lobby.pending_moves);
        if let Some(m) = moves.first_mut() {
            m.effects = Some(effects);
        }
        let append = MoveAppend {
            code: self.lobby.code.to_string(),
            owner: self.owner.clone(),
            expected_version: self.stored_version,
            version,
            moves,
        };
        let result = self.store.append(&append).await;
        match result {
            Ok(()) => {
                self.lobby.moves_since_record += 1;
                self.caught_up(version);
                Ok(())
            }
            Err(e) => {
                // Kept, effects and all, for the retry (or the record
                // write that takes it along).
                self.lobby.pending_moves = append.moves;
                Err(self.not_stored(e))
            }
        }
    }

    /// The store holds `version`: whatever was held back can go on.
    fn caught_up(&mut self, version: u64) {
        self.stored_version = version;
        if let Some(since) = self.unsaved_since.take() {
            crate::metrics::METRICS.rooms_awaiting_store.dec();
            tracing::info!(room = %self.lobby.code, "store caught up");
            self.lobby.give_back_time(since.elapsed());
        }
    }

    /// A write that did not go through: a fenced room stops here, a
    /// refused one reloads, an unknown outcome holds the change.
    fn not_stored(&mut self, e: WriteError) -> WriteError {
        match &e {
            WriteError::Fenced(why) => {
                tracing::warn!(room = %self.lobby.code, %why, "another instance took the room over; stopping it here");
                self.moved();
                return e;
            }
            WriteError::Conflict(why) => {
                tracing::error!(room = %self.lobby.code, %why, "write refused by the store; reloading the room");
                self.stale = true;
            }
            WriteError::Unavailable(_) => {
                crate::metrics::METRICS.writes_unconfirmed.inc();
                tracing::warn!(room = %self.lobby.code, error = %e, "write not confirmed; holding the change until the store answers");
            }
        }
        if self.unsaved_since.is_none() {
            crate::metrics::METRICS.rooms_awaiting_store.inc();
            self.unsaved_since = Some(Instant::now());
        }
        e
    }

    /// A change someone asked for: bump, store it, and in a staked lobby
    /// take the stakes it needs. `Ok` once everything is stored; the caller
    /// then acknowledges and broadcasts.
    pub(super) async fn save_requested(&mut self) -> Result<(), Refusal> {
        self.lobby.version += 1;
        if self.persist().await.is_err() {
            return Err(storage_unavailable());
        }
        if self.lobby.escrow_intent.is_some() {
            self.take_stakes().await?;
        }
        Ok(())
    }

    /// A change that happens anyway (a clock, a disconnect): bump and try
    /// to store it; if that fails, the loop retries.
    pub(super) async fn commit_or_retry(&mut self) {
        self.lobby.version += 1;
        // A stale room reloads before it writes anything again.
        if !self.stale {
            let _ = self.persist().await;
        }
    }

    /// Before a new request is taken: the store must hold everything this
    /// room has done, no stakes may be in doubt, and a finished series must
    /// be paid. Tries to get there now; `false` when it cannot yet (the
    /// request is then refused with the retryable `storage_unavailable`).
    pub(super) async fn settle_doubts(&mut self) -> bool {
        if self.stale && !self.reload().await {
            return false;
        }
        if self.unsaved() {
            if self.persist().await.is_err() {
                return false;
            }
            // What was held back can be shown now.
            self.broadcast();
        }
        if self.lobby.escrow_intent.is_some() && !self.release_stakes().await {
            return false;
        }
        self.settle_pending().await;
        self.lobby.pending_settlement.is_none()
    }

    /// Rebuilds the room from what the store holds, after the store refused
    /// a write as not following from it. Connections stay; the stored room
    /// wins (it holds everything that was acknowledged).
    pub(super) async fn reload(&mut self) -> bool {
        let stored = match self.store.load(self.lobby.code.as_str()).await {
            Ok(Some(stored)) => stored,
            Ok(None) if !self.lobby.game_in_play() => {
                // The keys expired or were lost. With no game in play,
                // memory holds everything needed: write it afresh.
                tracing::warn!(room = %self.lobby.code, "the stored room is gone; writing it again");
                self.stored_version = 0;
                self.last_attempt = None;
                self.stale = false;
                self.lobby.version += 1;
                return self.persist().await.is_ok();
            }
            Ok(None) => {
                tracing::error!(room = %self.lobby.code, "the stored room is gone mid-game; closing");
                self.halt();
                return false;
            }
            Err(e) => {
                tracing::warn!(room = %self.lobby.code, error = %e, "could not reload; will retry");
                return false;
            }
        };
        let deps = super::RoomDeps {
            settings: self.settings.clone(),
            store: self.store.clone(),
            wallets: self.wallets.clone(),
            records: self.records.clone(),
        };
        match Room::resume(
            stored,
            self.owner.clone(),
            self.settings.resume_grace,
            &deps,
        ) {
            Ok(mut fresh) => {
                fresh.members = std::mem::take(&mut self.members);
                fresh.record_views = std::mem::take(&mut self.record_views);
                fresh.head_to_head = self.head_to_head.take();
                *self = fresh;
                tracing::info!(room = %self.lobby.code, version = self.lobby.version, "reloaded from the store");
                self.broadcast();
                true
            }
            Err(e) => {
                tracing::error!(room = %self.lobby.code, error = %e, "the stored room does not replay; closing");
                crate::metrics::METRICS.rooms_unresumable.inc();
                self.halt();
                false
            }
        }
    }

    /// Gives the room up for another instance to take at once: everything
    /// stored and settled first, then ownership released, then the members
    /// told to reconnect. `false` (the room carries on) while the store
    /// cannot confirm that.
    pub(super) async fn hand_over(&mut self, to: Option<&str>) -> bool {
        if self.halted {
            return true;
        }
        if !self.settle_doubts().await {
            return false;
        }
        match self
            .store
            .release(self.lobby.code.as_str(), &self.owner, to)
            .await
        {
            Ok(released) => {
                if released {
                    crate::metrics::METRICS.room_handovers.inc();
                    tracing::info!(room = %self.lobby.code, to = to.unwrap_or("any instance"), "handed over");
                } else {
                    tracing::warn!(room = %self.lobby.code, "asked to hand over a room another instance already took");
                }
                self.moved();
                true
            }
            Err(e) => {
                tracing::warn!(room = %self.lobby.code, error = %e, "could not release the room; it stays here");
                false
            }
        }
    }

    /// Unloads a correspondence lobby nobody is connected to: with
    /// everything stored and settled, its ownership is released and it is
    /// listed as dormant until its next timer (a break's end or its expiry),
    /// when any instance's sweep loads it again; so does any request for it.
    /// Not possible now (the store is behind, or does not answer): the room
    /// stays and tries again after another idle period.
    pub(super) async fn unload(&mut self) {
        if !self.members.is_empty() || !self.settle_doubts().await || self.in_doubt() {
            self.idle_since = Some(Instant::now());
            return;
        }
        // A timer already due (held back while the store was behind) fires
        // first: the lobby is listed under a time still to come, so no sweep
        // can take its entry for a stale one before the park lands.
        let clock = wall_clock();
        let due = self.lobby.next_deadline();
        if due.is_some_and(|t| t <= clock.now) {
            self.idle_since = Some(Instant::now());
            return;
        }
        let wake_ms = due.map_or(u64::MAX, |t| clock.to_unix_ms(t));
        match self
            .store
            .park(self.lobby.code.as_str(), &self.owner, wake_ms)
            .await
        {
            Ok(true) => self.unloaded_now(),
            // Not ours to park any more: either an earlier attempt whose
            // answer was lost did park it (the fence says so, at our
            // epoch), or another instance took it over.
            Ok(false) => match self.store.fence(self.lobby.code.as_str()).await {
                Ok(Some(fence)) if self.parked_by_us(&fence) => self.unloaded_now(),
                Ok(_) => {
                    tracing::warn!(room = %self.lobby.code, "another instance took the room over; stopping it here");
                    self.moved();
                }
                Err(_) => self.idle_since = Some(Instant::now()),
            },
            // Unknown outcome: the fence tells, once it can be read; until
            // then the room stays loaded and tries again later.
            Err(e) => match self.store.fence(self.lobby.code.as_str()).await {
                Ok(Some(fence)) if self.parked_by_us(&fence) => self.unloaded_now(),
                // Taken over meanwhile (or gone): not ours to serve.
                Ok(ref fence) if fence.as_ref().is_none_or(|f| !self.owner.holds(f)) => {
                    tracing::warn!(room = %self.lobby.code, "the room is no longer ours; stopping it here");
                    self.moved();
                }
                _ => {
                    tracing::warn!(room = %self.lobby.code, error = %e, "could not unload the room; it stays loaded for now");
                    self.idle_since = Some(Instant::now());
                }
            },
        }
    }

    /// Whether the fence shows this room parked by this owner: released at
    /// our epoch, nobody having claimed it since.
    fn parked_by_us(&self, fence: &crate::store::Fence) -> bool {
        fence.parked && fence.owner.is_none() && fence.epoch == self.owner.epoch
    }

    fn unloaded_now(&mut self) {
        crate::metrics::METRICS.rooms_unloaded.inc();
        tracing::debug!(room = %self.lobby.code, "unloaded until someone asks for it");
        self.unloaded = true;
        self.halted = true;
    }

    /// Answers a request that reached the mailbox after the room was
    /// unloaded: read-only requests from what it held (the store holds the
    /// same), an entry by sending it to load the room again.
    pub(super) async fn answer_unloaded(&mut self, command: super::RoomCommand) {
        use super::{Entered, RoomCommand};
        match command {
            RoomCommand::Enter { reply, .. } => {
                let _ = reply.send(Entered::Unloaded);
            }
            RoomCommand::Summary { who, invite, reply } => {
                let summary = self
                    .lobby
                    .admits(who.as_deref(), invite.as_deref())
                    .then(|| self.summary());
                let _ = reply.send(summary);
            }
            RoomCommand::Games { invite, reply } => {
                let games = if self.lobby.admits(None, invite.as_deref()) {
                    let stored = self.store.games(self.lobby.code.as_str()).await;
                    Some(stored.unwrap_or_default())
                } else {
                    None
                };
                let _ = reply.send(games);
            }
            RoomCommand::Positions { invite, reply } => {
                let positions = self
                    .lobby
                    .admits(None, invite.as_deref())
                    .then(|| self.positions());
                let _ = reply.send(positions);
            }
            RoomCommand::HandOver { reply, .. } => {
                let _ = reply.send(true);
            }
            RoomCommand::Leave { seq, out, .. } => {
                let _ = out.try_send(Outbound::Direct(Box::new(ServerMessage::error(
                    Some(seq),
                    jumpgate_protocol::ErrorCode::RoomUnavailable,
                    "the lobby was unloaded just now; reconnect naming it and send again",
                ))));
            }
            RoomCommand::Act { .. } | RoomCommand::Disconnect { .. } | RoomCommand::CheckOwner => {}
        }
    }

    /// Stops the room if the store names another owner or epoch. A store
    /// that cannot be read changes nothing: writes are fenced anyway.
    pub(super) async fn check_owner(&mut self) {
        if let Ok(Some(fence)) = self.store.fence(self.lobby.code.as_str()).await
            && !self.owner.holds(&fence)
        {
            tracing::warn!(room = %self.lobby.code, owner = fence.owner.as_deref().unwrap_or("none"), epoch = fence.epoch, "another instance took the room over; stopping it here");
            self.moved();
        }
    }

    /// Stops the room here because it belongs to another instance now:
    /// nothing more is acknowledged, and the members are told to
    /// reconnect (which takes them to the new owner).
    pub(super) fn moved(&mut self) {
        self.halted = true;
        for m in self.members.drain(..) {
            if m.out.try_send(Outbound::Moved).is_err() {
                m.kick.notify_one();
            }
        }
    }

    /// Stops the room for good: its members are told they are out of it.
    pub(super) fn halt(&mut self) {
        self.halted = true;
        let left = ServerMessage::Left {
            code: self.lobby.code.to_string(),
        };
        for m in self.members.drain(..) {
            let _ = m.out.try_send(Outbound::Direct(Box::new(left.clone())));
        }
    }
}

/// The games' PDN with today's date (UTC) where it was left unknown.
fn dated(games: &[(u64, String)]) -> Vec<(u64, String)> {
    // Most writes (every move) carry no finished game.
    if games.is_empty() {
        return Vec::new();
    }
    let now = crate::sync::now_secs();
    let date = crate::rules::pdn::utc_date(now);
    games
        .iter()
        .map(|(n, pdn)| (*n, crate::rules::pdn::with_date(pdn, &date)))
        .collect()
}
