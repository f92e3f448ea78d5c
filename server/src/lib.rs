//! Jumpgate server: the rules engine, lobbies and the network front end.
//!
//! [`run`] serves on a bound listener until the shutdown future resolves, so
//! tests bind port 0 and stop the server at will.

pub mod admin;
/// The computer opponents (the `jumpgate-bots` crate).
pub use jumpgate_bots as bots;
/// Room codes (from the `jumpgate-lobby` crate).
pub use jumpgate_lobby::code;
/// The rules engine (the `jumpgate-rules` crate).
pub use jumpgate_rules as rules;
pub mod config;
pub mod http;
pub mod identity;
pub mod limits;
pub mod listener;
/// The lobby state machine (the `jumpgate-lobby` crate).
pub use jumpgate_lobby as lobby;
pub mod metrics;
pub mod my_games;
pub mod net;
pub mod outbound;
pub mod ownership;
pub mod resume;
pub mod room;
pub mod solo;
/// Persistence (the `jumpgate-store` crate): rooms, ownership, solo games,
/// wallets, records, leaderboards, idempotency keys.
pub use jumpgate_store as store;
pub use jumpgate_store::{idempotency, leaderboard, records, wallet};
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
use crate::store::{MemoryStore, OwnerEpoch, RedisStore, Store, StoredRoom};

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
    /// Per-client caps and rates.
    pub limits: limits::ClientLimits,
    /// Solo games by owner.
    solos: Mutex<HashMap<String, solo::SoloHandle>>,
    /// Stored lobbies and games that could not be resumed at start: kept in
    /// the store untouched and listed for the operator.
    pub unresumable: Mutex<Vec<Unresumable>>,
    rooms: Mutex<HashMap<RoomCode, RoomHandle>>,
    /// One lock per room being taken over, so it is claimed once here.
    adoptions: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Rooms this process is asking another instance to hand over: a room
    /// handed to us is one of these (a planned move), not one whose asker
    /// died before taking it.
    pub asking: Mutex<std::collections::HashSet<String>>,
    /// Whether an expired heartbeat is taken as a dead instance just now.
    pub deaths: ownership::DeathWatch,
    /// Where the rooms running here belong (see [`ownership`]).
    pub homes: ownership::Homes,
    /// Flips to true when the server starts shutting down: it stops taking
    /// rooms and connections, and hands its rooms over.
    pub draining: watch::Sender<bool>,
    /// The heartbeat task, once started: it stops when the instance drains,
    /// and the instance says it is gone only after that, so no beat in
    /// flight can mark it alive again.
    heartbeat: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Flips to true once the rooms are handed over: connections close.
    pub shutdown: watch::Sender<bool>,
    /// WebSocket connections still running; shutdown waits for zero.
    pub live_connections: watch::Sender<usize>,
    /// Flips to true once the stored rooms without a live owner are taken
    /// over at start (at once without Redis): requests wait for it,
    /// `/readyz` says no until then, `/healthz` answers all along.
    pub resumed: watch::Sender<bool>,
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
            limits: limits::ClientLimits::new(settings.limits.clone()),
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
            adoptions: Mutex::new(HashMap::new()),
            asking: Mutex::new(std::collections::HashSet::new()),
            deaths: ownership::DeathWatch::default(),
            homes: ownership::Homes::default(),
            draining: watch::channel(false).0,
            heartbeat: Mutex::new(None),
            shutdown: watch::channel(false).0,
            live_connections: watch::channel(0).0,
            resumed: watch::channel(true).0,
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

    /// Whether the instance is shutting down.
    pub fn is_draining(&self) -> bool {
        *self.draining.borrow()
    }

    /// Whether the room or solo game `id` runs here.
    pub fn runs(&self, id: &str) -> bool {
        RoomCode::parse(id).is_some_and(|c| self.room(&c).is_some())
            || self.solo_by_id(id).is_some()
    }

    /// The codes and solo ids of everything running here.
    pub fn running_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .rooms
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|h| !h.commands.is_closed())
            .map(|h| h.code.to_string())
            .collect();
        ids.extend(
            self.solos
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .values()
                .filter(|h| !h.commands.is_closed())
                .map(|h| h.id.clone()),
        );
        ids
    }

    /// The lock under which room `id` is taken over here.
    pub fn adoption_lock(&self, id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.adoptions.lock().unwrap_or_else(|e| e.into_inner());
        if locks.len() > 1024 {
            locks.retain(|_, lock| Arc::strong_count(lock) > 1);
        }
        locks.entry(id.to_owned()).or_default().clone()
    }

    /// Whether `id` was found unresumable here.
    pub fn is_unresumable(&self, id: &str) -> bool {
        self.unresumable
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|u| u.code == id)
    }

    /// Lists a stored room that does not resume: kept in the store
    /// untouched, shown to the operator, never dropped silently.
    pub fn list_unresumable(
        &self,
        id: &str,
        reason: String,
        stakes: Option<lobby::StrandedStakes>,
    ) {
        tracing::error!(room = %id, %reason, "could not resume; kept in the store and listed at /api/admin/rooms/unresumable");
        let mut list = self.unresumable.lock().unwrap_or_else(|e| e.into_inner());
        if !list.iter().any(|u| u.code == id) {
            crate::metrics::METRICS.rooms_unresumable.inc();
            list.push(Unresumable {
                code: id.to_owned(),
                reason,
                stakes,
            });
        }
    }

    /// The room with this code: running here, or taken over (see
    /// [`ownership::acquire`]). `Ok(None)`: no open lobby has that code.
    /// `may_ask`: whether a live owner may be asked to hand it over.
    pub async fn acquire_room(
        self: &Arc<Self>,
        code: &str,
        may_ask: bool,
    ) -> Result<Option<RoomHandle>, outbound::Refusal> {
        let Some(code) = RoomCode::parse(code) else {
            return Ok(None);
        };
        ownership::acquire(self, code.as_str(), may_ask, || self.room(&code)).await
    }

    /// Asks the lobby with this code (taken over, or loaded, if it does not
    /// run here) for something and waits for its answer. `Ok(None)`: no
    /// open lobby has that code, or it does not show itself to this request.
    pub async fn ask_room<T>(
        self: &Arc<Self>,
        code: &str,
        may_ask: bool,
        command: impl FnOnce(tokio::sync::oneshot::Sender<Option<T>>) -> room::RoomCommand,
    ) -> Result<Option<T>, outbound::Refusal> {
        let Some(handle) = self.acquire_room(code, may_ask).await? else {
            return Ok(None);
        };
        // A room that stops before answering moved just now: ask again.
        let moved = || {
            outbound::Refusal::new(
                jumpgate_protocol::ErrorCode::RoomUnavailable,
                "the lobby moved between server instances just now; try again",
            )
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        if handle.commands.send(command(tx)).await.is_err() {
            return Err(moved());
        }
        rx.await.map_err(|_| moved())
    }

    /// The player's unfinished solo game: running here, or taken over;
    /// `named` is the room the connection named in its address.
    pub async fn acquire_solo(
        self: &Arc<Self>,
        player: &str,
        named: Option<&str>,
    ) -> Result<Option<solo::SoloHandle>, outbound::Refusal> {
        if let Some(handle) = self.solo_of(player) {
            if named.is_some_and(|n| n == handle.id) {
                ownership::named_here(self, &handle.id);
            }
            return Ok(Some(handle));
        }
        if !self.store.is_durable() {
            return Ok(None);
        }
        let id = match self.store.solo_of(player).await {
            Ok(Some(id)) => id,
            Ok(None) => return Ok(None),
            Err(_) => {
                return Err(outbound::Refusal::new(
                    jumpgate_protocol::ErrorCode::StorageUnavailable,
                    "your solo game could not be looked up just now; try again",
                ));
            }
        };
        // Only a connection that names the game may have it handed over.
        let may_ask = named == Some(id.as_str());
        ownership::acquire(self, &id, may_ask, || {
            self.solo_of(player).filter(|h| h.id == id)
        })
        .await
    }

    /// The solo game with this id, if its task runs here.
    pub fn solo_by_id(&self, id: &str) -> Option<solo::SoloHandle> {
        self.solos
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .find(|h| h.id == id && !h.commands.is_closed())
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

    /// Starts the task of a solo game, owned here at `owner`, and registers
    /// it under its player.
    pub fn spawn_solo(
        self: &Arc<Self>,
        record: solo::SoloRecord,
        owner: OwnerEpoch,
    ) -> Result<solo::SoloHandle, String> {
        let (tx, rx) = mpsc::channel(64);
        let game = solo::SoloGame::from_record(
            record,
            owner,
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

    /// Starts the task of a room resumed from the store, claimed at
    /// `owner`; the side to move gets at least `grace`.
    pub fn resume_room(
        self: &Arc<Self>,
        stored: StoredRoom,
        owner: OwnerEpoch,
        grace: std::time::Duration,
    ) -> Result<RoomCode, String> {
        let code = stored.code.clone();
        let room = Room::resume(
            stored,
            owner,
            grace,
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
        let (tx, rx) = room::mailbox(256);
        let handle = RoomHandle {
            code: code.clone(),
            commands: tx,
        };
        self.rooms
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(code.clone(), handle.clone());
        let span = tracing::info_span!("room", code = %code);
        let state = self.clone();
        let run = async move {
            room.run(rx).await;
            // Out of the registry at once (unloaded rooms above all, which
            // must leave nothing behind), unless the code runs again.
            let mut rooms = state.rooms.lock().unwrap_or_else(|e| e.into_inner());
            if rooms.get(&code).is_some_and(|h| h.commands.is_closed()) {
                rooms.remove(&code);
            }
        };
        tokio::spawn(tracing::Instrument::instrument(run, span));
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
                // A code another instance holds is refused by the first
                // write (which claims a new room only if nothing is stored).
                let code = RoomCode::generate();
                if !rooms.contains_key(&code) && !kept.iter().any(|u| u.code == code.as_str()) {
                    break code;
                }
            }
        };
        tracing::info!(room = %code, rule_set = %options.rule_set, "lobby created");
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
    #[error("refusing this Redis: {0}")]
    Preflight(#[from] store::preflight::PreflightError),
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
            let records = records::RedisRecords::open(
                url,
                settings.redis_timeout,
                settings.wallet_rules.window,
            )?;
            Ok(Arc::new(records))
        }
        None => Ok(Arc::new(records::MemoryRecords::new(
            settings.wallet_rules.window,
        ))),
    }
}

/// The leaderboards the settings ask for: Redis when a URL is set.
pub fn open_leaderboards(
    settings: &Settings,
) -> Result<Arc<dyn leaderboard::Leaderboards>, StartupError> {
    match &settings.redis_url {
        Some(url) => {
            let boards = leaderboard::RedisLeaderboards::open(
                url,
                settings.redis_timeout,
                settings.wallet_rules.window,
            )?;
            Ok(Arc::new(boards))
        }
        None => Ok(Arc::new(leaderboard::MemoryLeaderboards::new(
            settings.wallet_rules.window,
        ))),
    }
}

/// Serves until `shutdown` resolves, then tells clients and closes. With a
/// Redis URL in the settings, first resumes every open lobby stored there.
/// The operator API is served only on `settings.admin_listen`, when set.
pub async fn run(
    listener: TcpListener,
    mut settings: Settings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartupError> {
    (settings.max_connections, settings.http_headroom) =
        listener::fit_to_fd_limit(settings.max_connections, settings.http_headroom);
    metrics::METRICS
        .connections_max
        .set(i64::try_from(settings.max_connections).unwrap_or(i64::MAX));
    // Bound at once, like the public listener: its connections wait in the
    // backlog until the stored rooms are back, and a bad address stops the
    // start.
    let admin_listener = match settings.admin_listen {
        Some(addr) => Some(TcpListener::bind(addr).await?),
        None => None,
    };
    let store = open_store(&settings)?;
    let wallets = open_wallets(&settings)?;
    let records = open_records(&settings)?;
    let boards = open_leaderboards(&settings)?;
    let state = AppState::try_new(settings, store, wallets, records, boards)?;
    let (refuse, refused) = tokio::sync::oneshot::channel::<store::preflight::PreflightError>();
    if state.store.is_durable() {
        // A Redis that is slow or away at start is waited for; meanwhile
        // the listeners answer probes (`/healthz` yes, `/readyz` no) and
        // hold every other request until the stored lobbies without a live
        // owner are back, which would otherwise be answered as unknown.
        state.resumed.send_replace(false);
        let resuming = state.clone();
        tokio::spawn(async move {
            // Nothing is written before the checks pass (requests wait for
            // the resume); a refusal stops the server.
            if let Err(refused) = resume::check_store(&resuming).await {
                let _ = refuse.send(refused);
                return;
            }
            resume::resume_stored_rooms(&resuming).await;
        });
    }
    // Shutting down: stop taking connections and rooms, hand every room
    // over (members are told to reconnect, and reach another instance),
    // then close what is left.
    let notify = state.clone();
    tokio::spawn(async move {
        shutdown.await;
        if notify.store.is_durable() {
            // Not a home to hand rooms back to while it hands its own over:
            // said before the listener closes, so that no room handed over
            // on a request redispatched meanwhile moves its home (waiting a
            // quarter of a second at most for a Redis that does not answer).
            let me = &notify.settings.instance_id;
            let mark = notify.store.mark_unready(me, true);
            let _ = tokio::time::timeout(std::time::Duration::from_millis(250), mark).await;
        }
        notify.draining.send_replace(true);
        // Half the grace for handing over, the rest for the connections.
        let budget = notify.settings.shutdown_grace / 2;
        match tokio::time::timeout(budget, ownership::hand_over_all(&notify)).await {
            Ok(0) => tracing::info!("every room handed over"),
            Ok(kept) => tracing::warn!(
                kept,
                "some rooms could not be handed over; others adopt them once this instance's heartbeat expires"
            ),
            Err(_) => tracing::warn!("handing rooms over took longer than the shutdown grace"),
        }
        if notify.store.is_durable() {
            // A beat stored after the retirement would say this instance is
            // alive for another heartbeat TTL, holding off the takeover of
            // whatever it could not hand over.
            ownership::stop_heartbeat(&notify).await;
            let _ = notify.store.retire(&notify.settings.instance_id).await;
        }
        let _ = notify.shutdown.send(true);
    });
    if let Some(addr) = state.settings.metrics_listen {
        let metrics_listener = TcpListener::bind(addr).await?;
        let state_for_probes = state.clone();
        let mut stop = state.shutdown.subscribe();
        tokio::spawn(async move {
            let stopped = async move {
                let _ = stop.wait_for(|s| *s).await;
            };
            let _ = axum::serve(metrics_listener, http::internal_router(state_for_probes))
                .with_graceful_shutdown(stopped)
                .await;
        });
    }
    // The operator API has a listener of its own, never the public one.
    if let Some(admin_listener) = admin_listener {
        let mut stop = state.shutdown.subscribe();
        let admin = admin::router(state.clone());
        tokio::spawn(async move {
            let stopped = async move {
                let _ = stop.wait_for(|s| *s).await;
            };
            let _ = axum::serve(admin_listener, admin)
                .with_graceful_shutdown(stopped)
                .await;
        });
    }
    let app = http::router(state.clone());
    // Buckets that have refilled are forgotten, so the limits' memory
    // follows the clients active in the last minute.
    // It ends with the server, so the state it holds is dropped too.
    let limits = state.clone();
    let mut closed = state.shutdown.subscribe();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(std::time::Duration::from_secs(60));
        loop {
            tokio::select! {
                _ = every.tick() => limits.limits.forget_idle(),
                _ = closed.wait_for(|s| *s) => break,
            }
        }
    });
    let mut stop = state.draining.subscribe();
    let server = listener::serve(listener, app, state.clone(), async move {
        let _ = stop.wait_for(|s| *s).await;
    });
    let mut stop = state.draining.subscribe();
    let grace = state.settings.shutdown_grace;
    let deadline = async move {
        let _ = stop.wait_for(|s| *s).await;
        tokio::time::sleep(grace).await;
    };
    // Upgraded WebSocket connections outlive the HTTP server's graceful
    // shutdown, so wait for them too: each sends `shutdown` and closes.
    let mut live = state.live_connections.subscribe();
    // ... and for the rooms to be handed over (the closing flag flips only
    // after that), even when no connection is left to wait for.
    let mut handed = state.shutdown.subscribe();
    let all_done = async move {
        let result = server.await;
        let _ = handed.wait_for(|s| *s).await;
        let _ = live.wait_for(|n| *n == 0).await;
        result
    };
    tokio::select! {
        result = all_done => result.map_err(StartupError::Listen),
        Ok(refusal) = refused => {
            tracing::error!(error = %refusal, "refusing to run on this Redis");
            state.draining.send_replace(true);
            Err(StartupError::Preflight(refusal))
        }
        () = deadline => {
            tracing::warn!("shutdown deadline passed with connections still open");
            Ok(())
        }
    }
}
