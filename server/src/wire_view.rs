//! Turns engine values into protocol views: board names, notation, legal
//! moves, deadlines as Unix milliseconds.

use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use jumpgate_protocol as wire;
use tokio::time::Instant;

use crate::rules::{Color, DrawRules, MoveInfo, RuleSet, Variant, VariantGame};
use crate::sync::lock;

pub fn rule_set(variant: Variant) -> wire::RuleSet {
    match variant {
        Variant::Draughts(RuleSet::American) => wire::RuleSet::American,
        Variant::Draughts(RuleSet::Brazilian) => wire::RuleSet::Brazilian,
        Variant::Draughts(RuleSet::Russian) => wire::RuleSet::Russian,
        Variant::Draughts(RuleSet::Spanish) => wire::RuleSet::Spanish,
        Variant::Draughts(RuleSet::Italian) => wire::RuleSet::Italian,
        Variant::Draughts(RuleSet::Thai) => wire::RuleSet::Thai,
        Variant::Space => wire::RuleSet::Space,
        Variant::Orbit => wire::RuleSet::Orbit,
    }
}

pub fn rule_set_from_wire(rs: wire::RuleSet) -> Variant {
    match rs {
        wire::RuleSet::American => Variant::Draughts(RuleSet::American),
        wire::RuleSet::Brazilian => Variant::Draughts(RuleSet::Brazilian),
        wire::RuleSet::Russian => Variant::Draughts(RuleSet::Russian),
        wire::RuleSet::Spanish => Variant::Draughts(RuleSet::Spanish),
        wire::RuleSet::Italian => Variant::Draughts(RuleSet::Italian),
        wire::RuleSet::Thai => Variant::Draughts(RuleSet::Thai),
        wire::RuleSet::Space => Variant::Space,
        wire::RuleSet::Orbit => Variant::Orbit,
    }
}

pub fn pace_from_wire(pace: wire::Pace) -> crate::lobby::Pace {
    match pace {
        wire::Pace::Live => crate::lobby::Pace::Live,
        wire::Pace::Correspondence => crate::lobby::Pace::Correspondence,
    }
}

pub fn draw_rules(rules: DrawRules) -> wire::DrawRules {
    match rules {
        DrawRules::Standard => wire::DrawRules::Standard,
        DrawRules::Federation => wire::DrawRules::Federation,
    }
}

pub fn draw_rules_from_wire(rules: wire::DrawRules) -> DrawRules {
    match rules {
        wire::DrawRules::Standard => DrawRules::Standard,
        wire::DrawRules::Federation => DrawRules::Federation,
    }
}

pub fn color(c: Color) -> wire::Color {
    match c {
        Color::Dark => wire::Color::Dark,
        Color::Light => wire::Color::Light,
    }
}

/// A moment on tokio's clock and the Unix time then, in nanoseconds: what
/// [`unix_ms`] converts from, while the wall clock still agrees with it.
static WALL_ANCHOR: Mutex<Option<(Instant, i128)>> = Mutex::new(None);

/// How far the wall clock may wander from [`WALL_ANCHOR`] before it is
/// taken again (the clock was set, or the host was suspended).
const WALL_DRIFT_NS: i128 = 1_000_000;

/// A tokio instant as Unix milliseconds (wall clock). One instant gives
/// the same millisecond whenever it is asked, while the wall clock keeps
/// pace with tokio's: a deadline or a break's end reads the same in every
/// frame that shows it. Reading both clocks afresh on each call, and
/// rounding twice, made two frames of one version differ by a millisecond
/// about half the time.
pub fn unix_ms(at: Instant) -> u64 {
    let now = Instant::now();
    let now_unix = unix_ns(SystemTime::now());
    let (base, base_unix) = {
        let mut anchor = lock(&WALL_ANCHOR);
        match *anchor {
            Some((base, base_unix))
                if (base_unix + nanos_between(base, now) - now_unix).abs() < WALL_DRIFT_NS =>
            {
                (base, base_unix)
            }
            _ => *anchor.insert((now, now_unix)),
        }
    };
    let at_unix = base_unix + nanos_between(base, at);
    u64::try_from(at_unix.max(0) / 1_000_000).unwrap_or(u64::MAX)
}

/// Nanoseconds from `from` to `to`, negative when `to` comes first.
fn nanos_between(from: Instant, to: Instant) -> i128 {
    if to >= from {
        (to - from).as_nanos() as i128
    } else {
        -((from - to).as_nanos() as i128)
    }
}

fn unix_ns(at: SystemTime) -> i128 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// [`move_view`] for a move no longer needed, without copying its strings.
pub fn into_move_view(m: MoveInfo) -> wire::MoveView {
    wire::MoveView {
        notation: m.notation,
        path: m.path,
        captures: m.captures,
        boost: m.boost,
        teleports: m.teleports.into_iter().map(|(a, b)| [a, b]).collect(),
    }
}

/// A move's squares as a move view with no notation (protocol 2's compact
/// legal moves carry none).
pub fn path_view(m: crate::rules::MovePath) -> wire::MoveView {
    wire::MoveView {
        notation: String::new(),
        path: m.path,
        captures: m.captures,
        boost: m.boost,
        teleports: m.teleports.into_iter().map(|(a, b)| [a, b]).collect(),
    }
}

pub fn move_view(m: &MoveInfo) -> wire::MoveView {
    wire::MoveView {
        notation: m.notation.clone(),
        path: m.path.clone(),
        captures: m.captures.clone(),
        boost: m.boost,
        teleports: m
            .teleports
            .iter()
            .map(|(a, b)| [a.clone(), b.clone()])
            .collect(),
    }
}

pub fn points(p: [u32; 2]) -> wire::Points {
    wire::Points {
        dark: p[0],
        light: p[1],
    }
}

/// The drawing of a rule set's board, for rule sets whose board is not the
/// 8×8 grid every client knows (orbit).
pub fn board(rule_set: Variant) -> Option<wire::BoardGeometry> {
    (rule_set == Variant::Orbit).then(orbit_board)
}

/// The orbit board's drawing, built once.
fn orbit_board() -> wire::BoardGeometry {
    static BOARD: std::sync::OnceLock<wire::BoardGeometry> = std::sync::OnceLock::new();
    BOARD
        .get_or_init(|| {
            let (squares, lines) = crate::rules::variant_game::orbit_geometry();
            wire::BoardGeometry {
                squares: squares
                    .into_iter()
                    .map(|s| wire::SquareGeometry {
                        name: s.name,
                        x: s.x,
                        y: s.y,
                    })
                    .collect(),
                lines,
            }
        })
        .clone()
}

/// The game as a client sees it. `last_move` is the move just played.
pub fn game_view(
    game: &VariantGame,
    dark_seat: u8,
    notations: &[String],
    last_move: Option<&MoveInfo>,
    deadline: Instant,
    draw_offer: Option<Color>,
    result: Option<wire::GameResult>,
) -> wire::GameView {
    let pieces = game
        .pieces()
        .into_iter()
        .map(|p| wire::PieceView {
            square: p.square,
            color: color(p.color),
            king: p.king,
        })
        .collect();
    let in_play = result.is_none();
    let (legal_moves, must_capture) = if in_play {
        (
            game.legal_moves().iter().map(move_view).collect(),
            game.must_capture(),
        )
    } else {
        (Vec::new(), Vec::new())
    };
    let space = match (game.wormholes(), game.boosts_left()) {
        (Some(wormholes), Some([dark, light])) => Some(wire::SpaceView {
            wormholes,
            boosts: wire::Boosts { dark, light },
        }),
        _ => None,
    };
    wire::GameView {
        dark_seat,
        fen: game.fen(),
        pieces,
        turn: color(game.turn()),
        ply: game.ply(),
        moves: notations.to_vec(),
        last_move: last_move.map(move_view),
        legal_moves,
        must_capture,
        deadline: if in_play { unix_ms(deadline) } else { 0 },
        remaining_ms: if in_play {
            deadline
                .saturating_duration_since(Instant::now())
                .as_millis()
                .min(u128::from(u32::MAX)) as u32
        } else {
            0
        },
        draw_offer: draw_offer.map(color),
        draw_declined: None,
        result,
        board: board(game.variant()),
        space,
        points: game.points().map(points),
    }
}
