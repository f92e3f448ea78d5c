//! The rules engine: pure, synchronous, and the only code that knows the
//! rules of checkers. No I/O, no async, no wire format.
//!
//! - [`bitboard`]: squares, bitboards and diagonal shifts (internal frame);
//! - [`variant`]: the rule sets as data ([`Rules`], [`RuleSet`]);
//! - [`position`]: [`Setup`] (unchecked), [`Position`] (validated), [`Move`];
//! - [`movegen`]: legal moves for a position;
//! - [`game`]: a game with history, draw rules and outcome;
//! - [`draw`]: the draw rules besides repetition, the seeds' and each
//!   federation's ([`DrawRules`]);
//! - [`notation`], [`fen`], [`pdn`]: the text formats;
//! - [`perft`]: move-tree counts;
//! - [`space`] (Space Mode: wormholes and thruster boosts) and [`orbit`]
//!   (Space Checkers on the 25-square orbit board): engines of their own;
//! - [`variant_game`]: every rule set behind one type ([`Variant`],
//!   [`VariantGame`]), with moves described by square names.

pub mod bitboard;
pub mod draw;
pub mod fen;
pub mod game;
pub mod movegen;
pub mod notation;
pub mod orbit;
pub mod pdn;
pub mod perft;
pub mod position;
pub mod space;
pub mod variant;
pub mod variant_game;

pub use bitboard::{Bitboard, Direction, Square};
pub use draw::DrawRules;
pub use game::{DrawReason, Game, Outcome, PlayError, WinReason};
pub use position::{Color, Move, Position, Role, Setup, SetupError};
pub use variant::{RuleSet, Rules};
pub use variant_game::{GameOutcome, MoveInfo, MovePath, MoveRefused, Variant, VariantGame};
