//! The protocol crate's tests, one binary: golden byte vectors for every
//! message and for the frames decoders must refuse, the JSON Schemas checked
//! against them, fuzz targets for the decoders, and the client and the
//! reconnecting client against stand-in servers.
#![allow(
    clippy::result_large_err,
    reason = "tungstenite's handshake callback fixes the callback's error type"
)]

mod client;
mod fuzz;
mod golden;
mod golden_v2;
mod readme;
mod reconnect;
mod refusals;
mod room_view;
mod schema;
mod session;
mod wire_value;
