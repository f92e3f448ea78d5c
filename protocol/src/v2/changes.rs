//! The `changed` event between two snapshots of one room, for changes that are not moves.
//!
//! A server that knows what a change did can write the event directly; one that does not
//! (a seat taken, a clock run out, a series ended) compares the snapshot it last showed
//! with the new one. Only fields an event can carry may differ: anything else (the
//! lobby's fixed settings, the board of a game in progress) needs a `snapshot`.

use super::{Changed, GameChanges, GameSnapshot, RoomChanges, RoomSnapshot};
use crate::game::PieceView;
use crate::room::PlayerView;

impl Changed {
    /// The event that turns `old` into `new` (carrying `new.version`), or `None` when
    /// they differ in a field no event changes, so that only a `snapshot` can say it.
    ///
    /// Applied to `old` with [`RoomView`](super::RoomView), the event gives `new`
    /// exactly, but for the order of the game's `pieces`, which is `old`'s.
    pub fn between(old: &RoomSnapshot, new: &RoomSnapshot) -> Option<Changed> {
        let fixed_same = old.code == new.code
            && old.rule_set == new.rule_set
            && old.series_length == new.series_length
            && old.invite_only == new.invite_only
            && old.pace == new.pace
            && old.draw_rules == new.draw_rules
            && old.stake == new.stake
            && old.invite == new.invite
            && old.invite_link == new.invite_link;
        if !fixed_same {
            return None;
        }
        let mut room = RoomChanges::default();
        let mut game = GameChanges::default();
        if old.host != new.host {
            room.host = Some(new.host.clone());
        }
        if old.players != new.players {
            if only_presence_differs(&old.players, &new.players) {
                room.connected = Some(
                    new.players
                        .iter()
                        .map(|p| p.as_ref().is_some_and(|p| p.connected))
                        .collect(),
                );
            } else {
                room.players = Some(new.players.clone());
            }
        }
        room.head_to_head = changed(&old.head_to_head, &new.head_to_head);
        room.spectators = changed(&old.spectators, &new.spectators);
        room.phase = changed(&old.phase, &new.phase);
        room.series = changed(&old.series, &new.series);
        room.expires_at = changed(&old.expires_at, &new.expires_at);
        room.board = changed(&old.board, &new.board);
        room.break_ends_at = changed(&old.break_ends_at, &new.break_ends_at);
        room.next_round = changed(&old.next_round, &new.next_round);
        room.rematch = changed(&old.rematch, &new.rematch);
        match (&old.game, &new.game) {
            (None, None) => {}
            (Some(a), Some(b)) => match GameChanges::between(a, b) {
                Some(changes) => game = changes,
                None => room.game = Some(Some(Box::new(b.clone()))),
            },
            (_, b) => room.game = Some(b.clone().map(Box::new)),
        }
        Some(Changed {
            version: new.version,
            room,
            game,
        })
    }
}

impl GameChanges {
    /// The in-place changes that turn game `old` into `new`, or `None` when the board,
    /// the moves or other fields these changes do not carry differ (a new game, or a
    /// move: a `moved` event says those). `pieces` is a set: the same pieces listed in
    /// another order are the same board (a client that applied a `moved` keeps the
    /// moved piece where it was, the server's next snapshot lists it elsewhere).
    pub fn between(old: &GameSnapshot, new: &GameSnapshot) -> Option<GameChanges> {
        let board_same = old.dark_seat == new.dark_seat
            && same_pieces(&old.pieces, &new.pieces)
            && old.turn == new.turn
            && old.ply == new.ply
            && old.moves == new.moves
            && old.last_move == new.last_move
            && old.board == new.board
            && old.space == new.space;
        if !board_same {
            return None;
        }
        Some(GameChanges {
            deadline: changed(&old.deadline, &new.deadline),
            remaining_ms: changed(&old.remaining_ms, &new.remaining_ms),
            legal: changed(&old.legal, &new.legal),
            legal_captures: changed(&old.legal_captures, &new.legal_captures),
            legal_teleports: changed(&old.legal_teleports, &new.legal_teleports),
            legal_boosts: changed(&old.legal_boosts, &new.legal_boosts),
            legal_boost_teleports: changed(&old.legal_boost_teleports, &new.legal_boost_teleports),
            must_capture: changed(&old.must_capture, &new.must_capture),
            draw_offer: changed(&old.draw_offer, &new.draw_offer),
            draw_declined: changed(&old.draw_declined, &new.draw_declined),
            result: changed(&old.result, &new.result),
            points: match (old.points, new.points) {
                (a, Some(b)) if a != Some(b) => Some(b),
                _ => None,
            },
        })
        .filter(|_| old.points.is_none() || new.points.is_some())
    }
}

/// `Some(new)` when it differs from `old`.
fn changed<T: PartialEq + Clone>(old: &T, new: &T) -> Option<T> {
    (old != new).then(|| new.clone())
}

/// Whether the two lists hold the same pieces, in any order (one piece a square).
fn same_pieces(old: &[PieceView], new: &[PieceView]) -> bool {
    old.len() == new.len() && old.iter().all(|piece| new.contains(piece))
}

/// Whether the two seat lists differ in `connected` flags only.
fn only_presence_differs(old: &[Option<PlayerView>], new: &[Option<PlayerView>]) -> bool {
    old.len() == new.len()
        && old.iter().zip(new).all(|(a, b)| match (a, b) {
            (None, None) => true,
            (Some(a), Some(b)) => a.id == b.id && a.name == b.name && a.record == b.record,
            _ => false,
        })
}
