//! The helpers every task shares, from the store crate (see
//! `jumpgate_store::sync`): taking a lock whose holder panicked, and the
//! wall clock in Unix milliseconds and seconds.

pub use jumpgate_store::sync::{lock, now_ms, now_secs};
