//! Where rooms are kept beyond memory. For now an in-memory store; the
//! Redis store (a later issue) implements the same trait.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

/// A store failure; the room keeps running and reports it.
#[derive(Debug, thiserror::Error)]
#[error("store unavailable: {0}")]
pub struct StoreError(pub String);

pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// What the rooms persist.
pub trait Store: Send + Sync + std::fmt::Debug {
    /// The latest public snapshot of a room (JSON), replacing the previous one.
    fn save_room<'a>(&'a self, code: &'a str, snapshot: &'a str) -> StoreFuture<'a, ()>;
    /// A finished game of a room, as PDN, appended to its history.
    fn append_game<'a>(&'a self, code: &'a str, pdn: String) -> StoreFuture<'a, ()>;
    /// The finished games of a room, oldest first.
    fn games<'a>(&'a self, code: &'a str) -> StoreFuture<'a, Vec<String>>;
    /// Forget a room that has closed.
    fn remove_room<'a>(&'a self, code: &'a str) -> StoreFuture<'a, ()>;
}

/// Keeps everything in this process: nothing survives a restart.
#[derive(Debug, Default)]
pub struct MemoryStore {
    rooms: Mutex<HashMap<String, String>>,
    games: Mutex<HashMap<String, Vec<String>>>,
}

impl Store for MemoryStore {
    fn save_room<'a>(&'a self, code: &'a str, snapshot: &'a str) -> StoreFuture<'a, ()> {
        let mut rooms = self.rooms.lock().unwrap_or_else(|e| e.into_inner());
        rooms.insert(code.to_owned(), snapshot.to_owned());
        Box::pin(async { Ok(()) })
    }

    fn append_game<'a>(&'a self, code: &'a str, pdn: String) -> StoreFuture<'a, ()> {
        let mut games = self.games.lock().unwrap_or_else(|e| e.into_inner());
        games.entry(code.to_owned()).or_default().push(pdn);
        Box::pin(async { Ok(()) })
    }

    fn games<'a>(&'a self, code: &'a str) -> StoreFuture<'a, Vec<String>> {
        let games = self.games.lock().unwrap_or_else(|e| e.into_inner());
        let list = games.get(code).cloned().unwrap_or_default();
        Box::pin(async move { Ok(list) })
    }

    fn remove_room<'a>(&'a self, code: &'a str) -> StoreFuture<'a, ()> {
        self.rooms
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(code);
        Box::pin(async { Ok(()) })
    }
}
