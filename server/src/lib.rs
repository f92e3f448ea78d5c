//! Jumpgate server: the rules engine, lobbies and the network front end.

pub mod rules;
