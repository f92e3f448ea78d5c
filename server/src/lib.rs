//! Jumpgate server: the rules engine, lobbies and the network front end.
//!
//! [`run`] serves on a bound listener until the shutdown future resolves, so
//! tests bind port 0 and stop the server at will.

pub mod code;
pub mod config;
pub mod connection;
pub mod http;
pub mod identity;
pub mod room;
pub mod rules;
pub mod store;
pub mod wire_view;

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use crate::code::RoomCode;
use crate::config::Settings;
use crate::identity::{Identities, Identity};
use crate::room::{LobbyOptions, Room, RoomHandle};
use crate::store::{MemoryStore, Store};

/// What every connection shares: settings, identities, the room registry.
#[derive(Debug)]
pub struct AppState {
    pub settings: Arc<Settings>,
    pub identities: Identities,
    pub store: Arc<dyn Store>,
    rooms: Mutex<HashMap<RoomCode, RoomHandle>>,
    /// Flips to true when the server starts shutting down.
    pub shutdown: watch::Sender<bool>,
}

impl AppState {
    pub fn new(settings: Settings, store: Arc<dyn Store>) -> Arc<AppState> {
        let identities = Identities::new(&settings.token_secret);
        Arc::new(AppState {
            settings: Arc::new(settings),
            identities,
            store,
            rooms: Mutex::new(HashMap::new()),
            shutdown: watch::channel(false).0,
        })
    }

    pub fn room(&self, code: &RoomCode) -> Option<RoomHandle> {
        self.rooms
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(code)
            .filter(|h| !h.commands.is_closed())
            .cloned()
    }

    /// Starts a room task with a fresh code; returns its handle and invite.
    pub fn create_room(
        self: &Arc<Self>,
        options: LobbyOptions,
        host: &Identity,
    ) -> (RoomHandle, Option<String>) {
        let mut rooms = self.rooms.lock().unwrap_or_else(|e| e.into_inner());
        rooms.retain(|_, h| !h.commands.is_closed());
        let code = loop {
            let code = RoomCode::generate();
            if !rooms.contains_key(&code) {
                break code;
            }
        };
        let room = Room::new(
            code.clone(),
            options,
            host,
            self.settings.clone(),
            self.store.clone(),
        );
        let invite = room.invite().map(str::to_owned);
        let (tx, rx) = mpsc::channel(256);
        let handle = RoomHandle {
            code: code.clone(),
            commands: tx,
        };
        rooms.insert(code.clone(), handle.clone());
        let span = tracing::info_span!("room", code = %code);
        tokio::spawn(tracing::Instrument::instrument(room.run(rx), span));
        (handle, invite)
    }
}

/// Serves until `shutdown` resolves, then tells clients and closes.
pub async fn run(
    listener: TcpListener,
    settings: Settings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let state = AppState::new(settings, Arc::new(MemoryStore::default()));
    let app = http::router(state.clone());
    let notify = state.clone();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            let _ = notify.shutdown.send(true);
        })
        .await
}
