//! Jumpgate load tester: drives real protocol clients against a Jumpgate server and a
//! bare WebSocket echo server in the same run, and reports the two side by side.
//!
//! The binary (`jumpgate-loadtest`) has three subcommands: `bench`, which spawns both
//! servers and runs every phase ([`bench`]), `bench-bots`, which measures human move
//! latency with and without solo games against the computer ([`bots`]), and
//! `echo-server` ([`echo`]). The phases
//! themselves live in [`driver`] and take plain URLs, so tests can run them against
//! servers started in-process.

pub mod bench;
pub mod bots;
pub mod driver;
pub mod echo;
pub mod net;
pub mod procs;
pub mod report;
pub mod svg;
