//! The computer opponents' tests, one binary: the draughts engine at every
//! level, and the Space Mode and orbit bots.

mod draughts;
mod space_games;
