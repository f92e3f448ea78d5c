//! A game in progress: the position, the moves so far, the draw rules, and
//! the outcome. Playing an illegal move is refused with a reason and leaves
//! the game unchanged.

use super::bitboard::Square;
use super::draw::{DrawRules, DrawTable};
use super::movegen::{captures, dedup_results, legal_moves};
use super::notation::{self, MoveTextError};
use super::position::{Color, Move, Position};
use super::variant::{RuleSet, Rules};
use crate::with_rules;

/// How a game ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case", tag = "kind"))]
pub enum Outcome {
    Win { winner: Color, reason: WinReason },
    Draw { reason: DrawReason },
}

impl Outcome {
    /// The outcome for the side `to_move`, from what the draw rules look
    /// at: a side without pieces or, to move, without moves loses; the
    /// third repetition, or a move limit the draw rules say is reached
    /// (`limit_draw`), draws; else play goes on.
    pub fn judge(
        to_move: Color,
        has_pieces: bool,
        has_moves: bool,
        repetitions: usize,
        limit_draw: Option<DrawReason>,
    ) -> Option<Outcome> {
        if !has_pieces {
            Some(Outcome::Win {
                winner: to_move.opposite(),
                reason: WinReason::NoPieces,
            })
        } else if !has_moves {
            Some(Outcome::Win {
                winner: to_move.opposite(),
                reason: WinReason::NoMoves,
            })
        } else if repetitions >= 3 {
            Some(Outcome::Draw {
                reason: DrawReason::Repetition,
            })
        } else {
            limit_draw.map(|reason| Outcome::Draw { reason })
        }
    }

    pub fn winner(&self) -> Option<Color> {
        match self {
            Outcome::Win { winner, .. } => Some(*winner),
            Outcome::Draw { .. } => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum WinReason {
    /// The loser has no pieces left.
    NoPieces,
    /// The loser, to move, has no legal move.
    NoMoves,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum DrawReason {
    /// The same position with the same side to move for the third time.
    Repetition,
    /// The rule set's run of plies without capture or man move.
    NoProgress,
    /// A federation's move limit for this endgame ran out (e.g. three kings
    /// against a lone king in Russian draughts).
    EndgameLimit,
    /// A federation's limit on moves with the balance of forces unchanged
    /// ran out (Russian draughts, kings on both sides).
    MaterialUnchanged,
}

/// Why a move was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlayError {
    #[error("the game is over")]
    GameOver,
    #[error(transparent)]
    Text(#[from] MoveTextError),
    #[error("there is no piece on {0}")]
    EmptySquare(String),
    #[error("the piece on {0} is not yours")]
    NotYourPiece(String),
    #[error("a capture is mandatory")]
    CaptureMandatory,
    #[error("a capture that takes more pieces is required")]
    LargerCaptureRequired,
    #[error("another capture has priority (more kings, made by a king, or a king taken earlier)")]
    PriorityCaptureRequired,
    #[error("the capture is not finished: the piece can jump again")]
    CaptureNotFinished,
    #[error("{0} matches several legal moves; give the full path")]
    Ambiguous(String),
    #[error("not a legal move")]
    IllegalMove,
}

/// How a refusal names squares: as the move was given.
#[derive(Clone, Copy)]
enum Named {
    /// In the rule set's notation (`11-15` in American, `c3-d4` in Russian).
    InNotation,
    /// By board name (`c3`), as a path is given.
    OnTheBoard,
}

impl Named {
    fn square(self, rule_set: RuleSet, sq: Square) -> String {
        match self {
            Named::InNotation => notation::square_name(rule_set, sq),
            Named::OnTheBoard => notation::board_name(rule_set, sq),
        }
    }
}

/// A game from a start position, with everything the draw rules need.
#[derive(Clone, Debug)]
pub struct Game {
    rule_set: RuleSet,
    draw_rules: DrawRules,
    position: Position,
    moves: Vec<Move>,
    /// Every position so far, the initial one first and the current one
    /// last: the endgame limits count back through it.
    history: Vec<Position>,
    /// Index in `history` of the first position after the last capture or
    /// man move (0 if none): only positions from there on can repeat.
    progress_start: usize,
    outcome: Option<Outcome>,
    /// Legal moves of the current position, one per distinct result.
    legal: Vec<Move>,
}

impl Game {
    pub fn new(rule_set: RuleSet) -> Game {
        Game::from_position(rule_set, Position::start(rule_set))
    }

    pub fn from_position(rule_set: RuleSet, position: Position) -> Game {
        let mut game = Game {
            rule_set,
            draw_rules: DrawRules::Standard,
            position,
            moves: Vec::new(),
            history: vec![position],
            progress_start: 0,
            outcome: None,
            legal: Vec::new(),
        };
        game.refresh();
        game
    }

    /// The same game judged by `draw_rules` (the seeds' rules unless asked).
    pub fn with_draw_rules(mut self, draw_rules: DrawRules) -> Game {
        self.draw_rules = draw_rules;
        self.refresh();
        self
    }

    pub fn rule_set(&self) -> RuleSet {
        self.rule_set
    }

    pub fn draw_rules(&self) -> DrawRules {
        self.draw_rules
    }

    /// The draw rules in force besides repetition.
    pub fn draw_table(&self) -> DrawTable {
        self.rule_set.draw_table(self.draw_rules)
    }

    pub fn initial_position(&self) -> &Position {
        &self.history[0]
    }

    pub fn position(&self) -> &Position {
        &self.position
    }

    pub fn turn(&self) -> Color {
        self.position.turn()
    }

    /// Moves played so far.
    pub fn moves(&self) -> &[Move] {
        &self.moves
    }

    pub fn outcome(&self) -> Option<Outcome> {
        self.outcome
    }

    /// Plies in a row with no capture and no man move.
    pub fn plies_without_progress(&self) -> u32 {
        (self.history.len() - 1 - self.progress_start) as u32
    }

    /// The legal moves, one per distinct result (empty once the game is over).
    pub fn legal_moves(&self) -> &[Move] {
        if self.outcome.is_some() {
            &[]
        } else {
            &self.legal
        }
    }

    /// Squares of the pieces that must capture, when a capture is mandatory.
    pub fn must_capture(&self) -> Vec<Square> {
        let mut from: Vec<Square> = self
            .legal_moves()
            .iter()
            .filter(|m| m.is_capture())
            .map(Move::from)
            .collect();
        from.sort_unstable();
        from.dedup();
        from
    }

    /// The text of a legal move in the rule set's notation.
    pub fn move_text(&self, m: &Move) -> String {
        notation::move_text(self.rule_set, m, &self.legal)
    }

    /// Plays a move given in the rule set's notation.
    pub fn play_text(&mut self, text: &str) -> Result<Move, PlayError> {
        if self.outcome.is_some() {
            return Err(PlayError::GameOver);
        }
        let parsed = notation::parse_move_text(self.rule_set, text)?;
        let named = Named::InNotation;
        let m = if parsed.squares.len() == 2 {
            self.find_by_ends(parsed.squares[0], parsed.squares[1], named)?
        } else {
            self.find_by_path(&parsed.squares, named)?
        };
        self.apply(m);
        Ok(m)
    }

    /// Plays a move given by its path (origin and every landing square). A refusal
    /// names squares by their board names (`c3`), as a path gives them.
    pub fn play_path(&mut self, path: &[Square]) -> Result<Move, PlayError> {
        if self.outcome.is_some() {
            return Err(PlayError::GameOver);
        }
        if path.len() < 2 {
            return Err(MoveTextError::TooShort.into());
        }
        let named = Named::OnTheBoard;
        let m = if path.len() == 2 {
            self.find_by_ends(path[0], path[1], named)?
        } else {
            self.find_by_path(path, named)?
        };
        self.apply(m);
        Ok(m)
    }

    /// Plays a move from this position's legal list (or any path with the
    /// same result).
    pub fn play(&mut self, m: &Move) -> Result<(), PlayError> {
        if self.outcome.is_some() {
            return Err(PlayError::GameOver);
        }
        let found = self.find_by_path(m.path(), Named::InNotation)?;
        self.apply(found);
        Ok(())
    }

    fn find_by_ends(&self, from: Square, to: Square, named: Named) -> Result<Move, PlayError> {
        let matches: Vec<&Move> = self
            .legal
            .iter()
            .filter(|m| m.from() == from && m.to() == to)
            .collect();
        match matches.as_slice() {
            [one] => Ok(**one),
            [] => Err(self.diagnose(&[from, to], named)),
            _ => Err(PlayError::Ambiguous(format!(
                "{}-{}",
                named.square(self.rule_set, from),
                named.square(self.rule_set, to)
            ))),
        }
    }

    fn find_by_path(&self, path: &[Square], named: Named) -> Result<Move, PlayError> {
        // Any complete path is accepted; it plays as its result's move.
        let mut all = Vec::new();
        with_rules!(self.rule_set, R => legal_moves::<R>(&self.position, &mut all));
        let chosen = all.iter().find(|m| m.path() == path);
        match chosen {
            Some(m) => Ok(*self
                .legal
                .iter()
                .find(|l| l.result_key() == m.result_key())
                .expect("every legal path has a representative")),
            None => Err(self.diagnose(path, named)),
        }
    }

    /// Explains why `path` is not a legal move here.
    fn diagnose(&self, path: &[Square], named: Named) -> PlayError {
        let rs = self.rule_set;
        let from = path[0];
        let name = named.square(rs, from);
        match self.position.piece_at(from) {
            None => return PlayError::EmptySquare(name),
            Some((color, _)) if color != self.turn() => return PlayError::NotYourPiece(name),
            _ => {}
        }
        let mut raw = Vec::new();
        with_rules!(rs, R => captures::<R, _>(&self.position, &mut raw));
        if raw.is_empty() {
            return PlayError::IllegalMove;
        }
        let is_prefix = |m: &Move| m.path().len() > path.len() && m.path().starts_with(path);
        let ends_match = |m: &Move| {
            if path.len() == 2 {
                m.from() == from && m.to() == path[1]
            } else {
                m.path() == path
            }
        };
        if raw.iter().any(ends_match) {
            let choice = with_rules!(rs, R => R::CAPTURE_CHOICE);
            let max = raw.iter().map(|m| m.captured().count()).max();
            let this = raw
                .iter()
                .filter(|m| ends_match(m))
                .map(|m| m.captured().count())
                .max();
            return if choice == super::variant::CaptureChoice::Italian && this == max {
                PlayError::PriorityCaptureRequired
            } else {
                PlayError::LargerCaptureRequired
            };
        }
        if raw.iter().any(is_prefix) {
            return PlayError::CaptureNotFinished;
        }
        PlayError::CaptureMandatory
    }

    fn apply(&mut self, m: Move) {
        let moved_man = !self.position.kings().contains(m.from());
        self.position.play_unchecked(&m);
        self.moves.push(m);
        self.history.push(self.position);
        if m.is_capture() || moved_man {
            self.progress_start = self.history.len() - 1;
        }
        self.refresh();
    }

    /// Recomputes the legal moves and the outcome after a change.
    fn refresh(&mut self) {
        with_rules!(self.rule_set, R => self.refresh_for::<R>());
    }

    fn refresh_for<R: Rules>(&mut self) {
        legal_moves::<R>(&self.position, &mut self.legal);
        dedup_results(&mut self.legal);
        self.outcome = Outcome::judge(
            self.position.turn(),
            !self.position.pieces(self.position.turn()).is_empty(),
            !self.legal.is_empty(),
            self.repetitions(),
            R::draw_table(self.draw_rules)
                .limit_reached(&self.history, self.plies_without_progress()),
        );
    }

    /// How many times the current position (with the same side to move) has
    /// stood on the board.
    pub fn repetitions(&self) -> usize {
        self.history[self.progress_start..]
            .iter()
            .filter(|p| **p == self.position)
            .count()
    }
}
