//! The draw rules beyond threefold repetition, as data: how long play by
//! kings alone may last, and which endgames a federation limits to a number
//! of moves. Two sets per rule set: the seeds' ([`DrawRules::Standard`],
//! the default) and its federation's ([`DrawRules::Federation`], a lobby
//! option). RULES.md gives the rules and their sources.
//!
//! A [`DrawTable`] only reads the game's positions; [`crate::game::Game`]
//! keeps them and asks the table after every move.

use std::fmt;
use std::str::FromStr;

use super::game::DrawReason;
use super::position::{Color, Position};

/// Which draw rules a game is played under.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum DrawRules {
    /// The seeds' rules: threefold repetition, and a run of plies with no
    /// capture and no man move (80 in American, 20 elsewhere).
    #[default]
    Standard,
    /// The rule set's federation rules where they differ from the seeds';
    /// the same as `Standard` where they do not, or where no clear source
    /// was found.
    Federation,
}

impl DrawRules {
    pub const ALL: [DrawRules; 2] = [DrawRules::Standard, DrawRules::Federation];

    /// The stable name used in the protocol and in storage.
    pub const fn name(self) -> &'static str {
        match self {
            DrawRules::Standard => "standard",
            DrawRules::Federation => "federation",
        }
    }
}

impl fmt::Display for DrawRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not one of the draw-rule sets.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown draw rules {0:?} (expected standard or federation)")]
pub struct UnknownDrawRules(pub String);

impl FromStr for DrawRules {
    type Err = UnknownDrawRules;
    fn from_str(s: &str) -> Result<DrawRules, UnknownDrawRules> {
        let lower = s.trim().to_ascii_lowercase();
        DrawRules::ALL
            .into_iter()
            .find(|rules| rules.name() == lower)
            .ok_or_else(|| UnknownDrawRules(s.to_owned()))
    }
}

/// How many men and kings each side has: the balance of forces, which
/// changes only by a capture or a crowning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Material {
    men: [u32; 2],
    kings: [u32; 2],
}

impl Material {
    pub fn of(position: &Position) -> Material {
        let count = |color: Color| {
            let pieces = position.pieces(color);
            let kings = (pieces & position.kings()).count();
            (pieces.count() - kings, kings)
        };
        let (dark_men, dark_kings) = count(Color::Dark);
        let (light_men, light_kings) = count(Color::Light);
        Material {
            men: [dark_men, light_men],
            kings: [dark_kings, light_kings],
        }
    }

    pub fn men(&self, color: Color) -> u32 {
        self.men[color.index()]
    }

    pub fn kings(&self, color: Color) -> u32 {
        self.kings[color.index()]
    }

    pub fn pieces(&self, color: Color) -> u32 {
        self.men(color) + self.kings(color)
    }

    /// Pieces on the board, both sides.
    pub fn total(&self) -> u32 {
        self.pieces(Color::Dark) + self.pieces(Color::Light)
    }

    /// The side with `strong_pieces` pieces (in range), at least one of
    /// them a king, when the other side has a lone king.
    fn against_lone_king(&self, strong_pieces: (u32, u32)) -> Option<Color> {
        [Color::Dark, Color::Light].into_iter().find(|&strong| {
            let weak = strong.opposite();
            let n = self.pieces(strong);
            self.pieces(weak) == 1
                && self.kings(weak) == 1
                && self.kings(strong) >= 1
                && (strong_pieces.0..=strong_pieces.1).contains(&n)
        })
    }
}

/// An endgame a federation limits, told by the pieces on the board.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endgame {
    /// One side has only kings, at least this many; the other a lone king.
    KingsAgainstLoneKing { min_kings: u32 },
    /// One side has a lone king; the other this many pieces (inclusive
    /// range), at least one of them a king.
    LoneKingAgainst { min_pieces: u32, max_pieces: u32 },
    /// Both sides have at least one king, with this many pieces on the
    /// board in all (inclusive range).
    BothSidesKings { min_total: u32, max_total: u32 },
}

impl Endgame {
    /// Whether `material` is this endgame, and which side is the stronger
    /// (`None` inside when neither is).
    fn matches(self, material: &Material) -> Option<Option<Color>> {
        match self {
            Endgame::KingsAgainstLoneKing { min_kings } => material
                .against_lone_king((min_kings, u32::MAX))
                .filter(|&strong| material.men(strong) == 0)
                .map(Some),
            Endgame::LoneKingAgainst {
                min_pieces,
                max_pieces,
            } => material
                .against_lone_king((min_pieces, max_pieces))
                .map(Some),
            Endgame::BothSidesKings {
                min_total,
                max_total,
            } => (material.kings(Color::Dark) >= 1
                && material.kings(Color::Light) >= 1
                && (min_total..=max_total).contains(&material.total()))
            .then_some(None),
        }
    }
}

/// Where an endgame's count starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountFrom {
    /// The last change of the balance of forces (a capture or a crowning),
    /// even one that stays in the same endgame.
    BalanceChange,
    /// The position where the board became this endgame; a crowning or a
    /// capture that leaves it in the same endgame does not restart it.
    Entry,
}

/// What a limit counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counted {
    /// Plies, both sides' moves together.
    Plies,
    /// Moves by the stronger side only.
    StrongerSideMoves,
}

/// One endgame's move limit: when `limit` of what `counted` names have
/// been played since `from` and the game goes on, it is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndgameLimit {
    pub endgame: Endgame,
    pub from: CountFrom,
    pub counted: Counted,
    pub limit: u32,
    pub reason: DrawReason,
}

/// The draw rules of one rule set under one [`DrawRules`] choice, besides
/// threefold repetition (which every table keeps).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrawTable {
    /// Plies in a row with no capture and no man move that draw.
    pub king_only_plies: u32,
    /// Endgame limits, checked in order.
    pub endgames: &'static [EndgameLimit],
}

impl DrawTable {
    /// Only the king-only run: the seeds' rule.
    pub const fn king_only(plies: u32) -> DrawTable {
        DrawTable {
            king_only_plies: plies,
            endgames: &[],
        }
    }

    /// The draw, other than by repetition, that this table calls for after
    /// `history` (every position of the game, the current one last), with
    /// `plies_without_progress` plies since the last capture or man move.
    pub fn limit_reached(
        &self,
        history: &[Position],
        plies_without_progress: u32,
    ) -> Option<DrawReason> {
        if plies_without_progress >= self.king_only_plies {
            return Some(DrawReason::NoProgress);
        }
        let current = history.last()?;
        let material = Material::of(current);
        self.endgames.iter().find_map(|limit| {
            let strong = limit.endgame.matches(&material)?;
            let run = match limit.from {
                CountFrom::BalanceChange => trailing_run(history, |p| Material::of(p) == material),
                CountFrom::Entry => trailing_run(history, |p| {
                    limit.endgame.matches(&Material::of(p)).is_some()
                }),
            };
            let count = match (limit.counted, strong) {
                (Counted::StrongerSideMoves, Some(strong)) => {
                    // Each position but the last had a move played from it
                    // by its side to move.
                    run[..run.len() - 1]
                        .iter()
                        .filter(|p| p.turn() == strong)
                        .count() as u32
                }
                _ => (run.len() - 1) as u32,
            };
            (count >= limit.limit).then_some(limit.reason)
        })
    }
}

/// The longest run of positions at the end of `history` that all satisfy
/// `holds` (never empty when the last one does).
fn trailing_run(history: &[Position], holds: impl Fn(&Position) -> bool) -> &[Position] {
    let start = history.iter().rposition(|p| !holds(p)).map_or(0, |i| i + 1);
    &history[start..]
}

/// Russian draughts under the draughts-64 rules (the FMJD section for the
/// 8×8 game, articles 7.2.4–7.2.6; the same list is on shashky.in.ua):
/// 15 moves each of kings alone; three or more kings against a
/// lone king must win by their 15th move; with kings on both sides, the
/// balance of forces may stand unchanged 30 moves each with 4 or 5 pieces,
/// 60 with 6 or 7.
pub const RUSSIAN_FEDERATION: DrawTable = DrawTable {
    king_only_plies: 30,
    endgames: &[
        EndgameLimit {
            endgame: Endgame::KingsAgainstLoneKing { min_kings: 3 },
            from: CountFrom::BalanceChange,
            counted: Counted::StrongerSideMoves,
            limit: 15,
            reason: DrawReason::EndgameLimit,
        },
        EndgameLimit {
            endgame: Endgame::BothSidesKings {
                min_total: 4,
                max_total: 5,
            },
            from: CountFrom::BalanceChange,
            counted: Counted::Plies,
            limit: 60,
            reason: DrawReason::MaterialUnchanged,
        },
        EndgameLimit {
            endgame: Endgame::BothSidesKings {
                min_total: 6,
                max_total: 7,
            },
            from: CountFrom::BalanceChange,
            counted: Counted::Plies,
            limit: 120,
            reason: DrawReason::MaterialUnchanged,
        },
    ],
};

/// Brazilian draughts under the international (FMJD) draw rules, which
/// Brazilian draughts takes over on the 8×8 board: 25 moves each of kings
/// alone; a lone king against three pieces with a king, 16 moves each;
/// against one or two pieces with a king, 5 moves each. The sources
/// disagree for Brazilian draughts (RULES.md says how).
pub const BRAZILIAN_FEDERATION: DrawTable = DrawTable {
    king_only_plies: 50,
    endgames: &[
        EndgameLimit {
            endgame: Endgame::LoneKingAgainst {
                min_pieces: 3,
                max_pieces: 3,
            },
            from: CountFrom::Entry,
            counted: Counted::Plies,
            limit: 32,
            reason: DrawReason::EndgameLimit,
        },
        EndgameLimit {
            endgame: Endgame::LoneKingAgainst {
                min_pieces: 1,
                max_pieces: 2,
            },
            from: CountFrom::Entry,
            counted: Counted::Plies,
            limit: 10,
            reason: DrawReason::EndgameLimit,
        },
    ],
};

/// Italian draughts under the Italian federation's rule: 40 moves each
/// with no capture and no man move (known from secondary sources only).
pub const ITALIAN_FEDERATION: DrawTable = DrawTable::king_only(80);

/// American checkers under the WCDF rules, which the ACF plays by: 40 moves
/// each with no man moved and nothing captured. The seeds' rule already.
pub const AMERICAN_FEDERATION: DrawTable = DrawTable::king_only(80);

/// Spanish draughts: no federation text on draws was found clear enough to
/// follow, so the seeds' rule stands.
pub const SPANISH_FEDERATION: DrawTable = DrawTable::king_only(20);

/// Thai draughts: no federation text on draws was found, so the seeds' rule
/// stands.
pub const THAI_FEDERATION: DrawTable = DrawTable::king_only(20);
