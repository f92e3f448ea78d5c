//! A protocol 2 client's copy of its room, kept current by applying events.
//!
//! Pure: no I/O and no clock. Feed it every message from the server with
//! [`RoomView::apply`]; when it answers [`Gap`], send `resync` with [`Gap::since`] and
//! keep feeding it what comes back (the missing events, or a `snapshot`).

use super::{Changed, GameChanges, GameSnapshot, Moved, RoomChanges, RoomSnapshot};
use crate::game::PieceView;
use crate::message::ServerMessage;

/// The room as the events so far say it is: empty until the first `snapshot`.
///
/// Piece order in [`GameSnapshot::pieces`] carries no meaning: a moved piece keeps its
/// place in the list, where the server's next snapshot may list it elsewhere.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoomView {
    room: Option<RoomSnapshot>,
}

/// What [`RoomView::apply`] did with a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Update {
    /// A `snapshot` replaced the whole room.
    Replaced,
    /// An event moved the room one version on.
    Applied,
    /// An event for a version already held (resent after a `resync`): ignored.
    AlreadyHeld,
    /// `left` for this room: the view is empty again.
    Left,
    /// A message that does not concern the room (`ack`, `error`, v1's `state`…).
    Unrelated,
}

/// Why an event could not be applied; the view is unchanged (or, for
/// [`Gap::Mismatch`], emptied). Ask `resync` with [`Gap::since`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Gap {
    /// An event arrived before any `snapshot`.
    #[error("event for version {got} before any snapshot")]
    NoSnapshot {
        /// The event's version.
        got: u64,
    },
    /// One or more versions were missed.
    #[error("event for version {got} after version {have}: versions missed")]
    Missed {
        /// The version the view holds.
        have: u64,
        /// The event's version.
        got: u64,
    },
    /// The event does not fit the room (a move from an empty square, a game change with
    /// no game): the view is dropped and needs a whole `snapshot`.
    #[error("event for version {version} does not fit the room: {why}")]
    Mismatch {
        /// The event's version.
        version: u64,
        /// What did not fit.
        why: &'static str,
    },
}

impl Gap {
    /// The `since` to send in `resync`: the version held, or 0 (which always gets a
    /// `snapshot`) when there is nothing to build on.
    pub fn since(&self) -> u64 {
        match self {
            Gap::Missed { have, .. } => *have,
            Gap::NoSnapshot { .. } | Gap::Mismatch { .. } => 0,
        }
    }
}

impl RoomView {
    /// An empty view, waiting for its first `snapshot`.
    pub fn new() -> RoomView {
        RoomView::default()
    }

    /// A view holding `snapshot`.
    pub fn from_snapshot(snapshot: RoomSnapshot) -> RoomView {
        RoomView {
            room: Some(snapshot),
        }
    }

    /// The room as of [`version`](Self::version), if a snapshot has arrived.
    pub fn room(&self) -> Option<&RoomSnapshot> {
        self.room.as_ref()
    }

    /// The room, taken out of the view.
    pub fn into_room(self) -> Option<RoomSnapshot> {
        self.room
    }

    /// The room version held, if any.
    pub fn version(&self) -> Option<u64> {
        self.room.as_ref().map(|room| room.version)
    }

    /// Applies one message from the server.
    ///
    /// A `snapshot` replaces the room; `moved` and `changed` must carry the next version
    /// (older ones are ignored as already held); `left` for this room empties the view.
    /// Everything else is [`Update::Unrelated`].
    pub fn apply(&mut self, message: &ServerMessage) -> Result<Update, Gap> {
        match message {
            ServerMessage::Snapshot(snapshot) => {
                self.room = Some(snapshot.clone());
                Ok(Update::Replaced)
            }
            ServerMessage::Moved(moved) => {
                let room = self.next(moved.version)?;
                let Some(room) = room else {
                    return Ok(Update::AlreadyHeld);
                };
                if let Err(why) = apply_moved(room, moved) {
                    self.room = None;
                    return Err(Gap::Mismatch {
                        version: moved.version,
                        why,
                    });
                }
                Ok(Update::Applied)
            }
            ServerMessage::Changed(changed) => {
                let room = self.next(changed.version)?;
                let Some(room) = room else {
                    return Ok(Update::AlreadyHeld);
                };
                if let Err(why) = apply_changed(room, changed) {
                    self.room = None;
                    return Err(Gap::Mismatch {
                        version: changed.version,
                        why,
                    });
                }
                Ok(Update::Applied)
            }
            ServerMessage::Left { code } => match &self.room {
                Some(room) if room.code == *code => {
                    self.room = None;
                    Ok(Update::Left)
                }
                _ => Ok(Update::Unrelated),
            },
            _ => Ok(Update::Unrelated),
        }
    }

    /// The room to apply an event of `version` to: `Ok(None)` if already held.
    fn next(&mut self, version: u64) -> Result<Option<&mut RoomSnapshot>, Gap> {
        let Some(room) = self.room.as_mut() else {
            return Err(Gap::NoSnapshot { got: version });
        };
        if version <= room.version {
            return Ok(None);
        }
        if version != room.version + 1 {
            return Err(Gap::Missed {
                have: room.version,
                got: version,
            });
        }
        Ok(Some(room))
    }
}

/// Plays `moved` on the room's game. Checks everything first, so that a refusal leaves
/// the room as it was.
fn apply_moved(room: &mut RoomSnapshot, moved: &Moved) -> Result<(), &'static str> {
    let game = room.game.as_mut().ok_or("a move with no game")?;
    let from = moved.path.first().ok_or("a move with no path")?;
    let to = moved.to().ok_or("a move with no path")?;
    let mover = game
        .pieces
        .iter()
        .position(|p| p.square == *from)
        .ok_or("no piece on the move's start square")?;
    if moved
        .captures
        .iter()
        .any(|square| !game.pieces.iter().any(|p| p.square == *square))
    {
        return Err("a capture of an empty square");
    }
    if (moved.boosts.is_some() || moved.wormholes.is_some()) && game.space.is_none() {
        return Err("Space Mode fields outside Space Mode");
    }
    let piece = &mut game.pieces[mover];
    piece.square = to.to_owned();
    piece.king |= moved.crowned;
    let mover_color = piece.color;
    // Only the other side's pieces are taken (the mover may end where it started).
    game.pieces
        .retain(|p: &PieceView| p.color == mover_color || !moved.captures.contains(&p.square));
    game.moves.push(moved.notation.clone());
    game.last_move = Some(moved.played());
    game.turn = moved.turn;
    game.ply = moved.ply;
    game.deadline = moved.deadline;
    game.remaining_ms = moved.remaining_ms;
    game.legal.clone_from(&moved.legal);
    game.legal_captures.clone_from(&moved.legal_captures);
    game.legal_teleports.clone_from(&moved.legal_teleports);
    game.legal_boosts.clone_from(&moved.legal_boosts);
    game.legal_boost_teleports
        .clone_from(&moved.legal_boost_teleports);
    game.must_capture.clone_from(&moved.must_capture);
    game.draw_offer = moved.draw_offer;
    game.draw_declined = moved.draw_declined;
    if let Some(space) = game.space.as_mut() {
        if let Some(boosts) = moved.boosts {
            space.boosts = boosts;
        }
        if let Some(wormholes) = &moved.wormholes {
            space.wormholes.clone_from(wormholes);
        }
    }
    if moved.points.is_some() {
        game.points = moved.points;
    }
    game.result = moved.result;
    apply_room_changes(room, &moved.room);
    room.version = moved.version;
    Ok(())
}

fn apply_changed(room: &mut RoomSnapshot, changed: &Changed) -> Result<(), &'static str> {
    let game_after = match &changed.room.game {
        Some(game) => game.is_some(),
        None => room.game.is_some(),
    };
    if !changed.game.is_empty() && !game_after {
        return Err("a game change with no game");
    }
    apply_room_changes(room, &changed.room);
    if let Some(game) = room.game.as_mut() {
        apply_game_changes(game, &changed.game);
    }
    room.version = changed.version;
    Ok(())
}

fn apply_room_changes(room: &mut RoomSnapshot, changes: &RoomChanges) {
    let RoomChanges {
        host,
        players,
        connected,
        head_to_head,
        spectators,
        phase,
        series,
        expires_at,
        game,
        board,
        break_ends_at,
        next_round,
        rematch,
    } = changes;
    if let Some(host) = host {
        room.host.clone_from(host);
    }
    if let Some(players) = players {
        room.players.clone_from(players);
    }
    if let Some(connected) = connected {
        for (player, connected) in room.players.iter_mut().zip(connected) {
            if let Some(player) = player {
                player.connected = *connected;
            }
        }
    }
    if let Some(head_to_head) = head_to_head {
        room.head_to_head.clone_from(head_to_head);
    }
    if let Some(spectators) = spectators {
        room.spectators = *spectators;
    }
    if let Some(phase) = phase {
        room.phase = *phase;
    }
    if let Some(series) = series {
        room.series.clone_from(series);
    }
    if let Some(expires_at) = expires_at {
        room.expires_at = *expires_at;
    }
    if let Some(game) = game {
        room.game = game.as_deref().cloned();
    }
    if let Some(board) = board {
        room.board.clone_from(board);
    }
    if let Some(break_ends_at) = break_ends_at {
        room.break_ends_at = *break_ends_at;
    }
    if let Some(next_round) = next_round {
        room.next_round.clone_from(next_round);
    }
    if let Some(rematch) = rematch {
        room.rematch.clone_from(rematch);
    }
}

fn apply_game_changes(game: &mut GameSnapshot, changes: &GameChanges) {
    let GameChanges {
        deadline,
        remaining_ms,
        legal,
        legal_captures,
        legal_teleports,
        legal_boosts,
        legal_boost_teleports,
        must_capture,
        draw_offer,
        draw_declined,
        result,
        points,
    } = changes;
    if let Some(deadline) = deadline {
        game.deadline = *deadline;
    }
    if let Some(remaining_ms) = remaining_ms {
        game.remaining_ms = *remaining_ms;
    }
    if let Some(legal) = legal {
        game.legal.clone_from(legal);
    }
    if let Some(legal_captures) = legal_captures {
        game.legal_captures.clone_from(legal_captures);
    }
    if let Some(legal_teleports) = legal_teleports {
        game.legal_teleports.clone_from(legal_teleports);
    }
    if let Some(legal_boosts) = legal_boosts {
        game.legal_boosts.clone_from(legal_boosts);
    }
    if let Some(legal_boost_teleports) = legal_boost_teleports {
        game.legal_boost_teleports.clone_from(legal_boost_teleports);
    }
    if let Some(must_capture) = must_capture {
        game.must_capture.clone_from(must_capture);
    }
    if let Some(draw_offer) = draw_offer {
        game.draw_offer = *draw_offer;
    }
    if let Some(draw_declined) = draw_declined {
        game.draw_declined = *draw_declined;
    }
    if let Some(result) = result {
        game.result = *result;
    }
    if points.is_some() {
        game.points = *points;
    }
}
