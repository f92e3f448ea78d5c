//! The composition root: what one instance is made of and how it starts and
//! stops. [`App`] is the state the edge (the HTTP routes, the WebSocket
//! connections, the listener, the operator API) is served with; everything
//! below the edge is handed only the part it uses — the stores
//! ([`Backends`]), the rooms running here ([`Registry`]), ownership across
//! instances ([`Ownership`]), and the instance's [`Lifecycle`].
//!
//! [`run`] opens the stores, checks Redis, takes the stored rooms back,
//! serves, and drains at shutdown (see [`drain`]).

mod backends;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

pub use self::backends::Backends;
use crate::config::Settings;
use crate::identity::Identities;
pub use crate::lifecycle::Lifecycle;
use crate::limits::ClientLimits;
use crate::ownership::{Ownership, OwnershipSettings};
pub use crate::registry::Registry;
use crate::room::{RoomDeps, RoomSettings};
use crate::solo::jobs::JobQueue;
use crate::solo::worker::SearcherSettings;
use crate::solo::{SearchQueue, Searchers, SoloDeps, SoloSettings};
use crate::store::preflight::{self, PreflightError};
use crate::store::{RedisConn, StoreError, redis_connection};
use crate::{admin, http, listener, metrics, ownership, resume};

/// What the edge serves with: the settings, the identities and per-client
/// limits, and the handles below.
#[derive(Debug)]
pub struct App {
    pub settings: Arc<Settings>,
    pub identities: Identities,
    /// Per-client caps and rates.
    pub limits: ClientLimits,
    pub backends: Backends,
    pub registry: Arc<Registry>,
    pub ownership: Arc<Ownership>,
    pub lifecycle: Lifecycle,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("cannot open the store: {0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    DataDir(#[from] crate::store::embedded::OpenError),
    #[error("unusable account keys: {0}")]
    AccountKeys(String),
    #[error("cannot listen: {0}")]
    Listen(#[from] std::io::Error),
    #[error("refusing this Redis: {0}")]
    Preflight(#[from] PreflightError),
}

impl App {
    /// Builds the instance on its stores, refusing unreadable account keys.
    pub fn new(settings: Settings, backends: Backends) -> Result<Arc<App>, StartupError> {
        let identities =
            Identities::with_accounts(&settings.token_secret, settings.accounts.as_ref())
                .map_err(StartupError::AccountKeys)?;
        let room_deps = RoomDeps {
            settings: Arc::new(room_settings(&settings)),
            store: backends.store.clone(),
            wallets: backends.wallets.clone(),
            records: backends.records.clone(),
        };
        let solo_deps = SoloDeps {
            settings: Arc::new(SoloSettings {
                finished_ttl: settings.finished_ttl,
                idle_lobby: settings.idle_lobby,
                ranked_ply_cap: settings.ranked_ply_cap,
            }),
            store: backends.store.clone(),
            boards: backends.leaderboards.clone(),
            pool: searchers(&settings)?,
        };
        let registry = Arc::new(Registry::new(room_deps, solo_deps));
        let lifecycle = Lifecycle::default();
        let ownership = Arc::new(Ownership::new(
            OwnershipSettings {
                instance_id: settings.instance_id.clone(),
                heartbeat_ttl: settings.heartbeat_ttl,
                redis_timeout: settings.redis_timeout,
                return_home_after: settings.return_home_after,
                resume_grace: settings.resume_grace,
                resume_batch: settings.resume_batch,
            },
            backends.store.clone(),
            registry.clone(),
            lifecycle.clone(),
        ));
        Ok(Arc::new(App {
            limits: ClientLimits::new(settings.limits.clone()),
            settings: Arc::new(settings),
            identities,
            backends,
            registry,
            ownership,
            lifecycle,
        }))
    }

    /// The identity's unfinished games (see [`crate::my_games::list`]).
    pub async fn my_games(
        &self,
        identity: &crate::identity::Identity,
    ) -> Result<Vec<jumpgate_protocol::MyGame>, crate::outbound::Refusal> {
        let expire_after = self.settings.correspondence_expiry;
        crate::my_games::list(
            &*self.backends.store,
            &self.registry,
            expire_after,
            identity,
        )
        .await
    }
}

/// The computer's searchers: without Redis, the instance's own queue;
/// with Redis, the deployment's job stream, and (`--bot-threads` above
/// zero) this instance's threads working it.
fn searchers(settings: &Settings) -> Result<Searchers, StartupError> {
    let Some(url) = &settings.redis_url else {
        return Ok(Searchers::Local(Arc::new(SearchQueue::new(
            settings.bot_threads,
            settings.executive_budget,
            settings.max_search_wait,
        ))));
    };
    let timeout = settings.redis_timeout;
    let queue = JobQueue::start(
        redis_connection(url, timeout)?,
        redis_connection(url, timeout)?,
        settings.bot_threads,
        crate::solo::worker::block_time(timeout),
        settings.executive_budget,
        settings.max_search_wait,
    );
    if settings.bot_threads > 0
        && let Ok(runtime) = tokio::runtime::Handle::try_current()
    {
        let searcher = SearcherSettings {
            redis_url: url.clone(),
            redis_timeout: timeout,
            threads: settings.bot_threads,
            name: settings.instance_id.to_string(),
            reclaim_after: settings.search_reclaim,
        };
        // They stop with the process: their jobs are taken over after
        // `--search-reclaim-ms`, as after a crash.
        runtime.spawn(async move {
            let stop = std::future::pending::<()>();
            if let Err(e) = crate::solo::worker::run(searcher, stop).await {
                tracing::error!(error = %e, "this instance's searchers stopped");
            }
        });
    }
    Ok(Searchers::Jobs(queue))
}

/// The settings a room reads, out of the instance's.
pub(crate) fn room_settings(settings: &Settings) -> RoomSettings {
    RoomSettings {
        instance_id: settings.instance_id.clone(),
        public_url: settings.public_url.clone(),
        move_clock: settings.move_clock,
        break_time: settings.break_time,
        correspondence_claim: settings.correspondence_claim,
        correspondence_expiry: settings.correspondence_expiry,
        correspondence_unload: settings.correspondence_unload,
        resume_grace: settings.resume_grace,
        finished_ttl: settings.finished_ttl,
        compact_every: settings.compact_every,
        idle_lobby: settings.idle_lobby,
        rank_thresholds: settings.rank_thresholds,
    }
}

/// Checks the Redis before anything is written to it (see
/// [`preflight`]), waiting while it does not answer; an error is a refusal
/// to run on it.
async fn check_redis(conn: &RedisConn, compact_every: u32) -> Result<(), PreflightError> {
    let writes = preflight::format_written(compact_every);
    loop {
        match preflight::preflight(conn, writes).await {
            Ok(found) => {
                tracing::info!(
                    storage_format = found.format,
                    writes,
                    eviction = found.policy.as_deref().unwrap_or("unknown"),
                    "Redis checked"
                );
                return Ok(());
            }
            Err(e) if e.is_transient() => {
                tracing::warn!(error = %e, "cannot check Redis yet; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// The drain at shutdown: stop taking connections and rooms, hand every
/// room over (members are told to reconnect, and reach another instance),
/// stop the heartbeat and say this instance is gone, then let the
/// connections close.
pub async fn drain(app: &App) {
    let durable = app.backends.store.is_durable();
    let me = &app.settings.instance_id;
    if durable {
        // Not a home to hand rooms back to while it hands its own over:
        // said before the listener closes, so that no room handed over on a
        // request redispatched meanwhile moves its home (waiting a quarter
        // of a second at most for a Redis that does not answer).
        let mark = app.backends.store.mark_unready(me, true);
        let _ = tokio::time::timeout(Duration::from_millis(250), mark).await;
    }
    app.lifecycle.start_draining();
    // Half the grace for handing over, the rest for the connections.
    let budget = app.settings.shutdown_grace / 2;
    match tokio::time::timeout(budget, ownership::hand_over_all(&app.ownership)).await {
        Ok(0) => tracing::info!("every room handed over"),
        Ok(kept) => tracing::warn!(
            kept,
            "some rooms could not be handed over; others adopt them once this instance's heartbeat expires"
        ),
        Err(_) => tracing::warn!("handing rooms over took longer than the shutdown grace"),
    }
    if durable {
        // A beat stored after the retirement would say this instance is
        // alive for another heartbeat TTL, holding off the takeover of
        // whatever it could not hand over.
        ownership::stop_heartbeat(&app.ownership).await;
        let _ = app.backends.store.retire(me).await;
    }
    app.lifecycle.close();
}

/// Serves `router` on `listener` until the instance closes.
fn serve_until_closed(listener: TcpListener, router: axum::Router, lifecycle: &Lifecycle) {
    let mut closing = lifecycle.closing();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async move { closing.wait().await })
            .await;
    });
}

/// Serves until `shutdown` resolves, then tells clients and closes. With a
/// Redis URL in the settings, first resumes every open lobby stored there.
/// The operator API is served only on `settings.admin_listen`, when set.
pub async fn run(
    listener: TcpListener,
    mut settings: Settings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartupError> {
    (settings.max_connections, settings.http_headroom) = listener::fit_to_fd_limit(
        settings.max_connections,
        settings.max_connections_chosen,
        settings.http_headroom,
    );
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
    let backends = match Backends::open(&settings) {
        Ok(backends) => backends,
        Err(backends::OpenError::Redis(e)) => return Err(e.into()),
        Err(backends::OpenError::DataDir(e)) => return Err(e.into()),
    };
    // Said once the store is open (a refused data directory says why instead).
    match (&settings.redis_url, &settings.data_dir) {
        (Some(_), _) => tracing::info!(
            "store: Redis (lobbies, wallets, records and leaderboards; several instances may share it)"
        ),
        (None, Some(dir)) => tracing::info!(
            data_dir = %dir.display(),
            "store: the data directory (lobbies, wallets, records and leaderboards survive a \
             restart; one instance only: use --redis-url for more)"
        ),
        (None, None) => tracing::warn!(
            "store: memory (--memory): lobbies, wallets, records and leaderboards are lost \
             when the process stops"
        ),
    }
    let redis = backends.redis.clone();
    let durable = backends.store.is_durable();
    let app = App::new(settings, backends)?;
    let (refuse, refused) = tokio::sync::oneshot::channel::<PreflightError>();
    if redis.is_none() && durable {
        // The data file was checked whole when it opened: take back every
        // stored lobby before serving.
        app.lifecycle.resume_pending();
        let resuming = app.clone();
        tokio::spawn(async move {
            resume::resume_stored_rooms(&resuming.ownership).await;
        });
    }
    if let Some(redis) = redis {
        // A Redis that is slow or away at start is waited for; meanwhile
        // the listeners answer probes (`/healthz` yes, `/readyz` no) and
        // hold every other request until the stored lobbies without a live
        // owner are back, which would otherwise be answered as unknown.
        app.lifecycle.resume_pending();
        let resuming = app.clone();
        tokio::spawn(async move {
            // Nothing is written before the checks pass (requests wait for
            // the resume); a refusal stops the server.
            if let Err(refused) = check_redis(&redis, resuming.settings.compact_every).await {
                let _ = refuse.send(refused);
                return;
            }
            resume::resume_stored_rooms(&resuming.ownership).await;
        });
    }
    let draining = app.clone();
    tokio::spawn(async move {
        shutdown.await;
        drain(&draining).await;
    });
    if let Some(addr) = app.settings.metrics_listen {
        let metrics_listener = TcpListener::bind(addr).await?;
        let probes = http::internal_router(app.clone());
        serve_until_closed(metrics_listener, probes, &app.lifecycle);
    }
    // The operator API has a listener of its own, never the public one.
    if let Some(admin_listener) = admin_listener {
        serve_until_closed(admin_listener, admin::router(app.clone()), &app.lifecycle);
    }
    let router = http::router(app.clone());
    // Buckets that have refilled are forgotten, so the limits' memory
    // follows the clients active in the last minute. It ends with the
    // server, so the state it holds is dropped too.
    let limits = app.clone();
    let mut closed = app.lifecycle.closing();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(60));
        loop {
            tokio::select! {
                _ = every.tick() => limits.limits.forget_idle(),
                () = closed.wait() => break,
            }
        }
    });
    let mut stop = app.lifecycle.draining();
    let server = listener::serve(listener, router, app.clone(), async move {
        stop.wait().await;
    });
    let mut stop = app.lifecycle.draining();
    let grace = app.settings.shutdown_grace;
    let deadline = async move {
        stop.wait().await;
        tokio::time::sleep(grace).await;
    };
    // Upgraded WebSocket connections outlive the HTTP server's graceful
    // shutdown, so wait for them too: each sends `shutdown` and closes ...
    // and for the rooms to be handed over (the closing flag flips only
    // after that), even when no connection is left to wait for.
    let lifecycle = app.lifecycle.clone();
    let mut handed = app.lifecycle.closing();
    let all_done = async move {
        let result = server.await;
        handed.wait().await;
        lifecycle.all_connections_closed().await;
        result
    };
    tokio::select! {
        result = all_done => result.map_err(StartupError::Listen),
        Ok(refusal) = refused => {
            tracing::error!(error = %refusal, "refusing to run on this Redis");
            app.lifecycle.start_draining();
            Err(StartupError::Preflight(refusal))
        }
        () = deadline => {
            tracing::warn!("shutdown deadline passed with connections still open");
            Ok(())
        }
    }
}
