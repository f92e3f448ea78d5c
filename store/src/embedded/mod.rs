//! The embedded store: everything the Redis store keeps, for one instance,
//! in one SQLite file in a data directory — rooms and their logs, fences,
//! solo notes, dormant rooms ([`EmbeddedStore`]), wallets with escrow and
//! the ledger ([`EmbeddedWallets`]), career records ([`EmbeddedRecords`])
//! and leaderboards ([`EmbeddedLeaderboards`]), sharing one [`Db`].
//!
//! Every operation is one job on the database thread, run in a savepoint
//! inside a group transaction; the group commits with an `fsync` (WAL,
//! `synchronous = FULL`) before any of its jobs is answered, so an answer
//! means the write is on disk. A job that fails (the disk refused it) is
//! rolled back alone. A second process on the same directory is refused
//! (the lock), and a file that is not a whole data file is refused before
//! anything is read from it.

mod db;
mod leaderboard;
mod ownership;
mod records;
mod rooms;
mod schema;
mod seen;
#[cfg(test)]
mod tests;
mod wallet;

use std::path::Path;
use std::sync::Mutex;

pub use self::db::{DATA_FILE, Db, LOCK_FILE, OpenError};
pub use self::leaderboard::EmbeddedLeaderboards;
pub use self::records::EmbeddedRecords;
pub(crate) use self::rooms::insert_move;
pub use self::wallet::EmbeddedWallets;

/// The room store in the data file (rooms, ownership, solo games,
/// dormant rooms).
#[derive(Debug)]
pub struct EmbeddedStore {
    db: Db,
    live: Mutex<ownership::Liveness>,
}

impl EmbeddedStore {
    /// Opens the data directory's file (see [`Db::open`]).
    pub fn open(dir: &Path) -> Result<EmbeddedStore, OpenError> {
        Ok(EmbeddedStore::on(Db::open(dir)?))
    }

    /// The room store on an open data file (shared with the wallets, the
    /// records and the leaderboards).
    pub fn on(db: Db) -> EmbeddedStore {
        EmbeddedStore {
            db,
            live: Mutex::default(),
        }
    }

    /// The data file this store writes.
    pub fn db(&self) -> &Db {
        &self.db
    }
}
