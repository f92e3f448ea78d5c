//! Jumpgate server: the rules engine, lobbies and the network front end.
//!
//! [`run`] serves on a bound listener until the shutdown future resolves, so
//! tests bind port 0 and stop the server at will.

pub mod admin;
/// The computer opponents (the `jumpgate-bots` crate).
pub use jumpgate_bots as bots;
/// The rules engine (the `jumpgate-rules` crate).
pub use jumpgate_rules as rules;
pub mod code;
pub mod config;
pub mod http;
pub mod identity;
pub mod leaderboard;
pub mod lobby;
pub mod metrics;
pub mod net;
pub mod outbound;
pub mod records;
pub mod room;
pub mod solo;
pub mod store;
pub mod wallet;
pub mod web;
pub mod wire_view;

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use crate::code::RoomCode;
use crate::config::Settings;
use crate::identity::{Identities, Identity};
use crate::lobby::LobbyOptions;
use crate::room::{Room, RoomHandle};
use crate::store::{MemoryStore, RedisStore, Store, StoredRoom};

/// What every connection shares: settings, identities, the room registry.
#[derive(Debug)]
pub struct AppState {
    pub settings: Arc<Settings>,
    pub identities: Identities,
    pub store: Arc<dyn Store>,
    pub wallets: Arc<dyn wallet::Wallets>,
    pub records: Arc<dyn records::Records>,
    pub leaderboards: Arc<dyn leaderboard::Leaderboards>,
    pub bot_pool: Arc<solo::BotPool>,
    /// Solo games by owner.
    solos: Mutex<HashMap<String, solo::SoloHandle>>,
    /// Stored lobbies and games that could not be resumed at start: kept in
    /// the store untouched and listed for the operator.
    pub unresumable: Mutex<Vec<Unresumable>>,
    rooms: Mutex<HashMap<RoomCode, RoomHandle>>,
    /// Flips to true when the server starts shutting down.
    pub shutdown: watch::Sender<bool>,
    /// WebSocket connections still running; shutdown waits for zero.
    pub live_connections: watch::Sender<usize>,
}

impl AppState {
    pub fn new(settings: Settings, store: Arc<dyn Store>) -> Arc<AppState> {
        let wallets = Arc::new(wallet::MemoryWallets::new(settings.wallet_rules));
        let records = Arc::new(records::MemoryRecords::default());
        let boards = Arc::new(leaderboard::MemoryLeaderboards::default());
        Self::try_new(settings, store, wallets, records, boards).expect("valid account keys")
    }

    /// Like [`new`](Self::new), refusing unreadable account keys.
    pub fn try_new(
        settings: Settings,
        store: Arc<dyn Store>,
        wallets: Arc<dyn wallet::Wallets>,
        records: Arc<dyn records::Records>,
        leaderboards: Arc<dyn leaderboard::Leaderboards>,
    ) -> Result<Arc<AppState>, StartupError> {
        let bot_pool = Arc::new(solo::BotPool::new(
            settings.bot_threads,
            settings.executive_budget,
        ));
        let identities =
            Identities::with_accounts(&settings.token_secret, settings.accounts.as_ref())
                .map_err(StartupError::AccountKeys)?;
        Ok(Arc::new(AppState {
            settings: Arc::new(settings),
            identities,
            store,
            wallets,
            records,
            leaderboards,
            bot_pool,
            solos: Mutex::new(HashMap::new()),
            unresumable: Mutex::new(Vec::new()),
            rooms: Mutex::new(HashMap::new()),
            shutdown: watch::channel(false).0,
            live_connections: watch::channel(0).0,
        }))
    }

    pub fn room(&self, code: &RoomCode) -> Option<RoomHandle> {
        self.rooms
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(code)
            .filter(|h| !h.commands.is_closed())
            .cloned()
    }

    /// The owner's unfinished solo game, if its task still runs.
    pub fn solo_of(&self, owner: &str) -> Option<solo::SoloHandle> {
        self.solos
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(owner)
            .filter(|h| !h.commands.is_closed())
            .cloned()
    }

    /// Starts the task of a solo game and registers it under its owner.
    pub fn spawn_solo(
        self: &Arc<Self>,
        record: solo::SoloRecord,
    ) -> Result<solo::SoloHandle, String> {
        let (tx, rx) = mpsc::channel(64);
        let game = solo::SoloGame::from_record(
            record,
            self.settings.clone(),
            self.store.clone(),
            self.leaderboards.clone(),
            self.bot_pool.clone(),
            tx.clone(),
        )?;
        let handle = solo::SoloHandle {
            id: game.id().to_owned(),
            commands: tx,
        };
        self.solos
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(game.owner().to_owned(), handle.clone());
        tokio::spawn(game.run(rx));
        Ok(handle)
    }

    /// Starts the task of a room resumed from the store.
    pub fn resume_room(self: &Arc<Self>, stored: StoredRoom) -> Result<RoomCode, String> {
        let code = stored.code.clone();
        let room = Room::resume(
            stored,
            self.settings.clone(),
            self.store.clone(),
            self.wallets.clone(),
            self.records.clone(),
        )
        .map_err(|e| format!("room {code}: {e}"))?;
        let code = room.code().clone();
        self.spawn(room);
        Ok(code)
    }

    fn spawn(self: &Arc<Self>, room: Room) -> RoomHandle {
        let code = room.code().clone();
        let (tx, rx) = mpsc::channel(256);
        let handle = RoomHandle {
            code: code.clone(),
            commands: tx,
        };
        self.rooms
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(code.clone(), handle.clone());
        let span = tracing::info_span!("room", code = %code);
        tokio::spawn(tracing::Instrument::instrument(room.run(rx), span));
        handle
    }

    /// Starts a room task with a fresh code; returns its handle and invite.
    pub fn create_room(
        self: &Arc<Self>,
        options: LobbyOptions,
        host: &Identity,
    ) -> (RoomHandle, Option<String>) {
        let code = {
            let mut rooms = self.rooms.lock().unwrap_or_else(|e| e.into_inner());
            rooms.retain(|_, h| !h.commands.is_closed());
            let kept = self.unresumable.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                let code = RoomCode::generate_in_shard(self.settings.shard);
                if !rooms.contains_key(&code) && !kept.iter().any(|u| u.code == code.as_str()) {
                    break code;
                }
            }
        };
        tracing::info!(room = %code, rule_set = ?options.rule_set, "lobby created");
        let room = Room::new(
            code,
            options,
            host,
            self.settings.clone(),
            self.store.clone(),
            self.wallets.clone(),
            self.records.clone(),
        );
        let invite = room.invite().map(str::to_owned);
        (self.spawn(room), invite)
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("cannot open the store: {0}")]
    Store(#[from] store::StoreError),
    #[error("unusable account keys: {0}")]
    AccountKeys(String),
    #[error("cannot listen: {0}")]
    Listen(#[from] std::io::Error),
}

/// A stored lobby or solo game that could not be resumed.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Unresumable {
    pub code: String,
    pub reason: String,
    /// Stakes it may still hold in escrow, and how to release them
    /// (`POST /api/admin/rooms/{code}/settle`).
    pub stakes: Option<lobby::StrandedStakes>,
}

/// The store the settings ask for: Redis when a URL is set, else memory.
pub fn open_store(settings: &Settings) -> Result<Arc<dyn Store>, StartupError> {
    match &settings.redis_url {
        Some(url) => {
            let store = RedisStore::open(url, settings.redis_timeout)?;
            Ok(Arc::new(store))
        }
        None => Ok(Arc::new(MemoryStore::default())),
    }
}

/// The wallets the settings ask for: Redis when a URL is set, else memory.
pub fn open_wallets(settings: &Settings) -> Result<Arc<dyn wallet::Wallets>, StartupError> {
    match &settings.redis_url {
        Some(url) => {
            let wallets =
                wallet::RedisWallets::open(url, settings.redis_timeout, settings.wallet_rules)?;
            Ok(Arc::new(wallets))
        }
        None => Ok(Arc::new(wallet::MemoryWallets::new(settings.wallet_rules))),
    }
}

/// The records the settings ask for: Redis when a URL is set, else memory.
pub fn open_records(settings: &Settings) -> Result<Arc<dyn records::Records>, StartupError> {
    match &settings.redis_url {
        Some(url) => {
            let records = records::RedisRecords::open(url, settings.redis_timeout)?;
            Ok(Arc::new(records))
        }
        None => Ok(Arc::new(records::MemoryRecords::default())),
    }
}

/// The leaderboards the settings ask for: Redis when a URL is set.
pub fn open_leaderboards(
    settings: &Settings,
) -> Result<Arc<dyn leaderboard::Leaderboards>, StartupError> {
    match &settings.redis_url {
        Some(url) => {
            let boards = leaderboard::RedisLeaderboards::open(url, settings.redis_timeout)?;
            Ok(Arc::new(boards))
        }
        None => Ok(Arc::new(leaderboard::MemoryLeaderboards::default())),
    }
}

/// Resumes every open lobby in the store. Returns how many resumed.
pub async fn resume_rooms(state: &Arc<AppState>) -> Result<usize, store::StoreError> {
    let stored = state.store.load_open().await?;
    let mut resumed = 0;
    for room in stored {
        // With several instances on one Redis, each resumes only its own
        // shard's lobbies and games (solo ids are `S` + a room code).
        if let Some(code) = RoomCode::routing(&room.code)
            && !code.in_shard(state.settings.shard)
        {
            continue;
        }
        let code = room.code.clone();
        let stakes = lobby::stranded_stakes(&room.record);
        let result = match solo::solo_record(&room.record) {
            Some(record) => state.spawn_solo(record).map(|_| ()),
            None => state.resume_room(room).map(|_| ()),
        };
        match result {
            Ok(()) => {
                tracing::info!(room = %code, "resumed");
                resumed += 1;
            }
            Err(reason) => {
                // Never dropped silently: the operator sees it, the store
                // keeps it, and any stakes it holds can still be settled.
                tracing::error!(room = %code, %reason, "could not resume; kept in the store and listed at /api/admin/rooms/unresumable");
                crate::metrics::METRICS.rooms_unresumable.inc();
                state
                    .unresumable
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(Unresumable {
                        code,
                        reason,
                        stakes,
                    });
            }
        }
    }
    Ok(resumed)
}

/// Serves until `shutdown` resolves, then tells clients and closes. With a
/// Redis URL in the settings, first resumes every open lobby stored there.
pub async fn run(
    listener: TcpListener,
    settings: Settings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartupError> {
    let store = open_store(&settings)?;
    let wallets = open_wallets(&settings)?;
    let records = open_records(&settings)?;
    let boards = open_leaderboards(&settings)?;
    let state = AppState::try_new(settings, store, wallets, records, boards)?;
    if state.store.is_durable() {
        // A Redis that is slow or away at start is waited for: serving
        // before the stored lobbies are back would answer `unknown_lobby`
        // for games that exist.
        let resumed = loop {
            match resume_rooms(&state).await {
                Ok(resumed) => break resumed,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the stored lobbies yet; retrying");
                    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                }
            }
        };
        tracing::info!(resumed, "lobbies resumed from the store");
    }
    let notify = state.clone();
    tokio::spawn(async move {
        shutdown.await;
        let _ = notify.shutdown.send(true);
    });
    if let Some(addr) = state.settings.metrics_listen {
        let metrics_listener = TcpListener::bind(addr).await?;
        let mut stop = state.shutdown.subscribe();
        tokio::spawn(async move {
            let stopped = async move {
                let _ = stop.wait_for(|s| *s).await;
            };
            let _ = axum::serve(metrics_listener, http::metrics_router())
                .with_graceful_shutdown(stopped)
                .await;
        });
    }
    let app = http::router(state.clone()).merge(admin::router(state.clone()));
    let mut stop = state.shutdown.subscribe();
    // Moves are small and latency matters more than packet count.
    let nodelay = state.settings.tcp_nodelay;
    let listener = axum::serve::ListenerExt::tap_io(listener, move |tcp| {
        if let Err(e) = tcp.set_nodelay(nodelay) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
    });
    let server = axum::serve(listener, app).with_graceful_shutdown(async move {
        let _ = stop.wait_for(|s| *s).await;
    });
    let mut stop = state.shutdown.subscribe();
    let grace = state.settings.shutdown_grace;
    let deadline = async move {
        let _ = stop.wait_for(|s| *s).await;
        tokio::time::sleep(grace).await;
    };
    // Upgraded WebSocket connections outlive the HTTP server's graceful
    // shutdown, so wait for them too: each sends `shutdown` and closes.
    let mut live = state.live_connections.subscribe();
    let all_done = async move {
        let result = server.await;
        let _ = live.wait_for(|n| *n == 0).await;
        result
    };
    tokio::select! {
        result = all_done => result.map_err(StartupError::Listen),
        () = deadline => {
            tracing::warn!("shutdown deadline passed with connections still open");
            Ok(())
        }
    }
}
