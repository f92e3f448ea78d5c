//! `ownership-cost`: the Redis commands a cluster spends on ownership while its rooms
//! sit idle, first with no rooms and then with `--rooms` open lobbies nobody moves in.
//!
//! A fresh `redis-server` and `--instances` `jumpgate serve` processes on it. Clients
//! connect straight to the instances (no balancer, so no health checks reach Redis),
//! and both players of a lobby use the instance that opened it, so no room moves. In
//! each window, `INFO commandstats` is read at its start and end, and `MONITOR` runs
//! throughout, so every command can be told apart by its key: heartbeats
//! (`SET jg:alive:{ID}`, `SADD jg:instances`), the sweep for orphans (`SMEMBERS
//! jg:instances`, `EXISTS jg:alive:{ID}`, `SRANDMEMBER`), handover requests
//! (`PUBLISH`) and the claim script (`EVALSHA`).
//!
//! Kept and maintained (issue 36), though it answers one question: deploy/README.md's
//! sizing gives the idle ownership traffic (n × (n + 3) commands a second for n
//! instances) from it, and that rate changes whenever ownership does, so it must stay
//! reproducible; `tests/smoke/ownership.rs` runs it small.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use jumpgate_protocol::reconnect::ReconnectPolicy;
use serde::Serialize;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::cluster::{self, InstanceOptions, RedisProbe};
use crate::seated::SeatedLobby;

/// Lobbies being opened at once.
const SETUP_CONCURRENCY: usize = 64;
/// A pause before each window, so that start-up and set-up are over.
const SETTLE: Duration = Duration::from_secs(3);

/// Options of `jumpgate-loadtest ownership-cost`.
#[derive(Debug, Clone, clap::Args)]
pub struct OwnershipCostArgs {
    /// The `jumpgate` server binary to start.
    #[arg(
        long,
        env = "JUMPGATE_LOADTEST_JUMPGATE",
        default_value = "target/release/jumpgate"
    )]
    pub jumpgate: PathBuf,
    /// Instances to start.
    #[arg(long, default_value_t = 3)]
    pub instances: usize,
    /// Idle lobbies (two players seated, a game in play, nobody moving) in the
    /// second window.
    #[arg(long, default_value_t = 1000)]
    pub rooms: usize,
    /// Length of each window, in seconds.
    #[arg(long, default_value_t = 30.0)]
    pub window: f64,
    /// The instances' `--heartbeat-ttl-ms`.
    #[arg(long, default_value_t = 3000)]
    pub heartbeat_ttl_ms: u64,
    /// The `redis-server` binary.
    #[arg(long, default_value = "redis-server")]
    pub redis_server: PathBuf,
    /// Write the report as JSON here.
    #[arg(long)]
    pub out_json: Option<PathBuf>,
}

/// One window.
#[derive(Debug, Clone, Serialize)]
pub struct Window {
    /// Open lobbies during the window.
    pub rooms: usize,
    /// The window's length, seconds.
    pub seconds: f64,
    /// Calls per second by command (`INFO commandstats`; commands inside scripts
    /// counted under their own names too), without the probe's own `INFO` and
    /// `MONITOR`.
    pub per_command: BTreeMap<String, f64>,
    /// Commands per second sent by clients (from `MONITOR`, so without the ones
    /// scripts run), by command and key shape.
    pub by_purpose: BTreeMap<String, f64>,
    /// Commands per second sent by clients, in all.
    pub total_per_second: f64,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct OwnershipCostReport {
    /// Instances started.
    pub instances: usize,
    /// Their heartbeat TTL.
    pub heartbeat_ttl_ms: u64,
    /// Lobbies asked for and opened.
    pub rooms_asked: usize,
    pub rooms_opened: usize,
    /// Set-up failures and the first one.
    pub set_up_failures: usize,
    pub first_set_up_error: Option<String>,
    /// Without rooms, then with them.
    pub windows: Vec<Window>,
}

/// The whole `ownership-cost` command.
pub async fn ownership_cost(args: &OwnershipCostArgs) -> Result<OwnershipCostReport, String> {
    if !(1..=8).contains(&args.instances) {
        return Err("--instances must be between 1 and 8".into());
    }
    if args.rooms > 5000 {
        return Err("--rooms is at most 5000 (file descriptors)".into());
    }
    if !(1.0..=600.0).contains(&args.window) {
        return Err("--window must be between 1 and 600 seconds".into());
    }
    let window = Duration::from_secs_f64(args.window);
    let redis = cluster::start_redis(&args.redis_server, false, None).await?;
    let mut probe = RedisProbe::open(&redis.url()).await?;
    let instances = cluster::start_instances(&InstanceOptions {
        program: args.jumpgate.clone(),
        count: args.instances,
        redis_url: redis.url(),
        heartbeat_ttl_ms: args.heartbeat_ttl_ms,
        log: "error".into(),
    })
    .await?;
    let urls: Vec<String> = instances.iter().map(|i| i.ws_url()).collect();
    eprintln!(
        "ownership-cost: {} instances on {}, heartbeat TTL {} ms",
        urls.len(),
        redis.url(),
        args.heartbeat_ttl_ms
    );

    tokio::time::sleep(SETTLE).await;
    let mut windows = vec![measure(&mut probe, 0, window).await?];

    eprintln!("opening {} idle lobbies", args.rooms);
    let permits = Arc::new(Semaphore::new(SETUP_CONCURRENCY));
    let mut opening = JoinSet::new();
    for i in 0..args.rooms {
        let url = urls[i % urls.len()].clone();
        let permits = permits.clone();
        opening.spawn(async move {
            let _permit = permits.acquire_owned().await.map_err(|e| e.to_string())?;
            let limit = Instant::now() + Duration::from_secs(30);
            let same = url.clone();
            SeatedLobby::open(&url, move |_| same, ReconnectPolicy::default(), limit).await
        });
    }
    let mut lobbies = Vec::with_capacity(args.rooms);
    let (mut set_up_failures, mut first_set_up_error) = (0, None);
    while let Some(joined) = opening.join_next().await {
        match joined.map_err(|e| e.to_string()).and_then(|r| r) {
            Ok(lobby) => lobbies.push(lobby),
            Err(e) => {
                set_up_failures += 1;
                first_set_up_error.get_or_insert(e);
            }
        }
    }
    eprintln!(
        "  {} lobbies open, {set_up_failures} failed{}",
        lobbies.len(),
        first_set_up_error
            .as_ref()
            .map_or(String::new(), |e| format!(" (first: {e})"))
    );
    let rooms_opened = lobbies.len();
    // The players keep reading, as real clients do.
    let mut reading = JoinSet::new();
    for mut lobby in lobbies {
        reading.spawn(async move {
            let never = Instant::now() + Duration::from_secs(3600);
            lobby.until(never, |_, _| false).await
        });
    }
    tokio::time::sleep(SETTLE).await;
    windows.push(measure(&mut probe, rooms_opened, window).await?);

    let report = OwnershipCostReport {
        instances: args.instances,
        heartbeat_ttl_ms: args.heartbeat_ttl_ms,
        rooms_asked: args.rooms,
        rooms_opened,
        set_up_failures,
        first_set_up_error,
        windows,
    };
    reading.abort_all();
    for instance in instances {
        instance.process.stop();
    }
    redis.stop();
    Ok(report)
}

/// One window: `INFO commandstats` at both ends, `MONITOR` throughout.
async fn measure(probe: &mut RedisProbe, rooms: usize, window: Duration) -> Result<Window, String> {
    eprintln!("  window with {rooms} rooms: {window:?}");
    let watcher = probe.clone();
    let monitor = tokio::spawn(async move { watcher.monitor(window).await });
    let before = probe.command_calls().await?;
    let started = Instant::now();
    tokio::time::sleep(window).await;
    let after = probe.command_calls().await?;
    let seconds = started.elapsed().as_secs_f64();
    let classes = monitor.await.map_err(|e| e.to_string())??;
    let per_command = after
        .iter()
        .filter(|(name, _)| !matches!(name.as_str(), "info" | "monitor"))
        .filter_map(|(name, calls)| {
            let delta = calls.saturating_sub(before.get(name).copied().unwrap_or(0));
            (delta > 0).then(|| (name.clone(), delta as f64 / seconds))
        })
        .collect();
    let watched = window.as_secs_f64();
    let by_purpose: BTreeMap<String, f64> = classes
        .into_iter()
        .filter(|(class, _)| !class.ends_with("(in a script)"))
        .map(|(class, n)| (class, n as f64 / watched))
        .collect();
    let total_per_second = by_purpose.values().sum();
    Ok(Window {
        rooms,
        seconds,
        per_command,
        by_purpose,
        total_per_second,
    })
}

impl OwnershipCostReport {
    /// Commands per second by purpose, one column per window.
    pub fn table(&self) -> String {
        let mut classes: Vec<&String> = self
            .windows
            .iter()
            .flat_map(|w| w.by_purpose.keys())
            .collect();
        classes.sort();
        classes.dedup();
        let mut out = String::from("| command (from MONITOR) |");
        for w in &self.windows {
            out.push_str(&format!(" {} rooms |", w.rooms));
        }
        out.push_str("\n|---|");
        out.push_str(&"---:|".repeat(self.windows.len()));
        out.push('\n');
        for class in classes {
            out.push_str(&format!("| `{class}` |"));
            for w in &self.windows {
                let rate = w.by_purpose.get(class).copied().unwrap_or(0.0);
                out.push_str(&format!(" {rate:.2}/s |"));
            }
            out.push('\n');
        }
        out.push_str("| **all commands** |");
        for w in &self.windows {
            out.push_str(&format!(" **{:.2}/s** |", w.total_per_second));
        }
        out.push('\n');
        out
    }

    /// The `INFO commandstats` rates and the set-up counts.
    pub fn details(&self) -> String {
        let mut out = format!(
            "{} instances, heartbeat TTL {} ms; {} of {} lobbies opened ({} failed{})\n",
            self.instances,
            self.heartbeat_ttl_ms,
            self.rooms_opened,
            self.rooms_asked,
            self.set_up_failures,
            self.first_set_up_error
                .as_ref()
                .map_or(String::new(), |e| format!(", first: {e}")),
        );
        for w in &self.windows {
            let rates: Vec<String> = w
                .per_command
                .iter()
                .map(|(name, rate)| format!("{name} {rate:.2}"))
                .collect();
            out.push_str(&format!(
                "INFO commandstats, {} rooms, {:.1} s, calls/s: {}\n",
                w.rooms,
                w.seconds,
                rates.join(", ")
            ));
        }
        out
    }
}
