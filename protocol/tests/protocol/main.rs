//! The protocol crate's tests, one binary: golden byte vectors for every
//! message, and the client and the reconnecting client against stand-in
//! servers.
#![allow(
    clippy::result_large_err,
    reason = "tungstenite's handshake callback fixes the callback's error type"
)]

mod client;
mod golden;
mod reconnect;
