//! Move generation, generic over [`Rules`]: quiet moves from bitboard
//! shifts, captures by depth-first search over jump paths, then the rule
//! set's choice rule (free, most pieces, Italian priorities).

use super::bitboard::{Bitboard, Direction, Square};
use super::position::{Color, Move, Position};
use super::variant::{CaptureChoice, Rules};

/// Where complete capture paths go: a list, or a counter for perft leaves.
pub trait CaptureSink {
    fn complete(&mut self, m: &Move);
}

impl CaptureSink for Vec<Move> {
    #[inline]
    fn complete(&mut self, m: &Move) {
        self.push(*m);
    }
}

/// Counts every complete path, noting any that may repeat another's capture
/// sequence (see [`dedup_sequences`]).
#[derive(Debug, Default)]
struct CountAll {
    count: u64,
    may_repeat_sequence: bool,
}

impl CaptureSink for CountAll {
    #[inline]
    fn complete(&mut self, m: &Move) {
        self.count += 1;
        self.may_repeat_sequence |= may_repeat_sequence(m);
    }
}

/// Only a capture that flies after its first jump (a king, or a man crowned
/// mid-capture) can share its capture sequence with another path.
#[inline]
fn may_repeat_sequence(m: &Move) -> bool {
    (m.by_king() || m.crowns()) && m.captured().count() > 1
}

/// Counts the complete paths that take the most pieces.
#[derive(Debug, Default)]
struct CountMost {
    best: u32,
    count: u64,
}

impl CaptureSink for CountMost {
    #[inline]
    fn complete(&mut self, m: &Move) {
        let n = m.captured().count();
        if n > self.best {
            self.best = n;
            self.count = 1;
        } else if n == self.best {
            self.count += 1;
        }
    }
}

#[inline]
fn forward(color: Color) -> &'static [Direction; 2] {
    match color {
        Color::Dark => &Direction::NORTH,
        Color::Light => &Direction::SOUTH,
    }
}

#[inline]
fn man_capture_dirs<R: Rules>(color: Color) -> &'static [Direction] {
    if R::MEN_CAPTURE_BACKWARD {
        &Direction::ALL
    } else {
        forward(color)
    }
}

/// What stays fixed while one piece searches its capture paths.
struct CaptureSearch {
    /// Enemy pieces (captured ones included: they stay until the move ends).
    enemy: Bitboard,
    enemy_kings: Bitboard,
    /// Squares the moving piece may pass or land on: unoccupied squares plus
    /// its own origin.
    empty: Bitboard,
    far_rank: Bitboard,
    color: Color,
}

impl CaptureSearch {
    /// Enemy pieces this piece may jump, given what is already captured.
    #[inline]
    fn victims<R: Rules>(&self, king: bool, captured: Bitboard) -> Bitboard {
        let base = self.enemy & !captured;
        if king || R::MEN_CAPTURE_KINGS {
            base
        } else {
            base & !self.enemy_kings
        }
    }

    /// Whether a piece standing on `at` could capture once more.
    fn can_capture<R: Rules>(&self, at: Square, king: bool, captured: Bitboard) -> bool {
        let victims = self.victims::<R>(king, captured);
        if king && R::FLYING_KINGS {
            Direction::ALL.iter().any(|&dir| {
                let mut b = dir.shift(at.bb());
                while (b & self.empty).any() {
                    b = dir.shift(b);
                }
                (b & victims).any() && (dir.shift(b) & self.empty).any()
            })
        } else {
            let dirs: &[Direction] = if king {
                &Direction::ALL
            } else {
                man_capture_dirs::<R>(self.color)
            };
            dirs.iter().any(|&dir| {
                let victim = dir.shift(at.bb()) & victims;
                (dir.shift(victim) & self.empty).any()
            })
        }
    }

    /// Extends the path in `m`, whose piece stands on `at`, and hands every
    /// complete path to `sink`. A path is complete when no capture continues
    /// from its last square.
    fn extend<R: Rules, S: CaptureSink>(&self, m: &mut Move, at: Square, king: bool, sink: &mut S) {
        let captured = m.captured();
        let victims = self.victims::<R>(king, captured);
        let mut continued = false;
        if king && R::FLYING_KINGS {
            for dir in Direction::ALL {
                let mut b = dir.shift(at.bb());
                while (b & self.empty).any() {
                    b = dir.shift(b);
                }
                let victim_bb = b & victims;
                let Some(victim) = victim_bb.first() else {
                    continue;
                };
                let victim_is_king = self.enemy_kings.contains(victim);
                let after = captured | victim_bb;
                // Landing squares: the run of empty squares beyond the
                // victim. Where the capture can go on from some of them, the
                // king must land on one of those.
                let mut must_continue = false;
                let mut l = dir.shift(victim_bb) & self.empty;
                while let Some(landing) = l.first() {
                    if self.can_capture::<R>(landing, true, after) {
                        must_continue = true;
                        break;
                    }
                    l = dir.shift(l) & self.empty;
                }
                let mut l = dir.shift(victim_bb) & self.empty;
                while let Some(landing) = l.first() {
                    if !must_continue || self.can_capture::<R>(landing, true, after) {
                        continued = true;
                        m.push_jump(victim, victim_is_king, landing);
                        self.extend::<R, S>(m, landing, true, sink);
                        m.pop_jump(victim, victim_is_king);
                    }
                    l = dir.shift(l) & self.empty;
                }
            }
        } else {
            let dirs: &[Direction] = if king {
                &Direction::ALL
            } else {
                man_capture_dirs::<R>(self.color)
            };
            for &dir in dirs {
                let victim_bb = dir.shift(at.bb()) & victims;
                let landing_bb = dir.shift(victim_bb) & self.empty;
                let (Some(victim), Some(landing)) = (victim_bb.first(), landing_bb.first()) else {
                    continue;
                };
                continued = true;
                let victim_is_king = self.enemy_kings.contains(victim);
                let crowned_now = !king && R::CROWN_MID_CAPTURE && self.far_rank.contains(landing);
                m.push_jump(victim, victim_is_king, landing);
                self.extend::<R, S>(m, landing, king || crowned_now, sink);
                m.pop_jump(victim, victim_is_king);
            }
        }
        if !continued && m.is_capture() {
            let crowns = !m.by_king() && (king || self.far_rank.contains(at));
            m.set_crowns(crowns);
            sink.complete(m);
            m.set_crowns(false);
        }
    }
}

/// Men that could make at least a first jump, by bitboard arithmetic.
#[inline]
fn men_that_can_capture<R: Rules>(pos: &Position) -> Bitboard {
    let us = pos.turn();
    let men = pos.pieces(us) & !pos.kings();
    let them = pos.pieces(us.opposite());
    let victims = if R::MEN_CAPTURE_KINGS {
        them
    } else {
        them & !pos.kings()
    };
    let empty = !pos.occupied() & Bitboard::PLAYABLE;
    let mut can = Bitboard::EMPTY;
    for &dir in man_capture_dirs::<R>(us) {
        let back = dir.reverse();
        can |= back.shift(back.shift(empty) & victims) & men;
    }
    can
}

/// Every complete capture path, before the choice rule is applied.
pub fn captures<R: Rules, S: CaptureSink>(pos: &Position, sink: &mut S) {
    let us = pos.turn();
    let candidates = men_that_can_capture::<R>(pos) | (pos.pieces(us) & pos.kings());
    if candidates.is_empty() {
        return;
    }
    let occupied = pos.occupied();
    for from in candidates {
        let search = CaptureSearch {
            enemy: pos.pieces(us.opposite()),
            enemy_kings: pos.pieces(us.opposite()) & pos.kings(),
            empty: (!occupied & Bitboard::PLAYABLE) | from.bb(),
            far_rank: us.far_rank(),
            color: us,
        };
        let king = pos.kings().contains(from);
        let mut m = Move::start_capture(from, king);
        search.extend::<R, S>(&mut m, from, king, sink);
    }
}

/// Every quiet (non-capturing) move.
pub fn quiet_moves<R: Rules>(pos: &Position, out: &mut Vec<Move>) {
    let us = pos.turn();
    let own = pos.pieces(us);
    let men = own & !pos.kings();
    let kings = own & pos.kings();
    let empty = !pos.occupied() & Bitboard::PLAYABLE;
    let far = us.far_rank();
    for &dir in forward(us) {
        let back = dir.reverse();
        for to in dir.shift(men) & empty {
            let from = back
                .shift(to.bb())
                .first()
                .expect("shifted back onto the board");
            out.push(Move::quiet(from, to, false, far.contains(to)));
        }
    }
    for from in kings {
        for dir in Direction::ALL {
            let mut b = dir.shift(from.bb()) & empty;
            while let Some(to) = b.first() {
                out.push(Move::quiet(from, to, true, false));
                if !R::FLYING_KINGS {
                    break;
                }
                b = dir.shift(b) & empty;
            }
        }
    }
}

fn count_quiet<R: Rules>(pos: &Position) -> u64 {
    let us = pos.turn();
    let own = pos.pieces(us);
    let men = own & !pos.kings();
    let kings = own & pos.kings();
    let empty = !pos.occupied() & Bitboard::PLAYABLE;
    let mut n = 0u64;
    for &dir in forward(us) {
        n += u64::from((dir.shift(men) & empty).count());
    }
    for dir in Direction::ALL {
        let mut b = dir.shift(kings) & empty;
        while b.any() {
            n += u64::from(b.count());
            if !R::FLYING_KINGS {
                break;
            }
            b = dir.shift(b) & empty;
        }
    }
    n
}

/// Keeps only the captures the rule set's choice rule allows.
pub fn apply_capture_choice<R: Rules>(captures: &mut Vec<Move>) {
    match R::CAPTURE_CHOICE {
        CaptureChoice::Free => {}
        CaptureChoice::MostPieces => {
            let best = captures.iter().map(|m| m.captured().count()).max();
            captures.retain(|m| Some(m.captured().count()) == best);
        }
        CaptureChoice::Italian => {
            let best = captures.iter().map(Move::italian_key).max();
            captures.retain(|m| Some(m.italian_key()) == best);
        }
    }
}

/// All legal moves, one entry per capture path. `out` is cleared first.
pub fn legal_moves<R: Rules>(pos: &Position, out: &mut Vec<Move>) {
    out.clear();
    captures::<R, _>(pos, out);
    if out.is_empty() {
        quiet_moves::<R>(pos, out);
    } else {
        apply_capture_choice::<R>(out);
    }
}

/// The number of legal moves (every capture sequence counted, see
/// [`dedup_sequences`]) without building
/// them where the rule set allows; `scratch` is used otherwise.
pub fn count_legal<R: Rules>(pos: &Position, scratch: &mut Vec<Move>) -> u64 {
    if R::FLYING_KINGS && (pos.pieces(pos.turn()) & pos.kings()).any() {
        legal_moves::<R>(pos, scratch);
        dedup_sequences(scratch);
        return scratch.len() as u64;
    }
    match R::CAPTURE_CHOICE {
        CaptureChoice::Free => {
            let mut counter = CountAll::default();
            captures::<R, _>(pos, &mut counter);
            if counter.may_repeat_sequence && R::FLYING_KINGS {
                legal_moves::<R>(pos, scratch);
                dedup_sequences(scratch);
                scratch.len() as u64
            } else if counter.count > 0 {
                counter.count
            } else {
                count_quiet::<R>(pos)
            }
        }
        CaptureChoice::MostPieces => {
            let mut counter = CountMost::default();
            captures::<R, _>(pos, &mut counter);
            if counter.count > 0 {
                counter.count
            } else {
                count_quiet::<R>(pos)
            }
        }
        CaptureChoice::Italian => {
            legal_moves::<R>(pos, scratch);
            scratch.len() as u64
        }
    }
}

/// Whether any capture is available (so captures are mandatory).
pub fn has_capture<R: Rules>(pos: &Position) -> bool {
    let mut counter = CountAll::default();
    captures::<R, _>(pos, &mut counter);
    counter.count > 0
}

/// Drops paths that repeat another's capture sequence (same pieces taken in
/// the same order, differing only in where a flying king touched down in
/// between). This is how published perft tables count.
pub fn dedup_sequences(moves: &mut Vec<Move>) {
    if !moves.iter().any(may_repeat_sequence) {
        return;
    }
    moves.sort_unstable_by(|a, b| {
        a.sequence_key()
            .cmp(&b.sequence_key())
            .then_with(|| a.path().cmp(b.path()))
    });
    moves.dedup_by_key(|m| m.sequence_key());
}

/// Sorts moves by result and drops the paths that repeat a result.
pub fn dedup_results(moves: &mut Vec<Move>) {
    // Deterministic and allocation-free: the path that sorts first stays.
    moves.sort_unstable_by(|a, b| {
        a.result_key()
            .cmp(&b.result_key())
            .then_with(|| a.path().cmp(b.path()))
    });
    moves.dedup_by_key(|m| m.result_key());
}
