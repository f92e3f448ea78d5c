//! The rules engine's tests, one binary: rules by example, perft tables
//! read from data files, property tests, and agreement with an independent
//! naive move generator (`reference`).

mod basics;
mod draw_rules;
mod fuzz;
mod orbit;
mod perft;
mod properties;
mod reference;
mod reference_agrees;
mod reference_selftest;
mod space;
mod variant_game;
