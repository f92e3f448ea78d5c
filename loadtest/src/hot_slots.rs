//! `hot-slots`: whether the three global stores are a hot spot on a Redis Cluster.
//!
//! Wallets, records and leaderboards each keep every key under one hash tag
//! (`{wallets}`, `{records}`, `{boards}`), so each lives in one slot, on one master:
//! one script per write keeps their invariants atomic. This starts a Redis Cluster
//! (append-only, fsync every second) and saturates each store in turn with its real
//! scripts, through the server's own `RedisWallets`, `RedisRecords` and
//! `RedisLeaderboards` (`--concurrency` writers in a closed loop for `--duration`
//! seconds): a staked series (escrow, then settlement), a recorded series, a
//! counted ranked result. It reports the rate each slot sustains and its latency,
//! against what `--games-per-day` asks of it at `--peak-factor` times the average
//! rate, with the mix's shares. Every writer shares this machine's cores with every
//! node, so the rates are a floor for a real deployment.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jumpgate_server::idempotency::{IdempotencyWindow, now_ms};
use jumpgate_server::leaderboard::{Leaderboards, RankedOutcome, RedisLeaderboards};
use jumpgate_server::records::{Records, RedisRecords, SeriesRecord};
use jumpgate_server::wallet::{Escrow, RedisWallets, Settlement, WalletRules, Wallets, utc_day};
use serde::Serialize;

use crate::redis_cluster::RedisCluster;

/// Options of `jumpgate-loadtest hot-slots`.
#[derive(Debug, Clone, clap::Args)]
pub struct HotSlotsArgs {
    /// Masters of the Redis Cluster.
    #[arg(long, default_value_t = 3)]
    pub masters: usize,
    /// Seconds each store is saturated.
    #[arg(long, default_value_t = 5.0)]
    pub duration: f64,
    /// Writers in a closed loop, per store.
    #[arg(long, default_value_t = 32)]
    pub concurrency: usize,
    /// Distinct accounts the writes pick from.
    #[arg(long, default_value_t = 10_000)]
    pub accounts: usize,
    /// Games a day the demand is computed for.
    #[arg(long, default_value_t = 100_000.0)]
    pub games_per_day: f64,
    /// Peak rate ÷ average rate.
    #[arg(long, default_value_t = 10.0)]
    pub peak_factor: f64,
    /// Share of games in staked series (each game counted as a series: an upper bound).
    #[arg(long, default_value_t = 0.10)]
    pub staked_share: f64,
    /// Share of games in series between two accounts (recorded).
    #[arg(long, default_value_t = 0.30)]
    pub recorded_share: f64,
    /// Share of games that are ranked solo games (one leaderboard result each).
    #[arg(long, default_value_t = 0.15)]
    pub ranked_share: f64,
    /// The `redis-server` binary.
    #[arg(long, default_value = "redis-server")]
    pub redis_server: PathBuf,
    /// The `redis-cli` binary (creates the cluster).
    #[arg(long, default_value = "redis-cli")]
    pub redis_cli: PathBuf,
    /// Write the report as JSON here.
    #[arg(long)]
    pub out_json: Option<PathBuf>,
}

/// One store saturated.
#[derive(Debug, Clone, Serialize)]
pub struct SlotRun {
    pub store: &'static str,
    /// What one operation is.
    pub operation: &'static str,
    pub operations: u64,
    pub errors: u64,
    pub per_second: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    /// Operations a second the mix asks for at the peak.
    pub demand_per_second: f64,
    /// `per_second ÷ demand_per_second`.
    pub headroom: f64,
}

/// Every store.
#[derive(Debug, Clone, Serialize)]
pub struct HotSlotsReport {
    pub masters: usize,
    pub concurrency: usize,
    pub duration_s: f64,
    pub games_per_day: f64,
    pub peak_factor: f64,
    pub runs: Vec<SlotRun>,
}

impl HotSlotsReport {
    pub fn table(&self) -> String {
        let mut out = String::from(
            "| store (one slot) | operation | ops/s | p50 | p99 | needed at peak | headroom |\n\
             |---|---|---:|---:|---:|---:|---:|\n",
        );
        for r in &self.runs {
            out.push_str(&format!(
                "| {} | {} | {:.0} | {} µs | {} µs | {:.2}/s | {:.0}× |\n",
                r.store,
                r.operation,
                r.per_second,
                r.p50_us,
                r.p99_us,
                r.demand_per_second,
                r.headroom
            ));
        }
        out
    }

    pub fn details(&self) -> String {
        let errors: u64 = self.runs.iter().map(|r| r.errors).sum();
        format!(
            "{} masters, {} writers per store, {:.1} s each; demand: {:.0} games a day at {:.0}× \
             the average rate; {errors} errors\n",
            self.masters, self.concurrency, self.duration_s, self.games_per_day, self.peak_factor
        )
    }
}

/// One write of a store, numbered `n` (unique over the run), by writer `w`.
type Write =
    Arc<dyn Fn(u64, usize) -> jumpgate_server::store::StoreFuture<'static, ()> + Send + Sync>;

/// Runs `write` from `concurrency` writers for `duration`; counts and times them.
async fn saturate(
    write: Write,
    concurrency: usize,
    duration: Duration,
) -> (u64, u64, hdrhistogram::Histogram<u64>, f64) {
    let started = Instant::now();
    let deadline = started + duration;
    let next = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut tasks = Vec::new();
    for w in 0..concurrency {
        let write = write.clone();
        let next = next.clone();
        tasks.push(tokio::spawn(async move {
            let mut hist = hdrhistogram::Histogram::<u64>::new(3).expect("valid histogram");
            let (mut done, mut errors) = (0u64, 0u64);
            while Instant::now() < deadline {
                let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let t = Instant::now();
                match write(n, w).await {
                    Ok(()) => {
                        done += 1;
                        let _ = hist.record(t.elapsed().as_micros() as u64);
                    }
                    Err(_) => errors += 1,
                }
            }
            (done, errors, hist)
        }));
    }
    let mut hist = hdrhistogram::Histogram::<u64>::new(3).expect("valid histogram");
    let (mut done, mut errors) = (0, 0);
    for task in tasks {
        if let Ok((d, e, h)) = task.await {
            done += d;
            errors += e;
            let _ = hist.add(h);
        }
    }
    (done, errors, hist, started.elapsed().as_secs_f64())
}

/// Starts the cluster and saturates the three stores, one after the other.
pub async fn hot_slots(args: &HotSlotsArgs) -> Result<HotSlotsReport, String> {
    let cluster = RedisCluster::start(
        &args.redis_server,
        &args.redis_cli,
        args.masters,
        true,
        None,
    )
    .await?;
    let url = cluster.url();
    let timeout = Duration::from_secs(5);
    let window = IdempotencyWindow::default();
    let rules = WalletRules {
        window,
        ..WalletRules::default()
    };
    let wallets = Arc::new(RedisWallets::open(&url, timeout, rules).map_err(|e| e.to_string())?);
    let records = Arc::new(RedisRecords::open(&url, timeout, window).map_err(|e| e.to_string())?);
    let boards =
        Arc::new(RedisLeaderboards::open(&url, timeout, window).map_err(|e| e.to_string())?);
    let accounts = args.accounts.max(2) as u64;
    let pair = move |n: u64| {
        let a = n.wrapping_mul(0x9E37_79B9_7F4A_7C15) % accounts;
        let b = (a + 1 + n % (accounts - 1)) % accounts;
        (format!("a_hot{a}"), format!("a_hot{b}"))
    };
    let run_id = now_ms();

    let staked: Write = Arc::new(move |n, _| {
        let wallets = wallets.clone();
        let (a, b) = pair(n);
        Box::pin(async move {
            let series = format!("HOT{run_id}:{n}:00000001");
            let decided = now_ms();
            match wallets.escrow(&series, [(&a, 1), (&b, 1)], decided).await? {
                Escrow::Taken => {}
                other => {
                    return Err(jumpgate_server::store::StoreError::Refused(format!(
                        "{other:?}"
                    )));
                }
            }
            let win = Settlement::Winner {
                winner: a,
                loser: b,
            };
            wallets.settle(&series, &win, utc_day(), decided).await?;
            Ok(())
        })
    });
    let recorded: Write = Arc::new(move |n, _| {
        let records = records.clone();
        let (a, b) = pair(n);
        Box::pin(async move {
            let job = SeriesRecord {
                series: format!("HOT{run_id}:{n}:00000001"),
                rule_set: "russian".into(),
                players: [a, b],
                winner: Some((n % 2) as usize),
                decided: now_ms(),
            };
            records.record(&job).await
        })
    });
    let ranked: Write = Arc::new(move |n, _| {
        let boards = boards.clone();
        let (a, _) = pair(n);
        Box::pin(async move {
            let outcome =
                [RankedOutcome::Win, RankedOutcome::Draw, RankedOutcome::Loss][(n % 3) as usize];
            let name = a.clone();
            boards
                .record(
                    &format!("SHOT{run_id}{n}"),
                    "italian",
                    &a,
                    &name,
                    outcome,
                    now_ms(),
                )
                .await
        })
    });

    let per_second_avg = args.games_per_day / 86_400.0 * args.peak_factor;
    let families: [(&'static str, &'static str, Write, f64); 3] = [
        (
            "wallets `{wallets}`",
            "staked series: escrow + settlement",
            staked,
            args.staked_share,
        ),
        (
            "records `{records}`",
            "series recorded",
            recorded,
            args.recorded_share,
        ),
        (
            "leaderboards `{boards}`",
            "ranked result counted",
            ranked,
            args.ranked_share,
        ),
    ];
    let mut runs = Vec::new();
    for (store, operation, write, share) in families {
        eprintln!("hot-slots: saturating {store} for {:.1} s", args.duration);
        let (done, errors, hist, secs) = saturate(
            write,
            args.concurrency.max(1),
            Duration::from_secs_f64(args.duration),
        )
        .await;
        let per_second = done as f64 / secs.max(1e-9);
        let demand = per_second_avg * share;
        runs.push(SlotRun {
            store,
            operation,
            operations: done,
            errors,
            per_second,
            p50_us: hist.value_at_quantile(0.5),
            p99_us: hist.value_at_quantile(0.99),
            demand_per_second: demand,
            headroom: per_second / demand.max(1e-9),
        });
    }
    cluster.stop().await;
    Ok(HotSlotsReport {
        masters: args.masters,
        concurrency: args.concurrency,
        duration_s: args.duration,
        games_per_day: args.games_per_day,
        peak_factor: args.peak_factor,
        runs,
    })
}
