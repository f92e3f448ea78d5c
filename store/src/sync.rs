//! Small helpers shared by the stores and the server: taking a lock whose
//! holder panicked (the data behind every lock here stays consistent: no
//! update is left half-done by a panic), and the wall clock in Unix
//! milliseconds and seconds.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, going on if a holder panicked.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// This process's clock, Unix milliseconds (0 before 1970).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// This process's clock, Unix seconds.
pub fn now_secs() -> u64 {
    now_ms() / 1000
}
