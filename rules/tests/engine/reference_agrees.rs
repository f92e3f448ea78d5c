//! The fast rules engine against the independent naive generator in
//! `tests/reference/`:
//!
//! - seeded random playouts, from the start and from random positions with
//!   kings, comparing the engine's raw capture paths with the reference's
//!   move list at every position (and the boards after each move);
//! - unique perft (and, through capture sequences, paths perft) on random
//!   positions with kings;
//! - unique perft from the start positions of Spanish and Thai;
//! - every count in `tests/perft/spanish.perft` and `tests/perft/thai.perft`
//!   small enough for the reference to recount.
//!
//! The engine's paths perft counts distinct capture *sequences* (a flying
//! king landing on another square between the same two captures does not
//! count again), while `ref_perft(.., false)` counts every landing path. The
//! sequence count is rebuilt here from the reference's paths
//! ([`ref_perft_sequences`]) so both modes can be compared.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;
use std::path::PathBuf;

use crate::reference::{RefBoard, RefColor, RefMove, RefRules, ref_legal_moves, ref_perft};
use jumpgate_rules::{
    Bitboard, Color, Game, Move, Position, RuleSet, Setup, Square, fen, movegen, perft,
};

// ---------------------------------------------------------------------------------------------
// Conversions between the two generators.

fn ref_rules(rs: RuleSet) -> RefRules {
    match rs {
        RuleSet::American => RefRules::American,
        RuleSet::Brazilian => RefRules::Brazilian,
        RuleSet::Russian => RefRules::Russian,
        RuleSet::Spanish => RefRules::Spanish,
        RuleSet::Italian => RefRules::Italian,
        RuleSet::Thai => RefRules::Thai,
    }
}

fn ref_color(c: Color) -> RefColor {
    match c {
        Color::Dark => RefColor::Dark,
        Color::Light => RefColor::Light,
    }
}

fn coords(sq: Square) -> (u8, u8) {
    (sq.file(), sq.rank())
}

fn square(c: (u8, u8)) -> Square {
    Square::from_coords(c.0, c.1).expect("coordinates on the board")
}

fn to_ref(pos: &Position) -> RefBoard {
    let mut board = RefBoard::empty(ref_color(pos.turn()));
    for color in [Color::Dark, Color::Light] {
        for sq in pos.pieces(color) {
            board.set(
                coords(sq),
                Some((ref_color(color), pos.kings().contains(sq))),
            );
        }
    }
    board
}

fn setup_of(board: &RefBoard) -> Setup {
    let mut by_color = [Bitboard::EMPTY; 2];
    let mut kings = Bitboard::EMPTY;
    for rank in 0..8u8 {
        for file in 0..8u8 {
            if let Some((color, king)) = board.get((file, rank)) {
                let sq = square((file, rank));
                let index = match color {
                    RefColor::Dark => 0,
                    RefColor::Light => 1,
                };
                by_color[index] |= sq.bb();
                if king {
                    kings |= sq.bb();
                }
            }
        }
    }
    let turn = match board.turn {
        RefColor::Dark => Color::Dark,
        RefColor::Light => Color::Light,
    };
    Setup {
        by_color,
        kings,
        turn,
    }
}

fn from_ref(board: &RefBoard) -> Position {
    Position::from_setup(setup_of(board)).expect("a valid position")
}

/// A move as both generators can describe it: path, sorted captured squares,
/// crowned.
type Key = (Vec<(u8, u8)>, Vec<(u8, u8)>, bool);

fn engine_key(m: &Move) -> Key {
    let path = m.path().iter().copied().map(coords).collect();
    let mut captured: Vec<_> = m.captured().into_iter().map(coords).collect();
    captured.sort_unstable();
    (path, captured, m.crowns())
}

fn ref_key(m: &RefMove) -> Key {
    (m.path.clone(), m.captured.clone(), m.crowned)
}

/// The engine's raw legal paths (after the choice rule, not deduplicated).
fn engine_paths(rs: RuleSet, pos: &Position) -> Vec<Move> {
    let mut moves = Vec::new();
    jumpgate_rules::with_rules!(rs, R => movegen::legal_moves::<R>(pos, &mut moves));
    moves
}

fn engine_keys(rs: RuleSet, pos: &Position) -> Vec<Key> {
    let mut keys: Vec<Key> = engine_paths(rs, pos).iter().map(engine_key).collect();
    keys.sort();
    keys
}

fn ref_keys(rs: RuleSet, board: &RefBoard) -> Vec<Key> {
    let mut keys: Vec<Key> = ref_legal_moves(ref_rules(rs), board)
        .iter()
        .map(ref_key)
        .collect();
    keys.sort();
    keys
}

fn name(c: (u8, u8)) -> String {
    format!("{}{}", (b'a' + c.0) as char, c.1 + 1)
}

fn fmt_key(k: &Key) -> String {
    let sep = if k.1.is_empty() { "-" } else { "x" };
    let path: Vec<String> = k.0.iter().copied().map(name).collect();
    let mut s = path.join(sep);
    if !k.1.is_empty() {
        let taken: Vec<String> = k.1.iter().copied().map(name).collect();
        let _ = write!(s, " [{}]", taken.join(","));
    }
    if k.2 {
        s.push_str(" crowned");
    }
    s
}

fn fmt_keys(keys: &[Key]) -> String {
    if keys.is_empty() {
        return "    (none)\n".to_owned();
    }
    keys.iter()
        .map(|k| format!("    {}\n", fmt_key(k)))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Move-list comparison, with a shrinker for the report.

/// `None` when both generators list the same paths here, else a report.
fn compare(rs: RuleSet, pos: &Position) -> Option<String> {
    let board = to_ref(pos);
    let engine = engine_keys(rs, pos);
    let reference = ref_keys(rs, &board);
    if engine == reference {
        return None;
    }
    let engine_set: BTreeSet<&Key> = engine.iter().collect();
    let ref_set: BTreeSet<&Key> = reference.iter().collect();
    let only_engine: Vec<Key> = engine
        .iter()
        .filter(|k| !ref_set.contains(k))
        .cloned()
        .collect();
    let only_ref: Vec<Key> = reference
        .iter()
        .filter(|k| !engine_set.contains(k))
        .cloned()
        .collect();
    Some(format!(
        "rule set {rs}, {} to move, FEN {}\n{}\
         squares below in the internal frame (a1 = file 0, rank 0)\n\
         engine ({} paths):\n{}reference ({} paths):\n{}\
         only in engine:\n{}only in reference:\n{}",
        pos.turn().name(),
        fen::write(rs, pos),
        board.to_text(),
        engine.len(),
        fmt_keys(&engine),
        reference.len(),
        fmt_keys(&reference),
        fmt_keys(&only_engine),
        fmt_keys(&only_ref),
    ))
}

/// Removes pieces one at a time while the generators still disagree.
fn shrink(rs: RuleSet, pos: &Position) -> Position {
    let mut current = *pos;
    loop {
        let board = to_ref(&current);
        let smaller = (0..64u8)
            .map(|i| (i % 8, i / 8))
            .filter(|&c| board.get(c).is_some())
            .find_map(|c| {
                let mut b = board.clone();
                b.set(c, None);
                let p = Position::from_setup(setup_of(&b)).ok()?;
                compare(rs, &p).map(|_| p)
            });
        match smaller {
            Some(p) => current = p,
            None => return current,
        }
    }
}

/// Panics with a full report (and a shrunk position) if the generators
/// disagree on `pos`.
fn assert_agree(rs: RuleSet, pos: &Position, context: &str) {
    if let Some(report) = compare(rs, pos) {
        let small = shrink(rs, pos);
        let small_report = compare(rs, &small).unwrap_or_default();
        panic!(
            "engine and reference disagree ({context})\n{report}\n\
             smallest position found that still disagrees:\n{small_report}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Deterministic randomness.

#[derive(Debug)]
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> XorShift {
        // Never zero; spread small seeds.
        XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform-enough in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A random position: `1..=max_per_side` pieces a side on playable squares,
/// each a king with probability `king_pct` %, no man on its own crowning row,
/// random side to move. `None` if `from_setup` refuses it.
fn random_position(rng: &mut XorShift, max_per_side: usize, king_pct: usize) -> Option<Position> {
    let mut free: Vec<Square> = Square::playable().collect();
    let mut setup = Setup {
        by_color: [Bitboard::EMPTY; 2],
        kings: Bitboard::EMPTY,
        turn: if rng.below(2) == 0 {
            Color::Dark
        } else {
            Color::Light
        },
    };
    for color in [Color::Dark, Color::Light] {
        let n = 1 + rng.below(max_per_side);
        for _ in 0..n {
            let sq = free.swap_remove(rng.below(free.len()));
            let king = rng.below(100) < king_pct || color.far_rank().contains(sq);
            setup.by_color[color.index()] |= sq.bb();
            if king {
                setup.kings |= sq.bb();
            }
        }
    }
    Position::from_setup(setup).ok()
}

/// Plays up to `plies` random moves from `pos`, checking at every position
/// that both generators list the same paths and that both play the chosen
/// move to the same board.
fn playout(rs: RuleSet, start: Position, plies: usize, rng: &mut XorShift, context: &str) -> usize {
    let rules = ref_rules(rs);
    let mut pos = start;
    for ply in 0..plies {
        let at = format!("{context}, ply {ply}");
        assert_agree(rs, &pos, &at);
        let moves = engine_paths(rs, &pos);
        // The moves for play (one per result) are the reference's unique keys.
        let game = Game::from_position(rs, pos);
        let results: BTreeSet<_> = game
            .legal_moves()
            .iter()
            .map(|m| {
                let (_, captured, _) = engine_key(m);
                (coords(m.from()), coords(m.to()), captured)
            })
            .collect();
        let ref_results: BTreeSet<_> = crate::reference::ref_unique_moves(rules, &to_ref(&pos))
            .iter()
            .map(RefMove::unique_key)
            .collect();
        assert_eq!(results, ref_results, "moves for play differ ({at})");
        if moves.is_empty() {
            return ply;
        }
        let m = moves[rng.below(moves.len())];
        let next = pos.after(&m);
        let ref_move = RefMove {
            path: m.path().iter().copied().map(coords).collect(),
            captured: engine_key(&m).1,
            crowned: m.crowns(),
        };
        let ref_next = to_ref(&pos).play(&ref_move);
        assert_eq!(
            to_ref(&next),
            ref_next,
            "boards differ after {} ({at})",
            fmt_key(&engine_key(&m))
        );
        pos = next;
    }
    plies
}

fn seed_of(rs: RuleSet) -> u64 {
    0x5EED_0000 + rs as u64 * 7919
}

/// 300 games of up to 120 plies from the start, then 300 random positions
/// (kings included) played out for up to 60 plies.
fn playouts(rs: RuleSet) {
    let mut rng = XorShift::new(seed_of(rs));
    let mut plies = 0;
    for game in 0..300 {
        plies += playout(
            rs,
            Position::start(rs),
            120,
            &mut rng,
            &format!("start game {game}"),
        );
    }
    let mut tried = 0;
    let mut played = 0;
    while played < 300 {
        tried += 1;
        assert!(tried < 10_000, "random positions keep being refused");
        let Some(pos) = random_position(&mut rng, 12, 30) else {
            continue;
        };
        let context = format!("random position {played}: {}", fen::write(rs, &pos));
        plies += playout(rs, pos, 60, &mut rng, &context);
        played += 1;
    }
    assert!(plies > 10_000, "{rs}: only {plies} positions compared");
}

#[test]
fn playouts_american() {
    playouts(RuleSet::American);
}

#[test]
fn playouts_brazilian() {
    playouts(RuleSet::Brazilian);
}

#[test]
fn playouts_russian() {
    playouts(RuleSet::Russian);
}

#[test]
fn playouts_spanish() {
    playouts(RuleSet::Spanish);
}

#[test]
fn playouts_italian() {
    playouts(RuleSet::Italian);
}

#[test]
fn playouts_thai() {
    playouts(RuleSet::Thai);
}

// ---------------------------------------------------------------------------------------------
// Perft.

/// The pieces captured by `m`, in capture order, read from the board the
/// move starts on (captured pieces stay until the move ends, so each leg of
/// the path passes exactly one piece: its victim).
fn capture_order(board: &RefBoard, m: &RefMove) -> Vec<(u8, u8)> {
    if m.captured.is_empty() {
        return Vec::new();
    }
    let origin = m.origin();
    m.path
        .windows(2)
        .map(|leg| {
            let (from, to) = (leg[0], leg[1]);
            let df: i8 = if to.0 > from.0 { 1 } else { -1 };
            let dr: i8 = if to.1 > from.1 { 1 } else { -1 };
            let mut passed = Vec::new();
            let mut at = from;
            while at != to {
                at = ((at.0 as i8 + df) as u8, (at.1 as i8 + dr) as u8);
                if at != to && at != origin && board.get(at).is_some() {
                    passed.push(at);
                }
            }
            assert_eq!(passed.len(), 1, "a capture leg passes one piece: {m:?}");
            passed[0]
        })
        .collect()
}

/// The reference's move tree counted the engine's way in paths mode: moves
/// with the same origin, destination and captures in the same order count
/// once.
fn ref_perft_sequences(rules: RefRules, board: &RefBoard, depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    let mut seen = BTreeSet::new();
    let moves: Vec<RefMove> = ref_legal_moves(rules, board)
        .into_iter()
        .filter(|m| seen.insert((m.origin(), m.destination(), capture_order(board, m))))
        .collect();
    if depth == 1 {
        return moves.len() as u64;
    }
    moves
        .iter()
        .map(|m| ref_perft_sequences(rules, &board.play(m), depth - 1))
        .sum()
}

/// Compares unique perft (and paths perft, via capture sequences) on 40
/// random positions with kings (1–8 pieces a side): depths 1–4 where the
/// tree is small enough, else 1–3; paths perft at depth 3.
fn random_perfts(rs: RuleSet) {
    let rules = ref_rules(rs);
    let mut rng = XorShift::new(seed_of(rs) ^ 0xBEEF);
    let mut done = 0;
    while done < 40 {
        let Some(pos) = random_position(&mut rng, 8, 50) else {
            continue;
        };
        if pos.kings().is_empty() {
            continue;
        }
        done += 1;
        let board = to_ref(&pos);
        let small = perft::perft(rs, &pos, 3, true) <= 20_000;
        let depth = if small { 4 } else { 3 };
        let text = fen::write(rs, &pos);
        for d in 1..=depth {
            let engine = perft::perft(rs, &pos, d, true);
            let reference = ref_perft(rules, &board, d, true);
            assert_eq!(
                engine,
                reference,
                "{rs} unique perft {d} differs at {text} ({} to move)\n{}",
                pos.turn().name(),
                board.to_text()
            );
        }
        let d = depth.min(3);
        let engine = perft::perft(rs, &pos, d, false);
        let reference = ref_perft_sequences(rules, &board, d);
        assert_eq!(
            engine,
            reference,
            "{rs} paths perft {d} differs at {text} ({} to move)\n{}",
            pos.turn().name(),
            board.to_text()
        );
    }
}

#[test]
fn random_perfts_all_rule_sets() {
    for rs in RuleSet::ALL {
        random_perfts(rs);
    }
}

#[test]
fn start_unique_perft_spanish_and_thai() {
    for rs in [RuleSet::Spanish, RuleSet::Thai] {
        let pos = Position::start(rs);
        let board = to_ref(&pos);
        assert_eq!(board, RefBoard::start(ref_rules(rs)), "{rs} start");
        for depth in 1..=6 {
            assert_eq!(
                perft::perft(rs, &pos, depth, true),
                ref_perft(ref_rules(rs), &board, depth, true),
                "{rs} unique perft {depth} from the start"
            );
        }
    }
}

/// The largest count in a data file the reference recounts here.
const DATA_LEAF_LIMIT: u64 = 60_000;

/// Every `perft`/`unique` line of the Spanish and Thai data files with a
/// count up to [`DATA_LEAF_LIMIT`] agrees with the reference (paths lines via
/// capture sequences), and every position in them has the same move list in
/// both generators.
#[test]
fn data_files_agree_with_reference() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/perft");
    let mut checked = 0;
    for file in ["spanish.perft", "thai.perft"] {
        let text = fs::read_to_string(dir.join(file)).expect("readable perft file");
        let mut rule_set = None;
        let mut position = None;
        for (n, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            let at = format!("{file}:{}", n + 1);
            let Some((word, rest)) = line.split_once(' ') else {
                continue;
            };
            match word {
                "rules" => rule_set = Some(rest.parse::<RuleSet>().expect(&at)),
                "fen" => {
                    let rs = rule_set.expect(&at);
                    let pos = if rest == "start" {
                        Position::start(rs)
                    } else {
                        fen::parse(rs, rest).unwrap_or_else(|e| panic!("{at}: {e}"))
                    };
                    assert_agree(rs, &pos, &at);
                    position = Some(pos);
                }
                "perft" | "unique" => {
                    let rs = rule_set.expect(&at);
                    let pos = position.expect(&at);
                    let nums: Vec<u64> = rest
                        .split_whitespace()
                        .map(|x| x.parse().expect(&at))
                        .collect();
                    let (depth, expected) = (nums[0] as u32, nums[1]);
                    if expected > DATA_LEAF_LIMIT {
                        continue;
                    }
                    let board = to_ref(&pos);
                    let reference = if word == "unique" {
                        ref_perft(ref_rules(rs), &board, depth, true)
                    } else {
                        ref_perft_sequences(ref_rules(rs), &board, depth)
                    };
                    assert_eq!(reference, expected, "{at}: reference recount");
                    checked += 1;
                }
                _ => {}
            }
        }
    }
    assert!(checked >= 10, "only {checked} data lines recounted");
}

#[test]
fn conversions_round_trip() {
    for rs in RuleSet::ALL {
        let start = Position::start(rs);
        assert_eq!(from_ref(&to_ref(&start)), start);
        let mut rng = XorShift::new(seed_of(rs));
        for _ in 0..100 {
            if let Some(pos) = random_position(&mut rng, 12, 30) {
                assert_eq!(from_ref(&to_ref(&pos)), pos);
            }
        }
    }
}
