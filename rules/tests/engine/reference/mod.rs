//! Independent, deliberately simple reference move generator used only by tests to cross-check the fast rules engine.
//!
//! Nothing here is optimised: the board is a plain `[[Option<_>; 8]; 8]`, captures are found by
//! a straightforward depth-first search over every landing square, and the capture-priority
//! rules are applied afterwards as explicit filters. The aim is that every line can be checked
//! against the written rules by reading it.
//!
//! Coordinates are `(file, rank)`, both `0..8`. Playable squares have `(file + rank)` even, so
//! `(0, 0)` is playable. Dark moves first and its men move towards higher ranks.
#![allow(dead_code)]

use std::collections::BTreeSet;

/// The rule sets the reference generator knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefRules {
    American,
    Brazilian,
    Russian,
    Spanish,
    Italian,
    Thai,
}

impl RefRules {
    /// Every rule set, for tests that loop over all of them.
    pub const ALL: [RefRules; 6] = [
        RefRules::American,
        RefRules::Brazilian,
        RefRules::Russian,
        RefRules::Spanish,
        RefRules::Italian,
        RefRules::Thai,
    ];

    /// Kings move and capture at any distance along a diagonal.
    fn flying_kings(self) -> bool {
        !matches!(self, RefRules::American | RefRules::Italian)
    }

    /// Men may capture backwards as well as forwards.
    fn men_capture_backward(self) -> bool {
        matches!(self, RefRules::Russian | RefRules::Brazilian)
    }

    /// The capture taking the most pieces must be chosen.
    fn majority_capture(self) -> bool {
        matches!(
            self,
            RefRules::Brazilian | RefRules::Spanish | RefRules::Italian
        )
    }

    /// Men may only jump enemy men, never kings.
    fn men_cannot_capture_kings(self) -> bool {
        matches!(self, RefRules::Italian)
    }

    /// A man reaching the far row during a capture becomes a king at once and carries on.
    fn crown_mid_capture(self) -> bool {
        matches!(self, RefRules::Russian)
    }

    /// Number of men per side in the start position.
    fn rows_of_men(self) -> u8 {
        match self {
            RefRules::Thai => 2,
            _ => 3,
        }
    }
}

/// A side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefColor {
    Dark,
    Light,
}

impl RefColor {
    pub fn opposite(self) -> RefColor {
        match self {
            RefColor::Dark => RefColor::Light,
            RefColor::Light => RefColor::Dark,
        }
    }

    /// Rank step of a forward move.
    fn forward(self) -> i8 {
        match self {
            RefColor::Dark => 1,
            RefColor::Light => -1,
        }
    }

    /// The rank on which this side's men are crowned.
    fn far_rank(self) -> u8 {
        match self {
            RefColor::Dark => 7,
            RefColor::Light => 0,
        }
    }
}

/// A square's content: `(color, is_king)`.
pub type RefPiece = (RefColor, bool);

/// A position: the pieces and the side to move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefBoard {
    /// Indexed `[rank][file]`.
    pub cells: [[Option<RefPiece>; 8]; 8],
    pub turn: RefColor,
}

/// `(origin, destination, sorted captured squares)`.
pub type UniqueKey = ((u8, u8), (u8, u8), Vec<(u8, u8)>);

/// One legal move.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RefMove {
    /// `(file, rank)`: the origin, then every landing square in order.
    pub path: Vec<(u8, u8)>,
    /// Squares of the captured pieces, sorted.
    pub captured: Vec<(u8, u8)>,
    /// A man that became a king by this move.
    pub crowned: bool,
}

impl RefMove {
    pub fn origin(&self) -> (u8, u8) {
        self.path[0]
    }

    pub fn destination(&self) -> (u8, u8) {
        *self.path.last().expect("a move has at least two squares")
    }

    /// The key under which `unique` perft merges moves: (origin, destination, captured set).
    pub fn unique_key(&self) -> UniqueKey {
        (self.origin(), self.destination(), self.captured.clone())
    }
}

const DIAGONALS: [(i8, i8); 4] = [(1, 1), (-1, 1), (1, -1), (-1, -1)];

fn is_playable(file: usize, rank: usize) -> bool {
    file % 2 == rank % 2 // i.e. file + rank is even
}

/// `sq + steps * dir`, if it stays on the board.
fn offset(sq: (u8, u8), dir: (i8, i8), steps: i8) -> Option<(u8, u8)> {
    let file = sq.0 as i8 + dir.0 * steps;
    let rank = sq.1 as i8 + dir.1 * steps;
    if (0..8).contains(&file) && (0..8).contains(&rank) {
        Some((file as u8, rank as u8))
    } else {
        None
    }
}

impl RefBoard {
    /// A board with no pieces.
    pub fn empty(turn: RefColor) -> RefBoard {
        RefBoard {
            cells: [[None; 8]; 8],
            turn,
        }
    }

    /// Parses 8 lines of 8 characters, top line = rank 7, first character = file 0.
    /// `.` empty, `d`/`D` dark man/king, `l`/`L` light man/king. Blank lines and surrounding
    /// whitespace on each line are ignored so indented raw strings work. Panics on bad input.
    pub fn parse(text: &str, turn: RefColor) -> RefBoard {
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(lines.len(), 8, "board text must have 8 lines: {text:?}");
        let mut board = RefBoard::empty(turn);
        for (row, line) in lines.iter().enumerate() {
            let rank = 7 - row;
            let chars: Vec<char> = line.chars().collect();
            assert_eq!(chars.len(), 8, "board line must have 8 chars: {line:?}");
            for (file, &c) in chars.iter().enumerate() {
                let piece = match c {
                    '.' => None,
                    'd' => Some((RefColor::Dark, false)),
                    'D' => Some((RefColor::Dark, true)),
                    'l' => Some((RefColor::Light, false)),
                    'L' => Some((RefColor::Light, true)),
                    other => panic!("bad board character {other:?} in {line:?}"),
                };
                assert!(
                    piece.is_none() || is_playable(file, rank),
                    "piece on non-playable square ({file}, {rank})"
                );
                board.cells[rank][file] = piece;
            }
        }
        board
    }

    /// The start position: Dark on the nearest ranks from rank 0, Light from rank 7.
    pub fn start(rules: RefRules) -> RefBoard {
        let rows = rules.rows_of_men() as usize;
        let mut board = RefBoard::empty(RefColor::Dark);
        for rank in 0..8 {
            for file in 0..8 {
                if !is_playable(file, rank) {
                    continue;
                }
                if rank < rows {
                    board.cells[rank][file] = Some((RefColor::Dark, false));
                } else if rank >= 8 - rows {
                    board.cells[rank][file] = Some((RefColor::Light, false));
                }
            }
        }
        board
    }

    /// The inverse of [`RefBoard::parse`]: 8 lines, each ending in `\n`. The side to move is
    /// not included.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for rank in (0..8).rev() {
            for file in 0..8 {
                out.push(match self.cells[rank][file] {
                    None => '.',
                    Some((RefColor::Dark, false)) => 'd',
                    Some((RefColor::Dark, true)) => 'D',
                    Some((RefColor::Light, false)) => 'l',
                    Some((RefColor::Light, true)) => 'L',
                });
            }
            out.push('\n');
        }
        out
    }

    pub fn get(&self, sq: (u8, u8)) -> Option<RefPiece> {
        self.cells[sq.1 as usize][sq.0 as usize]
    }

    pub fn set(&mut self, sq: (u8, u8), piece: Option<RefPiece>) {
        self.cells[sq.1 as usize][sq.0 as usize] = piece;
    }

    /// Plays `m` (assumed legal) and passes the turn.
    pub fn play(&self, m: &RefMove) -> RefBoard {
        let mut next = self.clone();
        let (color, king) = next.get(m.origin()).expect("move from an empty square");
        next.set(m.origin(), None);
        for &sq in &m.captured {
            next.set(sq, None);
        }
        next.set(m.destination(), Some((color, king || m.crowned)));
        next.turn = self.turn.opposite();
        next
    }

    /// Number of pieces of each colour: `(dark, light)`.
    pub fn count(&self) -> (usize, usize) {
        let mut dark = 0;
        let mut light = 0;
        for row in &self.cells {
            for cell in row.iter().flatten() {
                match cell.0 {
                    RefColor::Dark => dark += 1,
                    RefColor::Light => light += 1,
                }
            }
        }
        (dark, light)
    }
}

/// A finished capture sequence with the extra facts the priority rules need.
#[derive(Clone, Debug)]
struct Capture {
    path: Vec<(u8, u8)>,
    /// Captured squares in the order they were jumped.
    order: Vec<(u8, u8)>,
    /// Whether each entry of `order` was a king.
    kings: Vec<bool>,
    /// The capturing piece was a king when the move started.
    by_king: bool,
    crowned: bool,
}

/// Every single jump `(victim, landing)` available to a piece of `color` standing on `from`,
/// after the flying-king landing rule: when a flying king jumps a piece and the capture can be
/// continued from some of the empty squares beyond it, it must land on one of those (it may
/// not end the move early by choosing a dead-end landing square).
///
/// `board` has the moving piece already lifted from its origin; pieces in `taken` are still on
/// the board (they block) but may not be jumped again.
fn jumps(
    rules: RefRules,
    board: &RefBoard,
    color: RefColor,
    from: (u8, u8),
    king: bool,
    taken: &[(u8, u8)],
) -> Vec<((u8, u8), (u8, u8))> {
    let all = raw_jumps(rules, board, color, from, king, taken);
    if !(king && rules.flying_kings()) {
        return all;
    }
    let can_continue = |victim: (u8, u8), landing: (u8, u8)| {
        let mut taken_after = taken.to_vec();
        taken_after.push(victim);
        !raw_jumps(rules, board, color, landing, true, &taken_after).is_empty()
    };
    let victims: BTreeSet<(u8, u8)> = all.iter().map(|&(victim, _)| victim).collect();
    let mut out = Vec::new();
    for victim in victims {
        let landings: Vec<_> = all.iter().copied().filter(|j| j.0 == victim).collect();
        let continuing: Vec<_> = landings
            .iter()
            .copied()
            .filter(|&(v, l)| can_continue(v, l))
            .collect();
        out.extend(if continuing.is_empty() {
            landings
        } else {
            continuing
        });
    }
    out
}

/// Every single jump `(victim, landing)` by the movement rules alone (every empty square beyond
/// the victim for a flying king).
fn raw_jumps(
    rules: RefRules,
    board: &RefBoard,
    color: RefColor,
    from: (u8, u8),
    king: bool,
    taken: &[(u8, u8)],
) -> Vec<((u8, u8), (u8, u8))> {
    let mut out = Vec::new();
    for dir in DIAGONALS {
        if king && rules.flying_kings() {
            // Slide over empty squares to the first occupied one.
            let mut dist = 1;
            while let Some(sq) = offset(from, dir, dist) {
                if board.get(sq).is_some() {
                    break;
                }
                dist += 1;
            }
            let Some(victim) = offset(from, dir, dist) else {
                continue;
            };
            let Some((victim_color, _)) = board.get(victim) else {
                continue;
            };
            if victim_color == color || taken.contains(&victim) {
                continue;
            }
            // Every empty square directly beyond the victim is a landing square.
            let mut beyond = dist + 1;
            while let Some(landing) = offset(from, dir, beyond) {
                if board.get(landing).is_some() {
                    break;
                }
                out.push((victim, landing));
                beyond += 1;
            }
        } else {
            if !king && !rules.men_capture_backward() && dir.1 != color.forward() {
                continue;
            }
            let (Some(victim), Some(landing)) = (offset(from, dir, 1), offset(from, dir, 2)) else {
                continue;
            };
            let Some((victim_color, victim_king)) = board.get(victim) else {
                continue;
            };
            if victim_color == color || taken.contains(&victim) {
                continue;
            }
            if !king && victim_king && rules.men_cannot_capture_kings() {
                continue;
            }
            if board.get(landing).is_none() {
                out.push((victim, landing));
            }
        }
    }
    out
}

/// Depth-first search over capture continuations. `path`, `order`, `kings` describe the
/// sequence so far (at least one jump made when called from the recursion).
#[allow(clippy::too_many_arguments)]
fn extend_capture(
    rules: RefRules,
    board: &RefBoard,
    color: RefColor,
    started_as_king: bool,
    king_now: bool,
    path: &mut Vec<(u8, u8)>,
    order: &mut Vec<(u8, u8)>,
    kings: &mut Vec<bool>,
    out: &mut Vec<Capture>,
) {
    let here = *path.last().unwrap();
    let options = jumps(rules, board, color, here, king_now, order);
    if options.is_empty() {
        if !order.is_empty() {
            let ends_on_far_row = here.1 == color.far_rank();
            out.push(Capture {
                path: path.clone(),
                order: order.clone(),
                kings: kings.clone(),
                by_king: started_as_king,
                crowned: !started_as_king && (king_now || ends_on_far_row),
            });
        }
        return;
    }
    for (victim, landing) in options {
        let victim_king = board.get(victim).expect("victim exists").1;
        path.push(landing);
        order.push(victim);
        kings.push(victim_king);

        let reaches_far_row = !king_now && landing.1 == color.far_rank();
        if reaches_far_row && !rules.men_capture_backward() {
            // Forward-only men (American, Spanish, Italian, Thai): the move ends here,
            // crowned. (No forward capture could exist from the far row anyway.)
            out.push(Capture {
                path: path.clone(),
                order: order.clone(),
                kings: kings.clone(),
                by_king: started_as_king,
                crowned: true,
            });
        } else {
            // Russian: crowned at once and continues as a king.
            // Brazilian: stays a man and continues as a man.
            let next_king = king_now || (reaches_far_row && rules.crown_mid_capture());
            extend_capture(
                rules,
                board,
                color,
                started_as_king,
                next_king,
                path,
                order,
                kings,
                out,
            );
        }

        path.pop();
        order.pop();
        kings.pop();
    }
}

/// Positions (in capture order) at which kings were taken.
fn king_positions(c: &Capture) -> Vec<usize> {
    c.kings
        .iter()
        .enumerate()
        .filter(|(_, k)| **k)
        .map(|(i, _)| i)
        .collect()
}

/// Keeps only the candidates maximising `key`.
fn keep_best<K: Ord>(caps: Vec<Capture>, key: impl Fn(&Capture) -> K) -> Vec<Capture> {
    let Some(best) = caps.iter().map(&key).max() else {
        return caps;
    };
    caps.into_iter().filter(|c| key(c) == best).collect()
}

/// Applies the capture-choice rules of `rules` to the complete capture sequences.
fn apply_priorities(rules: RefRules, mut caps: Vec<Capture>) -> Vec<Capture> {
    if rules.majority_capture() {
        // (1) Most pieces.
        caps = keep_best(caps, |c| c.order.len());
    }
    if rules == RefRules::Italian {
        // (2) Most kings.
        caps = keep_best(caps, |c| c.kings.iter().filter(|k| **k).count());
        // (3) Capturing with a king beats capturing with a man.
        caps = keep_best(caps, |c| c.by_king);
        // (4) Kings taken earliest: lexicographically smallest list of king positions.
        // (All remaining candidates take the same number of kings.)
        caps = keep_best(caps, |c| std::cmp::Reverse(king_positions(c)));
    }
    caps
}

/// All legal moves for the side to move, one per distinct path, sorted.
pub fn ref_legal_moves(rules: RefRules, b: &RefBoard) -> Vec<RefMove> {
    let color = b.turn;
    let mut caps = Vec::new();
    for rank in 0..8u8 {
        for file in 0..8u8 {
            let sq = (file, rank);
            let Some((c, king)) = b.get(sq) else { continue };
            if c != color {
                continue;
            }
            // The mover's origin is empty for the rest of the move.
            let mut lifted = b.clone();
            lifted.set(sq, None);
            let mut path = vec![sq];
            extend_capture(
                rules,
                &lifted,
                color,
                king,
                king,
                &mut path,
                &mut Vec::new(),
                &mut Vec::new(),
                &mut caps,
            );
        }
    }

    let mut moves: Vec<RefMove> = if caps.is_empty() {
        quiet_moves(rules, b)
    } else {
        apply_priorities(rules, caps)
            .into_iter()
            .map(|c| {
                let mut captured = c.order;
                captured.sort();
                RefMove {
                    path: c.path,
                    captured,
                    crowned: c.crowned,
                }
            })
            .collect()
    };
    moves.sort();
    moves
}

/// Non-capturing moves.
fn quiet_moves(rules: RefRules, b: &RefBoard) -> Vec<RefMove> {
    let color = b.turn;
    let mut out = Vec::new();
    for rank in 0..8u8 {
        for file in 0..8u8 {
            let sq = (file, rank);
            let Some((c, king)) = b.get(sq) else { continue };
            if c != color {
                continue;
            }
            for dir in DIAGONALS {
                if !king && dir.1 != color.forward() {
                    continue;
                }
                let max_dist = if king && rules.flying_kings() { 7 } else { 1 };
                for dist in 1..=max_dist {
                    let Some(to) = offset(sq, dir, dist) else {
                        break;
                    };
                    if b.get(to).is_some() {
                        break;
                    }
                    out.push(RefMove {
                        path: vec![sq, to],
                        captured: Vec::new(),
                        crowned: !king && to.1 == color.far_rank(),
                    });
                }
            }
        }
    }
    out
}

/// Legal moves with duplicates under [`RefMove::unique_key`] removed (the first, in sorted
/// order, of each group is kept).
pub fn ref_unique_moves(rules: RefRules, b: &RefBoard) -> Vec<RefMove> {
    let mut seen = BTreeSet::new();
    ref_legal_moves(rules, b)
        .into_iter()
        .filter(|m| seen.insert(m.unique_key()))
        .collect()
}

/// Counts leaf nodes `depth` plies ahead. With `unique`, moves sharing origin, destination
/// and captured set are counted (and searched) once per node.
pub fn ref_perft(rules: RefRules, b: &RefBoard, depth: u32, unique: bool) -> u64 {
    if depth == 0 {
        return 1;
    }
    let moves = if unique {
        ref_unique_moves(rules, b)
    } else {
        ref_legal_moves(rules, b)
    };
    if depth == 1 {
        return moves.len() as u64;
    }
    moves
        .iter()
        .map(|m| ref_perft(rules, &b.play(m), depth - 1, unique))
        .sum()
}
