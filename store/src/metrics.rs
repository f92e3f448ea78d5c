//! The store's own metrics: Redis operation latency and failures, and the
//! writes the store refused (conflicts, fences). They live here because the
//! store is what observes them; the server registers them beside its own
//! and exports them under the same `jumpgate_` names.

use std::sync::LazyLock;

use prometheus::{HistogramOpts, HistogramVec, IntCounter, IntCounterVec, Opts};

/// Buckets for one Redis operation: 100 µs to 5 s (the command timeout is
/// 2 s by default; a stall shows at the top).
const REDIS_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

/// The Redis operations timed (`op` of `jumpgate_redis_op_seconds`);
/// `resume` is one round trip of a batch at start.
pub const REDIS_OPS: &[&str] = &[
    "append",
    "games",
    "load",
    "ownership",
    "ping",
    "resume",
    "write",
];

/// The metrics the store updates (registered by the server).
#[derive(Debug)]
pub struct StoreMetrics {
    pub redis_op_seconds: HistogramVec,
    pub redis_errors: IntCounterVec,
    pub store_conflicts: IntCounter,
    pub writes_fenced: IntCounter,
}

/// A metric's options in the `jumpgate_` namespace (the server's metrics
/// use it too).
pub fn opts(name: &str, help: &str) -> Opts {
    Opts::new(name, help).namespace("jumpgate")
}

/// The store's metrics, one set per process.
pub static STORE_METRICS: LazyLock<StoreMetrics> = LazyLock::new(|| {
    StoreMetrics {
    redis_op_seconds: HistogramVec::new(
        HistogramOpts::new("redis_op_seconds", "Redis operation latency")
            .namespace("jumpgate")
            .buckets(REDIS_BUCKETS.to_vec()),
        &["op"],
    )
    .expect("valid metric"),
    redis_errors: IntCounterVec::new(
        opts("redis_errors_total", "Redis operations that failed"),
        &["op"],
    )
    .expect("valid metric"),
    store_conflicts: IntCounter::with_opts(opts(
        "store_conflicts_total",
        "Room writes refused because the stored room had moved on",
    ))
    .expect("valid metric"),
    writes_fenced: IntCounter::with_opts(opts(
        "writes_fenced_total",
        "Room writes refused because another instance had taken the room over (the room stopped here)",
    ))
    .expect("valid metric"),
}
});
