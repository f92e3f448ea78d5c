//! The protocol crate's tests, one binary: golden byte vectors for every
//! message, and the client against a stand-in server.
#![allow(
    clippy::result_large_err,
    reason = "tungstenite's handshake callback fixes the callback's error type"
)]

mod client;
mod golden;
