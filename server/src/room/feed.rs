//! Protocol 2's side of a room: what its v2 members have been shown, the
//! event for each confirmed version (`moved` built from the move just
//! played, `changed` from the snapshot last shown), a bounded history of
//! those events for `resync { since }`, and `snapshot`s where events cannot
//! say it (a member's first frame, several versions confirmed at once, a
//! `since` older than the history).

use std::collections::VecDeque;
use std::sync::Arc;

use jumpgate_protocol as wire;
use jumpgate_protocol::ServerMessage;
use jumpgate_protocol::v2::{Changed, CompactLegal, Moved, RoomSnapshot, RoomView};
use tokio::time::Instant;

use super::{Room, view};
use crate::outbound::{ConnId, Outbound, SharedFrame};
use crate::wire_view;

/// How many events a room keeps for members that missed some: a client
/// that fell further behind gets a `snapshot`. 64 covers a reconnect in
/// the middle of a fast game; each is a shared, already encoded frame of a
/// couple of hundred bytes.
pub const HISTORY_EVENTS: usize = 64;

/// What a room's v2 members have seen. Empty while none is in the room.
#[derive(Debug, Default)]
pub struct Feed {
    /// The room as the last event (or snapshot) showed it.
    shown: Option<RoomView>,
    /// The events after the oldest version still answerable, in order, one
    /// per version up to the shown one.
    history: VecDeque<Arc<SharedFrame>>,
    /// The version a move made, while no other change followed it.
    move_version: Option<u64>,
    /// v2 members shown nothing yet: their first frame is a snapshot.
    unshown: Vec<ConnId>,
}

impl Feed {
    /// The lobby version `version` is the move just played.
    pub fn note_move(&mut self, version: u64) {
        self.move_version = Some(version);
    }

    /// A v2 member came in: it gets a snapshot next.
    pub fn note_entry(&mut self, conn: ConnId) {
        self.unshown.push(conn);
    }

    /// Whether `conn` is still to be shown its first snapshot (and takes
    /// it off that list).
    pub fn take_unshown(&mut self, conn: ConnId) -> bool {
        let before = self.unshown.len();
        self.unshown.retain(|c| *c != conn);
        self.unshown.len() != before
    }

    /// No v2 member left: nothing to keep.
    pub fn forget(&mut self) {
        *self = Feed::default();
    }

    /// The version last shown, if any.
    fn shown_version(&self) -> Option<u64> {
        self.shown.as_ref().and_then(RoomView::version)
    }

    fn record(&mut self, frame: &Arc<SharedFrame>) {
        if self.history.len() == HISTORY_EVENTS {
            self.history.pop_front();
        }
        self.history.push_back(frame.clone());
    }
}

/// What a broadcast sends the room's v2 members.
pub struct V2Frames {
    /// The event (or snapshot) for members already shown the room.
    pub shown: Option<Arc<SharedFrame>>,
    /// A snapshot for members shown nothing yet, built when one needs it.
    pub first: Option<Arc<SharedFrame>>,
}

impl Room {
    /// The v2 snapshot of the room as it is.
    pub(super) fn snapshot(&self) -> RoomSnapshot {
        RoomSnapshot::from(self.state())
    }

    /// The frames that bring v2 members to the current version, and the
    /// history and shown room updated to it. `state` is the v1 state if
    /// the broadcast built one already.
    pub(super) fn v2_frames(&mut self, state: Option<&wire::RoomState>) -> V2Frames {
        let version = self.lobby.version;
        let move_version = self.feed.move_version.take();
        let snapshot_of = |room: &Room| match state {
            Some(state) => RoomSnapshot::from(state.clone()),
            None => room.snapshot(),
        };
        let mut first_snapshot = None;
        let shown = match self.feed.shown_version() {
            // Nothing new since the last frame.
            Some(shown) if shown == version => None,
            Some(shown) if shown + 1 == version => {
                let event = if move_version == Some(version) {
                    self.moved_event().map(ServerMessage::Moved)
                } else {
                    let now = snapshot_of(self);
                    let event = self
                        .feed
                        .shown
                        .as_ref()
                        .and_then(RoomView::room)
                        .and_then(|before| Changed::between(before, &now))
                        .map(ServerMessage::Changed);
                    first_snapshot = Some(now);
                    event
                };
                match event {
                    Some(event) => self.show_event(event),
                    None => Some(self.show_snapshot(first_snapshot.take(), state)),
                }
            }
            // Several versions at once (the store confirmed them together),
            // a reload, or the first v2 member: the room in full.
            _ => Some(self.show_snapshot(None, state)),
        };
        let first = match &shown {
            _ if self.feed.unshown.is_empty() => None,
            Some(frame) if matches!(frame.message(), ServerMessage::Snapshot(_)) => {
                Some(frame.clone())
            }
            _ => {
                let snapshot = first_snapshot.unwrap_or_else(|| snapshot_of(self));
                Some(Arc::new(SharedFrame::new(ServerMessage::Snapshot(
                    snapshot,
                ))))
            }
        };
        V2Frames { shown, first }
    }

    /// Shows `event` (a `moved` or `changed` for the next version): applied
    /// to the shown room and kept in the history. A snapshot instead if it
    /// does not apply, which would be a bug in building it.
    fn show_event(&mut self, event: ServerMessage) -> Option<Arc<SharedFrame>> {
        let applied = match self.feed.shown.as_mut() {
            Some(shown) => shown.apply(&event),
            None => return Some(self.show_snapshot(None, None)),
        };
        if let Err(gap) = applied {
            tracing::error!(room = %self.lobby.code, %gap, "a v2 event did not apply to what it followed; sending a snapshot");
            return Some(self.show_snapshot(None, None));
        }
        let frame = Arc::new(SharedFrame::new(event));
        self.feed.record(&frame);
        Some(frame)
    }

    /// Shows the whole room: the history starts over from here (a `resync`
    /// from before it gets a snapshot).
    fn show_snapshot(
        &mut self,
        snapshot: Option<RoomSnapshot>,
        state: Option<&wire::RoomState>,
    ) -> Arc<SharedFrame> {
        let snapshot = snapshot.unwrap_or_else(|| match state {
            Some(state) => RoomSnapshot::from(state.clone()),
            None => self.snapshot(),
        });
        self.feed.history.clear();
        self.feed.shown = Some(RoomView::from_snapshot(snapshot.clone()));
        Arc::new(SharedFrame::new(ServerMessage::Snapshot(snapshot)))
    }

    /// The `moved` event for the move that made the current version, from
    /// the move itself and the game after it; room-level changes (a game
    /// or series ended, a correspondence expiry pushed back) only when the
    /// move can have made them. `None` if the round has no move, or the
    /// move's effects need a snapshot.
    fn moved_event(&self) -> Option<Moved> {
        let shown = self.feed.shown.as_ref()?.room()?;
        let shown_game = shown.game.as_ref()?;
        let round = self.lobby.round.as_ref()?;
        let played = round.last_move.as_ref()?;
        let game = &round.game;
        let result = round.result.map(view::game_result);
        let in_play = result.is_none();
        let legal = if in_play {
            CompactLegal::from_moves(game.legal_paths().into_iter().map(wire_view::path_view))
        } else {
            CompactLegal::default()
        };
        let deadline = Instant::from_std(round.deadline);
        let boosts = game
            .boosts_left()
            .map(|[dark, light]| wire::Boosts { dark, light });
        let points = game.points().map(wire_view::points);
        let mut moved = Moved {
            version: self.lobby.version,
            notation: played.notation.clone(),
            path: played.path.clone(),
            captures: played.captures.clone(),
            boost: played.boost,
            teleports: played
                .teleports
                .iter()
                .map(|(a, b)| [a.clone(), b.clone()])
                .collect(),
            to: (played.path.last() != Some(&played.to)).then(|| played.to.clone()),
            crowned: played.crowned,
            turn: wire_view::color(game.turn()),
            ply: game.ply(),
            deadline: if in_play {
                wire_view::unix_ms(deadline)
            } else {
                0
            },
            remaining_ms: if in_play {
                deadline
                    .saturating_duration_since(Instant::now())
                    .as_millis()
                    .min(u128::from(u32::MAX)) as u32
            } else {
                0
            },
            legal: legal.legal,
            legal_captures: legal.legal_captures,
            legal_teleports: legal.legal_teleports,
            legal_boosts: legal.legal_boosts,
            legal_boost_teleports: legal.legal_boost_teleports,
            must_capture: if in_play {
                game.must_capture()
            } else {
                Vec::new()
            },
            draw_offer: round.draw_offer.map(wire_view::color),
            draw_declined: round.draw_declined.map(wire_view::color),
            boosts: boosts.filter(|b| shown_game.space.as_ref().map(|s| s.boosts) != Some(*b)),
            wormholes: game
                .wormholes()
                .filter(|w| shown_game.space.as_ref().map(|s| &s.wormholes) != Some(w)),
            points: points.filter(|p| shown_game.points != Some(*p)),
            result,
            room: Default::default(),
        };
        if !in_play || self.lobby.is_correspondence() {
            // What else changed: the room after the move against the room
            // now (both with the same game, bar the clocks' readings).
            let mut after_move = RoomView::from_snapshot(shown.clone());
            after_move
                .apply(&ServerMessage::Moved(moved.clone()))
                .ok()?;
            let changed = Changed::between(after_move.room()?, &self.snapshot())?;
            // The game after the move is the event's; only the clock's
            // readings may differ (taken a moment apart).
            let mut game = changed.game;
            (game.deadline, game.remaining_ms) = (None, None);
            if !game.is_empty() {
                tracing::error!(room = %self.lobby.code, ?game, "a move's event missed a change to the game; sending a snapshot");
                return None;
            }
            moved.room = changed.room;
        }
        Some(moved)
    }

    /// Answers a v2 `resync { since }`: `ack`, then every event after
    /// `since` from the history, or a snapshot when the history does not
    /// reach back that far (or `since` is 0, or ahead of the room).
    pub(super) fn resync(&mut self, conn: ConnId, seq: u32, since: u64) {
        let Some(member) = self.members.iter().find(|m| m.conn == conn) else {
            return;
        };
        let out = member.out.clone();
        let _ = out.try_send(Outbound::Direct(Box::new(ServerMessage::Ack { seq })));
        let shown = self.feed.shown_version();
        let oldest = self
            .feed
            .history
            .front()
            .map(|frame| match frame.message() {
                ServerMessage::Moved(m) => m.version,
                ServerMessage::Changed(c) => c.version,
                _ => u64::MAX,
            });
        let frames: Vec<Arc<SharedFrame>> = match (shown, oldest) {
            (Some(shown), _) if since == shown && since != 0 => Vec::new(),
            (Some(shown), Some(oldest)) if since != 0 && since < shown && since + 1 >= oldest => {
                let skip = (since + 1 - oldest) as usize;
                self.feed.history.iter().skip(skip).cloned().collect()
            }
            _ => vec![self.resync_snapshot()],
        };
        self.feed.take_unshown(conn);
        for frame in frames {
            if out.try_send(Outbound::Shared(frame)).is_err() {
                crate::metrics::METRICS.slow_consumers_dropped.inc();
                member_kick(self, conn);
                return;
            }
        }
    }

    /// The room in full for a `resync`. A resync is answered only once
    /// the store holds everything the room did (the room settles first),
    /// so the room as it is now is confirmed, and shown already.
    fn resync_snapshot(&mut self) -> Arc<SharedFrame> {
        let snapshot = self.snapshot();
        if self.feed.shown.is_none() {
            self.feed.shown = Some(RoomView::from_snapshot(snapshot.clone()));
            self.feed.history.clear();
        }
        Arc::new(SharedFrame::new(ServerMessage::Snapshot(snapshot)))
    }
}

fn member_kick(room: &Room, conn: ConnId) {
    if let Some(m) = room.members.iter().find(|m| m.conn == conn) {
        m.kick.notify_one();
    }
}
