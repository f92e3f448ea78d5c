//! Prometheus metrics. Labels are bounded sets (rule set, reason, outcome,
//! operation), never room codes or user ids.

use std::sync::LazyLock;

use jumpgate_store::metrics::{REDIS_OPS, STORE_METRICS, opts};

use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Registry, TextEncoder,
};

/// Every metric the server exports.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    pub connections_open: IntGauge,
    pub connections_max: IntGauge,
    pub lobbies_live: IntGaugeVec,
    pub games_live: IntGaugeVec,
    pub moves_accepted: IntCounterVec,
    pub moves_rejected: IntCounterVec,
    pub decode_errors: IntCounterVec,
    pub clock_forfeits: IntCounterVec,
    pub series_finished: IntCounterVec,
    pub stake_points_escrowed: IntCounter,
    pub stake_points_paid: IntCounter,
    pub stake_points_refunded: IntCounter,
    pub redis_op_seconds: HistogramVec,
    pub redis_errors: IntCounterVec,
    pub bot_think_seconds: HistogramVec,
    pub search_queue_depth: IntGaugeVec,
    pub search_wait_seconds: HistogramVec,
    pub searches: IntCounterVec,
    pub search_jobs_reclaimed: IntCounter,
    pub search_workers_alive: IntGauge,
    pub search_refusals: IntCounter,
    pub move_handling_seconds: Histogram,
    pub room_mailbox_wait_seconds: Histogram,
    pub slow_consumers_dropped: IntCounter,
    pub store_conflicts: IntCounter,
    pub writes_unconfirmed: IntCounter,
    pub writes_fenced: IntCounter,
    pub writes_expired: IntCounterVec,
    pub room_handovers: IntCounter,
    pub room_takeovers: IntCounter,
    pub rooms_received: IntCounterVec,
    pub rooms_sent_home: IntCounter,
    pub rooms_unloaded: IntCounter,
    pub rooms_woken: IntCounter,
    pub correspondence_expired: IntCounter,
    pub rooms_unresumable: IntGauge,
    pub edge_refusals: IntCounterVec,
    pub messages_throttled: IntCounter,
    pub http_connections_open: IntGauge,
    pub solo_games_live: IntGauge,
    pub rooms_awaiting_store: IntGauge,
    pub resume_seconds: prometheus::Gauge,
    pub resume_rooms_left: IntGauge,
    pub resume_rooms: IntCounterVec,
    pub build_info: IntGaugeVec,
}

/// Writes that can be refused as decided too long ago (the `write` of
/// `jumpgate_writes_expired_total`; see [`crate::idempotency`]).
pub const EXPIRABLE_WRITES: &[&str] = &["escrow", "series_record", "ranked_result"];

/// Why the edge turned something away (the `reason` of
/// `jumpgate_edge_refusals_total`).
pub const EDGE_REFUSALS: &[&str] = &[
    "connections_cap",
    "address_connections_cap",
    "websocket_cap",
    "identity_connections_cap",
    "http_rate",
    "rooms_rate",
];

/// Buckets for handling a move in memory: 5 µs to 100 ms (a move takes
/// tens of microseconds, plus its store write when Redis is on).
const MOVE_BUCKETS: &[f64] = &[
    0.000005, 0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
    0.025, 0.05, 0.1,
];

/// Buckets for waiting on the computer: 10 ms to 2 min.
const WAIT_BUCKETS: &[f64] = &[
    0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0, 60.0, 120.0,
];

/// Buckets for a computer move: 1 ms to 10 s (the Executive thinks about
/// `--executive-ms`, 1 s by default; the lower levels answer in
/// milliseconds).
const BOT_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0,
];

/// What became of a stored room the start looked at (`outcome` of
/// `jumpgate_resume_rooms_total`): taken over and running here; owned by
/// another live instance (or claimed by one first); unloaded (dormant,
/// loaded when asked for or due); closed (or gone, or a replaced solo game
/// closed now); kept unresumable for the operator; deferred (the store
/// failed every try: the orphan sweep and requests take it over later).
pub const RESUME_OUTCOMES: &[&str] = &[
    "taken",
    "elsewhere",
    "dormant",
    "closed",
    "unresumable",
    "deferred",
];

impl Metrics {
    fn new() -> Metrics {
        let registry = Registry::new();
        let hist = |name: &str, help: &str, buckets: &[f64]| {
            HistogramOpts::new(name, help)
                .namespace("jumpgate")
                .buckets(buckets.to_vec())
        };
        let m = Metrics {
            connections_open: IntGauge::with_opts(opts(
                "connections_open",
                "Open WebSocket connections",
            ))
            .expect("valid metric"),
            connections_max: IntGauge::with_opts(opts(
                "connections_max",
                "The most WebSocket connections this instance accepts (--max-connections, lowered to fit the file-descriptor limit)",
            ))
            .expect("valid metric"),
            lobbies_live: IntGaugeVec::new(
                opts("lobbies_live", "Lobbies in memory"),
                &["rule_set"],
            )
            .expect("valid metric"),
            games_live: IntGaugeVec::new(opts("games_live", "Games in play"), &["rule_set"])
                .expect("valid metric"),
            moves_accepted: IntCounterVec::new(
                opts("moves_accepted_total", "Moves accepted"),
                &["rule_set"],
            )
            .expect("valid metric"),
            moves_rejected: IntCounterVec::new(
                opts("moves_rejected_total", "Moves refused, by error code"),
                &["reason"],
            )
            .expect("valid metric"),
            decode_errors: IntCounterVec::new(
                opts(
                    "decode_errors_total",
                    "Client frames that could not be decoded",
                ),
                &["code"],
            )
            .expect("valid metric"),
            clock_forfeits: IntCounterVec::new(
                opts("clock_forfeits_total", "Rounds lost on the move clock"),
                &["rule_set"],
            )
            .expect("valid metric"),
            series_finished: IntCounterVec::new(
                opts(
                    "series_finished_total",
                    "Series finished, by how they ended",
                ),
                &["outcome"],
            )
            .expect("valid metric"),
            stake_points_escrowed: IntCounter::with_opts(opts(
                "stake_points_escrowed_total",
                "Bold Points taken from wallets into escrow when staked series start",
            ))
            .expect("valid metric"),
            stake_points_paid: IntCounter::with_opts(opts(
                "stake_points_paid_total",
                "Bold Points paid out of escrow to series winners",
            ))
            .expect("valid metric"),
            stake_points_refunded: IntCounter::with_opts(opts(
                "stake_points_refunded_total",
                "Bold Points given back out of escrow (draws, undone starts, the daily cap)",
            ))
            .expect("valid metric"),
            redis_op_seconds: STORE_METRICS.redis_op_seconds.clone(),
            redis_errors: STORE_METRICS.redis_errors.clone(),
            bot_think_seconds: HistogramVec::new(
                hist(
                    "bot_think_seconds",
                    "Computer opponent thinking time",
                    BOT_BUCKETS,
                ),
                &["level"],
            )
            .expect("valid metric"),
            search_queue_depth: IntGaugeVec::new(
                opts(
                    "search_queue_depth",
                    "Computer searches waiting for a free searcher, as this process last saw the queue (with Redis: the shared queue of every instance)",
                ),
                &["level"],
            )
            .expect("valid metric"),
            search_wait_seconds: HistogramVec::new(
                hist(
                    "search_wait_seconds",
                    "From a solo game asking for the computer's move to the move arriving (queueing plus search)",
                    WAIT_BUCKETS,
                ),
                &["level"],
            )
            .expect("valid metric"),
            searches: IntCounterVec::new(
                opts(
                    "searches_total",
                    "Computer searches this process finished",
                ),
                &["level"],
            )
            .expect("valid metric"),
            search_jobs_reclaimed: IntCounter::with_opts(opts(
                "search_jobs_reclaimed_total",
                "Search jobs this process took over from a searcher that stopped answering (idle past the reclaim time)",
            ))
            .expect("valid metric"),
            search_workers_alive: IntGauge::with_opts(opts(
                "search_workers_alive",
                "Searcher threads alive that work the search queue (with Redis: every worker process's and instance's, from their heartbeats)",
            ))
            .expect("valid metric"),
            search_refusals: IntCounter::with_opts(opts(
                "search_refusals_total",
                "start_solo against the computer refused with computer_busy (the expected wait was past the bound, or no searcher was alive)",
            ))
            .expect("valid metric"),
            move_handling_seconds: Histogram::with_opts(hist(
                "move_handling_seconds",
                "Time from a move reaching its room to its acknowledgement",
                MOVE_BUCKETS,
            ))
            .expect("valid metric"),
            room_mailbox_wait_seconds: Histogram::with_opts(hist(
                "room_mailbox_wait_seconds",
                "Time a request waits in its room's mailbox before the room takes it up",
                MOVE_BUCKETS,
            ))
            .expect("valid metric"),
            slow_consumers_dropped: IntCounter::with_opts(opts(
                "slow_consumers_dropped_total",
                "Connections dropped for falling behind",
            ))
            .expect("valid metric"),
            store_conflicts: STORE_METRICS.store_conflicts.clone(),
            writes_unconfirmed: IntCounter::with_opts(opts(
                "writes_unconfirmed_total",
                "Room writes whose outcome was unknown (timeout, lost connection) and had to be resolved",
            ))
            .expect("valid metric"),
            writes_fenced: STORE_METRICS.writes_fenced.clone(),
            writes_expired: IntCounterVec::new(
                opts(
                    "writes_expired_total",
                    "Wallet and record writes refused as decided longer ago than the idempotency window (left undone rather than risk applying them twice)",
                ),
                &["write"],
            )
            .expect("valid metric"),
            room_handovers: IntCounter::with_opts(opts(
                "room_handovers_total",
                "Rooms this instance gave up on request or at shutdown, for another instance to take",
            ))
            .expect("valid metric"),
            room_takeovers: IntCounter::with_opts(opts(
                "room_takeovers_total",
                "Rooms this instance claimed from a dead instance, a released owner or the store at start",
            ))
            .expect("valid metric"),
            rooms_received: IntCounterVec::new(
                opts(
                    "rooms_received_total",
                    "Rooms this instance took up, by how they came: handover (given up by their owner, on request or at its shutdown), dead_owner (its heartbeat had expired), restart (this instance id's own, from before a restart), woken (an unloaded correspondence lobby)",
                ),
                &["how"],
            )
            .expect("valid metric"),
            rooms_sent_home: IntCounter::with_opts(opts(
                "rooms_sent_home_total",
                "Rooms this instance held for an instance that had stopped or died, handed back to it once it ran again",
            ))
            .expect("valid metric"),
            rooms_unloaded: IntCounter::with_opts(opts(
                "rooms_unloaded_total",
                "Correspondence lobbies unloaded from memory (nobody connected; kept in Redis)",
            ))
            .expect("valid metric"),
            rooms_woken: IntCounter::with_opts(opts(
                "rooms_woken_total",
                "Unloaded lobbies loaded again by the sweep because a timer was due",
            ))
            .expect("valid metric"),
            correspondence_expired: IntCounter::with_opts(opts(
                "correspondence_expired_total",
                "Correspondence lobbies that ended with no move for the expiry window",
            ))
            .expect("valid metric"),
            rooms_unresumable: IntGauge::with_opts(opts(
                "rooms_unresumable",
                "Stored lobbies that could not be resumed at start (listed by the operator API)",
            ))
            .expect("valid metric"),
            edge_refusals: IntCounterVec::new(
                opts(
                    "edge_refusals_total",
                    "Connections, requests and new rooms turned away by a cap or rate limit, by which",
                ),
                &["reason"],
            )
            .expect("valid metric"),
            messages_throttled: IntCounter::with_opts(opts(
                "messages_throttled_total",
                "Client messages held back because their address was over its message rate",
            ))
            .expect("valid metric"),
            http_connections_open: IntGauge::with_opts(opts(
                "http_connections_open",
                "TCP connections on the public listener not (yet) upgraded to WebSocket",
            ))
            .expect("valid metric"),
            solo_games_live: IntGauge::with_opts(opts(
                "solo_games_live",
                "Solo games (against the computer or on one device) running on this instance",
            ))
            .expect("valid metric"),
            rooms_awaiting_store: IntGauge::with_opts(opts(
                "rooms_awaiting_store",
                "Rooms holding changes the store has not confirmed yet (they retry; clients get storage_unavailable meanwhile)",
            ))
            .expect("valid metric"),
            resume_seconds: prometheus::Gauge::with_opts(opts(
                "resume_seconds",
                "How long this instance took at start to take over the stored rooms without a live owner",
            ))
            .expect("valid metric"),
            resume_rooms_left: IntGauge::with_opts(opts(
                "resume_rooms_left",
                "Stored open rooms this instance still has to look at while it starts (0 once it has)",
            ))
            .expect("valid metric"),
            resume_rooms: IntCounterVec::new(
                opts(
                    "resume_rooms_total",
                    "Stored open rooms looked at while this instance started, by what became of them",
                ),
                &["outcome"],
            )
            .expect("valid metric"),
            build_info: IntGaugeVec::new(
                opts(
                    "build_info",
                    "Always 1; the labels say which build runs (the crate's version and the commit it was built from)",
                ),
                &["version", "commit"],
            )
            .expect("valid metric"),
            registry,
        };
        let r = &m.registry;
        let all: [Box<dyn prometheus::core::Collector>; 45] = [
            Box::new(m.connections_open.clone()),
            Box::new(m.connections_max.clone()),
            Box::new(m.lobbies_live.clone()),
            Box::new(m.games_live.clone()),
            Box::new(m.moves_accepted.clone()),
            Box::new(m.moves_rejected.clone()),
            Box::new(m.decode_errors.clone()),
            Box::new(m.clock_forfeits.clone()),
            Box::new(m.series_finished.clone()),
            Box::new(m.stake_points_escrowed.clone()),
            Box::new(m.stake_points_paid.clone()),
            Box::new(m.stake_points_refunded.clone()),
            Box::new(m.redis_op_seconds.clone()),
            Box::new(m.redis_errors.clone()),
            Box::new(m.bot_think_seconds.clone()),
            Box::new(m.search_queue_depth.clone()),
            Box::new(m.search_wait_seconds.clone()),
            Box::new(m.searches.clone()),
            Box::new(m.search_jobs_reclaimed.clone()),
            Box::new(m.search_workers_alive.clone()),
            Box::new(m.search_refusals.clone()),
            Box::new(m.move_handling_seconds.clone()),
            Box::new(m.room_mailbox_wait_seconds.clone()),
            Box::new(m.slow_consumers_dropped.clone()),
            Box::new(m.store_conflicts.clone()),
            Box::new(m.writes_unconfirmed.clone()),
            Box::new(m.writes_fenced.clone()),
            Box::new(m.writes_expired.clone()),
            Box::new(m.room_handovers.clone()),
            Box::new(m.room_takeovers.clone()),
            Box::new(m.rooms_received.clone()),
            Box::new(m.rooms_sent_home.clone()),
            Box::new(m.rooms_unloaded.clone()),
            Box::new(m.rooms_woken.clone()),
            Box::new(m.correspondence_expired.clone()),
            Box::new(m.rooms_unresumable.clone()),
            Box::new(m.edge_refusals.clone()),
            Box::new(m.messages_throttled.clone()),
            Box::new(m.http_connections_open.clone()),
            Box::new(m.solo_games_live.clone()),
            Box::new(m.rooms_awaiting_store.clone()),
            Box::new(m.resume_seconds.clone()),
            Box::new(m.resume_rooms_left.clone()),
            Box::new(m.resume_rooms.clone()),
            Box::new(m.build_info.clone()),
        ];
        for c in all {
            r.register(c).expect("metric names are unique");
        }
        // Bounded label sets appear from the start, at zero.
        for rs in crate::rules::Variant::ALL {
            m.lobbies_live.with_label_values(&[rs.name()]);
            m.games_live.with_label_values(&[rs.name()]);
            m.moves_accepted.with_label_values(&[rs.name()]);
            m.clock_forfeits.with_label_values(&[rs.name()]);
        }
        for reason in EDGE_REFUSALS {
            m.edge_refusals.with_label_values(&[reason]);
        }
        for write in EXPIRABLE_WRITES {
            m.writes_expired.with_label_values(&[write]);
        }
        for code in jumpgate_protocol::ErrorCode::ALL {
            m.moves_rejected.with_label_values(&[code.as_str()]);
            m.decode_errors.with_label_values(&[code.as_str()]);
        }
        for reason in jumpgate_protocol::SeriesEndReason::ALL {
            m.series_finished.with_label_values(&[reason.as_str()]);
        }
        for op in REDIS_OPS {
            m.redis_op_seconds.with_label_values(&[op]);
            m.redis_errors.with_label_values(&[op]);
        }
        for how in crate::ownership::Arrival::NAMES {
            m.rooms_received.with_label_values(&[how]);
        }
        for outcome in RESUME_OUTCOMES {
            m.resume_rooms.with_label_values(&[outcome]);
        }
        for level in crate::bots::Level::ALL {
            m.bot_think_seconds.with_label_values(&[level.name()]);
            m.search_queue_depth.with_label_values(&[level.name()]);
            m.search_wait_seconds.with_label_values(&[level.name()]);
            m.searches.with_label_values(&[level.name()]);
        }
        m.build_info
            .with_label_values(&[env!("CARGO_PKG_VERSION"), env!("JUMPGATE_BUILD_COMMIT")])
            .set(1);
        // CPU, memory, file descriptors and threads of this process.
        #[cfg(target_os = "linux")]
        {
            let process = prometheus::process_collector::ProcessCollector::for_self();
            r.register(Box::new(process))
                .expect("metric names are unique");
        }
        m
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        let mut buf = Vec::new();
        let encoder = TextEncoder::new();
        if encoder.encode(&self.registry.gather(), &mut buf).is_err() {
            return String::new();
        }
        #[cfg(feature = "count-allocations")]
        buf.extend_from_slice(allocation_counts().as_bytes());
        String::from_utf8(buf).unwrap_or_default()
    }
}

/// A build that counts its allocations (`--features count-allocations`)
/// also shows how many it has made and of how many bytes, since it began.
#[cfg(feature = "count-allocations")]
fn allocation_counts() -> String {
    let stats = stats_alloc::INSTRUMENTED_SYSTEM.stats();
    format!(
        "# HELP jumpgate_allocations_total Heap allocations made by the process (a build with count-allocations only)\n\
         # TYPE jumpgate_allocations_total counter\n\
         jumpgate_allocations_total {}\n\
         # HELP jumpgate_reallocations_total Heap reallocations made by the process (a build with count-allocations only)\n\
         # TYPE jumpgate_reallocations_total counter\n\
         jumpgate_reallocations_total {}\n\
         # HELP jumpgate_allocated_bytes_total Bytes allocated by the process (a build with count-allocations only)\n\
         # TYPE jumpgate_allocated_bytes_total counter\n\
         jumpgate_allocated_bytes_total {}\n",
        stats.allocations, stats.reallocations, stats.bytes_allocated
    )
}

/// The process's metrics.
pub static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);
