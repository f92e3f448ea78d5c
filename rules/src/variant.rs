//! What differs between the rule sets, as data: one zero-sized type per rule
//! set implementing [`Rules`], and the runtime choice [`RuleSet`].
//!
//! Move generation is generic over `Rules`, so each rule set gets its own
//! monomorphised generator and the differences cost nothing at run time.

use std::fmt;
use std::str::FromStr;

use super::draw::{self, DrawRules, DrawTable};

/// Which captures a player may choose among.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureChoice {
    /// Any capture sequence (American, Russian, Thai).
    Free,
    /// One that takes the most pieces, a king counting as one (Brazilian, Spanish).
    MostPieces,
    /// Most pieces, then most kings, then made by a king, then the one that
    /// meets a king earliest (Italian).
    Italian,
}

/// How squares are named in a rule set's notation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SquareNaming {
    /// Numbers 1–32 from the first player's bottom-right corner, right to
    /// left, bottom to top (PDN "N1").
    NumericFromBottomRight,
    /// Numbers 1–32 from the top-left corner as the first player sees it,
    /// left to right, top to bottom (PDN "N2").
    NumericFromTopLeft,
    /// Algebraic a1–h8, a1 at the first player's bottom-left (PDN "A0").
    Algebraic,
}

/// The rules of one rule set. Every item is a constant so that the generic
/// move generator specialises completely.
pub trait Rules {
    const RULE_SET: RuleSet;
    /// Men may capture backwards as well as forwards.
    const MEN_CAPTURE_BACKWARD: bool;
    /// Kings move and capture any distance along a diagonal, landing on any
    /// empty square beyond the captured piece.
    const FLYING_KINGS: bool;
    /// Men may capture kings (false only in Italian).
    const MEN_CAPTURE_KINGS: bool;
    const CAPTURE_CHOICE: CaptureChoice;
    /// A man that reaches the far row during a capture is crowned at once and
    /// continues as a king (Russian). Otherwise it continues as a man and is
    /// crowned only if the move ends there; in the rule sets where men
    /// capture forward only, no capture can continue from the far row, so
    /// there crowning always ends the move.
    const CROWN_MID_CAPTURE: bool;
    /// Plies in a row with no capture and no man move that draw the game
    /// under the seeds' draw rules.
    const NO_PROGRESS_DRAW_PLIES: u32;
    /// The federation's draw rules ([`DrawRules::Federation`]).
    const FEDERATION_DRAWS: DrawTable;
    /// Rows of men each side starts with.
    const START_ROWS: u8;

    /// The draw rules besides repetition under `rules`.
    fn draw_table(rules: DrawRules) -> DrawTable {
        match rules {
            DrawRules::Standard => DrawTable::king_only(Self::NO_PROGRESS_DRAW_PLIES),
            DrawRules::Federation => Self::FEDERATION_DRAWS,
        }
    }
}

macro_rules! rule_set_type {
    ($(#[$doc:meta])* $name:ident, $rs:expr, back: $back:expr, flying: $flying:expr,
     men_take_kings: $mtk:expr, choice: $choice:expr, crown_mid: $crown:expr,
     draw_plies: $plies:expr, federation_draws: $fed:expr, rows: $rows:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default)]
        pub struct $name;
        impl Rules for $name {
            const RULE_SET: RuleSet = $rs;
            const MEN_CAPTURE_BACKWARD: bool = $back;
            const FLYING_KINGS: bool = $flying;
            const MEN_CAPTURE_KINGS: bool = $mtk;
            const CAPTURE_CHOICE: CaptureChoice = $choice;
            const CROWN_MID_CAPTURE: bool = $crown;
            const NO_PROGRESS_DRAW_PLIES: u32 = $plies;
            const FEDERATION_DRAWS: DrawTable = $fed;
            const START_ROWS: u8 = $rows;
        }
    };
}

rule_set_type!(
    /// English draughts / American checkers.
    American, RuleSet::American, back: false, flying: false, men_take_kings: true,
    choice: CaptureChoice::Free, crown_mid: false, draw_plies: 80,
    federation_draws: draw::AMERICAN_FEDERATION, rows: 3);
rule_set_type!(
    /// Brazilian draughts.
    Brazilian, RuleSet::Brazilian, back: true, flying: true, men_take_kings: true,
    choice: CaptureChoice::MostPieces, crown_mid: false, draw_plies: 20,
    federation_draws: draw::BRAZILIAN_FEDERATION, rows: 3);
rule_set_type!(
    /// Russian draughts.
    Russian, RuleSet::Russian, back: true, flying: true, men_take_kings: true,
    choice: CaptureChoice::Free, crown_mid: true, draw_plies: 20,
    federation_draws: draw::RUSSIAN_FEDERATION, rows: 3);
rule_set_type!(
    /// Spanish draughts, with the quantity rule only.
    Spanish, RuleSet::Spanish, back: false, flying: true, men_take_kings: true,
    choice: CaptureChoice::MostPieces, crown_mid: false, draw_plies: 20,
    federation_draws: draw::SPANISH_FEDERATION, rows: 3);
rule_set_type!(
    /// Italian draughts.
    Italian, RuleSet::Italian, back: false, flying: false, men_take_kings: false,
    choice: CaptureChoice::Italian, crown_mid: false, draw_plies: 20,
    federation_draws: draw::ITALIAN_FEDERATION, rows: 3);
rule_set_type!(
    /// Thai draughts (8 men a side).
    Thai, RuleSet::Thai, back: false, flying: true, men_take_kings: true,
    choice: CaptureChoice::Free, crown_mid: false, draw_plies: 20,
    federation_draws: draw::THAI_FEDERATION, rows: 2);

/// The runtime choice of rule set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum RuleSet {
    American,
    Brazilian,
    Russian,
    Spanish,
    Italian,
    Thai,
}

/// Runs `$body` with `$r` bound to the `Rules` type of `$rule_set`.
#[macro_export]
macro_rules! with_rules {
    ($rule_set:expr, $r:ident => $body:expr) => {{
        use $crate::variant as __v;
        match $rule_set {
            __v::RuleSet::American => {
                type $r = __v::American;
                $body
            }
            __v::RuleSet::Brazilian => {
                type $r = __v::Brazilian;
                $body
            }
            __v::RuleSet::Russian => {
                type $r = __v::Russian;
                $body
            }
            __v::RuleSet::Spanish => {
                type $r = __v::Spanish;
                $body
            }
            __v::RuleSet::Italian => {
                type $r = __v::Italian;
                $body
            }
            __v::RuleSet::Thai => {
                type $r = __v::Thai;
                $body
            }
        }
    }};
}

impl RuleSet {
    pub const ALL: [RuleSet; 6] = [
        RuleSet::American,
        RuleSet::Brazilian,
        RuleSet::Russian,
        RuleSet::Spanish,
        RuleSet::Italian,
        RuleSet::Thai,
    ];

    /// The stable name used in configuration, the protocol and URLs.
    pub const fn name(self) -> &'static str {
        match self {
            RuleSet::American => "american",
            RuleSet::Brazilian => "brazilian",
            RuleSet::Russian => "russian",
            RuleSet::Spanish => "spanish",
            RuleSet::Italian => "italian",
            RuleSet::Thai => "thai",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            RuleSet::American => "American checkers",
            RuleSet::Brazilian => "Brazilian draughts",
            RuleSet::Russian => "Russian draughts",
            RuleSet::Spanish => "Spanish draughts",
            RuleSet::Italian => "Italian draughts",
            RuleSet::Thai => "Thai draughts",
        }
    }

    pub fn square_naming(self) -> SquareNaming {
        match self {
            RuleSet::American | RuleSet::Spanish => SquareNaming::NumericFromBottomRight,
            RuleSet::Italian | RuleSet::Thai => SquareNaming::NumericFromTopLeft,
            RuleSet::Russian | RuleSet::Brazilian => SquareNaming::Algebraic,
        }
    }

    /// The real board is the mirror image of the internal frame: its
    /// bottom-left corner is not a playing square (PDN invert flag 1).
    pub fn mirrored_board(self) -> bool {
        matches!(self, RuleSet::Italian | RuleSet::Spanish)
    }

    /// PDN's letter for the first player: `B` where Black moves first, `W`
    /// where White does.
    pub fn first_player_letter(self) -> char {
        match self {
            RuleSet::American | RuleSet::Thai => 'B',
            _ => 'W',
        }
    }

    /// The full PDN 3.0 GameType tag value.
    pub fn pdn_game_type(self) -> &'static str {
        match self {
            RuleSet::American => "21,B,8,8,N1,0",
            RuleSet::Italian => "22,W,8,8,N2,1",
            RuleSet::Spanish => "24,W,8,8,N1,1",
            RuleSet::Russian => "25,W,8,8,A0,0",
            RuleSet::Brazilian => "26,W,8,8,A0,0",
            RuleSet::Thai => "31,B,8,8,N2,0",
        }
    }

    /// Separator between the squares of a capture.
    pub fn capture_separator(self) -> char {
        match self {
            RuleSet::Russian => ':',
            _ => 'x',
        }
    }

    pub fn no_progress_draw_plies(self) -> u32 {
        with_rules!(self, R => R::NO_PROGRESS_DRAW_PLIES)
    }

    /// The draw rules besides repetition under `rules`.
    pub fn draw_table(self, rules: DrawRules) -> DrawTable {
        with_rules!(self, R => R::draw_table(rules))
    }

    pub fn start_rows(self) -> u8 {
        with_rules!(self, R => R::START_ROWS)
    }
}

impl fmt::Display for RuleSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A rule-set name that is not one of ours.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown rule set {0:?} (expected one of american, brazilian, russian, spanish, italian, thai)"
)]
pub struct UnknownRuleSet(pub String);

impl FromStr for RuleSet {
    type Err = UnknownRuleSet;
    fn from_str(s: &str) -> Result<RuleSet, UnknownRuleSet> {
        let lower = s.trim().to_ascii_lowercase();
        let found = match lower.as_str() {
            "english" => Some(RuleSet::American),
            other => RuleSet::ALL.into_iter().find(|rs| rs.name() == other),
        };
        found.ok_or_else(|| UnknownRuleSet(s.to_owned()))
    }
}
