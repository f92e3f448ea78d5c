//! Jumpgate server: the rules engine, lobbies and the network front end.
//!
//! [`run`] serves on a bound listener until the shutdown future resolves, so
//! tests bind port 0 and stop the server at will.

pub(crate) mod admin;
pub(crate) mod app;
/// The computer opponents (the `jumpgate-bots` crate).
pub use jumpgate_bots as bots;
/// Room codes (from the `jumpgate-lobby` crate).
pub use jumpgate_lobby::code;
/// The rules engine (the `jumpgate-rules` crate).
pub use jumpgate_rules as rules;
pub mod config;
pub(crate) mod http;
pub mod identity;
pub(crate) mod lifecycle;
pub mod limits;
pub(crate) mod listener;
/// The lobby state machine (the `jumpgate-lobby` crate).
pub use jumpgate_lobby as lobby;
pub(crate) mod metrics;
pub mod my_games;
pub(crate) mod net;
pub(crate) mod outbound;
pub(crate) mod ownership;
pub(crate) mod registry;
pub(crate) mod resume;
pub(crate) mod room;
pub(crate) mod solo;
pub(crate) mod sync;
/// Persistence (the `jumpgate-store` crate): rooms, ownership, solo games,
/// wallets, records, leaderboards, idempotency keys.
pub use jumpgate_store as store;
pub use jumpgate_store::{idempotency, leaderboard, records, wallet};
pub(crate) mod web;
pub(crate) mod wire_view;

pub use crate::app::{StartupError, run};
pub use crate::solo::worker::{SearcherSettings, serve_worker};
