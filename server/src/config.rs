//! Configuration: one clap struct, every option also read from a
//! `JUMPGATE_…` environment variable.

// Past ~700 lines on purpose: every option, how it becomes a setting and
// the tests of both read best in one place.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `--max-connections` by default: what one instance is meant to hold (see the
/// option's help), lowered at start to what the file-descriptor limit allows
/// (`listener::fit_to_fd_limit`).
pub const DEFAULT_MAX_CONNECTIONS: usize = 100_000;

/// Options of `jumpgate serve`.
#[derive(Clone, Debug, clap::Args)]
pub struct ServeConfig {
    /// Address to listen on.
    #[arg(long, env = "JUMPGATE_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Public base URL for invite links (default: http://LISTEN).
    #[arg(long, env = "JUMPGATE_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Time allowed for each move, in milliseconds.
    #[arg(long, env = "JUMPGATE_MOVE_CLOCK_MS", default_value_t = 45_000)]
    pub move_clock_ms: u64,
    /// Break between the rounds of a series, in milliseconds.
    #[arg(long, env = "JUMPGATE_BREAK_MS", default_value_t = 8_000)]
    pub break_ms: u64,
    /// Secret that signs guest tokens: at least 32 bytes, not a placeholder
    /// (the server refuses to start otherwise). Without it a random one is
    /// used and tokens stop working when the server restarts.
    #[arg(long, env = "JUMPGATE_TOKEN_SECRET", hide_env_values = true)]
    pub token_secret: Option<String>,
    /// Redis URL (e.g. redis://127.0.0.1:6379/0), for several instances
    /// behind a balancer. Without it everything is kept in the data
    /// directory (one instance).
    #[arg(long, env = "JUMPGATE_REDIS_URL")]
    pub redis_url: Option<String>,
    /// Where one instance keeps lobbies, wallets, records and leaderboards
    /// without Redis (a SQLite file, created on first start; one process at
    /// a time). `none` keeps everything in memory, as `--memory` does. A
    /// Redis URL, when given, is used instead.
    #[arg(long, env = "JUMPGATE_DATA_DIR", default_value = "jumpgate-data")]
    pub data_dir: PathBuf,
    /// Keep everything in memory: lost when the process stops (tests,
    /// trials).
    #[arg(long, env = "JUMPGATE_MEMORY")]
    pub memory: bool,
    /// Time limit for one Redis command, in milliseconds.
    #[arg(long, env = "JUMPGATE_REDIS_TIMEOUT_MS", default_value_t = 2_000)]
    pub redis_timeout_ms: u64,
    /// Least time the side to move gets when a game resumes after a restart.
    #[arg(long, env = "JUMPGATE_RESUME_GRACE_MS", default_value_t = 15_000)]
    pub resume_grace_ms: u64,
    /// Stored lobbies read and claimed per round trip at start.
    #[arg(long, env = "JUMPGATE_RESUME_BATCH", default_value_t = 256)]
    pub resume_batch: usize,
    /// How long a finished or closed lobby is kept in Redis, in seconds.
    #[arg(long, env = "JUMPGATE_FINISHED_TTL_SECS", default_value_t = 86_400)]
    pub finished_ttl_secs: u64,
    /// A move is appended to the lobby's move log without rewriting its
    /// record; the record is rewritten at least every this many moves (and
    /// with every change that is not a plain move). 1 rewrites it with
    /// every move.
    #[arg(long, env = "JUMPGATE_COMPACT_EVERY", default_value_t = 32)]
    pub compact_every: u32,
    /// A lobby with nobody connected and no game in play closes after this
    /// many seconds (its seats are given up; it then expires like any
    /// closed lobby).
    #[arg(long, env = "JUMPGATE_IDLE_LOBBY_SECS", default_value_t = 1_800)]
    pub idle_lobby_secs: u64,
    /// Correspondence lobbies: seconds the side to move has before the
    /// opponent may claim the game by forfeit (default 2 days).
    #[arg(
        long,
        env = "JUMPGATE_CORRESPONDENCE_CLAIM_SECS",
        default_value_t = 172_800
    )]
    pub correspondence_claim_secs: u64,
    /// Correspondence lobbies: seconds without a move after which the lobby
    /// ends with no winner (default 7 days).
    #[arg(
        long,
        env = "JUMPGATE_CORRESPONDENCE_EXPIRY_SECS",
        default_value_t = 604_800
    )]
    pub correspondence_expiry_secs: u64,
    /// Correspondence lobbies: seconds with nobody connected after which the
    /// lobby is unloaded from memory (kept in Redis, loaded again when asked
    /// for or when its expiry is due). Needs Redis.
    #[arg(
        long,
        env = "JUMPGATE_CORRESPONDENCE_UNLOAD_SECS",
        default_value_t = 60
    )]
    pub correspondence_unload_secs: u64,
    /// Serve /metrics on this separate address too (it is always on the main
    /// address).
    #[arg(long, env = "JUMPGATE_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,
    /// Deadline for a graceful shutdown after SIGTERM or Ctrl-C, in
    /// milliseconds.
    #[arg(long, env = "JUMPGATE_SHUTDOWN_GRACE_MS", default_value_t = 10_000)]
    pub shutdown_grace_ms: u64,
    /// This instance's name in Redis (its heartbeat and the rooms it owns).
    /// Must be unique among running instances; default: random per process.
    #[arg(long, env = "JUMPGATE_INSTANCE_ID", value_parser = parse_instance_id)]
    pub instance_id: Option<String>,
    /// Most WebSocket connections served at once; past it an upgrade gets
    /// HTTP 503 with `Retry-After`. The default, 100,000, is what one
    /// instance is meant to hold: an idle greeted connection costs the
    /// server about 6 KiB (`jumpgate-loadtest bench --crowd`), so about
    /// 600 MB at the cap, kernel socket memory aside. At start it is
    /// lowered to what the file-descriptor limit holds beside a reserve
    /// (the limit less 1,152), so a machine with a low limit keeps a low
    /// cap: logged as a warning when the cap was set, as information when it
    /// was the default. Set it lower on a machine with less memory.
    /// [default: 100000]
    #[arg(long, env = "JUMPGATE_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// A client must send a whole request head (an HTTP request, or the
    /// WebSocket upgrade request) within this many milliseconds of
    /// connecting or of its previous request, or it is disconnected.
    #[arg(
        long,
        env = "JUMPGATE_HEADER_READ_TIMEOUT_MS",
        default_value_t = 10_000
    )]
    pub header_read_timeout_ms: u64,
    /// Longest an HTTP request (other than the WebSocket it upgrades to)
    /// may take to answer, in milliseconds; past it: 503.
    #[arg(
        long,
        env = "JUMPGATE_HTTP_REQUEST_TIMEOUT_MS",
        default_value_t = 15_000
    )]
    pub http_request_timeout_ms: u64,
    /// Most connections one client address may hold open: WebSocket
    /// connections, and separately connections still in HTTP (an IPv6
    /// client is its /64). Past it: HTTP 429 for an upgrade, or the
    /// socket is closed at accept.
    #[arg(
        long,
        env = "JUMPGATE_MAX_CONNECTIONS_PER_ADDRESS",
        default_value_t = 64
    )]
    pub max_connections_per_address: usize,
    /// Most WebSocket connections greeted with one identity (guest or
    /// account). Past it `hello` is refused with `too_many_connections`.
    #[arg(
        long,
        env = "JUMPGATE_MAX_CONNECTIONS_PER_IDENTITY",
        default_value_t = 8
    )]
    pub max_connections_per_identity: usize,
    /// Messages per second one client address may send over all its
    /// connections (bursts of twice that); past it the server stops
    /// reading them until the address is back under the rate. 0: no limit.
    #[arg(
        long,
        env = "JUMPGATE_MESSAGES_PER_SECOND_PER_ADDRESS",
        default_value_t = 100
    )]
    pub messages_per_second_per_address: u32,
    /// New lobbies and solo games per minute from one client address
    /// (refused with `rate_limited` past it). 0: no limit.
    #[arg(
        long,
        env = "JUMPGATE_ROOMS_PER_MINUTE_PER_ADDRESS",
        default_value_t = 30
    )]
    pub rooms_per_minute_per_address: u32,
    /// New lobbies and solo games per minute for one identity. 0: no limit.
    #[arg(
        long,
        env = "JUMPGATE_ROOMS_PER_MINUTE_PER_IDENTITY",
        default_value_t = 10
    )]
    pub rooms_per_minute_per_identity: u32,
    /// HTTP requests per second from one client address, WebSocket
    /// upgrades included and `/healthz`, `/readyz`, `/metrics` excluded
    /// (bursts of twice that; past it: 429 with `Retry-After`). 0: no limit.
    #[arg(
        long,
        env = "JUMPGATE_HTTP_REQUESTS_PER_SECOND_PER_ADDRESS",
        default_value_t = 20
    )]
    pub http_requests_per_second_per_address: u32,
    /// Proxies (addresses or CIDR blocks, comma-separated) whose
    /// --client-address-header is believed. Empty: the peer is the client.
    #[arg(long, env = "JUMPGATE_TRUSTED_PROXIES", value_delimiter = ',', value_parser = crate::limits::parse_proxy)]
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// The header trusted proxies name the client in. It is read from the
    /// right (each proxy appends the address it was reached from), past
    /// every address in --trusted-proxies: the first other address is the
    /// client's.
    #[arg(
        long,
        env = "JUMPGATE_CLIENT_ADDRESS_HEADER",
        default_value = "X-Forwarded-For"
    )]
    pub client_address_header: axum::http::HeaderName,
    /// A connection that has not sent `hello` this long after the upgrade
    /// is closed (1008), in milliseconds.
    #[arg(long, env = "JUMPGATE_HELLO_TIMEOUT_MS", default_value_t = 10_000)]
    pub hello_timeout_ms: u64,
    /// The server pings every connection this often, in milliseconds; one
    /// silent (no frame, no pong) for two of these is closed (1008).
    #[arg(long, env = "JUMPGATE_PING_INTERVAL_MS", default_value_t = 20_000)]
    pub ping_interval_ms: u64,
    /// Longest a write to one connection may take, in milliseconds; a
    /// client that stops reading is dropped after it.
    #[arg(long, env = "JUMPGATE_WRITE_TIMEOUT_MS", default_value_t = 10_000)]
    pub write_timeout_ms: u64,
    /// How long this instance counts as alive after each heartbeat, in
    /// milliseconds (it renews three times per period). Rooms of an
    /// instance silent for this long are taken over by the others.
    #[arg(long, env = "JUMPGATE_HEARTBEAT_TTL_MS", default_value_t = 3_000)]
    pub heartbeat_ttl_ms: u64,
    /// A room held here for the instance its players were routed to (which
    /// stopped or died) goes back to that instance id once it has been
    /// alive again this long, in milliseconds: a restarted instance gets
    /// its rooms back. 0: never.
    #[arg(long, env = "JUMPGATE_RETURN_HOME_AFTER_MS", default_value_t = 10_000)]
    pub return_home_after_ms: u64,
    /// Issuer (`iss`) of account tokens. Accounts are off without it.
    #[arg(long, env = "JUMPGATE_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,
    /// Audience (`aud`) account tokens must name.
    #[arg(long, env = "JUMPGATE_JWT_AUDIENCE", default_value = "jumpgate")]
    pub jwt_audience: String,
    /// HS256 account keys, `KID=SECRET`, comma-separated.
    #[arg(
        long,
        env = "JUMPGATE_JWT_HS256",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub jwt_hs256: Vec<String>,
    /// RS256 public keys, `KID=PATH.pem`, comma-separated.
    #[arg(long, env = "JUMPGATE_JWT_RS256", value_delimiter = ',')]
    pub jwt_rs256: Vec<String>,
    /// EdDSA (Ed25519) public keys, `KID=PATH.pem`, comma-separated.
    #[arg(long, env = "JUMPGATE_JWT_EDDSA", value_delimiter = ',')]
    pub jwt_eddsa: Vec<String>,
    /// Bold Points a new account starts with.
    #[arg(long, env = "JUMPGATE_INITIAL_GRANT", default_value_t = 1_000)]
    pub initial_grant: u64,
    /// Most Bold Points a member may win per UTC day.
    #[arg(long, env = "JUMPGATE_DAILY_CAP", default_value_t = 5_000)]
    pub daily_cap: u64,
    /// Ledger entries kept per account; older ones are rolled into
    /// per-month totals (the balance stays exactly their sum).
    #[arg(long, env = "JUMPGATE_LEDGER_KEEP", default_value_t = 100)]
    pub ledger_keep: u64,
    /// How long the idempotency keys of wallet movements, recorded series
    /// and counted games are kept after the write was decided; a write
    /// decided longer ago than 90% of this is refused, never applied twice.
    #[arg(long, env = "JUMPGATE_IDEMPOTENCY_WINDOW_SECS", default_value_t = 30 * 86_400)]
    pub idempotency_window_secs: u64,
    /// Bearer token for the operator API (/api/admin/…); off without it.
    /// At least 32 bytes, not a placeholder (the server refuses to start
    /// otherwise); needs --admin-listen.
    #[arg(long, env = "JUMPGATE_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// Address of the operator API, never served on --listen. Keep it
    /// private (loopback, or a port no load balancer or Service exposes).
    #[arg(long, env = "JUMPGATE_ADMIN_LISTEN")]
    pub admin_listen: Option<SocketAddr>,
    /// Series won for each rank (Rookie … Legend), six comma-separated
    /// numbers.
    #[arg(long, env = "JUMPGATE_RANK_THRESHOLDS", value_delimiter = ',', default_values_t = [0, 3, 10, 25, 50, 100])]
    pub rank_thresholds: Vec<u32>,
    /// Bot searches that may run at once (default: cores − 1, at least 1),
    /// so the computer never takes every core from human games. With Redis
    /// these threads work the deployment's search jobs, and 0 leaves them
    /// all to `jumpgate bot-worker` processes.
    #[arg(long, env = "JUMPGATE_BOT_THREADS")]
    pub bot_threads: Option<usize>,
    /// With Redis: a search job pending this long (its searcher died or
    /// froze) is taken over by another searcher, in milliseconds.
    #[arg(long, env = "JUMPGATE_SEARCH_RECLAIM_MS", default_value_t = 10_000)]
    pub search_reclaim_ms: u64,
    /// The Executive's thinking time per move, in milliseconds.
    #[arg(long, env = "JUMPGATE_EXECUTIVE_MS", default_value_t = 1_000)]
    pub executive_ms: u64,
    /// A new game against the computer is refused (`computer_busy`, retryable)
    /// while a search asked for now would wait longer than this, in seconds.
    #[arg(long, env = "JUMPGATE_MAX_SEARCH_WAIT_SECS", default_value_t = 10)]
    pub max_search_wait_secs: u64,
    /// Set TCP_NODELAY on accepted sockets (`false` lets the kernel batch
    /// small writes, at the cost of latency when it waits to).
    #[arg(long, env = "JUMPGATE_TCP_NODELAY", default_value_t = true, action = clap::ArgAction::Set)]
    pub tcp_nodelay: bool,
    /// Log as JSON lines instead of text.
    #[arg(long, env = "JUMPGATE_LOG_JSON")]
    pub log_json: bool,
}

fn parse_instance_id(text: &str) -> Result<String, String> {
    let ok = !text.is_empty()
        && text.len() <= 64
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    if ok {
        Ok(text.to_owned())
    } else {
        Err("use 1 to 64 of A-Z a-z 0-9 - _ .".into())
    }
}

/// Settings the running server uses (tests build these directly).
#[derive(Clone, Debug)]
pub struct Settings {
    pub public_url: String,
    pub move_clock: Duration,
    pub break_time: Duration,
    pub token_secret: Vec<u8>,
    /// Messages a connection may send per second before it is refused.
    pub rate_per_second: u32,
    /// Messages per second at which a connection is closed for flooding.
    pub flood_per_second: u32,
    /// Outbound messages queued for one connection before it is dropped as
    /// too slow.
    pub outbound_queue: usize,
    /// Redis URL; `None` keeps everything in the data directory, or in
    /// memory.
    pub redis_url: Option<String>,
    /// The embedded store's directory, without Redis; `None` (and no
    /// Redis) keeps everything in memory.
    pub data_dir: Option<PathBuf>,
    pub redis_timeout: Duration,
    /// Least time the side to move gets when a game resumes.
    pub resume_grace: Duration,
    /// Stored rooms read and claimed together at start (see
    /// ARCHITECTURE.md, "Resuming").
    pub resume_batch: usize,
    /// How long a finished or closed lobby stays in the store.
    pub finished_ttl: Duration,
    /// The record is rewritten at least every this many moves (1: with
    /// every move; see [`crate::store::MoveAppend`]).
    pub compact_every: u32,
    /// How long a lobby with nobody connected and no game in play lives on.
    pub idle_lobby: Duration,
    /// Correspondence: the claim window, the expiry window, and how long a
    /// lobby nobody is connected to stays in memory.
    pub correspondence_claim: Duration,
    pub correspondence_expiry: Duration,
    pub correspondence_unload: Duration,
    pub metrics_listen: Option<SocketAddr>,
    pub shutdown_grace: Duration,
    /// This instance's name in Redis, unique among running instances.
    pub instance_id: std::sync::Arc<str>,
    /// How long this instance counts as alive after a heartbeat.
    pub heartbeat_ttl: Duration,
    /// How long the instance a room belongs on must be alive again before
    /// the room goes back to it (`None`: never).
    pub return_home_after: Option<Duration>,
    /// Most WebSocket connections at once (lowered at start to what the
    /// file-descriptor limit allows).
    pub max_connections: usize,
    /// Whether the operator set `max_connections` (lowering a chosen cap
    /// warns; lowering the default is only reported).
    pub max_connections_chosen: bool,
    /// Connections beyond `max_connections` the public listener accepts
    /// for HTTP (see `listener::HTTP_HEADROOM`).
    pub http_headroom: usize,
    /// Deadline for a request head, from connecting or the last request.
    pub header_read_timeout: Duration,
    /// Deadline for answering an HTTP request.
    pub http_request_timeout: Duration,
    /// Per-client caps and rates.
    pub limits: crate::limits::LimitSettings,
    /// Deadline for `hello` after the upgrade.
    pub hello_timeout: Duration,
    /// How often connections are pinged; two silent intervals close one.
    pub ping_interval: Duration,
    /// Longest one write to a connection may take.
    pub write_timeout: Duration,
    /// The external account issuer; `None` means guests only.
    pub accounts: Option<crate::identity::AccountSettings>,
    pub wallet_rules: crate::wallet::WalletRules,
    /// Bearer token of the operator API; `None` turns it off.
    pub admin_token: Option<String>,
    /// Where the operator API is served (only there); `None`: nowhere.
    pub admin_listen: Option<SocketAddr>,
    pub rank_thresholds: crate::records::RankThresholds,
    /// Plies after which a ranked game is drawn.
    pub ranked_ply_cap: usize,
    /// Bot searches that may run at once (with Redis, may be 0).
    pub bot_threads: usize,
    /// With Redis: when a pending search job is taken over.
    pub search_reclaim: Duration,
    /// The Executive's time per move.
    pub executive_budget: Duration,
    /// The expected wait past which a new game against the computer is refused.
    pub max_search_wait: Duration,
    pub tcp_nodelay: bool,
}

impl Settings {
    /// Defaults for tests and embedding: a random token secret.
    pub fn for_address(addr: SocketAddr) -> Settings {
        Settings {
            public_url: format!("http://{addr}"),
            move_clock: Duration::from_secs(45),
            break_time: Duration::from_secs(8),
            token_secret: nanoid::nanoid!(48).into_bytes(),
            rate_per_second: 40,
            flood_per_second: 120,
            outbound_queue: 256,
            redis_url: None,
            data_dir: None,
            redis_timeout: Duration::from_secs(2),
            resume_grace: Duration::from_secs(15),
            resume_batch: 256,
            finished_ttl: Duration::from_secs(86_400),
            compact_every: 32,
            idle_lobby: Duration::from_secs(1_800),
            correspondence_claim: Duration::from_secs(172_800),
            correspondence_expiry: Duration::from_secs(604_800),
            correspondence_unload: Duration::from_secs(60),
            metrics_listen: None,
            shutdown_grace: Duration::from_secs(10),
            instance_id: nanoid::nanoid!(12).into(),
            heartbeat_ttl: Duration::from_secs(3),
            return_home_after: Some(Duration::from_secs(10)),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_chosen: false,
            http_headroom: crate::listener::HTTP_HEADROOM,
            header_read_timeout: Duration::from_secs(10),
            http_request_timeout: Duration::from_secs(15),
            limits: crate::limits::LimitSettings::default(),
            hello_timeout: Duration::from_secs(10),
            ping_interval: Duration::from_secs(20),
            write_timeout: Duration::from_secs(10),
            accounts: None,
            wallet_rules: crate::wallet::WalletRules::default(),
            admin_token: None,
            admin_listen: None,
            rank_thresholds: crate::records::RankThresholds::default(),
            ranked_ply_cap: 500,
            bot_threads: std::thread::available_parallelism()
                .map(|n| n.get().saturating_sub(1).max(1))
                .unwrap_or(1),
            search_reclaim: crate::solo::worker::RECLAIM_AFTER,
            executive_budget: Duration::from_secs(1),
            max_search_wait: Duration::from_secs(10),
            tcp_nodelay: true,
        }
    }

    pub fn from_config(config: &ServeConfig, addr: SocketAddr) -> Result<Settings, String> {
        let mut settings = Settings::for_address(addr);
        if let Some(url) = &config.public_url {
            settings.public_url = url.trim_end_matches('/').to_owned();
        }
        settings.move_clock = Duration::from_millis(config.move_clock_ms.max(1));
        settings.break_time = Duration::from_millis(config.break_ms);
        settings.redis_url = config.redis_url.clone();
        let memory = config.memory || config.data_dir == Path::new("none");
        if config.data_dir.to_string_lossy().contains("://") {
            return Err(format!(
                "--data-dir {} looks like a URL: a Redis URL goes to --redis-url",
                config.data_dir.display()
            ));
        }
        if memory && settings.redis_url.is_some() {
            tracing::warn!("--memory (or --data-dir none) is ignored: --redis-url is set");
        }
        settings.data_dir =
            (settings.redis_url.is_none() && !memory).then(|| config.data_dir.clone());
        settings.redis_timeout = Duration::from_millis(config.redis_timeout_ms.max(1));
        settings.resume_grace = Duration::from_millis(config.resume_grace_ms);
        settings.resume_batch = config.resume_batch.clamp(1, 10_000);
        settings.finished_ttl = Duration::from_secs(config.finished_ttl_secs.max(1));
        settings.compact_every = config.compact_every.max(1);
        settings.idle_lobby = Duration::from_secs(config.idle_lobby_secs.max(1));
        settings.correspondence_claim = Duration::from_secs(config.correspondence_claim_secs);
        settings.correspondence_expiry =
            Duration::from_secs(config.correspondence_expiry_secs.max(1));
        settings.correspondence_unload =
            Duration::from_secs(config.correspondence_unload_secs.max(1));
        settings.metrics_listen = config.metrics_listen;
        settings.shutdown_grace = Duration::from_millis(config.shutdown_grace_ms);
        if let Some(id) = &config.instance_id {
            settings.instance_id = id.as_str().into();
        }
        settings.heartbeat_ttl = Duration::from_millis(config.heartbeat_ttl_ms.max(300));
        settings.return_home_after = (config.return_home_after_ms > 0)
            .then(|| Duration::from_millis(config.return_home_after_ms));
        settings.max_connections = config
            .max_connections
            .unwrap_or(DEFAULT_MAX_CONNECTIONS)
            .max(1);
        settings.max_connections_chosen = config.max_connections.is_some();
        settings.header_read_timeout =
            Duration::from_millis(config.header_read_timeout_ms.max(100));
        settings.http_request_timeout =
            Duration::from_millis(config.http_request_timeout_ms.max(100));
        settings.limits = crate::limits::LimitSettings {
            connections_per_address: config.max_connections_per_address.max(1),
            connections_per_identity: config.max_connections_per_identity.max(1),
            messages_per_second: config.messages_per_second_per_address,
            rooms_per_minute_per_address: config.rooms_per_minute_per_address,
            rooms_per_minute_per_identity: config.rooms_per_minute_per_identity,
            http_per_second: config.http_requests_per_second_per_address,
            trusted_proxies: config.trusted_proxies.clone(),
            client_address_header: config.client_address_header.as_str().to_owned(),
        };
        settings.hello_timeout = Duration::from_millis(config.hello_timeout_ms.max(100));
        settings.ping_interval = Duration::from_millis(config.ping_interval_ms.max(100));
        settings.write_timeout = Duration::from_millis(config.write_timeout_ms.max(100));
        settings.wallet_rules = crate::wallet::WalletRules {
            initial_grant: config.initial_grant,
            daily_cap: config.daily_cap,
            ledger_keep: config.ledger_keep.max(1),
            window: crate::idempotency::IdempotencyWindow {
                ms: config.idempotency_window_secs.max(1).saturating_mul(1_000),
            },
        };
        settings.admin_token = config.admin_token.clone().filter(|t| !t.is_empty());
        if let Some(token) = &settings.admin_token {
            check_secret(
                "the admin token (JUMPGATE_ADMIN_TOKEN, --admin-token)",
                token,
            )?;
            if config.admin_listen.is_none() {
                return Err(
                    "an admin token is set but no --admin-listen (JUMPGATE_ADMIN_LISTEN): \
                     the operator API is served only on an address of its own; give it a \
                     private one, e.g. 127.0.0.1:8081"
                        .into(),
                );
            }
        }
        settings.admin_listen = config.admin_listen;
        let thresholds: [u32; 6] = config
            .rank_thresholds
            .clone()
            .try_into()
            .map_err(|_| "--rank-thresholds needs six numbers".to_owned())?;
        if thresholds[0] != 0 || thresholds.windows(2).any(|w| w[0] > w[1]) {
            return Err("--rank-thresholds must start at 0 and not decrease".into());
        }
        settings.rank_thresholds = crate::records::RankThresholds(thresholds);
        if let Some(n) = config.bot_threads {
            // Without Redis nobody else searches for this instance.
            settings.bot_threads = if settings.redis_url.is_some() {
                n
            } else {
                n.max(1)
            };
        }
        settings.search_reclaim = Duration::from_millis(config.search_reclaim_ms.max(100));
        settings.executive_budget = Duration::from_millis(config.executive_ms.max(10));
        settings.max_search_wait = Duration::from_secs(config.max_search_wait_secs.max(1));
        settings.tcp_nodelay = config.tcp_nodelay;
        if let Some(issuer) = &config.jwt_issuer {
            let split = |item: &String| -> Result<(String, String), String> {
                item.split_once('=')
                    .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
                    .ok_or_else(|| "expected KID=VALUE".to_owned())
            };
            let read_pem = |item: &String| -> Result<(String, Vec<u8>), String> {
                let (kid, path) = split(item)?;
                let pem = std::fs::read(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
                Ok((kid, pem))
            };
            settings.accounts = Some(crate::identity::AccountSettings {
                issuer: issuer.clone(),
                audience: config.jwt_audience.clone(),
                hs256: config
                    .jwt_hs256
                    .iter()
                    .map(|i| split(i).map(|(k, v)| (k, v.into_bytes())))
                    .collect::<Result<_, _>>()?,
                rs256: config
                    .jwt_rs256
                    .iter()
                    .map(read_pem)
                    .collect::<Result<_, _>>()?,
                eddsa: config
                    .jwt_eddsa
                    .iter()
                    .map(read_pem)
                    .collect::<Result<_, _>>()?,
            });
        }
        match &config.token_secret {
            Some(secret) => {
                check_secret(
                    "the guest-token secret (JUMPGATE_TOKEN_SECRET, --token-secret)",
                    secret,
                )?;
                settings.token_secret = secret.clone().into_bytes();
            }
            None => match &settings.data_dir {
                // Games survive a restart there, so must their guests.
                Some(dir) => settings.token_secret = kept_token_secret(dir)?,
                None => tracing::warn!(
                    "JUMPGATE_TOKEN_SECRET is not set: using a random secret; guest tokens \
                     will not survive a restart"
                ),
            },
        }
        Ok(settings)
    }
}

/// The file in the data directory holding the guest-token secret when none
/// is configured.
pub const TOKEN_SECRET_FILE: &str = "token-secret";

/// The guest-token secret kept in the data directory: made (random, 48
/// characters, readable by its owner only) on first start, read after, so
/// that guests keep their seats across restarts as their games do.
fn kept_token_secret(dir: &Path) -> Result<Vec<u8>, String> {
    let path = dir.join(TOKEN_SECRET_FILE);
    let failed = |e: std::io::Error| {
        format!(
            "cannot keep the guest-token secret in {}: {e}",
            path.display()
        )
    };
    match std::fs::read_to_string(&path) {
        Ok(kept) if kept.trim().len() >= MIN_SECRET_BYTES => {
            return Ok(kept.trim().as_bytes().to_vec());
        }
        Ok(_) => {
            return Err(format!(
                "{} is shorter than {MIN_SECRET_BYTES} bytes; delete it to make a new one \
                 (guest tokens signed with the old one stop working)",
                path.display()
            ));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(failed(e)),
    }
    std::fs::create_dir_all(dir).map_err(failed)?;
    let secret = nanoid::nanoid!(48);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&path).map_err(failed)?;
    std::io::Write::write_all(&mut file, secret.as_bytes()).map_err(failed)?;
    file.sync_all().map_err(failed)?;
    tracing::info!(path = %path.display(), "made the guest-token secret, kept for the next starts");
    Ok(secret.into_bytes())
}

/// The shortest secret the server accepts from its configuration, in bytes:
/// an HS256 key must be at least as long as the hash (RFC 7518, 3.2), and
/// `openssl rand -hex 32` gives twice that.
pub const MIN_SECRET_BYTES: usize = 32;

/// Words that mark a value as a placeholder nobody replaced, compared with
/// the value lower-cased and stripped to letters and digits.
const PLACEHOLDER_MARKS: &[&str] = &[
    "changeme",
    "replaceme",
    "placeholder",
    "yoursecret",
    "yourtoken",
    "example",
];

/// Refuses a configured secret that is short, a placeholder, or made of a
/// handful of characters. The message names the setting, never the value.
pub fn check_secret(what: &str, value: &str) -> Result<(), String> {
    let advice = "use a random value, e.g. `openssl rand -hex 32`";
    if value.len() < MIN_SECRET_BYTES {
        return Err(format!(
            "{what} is too short ({} bytes, at least {MIN_SECRET_BYTES} needed); {advice}",
            value.len()
        ));
    }
    let folded: String = value
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if let Some(mark) = PLACEHOLDER_MARKS.iter().find(|m| folded.contains(*m)) {
        return Err(format!(
            "{what} looks like a placeholder (it contains \"{mark}\"); {advice}"
        ));
    }
    let distinct = value
        .bytes()
        .collect::<std::collections::BTreeSet<u8>>()
        .len();
    if distinct < 8 {
        return Err(format!(
            "{what} repeats a few characters ({distinct} different ones); {advice}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeConfig,
    }

    const GOOD: &str = "6f1c0e2a9b8d4c7e5a3f1b2d8c9e0a4b";

    fn settings(args: &[&str]) -> Result<Settings, String> {
        let mut argv = vec!["jumpgate"];
        if !args.contains(&"--data-dir") {
            // Nothing written into the source tree.
            argv.push("--memory");
        }
        argv.extend_from_slice(args);
        let cli = Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
        Settings::from_config(&cli.serve, "127.0.0.1:8080".parse().unwrap())
    }

    #[test]
    fn the_connection_cap_knows_whether_it_was_chosen() {
        let default = settings(&[]).unwrap();
        assert_eq!(default.max_connections, DEFAULT_MAX_CONNECTIONS);
        assert!(!default.max_connections_chosen);
        let chosen = settings(&["--max-connections", "500"]).unwrap();
        assert_eq!(chosen.max_connections, 500);
        assert!(chosen.max_connections_chosen);
    }

    #[test]
    fn weak_or_placeholder_secrets_are_refused() {
        for weak in [
            "changeme",
            "secret",
            "0123456789abcdef0123456789abcde",
            "CHANGE_ME-CHANGE_ME-CHANGE_ME-CHANGE_ME",
            "REPLACE-ME-with-a-long-random-string",
            "please-change-me-before-production-use",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "abababababababababababababababababababab",
        ] {
            let error = check_secret("X", weak).unwrap_err();
            assert!(!error.contains(weak), "the value is not echoed: {error}");
            assert!(
                settings(&["--token-secret", weak]).is_err(),
                "{weak} as token secret"
            );
            assert!(
                settings(&["--admin-token", weak, "--admin-listen", "127.0.0.1:0"]).is_err(),
                "{weak} as admin token"
            );
        }
        check_secret("the secret", GOOD).unwrap();
        let s = settings(&[
            "--token-secret",
            GOOD,
            "--admin-token",
            GOOD,
            "--admin-listen",
            "127.0.0.1:8081",
        ])
        .unwrap();
        assert_eq!(s.token_secret, GOOD.as_bytes());
        assert_eq!(s.admin_token.as_deref(), Some(GOOD));
        assert_eq!(s.admin_listen, Some("127.0.0.1:8081".parse().unwrap()));
    }

    #[test]
    fn the_operator_api_needs_its_own_address() {
        let error = settings(&["--admin-token", GOOD]).unwrap_err();
        assert!(error.contains("--admin-listen"), "{error}");
        // An address without a token serves `admin_disabled`; an empty
        // token is no token.
        let s = settings(&["--admin-listen", "127.0.0.1:8081", "--admin-token", ""]).unwrap();
        assert_eq!(s.admin_token, None);
        assert!(settings(&[]).unwrap().admin_listen.is_none());
    }

    #[test]
    fn a_url_given_as_the_data_directory_is_refused() {
        let refused = settings(&["--data-dir", "redis://127.0.0.1:6379/0"]).unwrap_err();
        assert!(refused.contains("--redis-url"), "{refused}");
    }

    #[test]
    fn without_a_configured_secret_the_data_directory_keeps_one() {
        let dir = std::env::temp_dir().join(format!("jumpgate-secret-{}", nanoid::nanoid!(8)));
        let arg = dir.display().to_string();
        let first = settings(&["--data-dir", &arg]).unwrap().token_secret;
        assert_eq!(first.len(), 48);
        let again = settings(&["--data-dir", &arg]).unwrap().token_secret;
        assert_eq!(first, again, "the same secret after a restart");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join(TOKEN_SECRET_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "readable by its owner only");
        }
        std::fs::write(dir.join(TOKEN_SECRET_FILE), "short").unwrap();
        assert!(
            settings(&["--data-dir", &arg]).is_err(),
            "a short kept secret is refused"
        );
        let configured = settings(&["--data-dir", &arg, "--token-secret", GOOD]).unwrap();
        assert_eq!(
            configured.token_secret,
            GOOD.as_bytes(),
            "configuration wins"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
