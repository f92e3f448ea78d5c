//! Small helpers every task shares: taking a lock whose holder panicked
//! (the data is still consistent: nothing here panics half-way through an
//! update), and the wall clock in Unix milliseconds.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, going on if a holder panicked.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

pub use crate::idempotency::now_ms;
