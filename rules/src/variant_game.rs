//! Every rule set behind one type: [`Variant`] names what a lobby plays and
//! [`VariantGame`] plays it, describing moves and pieces by square names so
//! rooms and solo games need not know which engine is underneath.
//!
//! The 8×8 draughts rule sets play on [`Game`], Space Mode on [`SpaceGame`]
//! and the orbit board on [`OrbitGame`]. Square names are the ones the wire
//! protocol uses: `a1`–`h8` on the 8×8 board, `C`, `B1`–`B12`, `A1`–`A12` on
//! the orbit board.
//!
//! Over 700 lines: it adapts three engines behind one type, one match per
//! method, and writes and reads the space rule sets' PDN.

use std::fmt;
use std::fmt::Write as _;
use std::str::FromStr;

use super::draw::DrawRules;
use super::game::{DrawReason, Game, Outcome, WinReason};
use super::orbit::{OrbitColor, OrbitEndReason, OrbitGame, OrbitMove, OrbitSquare, RAYS};
use super::pdn::{self, PdnTags};
use super::position::{Color, Move, Role};
use super::space::{SpaceGame, SpaceMove};
use super::variant::RuleSet;
use super::{Square, fen, notation};

/// What a lobby or a solo game plays: one of the six 8×8 draughts rule sets,
/// Space Mode, or Space Checkers on the orbit board.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    Draughts(RuleSet),
    /// American checkers with wormholes and thruster boosts.
    Space,
    /// Space Checkers on the 25-square orbit board.
    Orbit,
}

impl Variant {
    pub const ALL: [Variant; 8] = [
        Variant::Draughts(RuleSet::American),
        Variant::Draughts(RuleSet::Brazilian),
        Variant::Draughts(RuleSet::Russian),
        Variant::Draughts(RuleSet::Spanish),
        Variant::Draughts(RuleSet::Italian),
        Variant::Draughts(RuleSet::Thai),
        Variant::Space,
        Variant::Orbit,
    ];

    /// The stable name used in configuration, the protocol, URLs and storage.
    pub const fn name(self) -> &'static str {
        match self {
            Variant::Draughts(rs) => rs.name(),
            Variant::Space => "space",
            Variant::Orbit => "orbit",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Variant::Draughts(rs) => rs.title(),
            Variant::Space => "Space Mode",
            Variant::Orbit => "Space Checkers (orbit board)",
        }
    }

    /// Games are scored by points (3/1/2) rather than by wins.
    pub fn scored_by_points(self) -> bool {
        self == Variant::Orbit
    }
}

impl From<RuleSet> for Variant {
    fn from(rs: RuleSet) -> Variant {
        Variant::Draughts(rs)
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not one of our rule sets.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown rule set {0:?} (expected one of american, brazilian, russian, spanish, italian, thai, space, orbit)"
)]
pub struct UnknownVariant(pub String);

impl FromStr for Variant {
    type Err = UnknownVariant;
    fn from_str(s: &str) -> Result<Variant, UnknownVariant> {
        match s.trim().to_ascii_lowercase().as_str() {
            "space" => Ok(Variant::Space),
            "orbit" => Ok(Variant::Orbit),
            _ => s
                .parse::<RuleSet>()
                .map(Variant::Draughts)
                .map_err(|_| UnknownVariant(s.to_owned())),
        }
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for Variant {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Variant {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Variant, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// A legal or played move, described by square names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MoveInfo {
    /// The rule set's notation.
    pub notation: String,
    /// The start square and every square landed on (on the orbit board:
    /// every square passed through), in order.
    pub path: Vec<String>,
    /// Squares of the pieces taken.
    pub captures: Vec<String>,
    /// A Space Mode thruster boost.
    pub boost: bool,
    /// Space Mode wormhole jumps, as (entrance, exit), in order.
    pub teleports: Vec<(String, String)>,
    /// The square the piece ends on: the path's last square, or (Space Mode) the
    /// exit of the wormhole it landed in.
    pub to: String,
    /// Whether the move crowned a man.
    pub crowned: bool,
    /// How the move is stored so that it replays exactly
    /// ([`VariantGame::play_stored`]); not meant for people.
    pub stored: String,
}

/// A legal move's squares alone, without its notation, end square or
/// stored form: what a client needs to offer the move
/// ([`VariantGame::legal_paths`]), at a fraction of [`MoveInfo`]'s strings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MovePath {
    /// As [`MoveInfo::path`].
    pub path: Vec<String>,
    /// As [`MoveInfo::captures`].
    pub captures: Vec<String>,
    /// As [`MoveInfo::boost`].
    pub boost: bool,
    /// As [`MoveInfo::teleports`].
    pub teleports: Vec<(String, String)>,
}

/// One piece, by square name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PieceInfo {
    pub square: String,
    pub color: Color,
    pub king: bool,
}

/// Why a game ended by the rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndReason {
    /// The loser has no pieces left.
    NoPieces,
    /// The loser, to move, cannot move (orbit: neither side can).
    NoMoves,
    Repetition,
    /// The no-progress rule drew the game.
    NoProgress,
    /// A federation's endgame move limit drew the game.
    EndgameLimit,
    /// A federation's limit on moves with the balance of forces unchanged
    /// drew the game.
    MaterialUnchanged,
    /// Orbit: a side has all its pieces in a row on the inner orbit.
    InARow,
    /// Orbit: a side has lost half its pieces.
    HalfLost,
    /// Orbit: the ply cap ended the game, scored as it stood.
    PlyLimit,
}

/// How a game ended by the rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GameOutcome {
    pub winner: Option<Color>,
    pub reason: EndReason,
    /// Orbit only: Dark's and Light's points.
    pub points: Option<[u32; 2]>,
}

/// A move that was refused, and why (the game is unchanged).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MoveRefused(pub String);

/// A game of any rule set. Refused moves leave it unchanged.
#[derive(Clone, Debug)]
pub enum VariantGame {
    Draughts(Game),
    Space(SpaceGame),
    Orbit(OrbitGame),
}

fn orbit_color(c: OrbitColor) -> Color {
    match c {
        OrbitColor::Dark => Color::Dark,
        OrbitColor::Light => Color::Light,
    }
}

const SPACE_RULES: RuleSet = RuleSet::American;

fn space_name(sq: Square) -> String {
    notation::board_name(SPACE_RULES, sq)
}

/// Internal square indices, comma-separated: how draughts and Space Mode
/// moves are stored.
fn stored_squares(path: &[Square]) -> String {
    let mut out = String::new();
    for (i, sq) in path.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{}", sq.index());
    }
    out
}

fn parse_stored_squares(text: &str) -> Option<Vec<Square>> {
    text.split(',')
        .map(|part| part.parse::<u8>().ok().filter(|i| *i < 64).map(Square::new))
        .collect()
}

/// The stored form of a draughts move.
pub fn stored_draughts(m: &Move) -> String {
    stored_squares(m.path())
}

/// The stored form of a Space Mode move.
pub fn stored_space(m: &SpaceMove) -> String {
    stored_squares(&m.path)
}

/// The stored form of an orbit move.
pub fn stored_orbit(m: &OrbitMove) -> String {
    m.long_text()
}

fn draughts_path(rs: RuleSet, m: &Move) -> MovePath {
    MovePath {
        path: m
            .path()
            .iter()
            .map(|&sq| notation::board_name(rs, sq))
            .collect(),
        captures: m
            .captured_in_order()
            .map(|sq| notation::board_name(rs, sq))
            .collect(),
        boost: false,
        teleports: Vec::new(),
    }
}

fn draughts_info(rs: RuleSet, m: &Move, legal: &[Move]) -> MoveInfo {
    MoveInfo {
        notation: notation::move_text(rs, m, legal),
        to: notation::board_name(rs, m.to()),
        crowned: m.crowns(),
        stored: stored_draughts(m),
        ..MoveInfo::from(draughts_path(rs, m))
    }
}

/// Space Mode notation: American square numbers along the path as clicked
/// (a wormhole's entrance, not its exit), `x` between the squares of a
/// capture and `-` otherwise; origin and last square only, unless another
/// legal move shares them.
fn space_text(m: &SpaceMove, legal: &[SpaceMove]) -> String {
    let sep = if m.captured.is_empty() { '-' } else { 'x' };
    let num = |sq: Square| notation::square_number(SPACE_RULES, sq).to_string();
    let last = *m.path.last().expect("a move has a path");
    let shared = legal
        .iter()
        .any(|o| o.path[0] == m.path[0] && o.path.last() == Some(&last) && o.path != m.path);
    if shared || m.path[0] == last {
        let parts: Vec<String> = m.path.iter().map(|&sq| num(sq)).collect();
        parts.join(&sep.to_string())
    } else {
        format!("{}{sep}{}", num(m.path[0]), num(last))
    }
}

fn space_path(m: &SpaceMove) -> MovePath {
    MovePath {
        path: m.path.iter().map(|&sq| space_name(sq)).collect(),
        captures: m.captured.iter().map(|&sq| space_name(sq)).collect(),
        boost: m.boost,
        teleports: m
            .teleports
            .iter()
            .map(|&(a, b)| (space_name(a), space_name(b)))
            .collect(),
    }
}

fn space_info(m: &SpaceMove, legal: &[SpaceMove]) -> MoveInfo {
    MoveInfo {
        notation: space_text(m, legal),
        to: space_name(m.to()),
        crowned: m.crowns,
        stored: stored_space(m),
        ..MoveInfo::from(space_path(m))
    }
}

/// `legal` is the position's legal moves: the notation is the short form
/// unless another of them shares its start and end (as
/// [`OrbitGame::move_text`] writes it, without generating the moves again).
fn orbit_path(m: &OrbitMove) -> MovePath {
    let mut path = vec![m.from.name()];
    path.extend(m.path.iter().map(|sq| sq.name()));
    MovePath {
        path,
        captures: m.captures.iter().map(|sq| sq.name()).collect(),
        boost: false,
        teleports: Vec::new(),
    }
}

fn orbit_info(m: &OrbitMove, legal: &[OrbitMove]) -> MoveInfo {
    let shared = legal
        .iter()
        .filter(|o| o.from == m.from && o.to == m.to)
        .count()
        > 1;
    MoveInfo {
        notation: if shared {
            m.long_text()
        } else {
            m.short_text()
        },
        to: m.to.name(),
        crowned: false,
        stored: stored_orbit(m),
        ..MoveInfo::from(orbit_path(m))
    }
}

/// A move's squares, its other fields empty until filled in.
impl From<MovePath> for MoveInfo {
    fn from(m: MovePath) -> MoveInfo {
        MoveInfo {
            notation: String::new(),
            path: m.path,
            captures: m.captures,
            boost: m.boost,
            teleports: m.teleports,
            to: String::new(),
            crowned: false,
            stored: String::new(),
        }
    }
}

fn refused(e: impl fmt::Display) -> MoveRefused {
    MoveRefused(e.to_string())
}

impl VariantGame {
    /// A new game under the seeds' draw rules. `seed` places Space Mode's
    /// wormholes; the other rule sets ignore it.
    pub fn new(variant: Variant, seed: u64) -> VariantGame {
        VariantGame::with_draw_rules(variant, seed, DrawRules::Standard)
    }

    /// A new game under `draw_rules`. They apply to the six draughts rule
    /// sets; the space rule sets keep their own draw rules.
    pub fn with_draw_rules(variant: Variant, seed: u64, draw_rules: DrawRules) -> VariantGame {
        match variant {
            Variant::Draughts(rs) => {
                VariantGame::Draughts(Game::new(rs).with_draw_rules(draw_rules))
            }
            Variant::Space => VariantGame::Space(SpaceGame::new(seed)),
            Variant::Orbit => VariantGame::Orbit(OrbitGame::new()),
        }
    }

    /// A new game under `draw_rules` with `stored` moves replayed, and what
    /// each move was.
    pub fn replay(
        variant: Variant,
        seed: u64,
        draw_rules: DrawRules,
        stored: &[&str],
    ) -> Result<(VariantGame, Vec<MoveInfo>), String> {
        let mut game = VariantGame::with_draw_rules(variant, seed, draw_rules);
        let mut played = Vec::with_capacity(stored.len());
        for (i, text) in stored.iter().enumerate() {
            let info = game
                .play_stored(text)
                .map_err(|e| format!("stored move {} ({text}) does not replay: {e}", i + 1))?;
            played.push(info);
        }
        Ok((game, played))
    }

    /// The draw rules the game is judged by (always the seeds' for the
    /// space rule sets).
    pub fn draw_rules(&self) -> DrawRules {
        match self {
            VariantGame::Draughts(g) => g.draw_rules(),
            VariantGame::Space(_) | VariantGame::Orbit(_) => DrawRules::Standard,
        }
    }

    pub fn variant(&self) -> Variant {
        match self {
            VariantGame::Draughts(g) => Variant::Draughts(g.rule_set()),
            VariantGame::Space(_) => Variant::Space,
            VariantGame::Orbit(_) => Variant::Orbit,
        }
    }

    /// The seed the game was created with (0 where none is used).
    pub fn seed(&self) -> u64 {
        match self {
            VariantGame::Space(g) => g.seed(),
            _ => 0,
        }
    }

    pub fn turn(&self) -> Color {
        match self {
            VariantGame::Draughts(g) => g.turn(),
            VariantGame::Space(g) => g.turn(),
            VariantGame::Orbit(g) => orbit_color(g.turn()),
        }
    }

    /// Half-moves played.
    pub fn ply(&self) -> u32 {
        match self {
            VariantGame::Draughts(g) => g.moves().len() as u32,
            VariantGame::Space(g) => g.moves().len() as u32,
            VariantGame::Orbit(g) => g.ply(),
        }
    }

    pub fn outcome(&self) -> Option<GameOutcome> {
        let draughts = |o: Outcome| GameOutcome {
            winner: o.winner(),
            reason: match o {
                Outcome::Win {
                    reason: WinReason::NoPieces,
                    ..
                } => EndReason::NoPieces,
                Outcome::Win {
                    reason: WinReason::NoMoves,
                    ..
                } => EndReason::NoMoves,
                Outcome::Draw {
                    reason: DrawReason::Repetition,
                } => EndReason::Repetition,
                Outcome::Draw {
                    reason: DrawReason::NoProgress,
                } => EndReason::NoProgress,
                Outcome::Draw {
                    reason: DrawReason::EndgameLimit,
                } => EndReason::EndgameLimit,
                Outcome::Draw {
                    reason: DrawReason::MaterialUnchanged,
                } => EndReason::MaterialUnchanged,
            },
            points: None,
        };
        match self {
            VariantGame::Draughts(g) => g.outcome().map(draughts),
            VariantGame::Space(g) => g.outcome().map(draughts),
            VariantGame::Orbit(g) => g.outcome().map(|o| GameOutcome {
                winner: o.winner.map(orbit_color),
                reason: match o.reason {
                    OrbitEndReason::InARow(_) => EndReason::InARow,
                    OrbitEndReason::HalfLost(_) => EndReason::HalfLost,
                    OrbitEndReason::NoMoves => EndReason::NoMoves,
                    OrbitEndReason::PlyCap => EndReason::PlyLimit,
                },
                points: Some(o.points),
            }),
        }
    }

    /// Every legal move; empty once the game is over.
    pub fn legal_moves(&self) -> Vec<MoveInfo> {
        match self {
            VariantGame::Draughts(g) => {
                let legal = g.legal_moves();
                legal
                    .iter()
                    .map(|m| draughts_info(g.rule_set(), m, legal))
                    .collect()
            }
            VariantGame::Space(g) => {
                let legal = g.legal_moves();
                legal.iter().map(|m| space_info(m, &legal)).collect()
            }
            VariantGame::Orbit(g) => {
                let legal = g.legal_moves();
                legal.iter().map(|m| orbit_info(m, &legal)).collect()
            }
        }
    }

    /// The legal moves' squares, in [`legal_moves`](Self::legal_moves)'
    /// order, without formatting what only a full move view needs.
    pub fn legal_paths(&self) -> Vec<MovePath> {
        match self {
            VariantGame::Draughts(g) => {
                let rs = g.rule_set();
                g.legal_moves()
                    .iter()
                    .map(|m| draughts_path(rs, m))
                    .collect()
            }
            VariantGame::Space(g) => g.legal_moves().iter().map(space_path).collect(),
            VariantGame::Orbit(g) => g.legal_moves().iter().map(orbit_path).collect(),
        }
    }

    /// Squares of the pieces that can capture when a capture is compulsory.
    pub fn must_capture(&self) -> Vec<String> {
        match self {
            VariantGame::Draughts(g) => g
                .must_capture()
                .into_iter()
                .map(|sq| notation::board_name(g.rule_set(), sq))
                .collect(),
            VariantGame::Space(g) => {
                let mut from: Vec<Square> = g
                    .legal_moves()
                    .iter()
                    .filter(|m| !m.captured.is_empty())
                    .map(SpaceMove::from)
                    .collect();
                from.sort_by_key(|sq| sq.index());
                from.dedup();
                from.into_iter().map(space_name).collect()
            }
            VariantGame::Orbit(_) => Vec::new(),
        }
    }

    /// Every piece on the board.
    pub fn pieces(&self) -> Vec<PieceInfo> {
        let board = |rs: RuleSet, pos: &super::Position| -> Vec<PieceInfo> {
            pos.occupied()
                .into_iter()
                .filter_map(|sq| {
                    pos.piece_at(sq).map(|(color, role)| PieceInfo {
                        square: notation::board_name(rs, sq),
                        color,
                        king: role == Role::King,
                    })
                })
                .collect()
        };
        match self {
            VariantGame::Draughts(g) => board(g.rule_set(), g.position()),
            VariantGame::Space(g) => board(SPACE_RULES, g.position()),
            VariantGame::Orbit(g) => OrbitSquare::all()
                .filter_map(|sq| {
                    g.position().get(sq).map(|c| PieceInfo {
                        square: sq.name(),
                        color: orbit_color(c),
                        king: false,
                    })
                })
                .collect(),
        }
    }

    /// The position as text: the rule set's FEN (American FEN for Space
    /// Mode, without wormholes or charges), or for the orbit board
    /// `D:D<squares>:L<squares>` with the side to move first.
    pub fn fen(&self) -> String {
        match self {
            VariantGame::Draughts(g) => fen::write(g.rule_set(), g.position()),
            VariantGame::Space(g) => fen::write(SPACE_RULES, g.position()),
            VariantGame::Orbit(g) => {
                let pos = g.position();
                let side = |c: OrbitColor| -> String {
                    let names: Vec<String> = pos.pieces(c).iter().map(|sq| sq.name()).collect();
                    names.join(",")
                };
                let turn = match pos.turn {
                    OrbitColor::Dark => 'D',
                    OrbitColor::Light => 'L',
                };
                format!(
                    "{turn}:D{}:L{}",
                    side(OrbitColor::Dark),
                    side(OrbitColor::Light)
                )
            }
        }
    }

    /// Space Mode's wormholes, by square name.
    pub fn wormholes(&self) -> Option<[String; 2]> {
        match self {
            VariantGame::Space(g) => Some(g.wormholes().map(space_name)),
            _ => None,
        }
    }

    /// Space Mode's thruster charges left: Dark's, Light's.
    pub fn boosts_left(&self) -> Option<[u8; 2]> {
        match self {
            VariantGame::Space(g) => {
                Some([g.boosts_left(Color::Dark), g.boosts_left(Color::Light)])
            }
            _ => None,
        }
    }

    /// The orbit board's points as the position stands: Dark's, Light's.
    pub fn points(&self) -> Option<[u32; 2]> {
        match self {
            VariantGame::Orbit(g) => Some(super::orbit::score(g.position())),
            _ => None,
        }
    }

    /// Plays a move written in the rule set's notation.
    pub fn play_text(&mut self, text: &str) -> Result<MoveInfo, MoveRefused> {
        match self {
            VariantGame::Draughts(g) => {
                let legal = g.legal_moves().to_vec();
                let m = g.play_text(text).map_err(refused)?;
                Ok(draughts_info(g.rule_set(), &m, &legal))
            }
            VariantGame::Space(g) => {
                let squares: Option<Vec<Square>> = text
                    .trim()
                    .split(['-', 'x', 'X', ':'])
                    .map(|part| notation::parse_square(SPACE_RULES, part))
                    .collect();
                let Some(squares) = squares.filter(|s| s.len() >= 2) else {
                    return Err(MoveRefused(format!("cannot read move text {text:?}")));
                };
                let legal = g.legal_moves();
                // A full path names one move; two squares may also be the
                // origin and last square of a longer path.
                let exact: Vec<&SpaceMove> = legal.iter().filter(|m| m.path == squares).collect();
                let found: Vec<&SpaceMove> = if exact.len() == 1 || squares.len() > 2 {
                    exact
                } else {
                    legal
                        .iter()
                        .filter(|m| m.path[0] == squares[0] && m.path.last() == Some(&squares[1]))
                        .collect()
                };
                match found.as_slice() {
                    // A full path may name a move the list merged with
                    // another of the same result.
                    [] if squares.len() > 2 => {
                        let played = g.play_path(&squares).map_err(refused)?;
                        Ok(space_info(&played, &legal))
                    }
                    [] => Err(MoveRefused(format!("{text} is not a legal move"))),
                    [m] => {
                        let path = m.path.clone();
                        let played = g.play_path(&path).map_err(refused)?;
                        Ok(space_info(&played, &legal))
                    }
                    _ => Err(MoveRefused(format!(
                        "{text} is ambiguous; give every square of the path"
                    ))),
                }
            }
            VariantGame::Orbit(g) => {
                // A move `parse_move` found is one of the legal moves.
                let m = g.parse_move(text).map_err(refused)?;
                let info = orbit_info(&m, &g.legal_moves());
                g.play_listed(&m);
                Ok(info)
            }
        }
    }

    /// Plays the move with this path of square names (as in
    /// [`MoveInfo::path`]; on the orbit board the origin and final square
    /// are enough when no other move shares them).
    pub fn play_path(&mut self, names: &[String]) -> Result<MoveInfo, MoveRefused> {
        let off_board =
            || MoveRefused("the path names a square that is not a playing square".into());
        match self {
            VariantGame::Draughts(g) => {
                let rs = g.rule_set();
                let squares: Vec<Square> = names
                    .iter()
                    .map(|n| notation::parse_board_name(rs, n))
                    .collect::<Option<_>>()
                    .ok_or_else(off_board)?;
                let legal = g.legal_moves().to_vec();
                let m = g.play_path(&squares).map_err(refused)?;
                Ok(draughts_info(rs, &m, &legal))
            }
            VariantGame::Space(g) => {
                let squares: Vec<Square> = names
                    .iter()
                    .map(|n| notation::parse_board_name(SPACE_RULES, n))
                    .collect::<Option<_>>()
                    .ok_or_else(off_board)?;
                let legal = g.legal_moves();
                let m = g.play_path(&squares).map_err(refused)?;
                Ok(space_info(&m, &legal))
            }
            VariantGame::Orbit(_) => {
                if names.iter().any(|n| OrbitSquare::parse(n).is_none()) {
                    return Err(off_board());
                }
                self.play_text(&names.join("-"))
            }
        }
    }

    /// Plays a move in its stored form ([`MoveInfo::stored`]).
    pub fn play_stored(&mut self, stored: &str) -> Result<MoveInfo, MoveRefused> {
        match self {
            VariantGame::Draughts(g) => {
                let path = parse_stored_squares(stored)
                    .ok_or_else(|| MoveRefused(format!("bad stored move {stored:?}")))?;
                let legal = g.legal_moves().to_vec();
                let m = g.play_path(&path).map_err(refused)?;
                Ok(draughts_info(g.rule_set(), &m, &legal))
            }
            VariantGame::Space(g) => {
                let path = parse_stored_squares(stored)
                    .ok_or_else(|| MoveRefused(format!("bad stored move {stored:?}")))?;
                let legal = g.legal_moves();
                let m = g.play_path(&path).map_err(refused)?;
                Ok(space_info(&m, &legal))
            }
            VariantGame::Orbit(_) => self.play_text(stored),
        }
    }

    /// Reads a game this crate wrote as PDN ([`pdn`](Self::pdn)) back: the
    /// 8×8 rule sets through [`pdn::read`], Space Mode from its `Seed` tag
    /// and its moves, orbit from its moves (`--` is a pass, which the game
    /// makes by itself).
    pub fn read_pdn(variant: Variant, text: &str) -> Result<VariantGame, String> {
        if let Variant::Draughts(rs) = variant {
            return pdn::read(rs, text)
                .map(VariantGame::Draughts)
                .map_err(|e| e.to_string());
        }
        let parts = pdn::parts(text);
        let seed = match variant {
            Variant::Space => parts
                .tag("Seed")
                .and_then(|s| s.parse().ok())
                .ok_or("a Space Mode game needs its Seed tag")?,
            _ => 0,
        };
        let mut game = VariantGame::new(variant, seed);
        for (i, text) in parts.moves.iter().enumerate() {
            if text == "--" {
                continue;
            }
            game.play_text(text)
                .map_err(|e| format!("move {} ({text}): {e}", i + 1))?;
        }
        Ok(game)
    }

    /// The game as PDN. `notations` are the moves as they were written when
    /// played; the 8×8 rule sets rewrite them from the game itself.
    pub fn pdn(&self, tags: &PdnTags, notations: &[String]) -> String {
        match self {
            VariantGame::Draughts(g) => pdn::write(g, tags),
            VariantGame::Space(g) => {
                write_plain_pdn(self, tags, notations, format!("[Seed \"{}\"]\n", g.seed()))
            }
            VariantGame::Orbit(_) => write_plain_pdn(self, tags, notations, String::new()),
        }
    }
}

/// PDN for the space rule sets, by the same conventions as the 8×8 rule
/// sets (see RULES.md, "PDN"): `White` and `Black` name the players, Dark
/// (who moves first) being Black as in American checkers, and the result
/// reads White–Black. Space Mode adds American's `GameType` (its board and
/// numbering) with `[Variant "space"]` and the wormholes' `Seed`; orbit has
/// no PDN game type, only `[Variant "orbit"]`. Points read White–Black.
fn write_plain_pdn(
    game: &VariantGame,
    tags: &PdnTags,
    notations: &[String],
    extra: String,
) -> String {
    let winner = match tags.result_override {
        Some(w) => Some(w),
        None => game.outcome().map(|o| o.winner),
    };
    let result = match winner {
        None => "*",
        Some(w) => pdn::result_token(SPACE_RULES, w),
    };
    let esc = pdn::escape;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "[Event \"{}\"]",
        esc(tags.event.as_deref().unwrap_or("Jumpgate game"))
    );
    let _ = writeln!(
        out,
        "[Date \"{}\"]",
        esc(tags.date.as_deref().unwrap_or("????.??.??"))
    );
    let _ = writeln!(
        out,
        "[White \"{}\"]",
        esc(tags.light.as_deref().unwrap_or("?"))
    );
    let _ = writeln!(
        out,
        "[Black \"{}\"]",
        esc(tags.dark.as_deref().unwrap_or("?"))
    );
    let _ = writeln!(out, "[Result \"{result}\"]");
    if game.variant() == Variant::Space {
        let _ = writeln!(out, "[GameType \"{}\"]", SPACE_RULES.pdn_game_type());
    }
    let _ = writeln!(out, "[Variant \"{}\"]", game.variant().name());
    out.push_str(&extra);
    if let Some([dark, light]) = tags.points.or(game.outcome().and_then(|o| o.points)) {
        let _ = writeln!(out, "[Points \"{light}-{dark}\"]");
    }
    out.push('\n');
    // Replayed to know who made each move: on the orbit board a side that
    // cannot move passes, written `--` in its place.
    let mut replay = VariantGame::new(game.variant(), game.seed());
    let mut tokens: Vec<String> = Vec::new();
    let mut next = Color::Dark;
    let mut number = 1;
    for text in notations {
        let mover = replay.turn();
        if replay.play_text(text).is_err() {
            break;
        }
        let words = if mover == next {
            vec![text.clone()]
        } else {
            vec!["--".to_owned(), text.clone()]
        };
        for word in words {
            if next == Color::Dark {
                tokens.push(format!("{number}. {word}"));
            } else {
                tokens.push(word);
                number += 1;
            }
            next = next.opposite();
        }
    }
    pdn::push_movetext(&mut out, tokens, result);
    out
}

/// Where one square of a non-8×8 board is drawn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SquarePlace {
    pub name: String,
    /// Centre in a 1000 × 1000 box, x to the right, y downwards.
    pub x: u16,
    pub y: u16,
}

/// The orbit board's drawing: every square's place and the lines joining
/// neighbours (rays out from the core, the inner and the outer ring).
///
/// Ray `k` points (k − 1) × 30° + 15° clockwise from straight up, so ray 1
/// is the leftmost ray of the top-right quadrant.
pub fn orbit_geometry() -> (Vec<SquarePlace>, Vec<[String; 2]>) {
    let place = |sq: OrbitSquare| -> SquarePlace {
        let (radius, k) = match sq {
            OrbitSquare::C => (0.0, 1),
            OrbitSquare::Inner(k) => (250.0, k),
            OrbitSquare::Outer(k) => (440.0, k),
        };
        let angle = (f64::from(k - 1) * 30.0 + 15.0).to_radians();
        SquarePlace {
            name: sq.name(),
            x: (500.0 + radius * angle.sin()).round() as u16,
            y: (500.0 - radius * angle.cos()).round() as u16,
        }
    };
    let squares = OrbitSquare::all().map(place).collect();
    let mut lines = Vec::new();
    for k in 1..=RAYS {
        let next = k % RAYS + 1;
        lines.push([OrbitSquare::C.name(), OrbitSquare::Inner(k).name()]);
        lines.push([OrbitSquare::Inner(k).name(), OrbitSquare::Outer(k).name()]);
        lines.push([
            OrbitSquare::Inner(k).name(),
            OrbitSquare::Inner(next).name(),
        ]);
        lines.push([
            OrbitSquare::Outer(k).name(),
            OrbitSquare::Outer(next).name(),
        ]);
    }
    (squares, lines)
}
