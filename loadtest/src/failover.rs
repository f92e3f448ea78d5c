//! `failover`: how long the rooms of an instance killed with SIGKILL take to be
//! playable again, and whether any acknowledged move is lost on the way.
//!
//! The run: a fresh `redis-server`, `--instances` `jumpgate serve` processes on it, and
//! HAProxy with the deployed configuration in front, so clients reach instances as
//! they do in production (rooms hashed by code; a refused connect is redispatched to
//! another instance; an instance failing two health checks leaves the ring). Through
//! HAProxy, `--rooms` lobbies are opened, each with two players on the
//! SDK's `Session`s with the default reconnect policy, and one move is played in
//! each and acknowledged. The instance owning the most rooms (read from Redis,
//! `jg:{CODE}:fence` field `owner`) is then killed. Right after the kill the player to
//! move in every room sends the next move (with `--in-flight`, the rooms start
//! sending before the kill, which comes once half of them have). For
//! each room the time from the kill to that move's `ack` is recorded, then the
//! opponent replies and the time to that `ack` is recorded too: both players are back.
//! Rooms the killed instance did not own do the same and are the control group. Last,
//! each room's moves, as both players see them and as its log in Redis holds them,
//! are compared with the moves acknowledged.
//!
//! What dominates: the killed instance's heartbeat key lives `--heartbeat-ttl-ms`
//! after its last renewal, and no other instance takes a room over before it expires.
//!
//! About 1,000 lines, kept in one file on purpose: the run, its timing books and
//! its report are one story read top to bottom; split, each part would need the others.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use hdrhistogram::Histogram;
use jumpgate_protocol::reconnect::ReconnectPolicy;
use serde::Serialize;
use tokio::sync::{Semaphore, mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::{Instant, timeout_at};

use crate::cluster::{self, Instance, InstanceOptions, RedisProbe};
use crate::driver::new_histogram;
use crate::net;
use crate::seated::{Reconnected, SeatedLobby, SentMove};
use jumpgate_harness::haproxy::SERVERS;
use jumpgate_harness::{Balancer, BalancerOptions, RedisServer};

/// Lobbies being opened at once.
const SETUP_CONCURRENCY: usize = 64;
/// How long one lobby may take to open and play its first move.
const SETUP_PATIENCE: Duration = Duration::from_secs(30);
/// A pause after set-up, so that handovers caused by it are over before the kill.
const SETTLE: Duration = Duration::from_secs(2);
/// Rooms named in the report's lists of failures, at most.
const LISTED: usize = 10;

/// Options of `jumpgate-loadtest failover`.
#[derive(Debug, Clone, clap::Args)]
pub struct FailoverArgs {
    /// The `jumpgate` server binary to start.
    #[arg(
        long,
        env = "JUMPGATE_LOADTEST_JUMPGATE",
        default_value = "target/release/jumpgate"
    )]
    pub jumpgate: PathBuf,
    /// Instances to start (HAProxy's deployed configuration names three).
    #[arg(long, default_value_t = 3)]
    pub instances: usize,
    /// Lobbies to open, spread over the instances by HAProxy.
    #[arg(long, default_value_t = 1000)]
    pub rooms: usize,
    /// The instances' `--heartbeat-ttl-ms`.
    #[arg(long, default_value_t = 3000)]
    pub heartbeat_ttl_ms: u64,
    /// Start sending the moves before the kill instead of just after it, and kill
    /// once half the rooms have sent, so that some moves are answered, some in
    /// flight and some not yet sent when the instance dies.
    #[arg(long)]
    pub in_flight: bool,
    /// The instance to kill (jumpgate1, jumpgate2…); default: the one owning most rooms.
    #[arg(long)]
    pub victim: Option<String>,
    /// How long after the kill a room may take to come back, in seconds.
    #[arg(long, default_value_t = 60.0)]
    pub patience: f64,
    /// Use this Redis (loopback, empty database) instead of starting one.
    #[arg(long, env = "JUMPGATE_LOADTEST_REDIS_URL")]
    pub redis_url: Option<String>,
    /// The `redis-server` binary.
    #[arg(long, default_value = "redis-server")]
    pub redis_server: PathBuf,
    /// The `haproxy` binary.
    #[arg(long, default_value = "haproxy")]
    pub haproxy: PathBuf,
    /// HAProxy's deployed configuration (only the addresses are changed).
    #[arg(long, default_value = "deploy/haproxy.cfg")]
    pub haproxy_config: PathBuf,
    /// `RUST_LOG` of the instances; the last lines each writes are in the report.
    #[arg(long, default_value = "warn")]
    pub server_log: String,
    /// Write the report as JSON here.
    #[arg(long)]
    pub out_json: Option<PathBuf>,
}

/// Where a run stands, as the room tasks see it.
#[derive(Debug, Clone, Copy)]
enum Stage {
    /// Rooms are being set up or wait.
    Waiting,
    /// `--in-flight`: send the move now; the kill follows.
    SendNow,
    /// The victim was killed at this moment.
    Killed(Instant),
}

/// What one room went through.
#[derive(Debug, Default)]
struct RoomOutcome {
    code: Option<String>,
    /// Whether it got as far as waiting for the kill.
    set_up: bool,
    /// From the kill to the ack of the move sent at the kill (zero if acked before it).
    move_ack: Option<Duration>,
    /// The ack came before the kill (`--in-flight` only).
    acked_before_kill: bool,
    /// From the kill to the ack of the opponent's reply.
    reply_ack: Option<Duration>,
    acknowledged: Vec<String>,
    /// The moves as each player last saw them.
    seen: [Vec<String>; 2],
    /// The players' reconnections after the kill.
    reconnections: Vec<Reconnected>,
    error: Option<String>,
}

/// Percentiles of a group of rooms, in milliseconds.
#[derive(Debug, Clone, Serialize)]
pub struct Spread {
    /// Rooms measured.
    pub count: u64,
    /// Percentiles and extremes, ms.
    pub min_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl Spread {
    fn of(h: &Histogram<u64>) -> Option<Spread> {
        let ms = |us: u64| us as f64 / 1000.0;
        (!h.is_empty()).then(|| Spread {
            count: h.len(),
            min_ms: ms(h.min()),
            p50_ms: ms(h.value_at_quantile(0.5)),
            p90_ms: ms(h.value_at_quantile(0.9)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            max_ms: ms(h.max()),
        })
    }
}

/// The rooms of one side of the kill.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Group {
    /// Rooms in the group.
    pub rooms: usize,
    /// Rooms where both moves after the kill were acknowledged.
    pub recovered: usize,
    /// Kill → ack of the move sent at the kill.
    pub move_ack: Option<Spread>,
    /// Kill → ack of the opponent's reply.
    pub reply_ack: Option<Spread>,
    /// The victim's heartbeat key expiring → ack of the move sent at the kill: the
    /// part of the first figure that is not waiting for the heartbeat to expire.
    pub after_expiry: Option<Spread>,
    /// Moves sent for the kill but acknowledged before it, or by the killed instance
    /// as it died (`--in-flight`); they are left out of `move_ack`.
    pub answered_early: usize,
    /// Rooms whose move sent for the kill was stored when the instance died, but
    /// whose ack never reached the player (`--in-flight`): the client sent it again
    /// afterwards, and it must not be played twice.
    pub stored_unacked_at_kill: usize,
    /// Rooms that did not come back (or failed otherwise), with why; at most ten.
    pub failures: Vec<String>,
    /// How many rooms failed in all.
    pub failed: usize,
    /// Rooms where an acknowledged move is missing (from what the players see or from
    /// the stored log) or a move is there that was not acknowledged; at most ten.
    pub move_mismatches: Vec<String>,
    /// How many rooms had a mismatch in all.
    pub mismatched: usize,
    /// Player reconnections after the kill, over the group, by why the connection
    /// before ended.
    pub reconnections: BTreeMap<String, usize>,
    /// The most connections one reconnection took.
    pub most_attempts: u32,
    /// Owners of the group's rooms after the run.
    pub owners_after: BTreeMap<String, usize>,
    /// Rooms whose owner after the run is not the instance HAProxy now sends
    /// connections naming them to: the next connection moves each once more.
    pub routed_elsewhere: usize,
}

/// What the surviving instances say about themselves after the run.
#[derive(Debug, Clone, Serialize)]
pub struct Survivor {
    /// Its instance id.
    pub id: String,
    /// `jumpgate_room_takeovers_total`.
    pub takeovers: f64,
    /// `jumpgate_writes_fenced_total`.
    pub writes_fenced: f64,
    /// `jumpgate_store_conflicts_total`.
    pub store_conflicts: f64,
    /// `jumpgate_redis_errors_total`, all operations.
    pub redis_errors: f64,
    /// Lines it logged at WARN and ERROR.
    pub warnings: usize,
    pub errors: usize,
    /// The first of them.
    pub first_notable: Vec<String>,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct FailoverReport {
    /// Instances started.
    pub instances: usize,
    /// Lobbies asked for.
    pub rooms: usize,
    /// The instances' heartbeat TTL.
    pub heartbeat_ttl_ms: u64,
    /// Whether the moves were sent before the kill.
    pub in_flight: bool,
    /// Lobbies that were open with one move played when the kill came.
    pub rooms_set_up: usize,
    /// Lobbies that could not be set up, and the first reason.
    pub set_up_failures: usize,
    pub first_set_up_error: Option<String>,
    /// Owners of the rooms just before the kill.
    pub owners_before: BTreeMap<String, usize>,
    /// The instance killed.
    pub victim: String,
    /// How long its heartbeat key had left to live when it was killed, ms.
    pub heartbeat_left_ms: Option<u64>,
    /// Its rooms.
    pub affected: Group,
    /// Everyone else's rooms.
    pub control: Group,
    /// The instances left.
    pub survivors: Vec<Survivor>,
}

/// The whole `failover` command: starts everything, kills one instance, stops the rest.
pub async fn failover(args: &FailoverArgs) -> Result<FailoverReport, String> {
    if !(2..=SERVERS).contains(&args.instances) {
        return Err(format!("--instances must be 2 to {}", SERVERS));
    }
    if !(1..=3000).contains(&args.rooms) {
        return Err("--rooms must be between 1 and 3000 (file descriptors)".into());
    }
    if !(1.0..=600.0).contains(&args.patience) {
        return Err("--patience must be between 1 and 600 seconds".into());
    }
    let mut cluster = Cluster::start(args).await?;
    let report = run(&mut cluster, args).await;
    cluster.stop();
    report
}

/// Redis, the instances and HAProxy, for one run.
struct Cluster {
    /// The Redis started for the run, unless `--redis-url` named one.
    own_redis: Option<RedisServer>,
    probe: RedisProbe,
    instances: Vec<Instance>,
    balancer: Balancer,
}

impl Cluster {
    async fn start(args: &FailoverArgs) -> Result<Cluster, String> {
        let (own_redis, redis_url) = match &args.redis_url {
            Some(url) => {
                cluster::require_loopback_redis(url)?;
                (None, url.clone())
            }
            None => {
                let redis = cluster::start_redis(&args.redis_server, false, None).await?;
                let url = redis.url();
                (Some(redis), url)
            }
        };
        let mut probe = RedisProbe::open(&redis_url).await?;
        let keys = probe.db_size().await?;
        if keys > 0 {
            return Err(format!(
                "{redis_url} holds {keys} keys: the instances would adopt whatever rooms are \
                 stored there; use an empty database"
            ));
        }
        let instances = cluster::start_instances(&InstanceOptions {
            program: args.jumpgate.clone(),
            count: args.instances,
            redis_url,
            heartbeat_ttl_ms: args.heartbeat_ttl_ms,
            log: args.server_log.clone(),
        })
        .await?;
        let addrs: Vec<_> = instances.iter().map(|i| i.process.addr).collect();
        // Two connections a player (client side and server side), and some spare.
        let maxconn = args.rooms * 2 + 500;
        let options = BalancerOptions {
            program: args.haproxy.clone(),
            config: args.haproxy_config.clone(),
            maxconn,
        };
        let balancer = Balancer::start_with(&options, &addrs).await?;
        eprintln!(
            "failover: {} instances ({}), HAProxy at {}, heartbeat TTL {} ms",
            instances.len(),
            instances
                .iter()
                .map(|i| format!("{} at {}", i.id, i.process.addr))
                .collect::<Vec<_>>()
                .join(", "),
            balancer.addr,
            args.heartbeat_ttl_ms
        );
        Ok(Cluster {
            own_redis,
            probe,
            instances,
            balancer,
        })
    }

    fn stop(self) {
        self.balancer.stop();
        for instance in self.instances {
            instance.process.stop();
        }
        if let Some(redis) = self.own_redis {
            redis.stop();
        }
    }
}

/// The rooms set up, and those that could not be.
struct SetUp {
    codes: Vec<String>,
    failures: usize,
    first_error: Option<String>,
}

/// Waits until every room task has reported whether it set up its lobby.
async fn wait_for_set_up(
    ready: &mut mpsc::Receiver<Result<String, String>>,
    rooms: usize,
) -> SetUp {
    let started = Instant::now();
    let give_up = started + SETUP_PATIENCE * (rooms / SETUP_CONCURRENCY + 2) as u32;
    let mut set_up = SetUp {
        codes: Vec::new(),
        failures: 0,
        first_error: None,
    };
    let mut last_line = started;
    while set_up.codes.len() + set_up.failures < rooms {
        let Ok(Some(report)) = timeout_at(give_up, ready.recv()).await else {
            break;
        };
        match report {
            Ok(code) => set_up.codes.push(code),
            Err(e) => {
                set_up.failures += 1;
                set_up.first_error.get_or_insert(e);
            }
        }
        if last_line.elapsed() >= Duration::from_secs(1) {
            last_line = Instant::now();
            eprintln!(
                "  set-up {:>4.0}s: {} of {rooms} lobbies open with a move played, {} failed",
                started.elapsed().as_secs_f64(),
                set_up.codes.len(),
                set_up.failures
            );
        }
    }
    eprintln!(
        "  set-up done in {:.1}s: {} lobbies, {} failed{}",
        started.elapsed().as_secs_f64(),
        set_up.codes.len(),
        set_up.failures,
        set_up
            .first_error
            .as_ref()
            .map_or(String::new(), |e| format!(" (first: {e})"))
    );
    set_up
}

/// Each room's owner as its fence says.
async fn owners(
    probe: &mut RedisProbe,
    codes: &[String],
) -> Result<BTreeMap<String, String>, String> {
    let fences = probe.fences(codes).await?;
    Ok(codes
        .iter()
        .zip(fences)
        .map(|(code, fence)| {
            let owner = match fence {
                None => "(no fence)".to_owned(),
                Some(f) if f.owner.is_empty() => "(released)".to_owned(),
                Some(f) => f.owner,
            };
            (code.clone(), owner)
        })
        .collect())
}

/// Collects the room tasks' outcomes, with a progress line every half second.
async fn wait_for_rooms(
    rooms: &mut JoinSet<RoomOutcome>,
    killed_at: Instant,
    give_up: Instant,
    acked: &AtomicUsize,
    total: usize,
) -> Vec<RoomOutcome> {
    let mut outcomes = Vec::new();
    let mut tick = tokio::time::interval_at(
        killed_at + Duration::from_secs(1),
        Duration::from_millis(500),
    );
    loop {
        tokio::select! {
            joined = timeout_at(give_up, rooms.join_next()) => match joined {
                Ok(Some(Ok(outcome))) => outcomes.push(outcome),
                Ok(Some(Err(e))) => outcomes.push(RoomOutcome {
                    error: Some(format!("room task failed: {e}")),
                    ..RoomOutcome::default()
                }),
                Ok(None) => return outcomes,
                Err(_) => {
                    rooms.abort_all();
                    eprintln!("  some rooms did not finish in time; stopped them");
                    return outcomes;
                }
            },
            now = tick.tick() => eprintln!(
                "  {:>5.1}s after the kill: {} of {total} moves sent at the kill acknowledged",
                now.duration_since(killed_at).as_secs_f64(),
                acked.load(Ordering::Relaxed),
            ),
        }
    }
}

/// Sets the rooms up, kills the instance owning most of them, waits for every room,
/// and reads what Redis, HAProxy and the survivors say.
async fn run(cluster: &mut Cluster, args: &FailoverArgs) -> Result<FailoverReport, String> {
    let patience = Duration::from_secs_f64(args.patience);
    let (stage_tx, stage_rx) = watch::channel(Stage::Waiting);
    let (ready_tx, mut ready_rx) = mpsc::channel(args.rooms);
    let sent = Arc::new(AtomicUsize::new(0));
    let acked = Arc::new(AtomicUsize::new(0));
    let permits = Arc::new(Semaphore::new(SETUP_CONCURRENCY));
    let mut rooms = JoinSet::new();
    for _ in 0..args.rooms {
        let room = RoomTask {
            host_url: cluster.balancer.ws_url(None),
            balancer: cluster.balancer.addr,
            permits: permits.clone(),
            ready: ready_tx.clone(),
            stage: stage_rx.clone(),
            patience,
            sent: sent.clone(),
            acked: acked.clone(),
        };
        rooms.spawn(room.run());
    }
    drop(ready_tx);
    let set_up = wait_for_set_up(&mut ready_rx, args.rooms).await;
    if set_up.codes.is_empty() {
        return Err(format!(
            "no lobby could be set up: {}",
            set_up.first_error.unwrap_or_default()
        ));
    }
    tokio::time::sleep(SETTLE).await;

    let owner_before = owners(&mut cluster.probe, &set_up.codes).await?;
    let mut owners_before = BTreeMap::new();
    for owner in owner_before.values() {
        *owners_before.entry(owner.clone()).or_insert(0) += 1;
    }
    let victim = match &args.victim {
        Some(victim) => victim.clone(),
        None => cluster
            .instances
            .iter()
            .max_by_key(|i| owners_before.get(&i.id).copied().unwrap_or(0))
            .map(|i| i.id.clone())
            .ok_or("no instance")?,
    };
    let victim_index = cluster
        .instances
        .iter()
        .position(|i| i.id == victim)
        .ok_or_else(|| format!("--victim {victim}: no such instance"))?;
    eprintln!(
        "owners before the kill: {owners_before:?}; killing {victim} ({} rooms)",
        owners_before.get(&victim).copied().unwrap_or(0)
    );

    if args.in_flight {
        // Kill once half the rooms have sent: the earliest moves are answered by
        // then, the latest are on their way, and the rest go out after the kill.
        let _ = stage_tx.send(Stage::SendNow);
        let give_up = Instant::now() + Duration::from_secs(5);
        let half = set_up.codes.len() / 2;
        while sent.load(Ordering::Relaxed) < half && Instant::now() < give_up {
            tokio::time::sleep(Duration::from_micros(100)).await;
        }
    }
    let heartbeat_left = cluster.probe.heartbeat_left(&victim).await?;
    let killed_at = Instant::now();
    cluster.instances[victim_index].process.kill_now()?;
    let _ = stage_tx.send(Stage::Killed(killed_at));
    // What the victim managed to store: nobody can take its rooms over before its
    // heartbeat expires, so this reading (a moment later, once it is surely dead)
    // shows what it left behind.
    let victims_codes: Vec<String> = owner_before
        .iter()
        .filter(|(_, owner)| **owner == victim)
        .map(|(code, _)| code.clone())
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let stored_at_kill: BTreeMap<String, u64> = victims_codes
        .iter()
        .cloned()
        .zip(cluster.probe.stored_moves(&victims_codes).await?)
        .collect();

    let give_up = killed_at + patience + Duration::from_secs(15);
    let total = set_up.codes.len();
    let outcomes = wait_for_rooms(&mut rooms, killed_at, give_up, &acked, total).await;

    // What Redis and HAProxy say afterwards.
    let set_up_rooms: Vec<&RoomOutcome> = outcomes.iter().filter(|o| o.set_up).collect();
    let codes: Vec<String> = set_up_rooms.iter().filter_map(|o| o.code.clone()).collect();
    let stored_moves = cluster.probe.stored_moves(&codes).await?;
    let owner_after = owners(&mut cluster.probe, &codes).await?;
    // Where HAProxy sends each room now that the victim has left its ring.
    let balancer = &cluster.balancer;
    let routes: Vec<Option<String>> = futures_util::stream::iter(&codes)
        .map(|code| balancer.server_for(Some(code)))
        .buffered(16)
        .collect()
        .await;
    let mut affected = GroupTally::default();
    let mut control = GroupTally::default();
    for ((outcome, moves), routed_to) in set_up_rooms.iter().zip(stored_moves).zip(routes) {
        let code = outcome.code.as_deref().unwrap_or_default();
        let stored = Stored {
            moves,
            moves_at_kill: stored_at_kill.get(code).copied(),
            owner: owner_after.get(code).cloned().unwrap_or_default(),
            routed_to,
        };
        match owner_before.get(code) {
            Some(owner) if *owner == victim => affected.add(outcome, &stored, heartbeat_left),
            _ => control.add(outcome, &stored, None),
        }
    }

    let mut survivors = Vec::new();
    for (i, instance) in cluster.instances.iter().enumerate() {
        if i != victim_index {
            survivors.push(Survivor::read(instance).await);
        }
    }
    Ok(FailoverReport {
        instances: args.instances,
        rooms: args.rooms,
        heartbeat_ttl_ms: args.heartbeat_ttl_ms,
        in_flight: args.in_flight,
        rooms_set_up: set_up.codes.len(),
        set_up_failures: set_up.failures,
        first_set_up_error: set_up.first_error,
        owners_before,
        victim,
        heartbeat_left_ms: heartbeat_left.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        affected: affected.finish(),
        control: control.finish(),
        survivors,
    })
}

impl Survivor {
    /// Its counters from `/metrics`, and its log's warnings and errors.
    async fn read(instance: &Instance) -> Survivor {
        let page = net::http_get(instance.process.addr, "/metrics")
            .await
            .map(|a| a.body)
            .unwrap_or_default();
        let transcript = instance.process.transcript();
        Survivor {
            id: instance.id.clone(),
            takeovers: cluster::metric_total(&page, "jumpgate_room_takeovers_total"),
            writes_fenced: cluster::metric_total(&page, "jumpgate_writes_fenced_total"),
            store_conflicts: cluster::metric_total(&page, "jumpgate_store_conflicts_total"),
            redis_errors: cluster::metric_total(&page, "jumpgate_redis_errors_total"),
            warnings: transcript.warnings,
            errors: transcript.errors,
            first_notable: transcript.first_notable,
        }
    }
}

/// What Redis holds for a room after the run.
struct Stored {
    /// Entries in its move log.
    moves: u64,
    /// Entries in its move log just after the kill (the victim's rooms only).
    moves_at_kill: Option<u64>,
    /// Its owner.
    owner: String,
    /// Where HAProxy sends a connection naming it.
    routed_to: Option<String>,
}

/// A [`Group`] being filled in, with its histograms.
struct GroupTally {
    group: Group,
    move_ack: Histogram<u64>,
    reply_ack: Histogram<u64>,
    after_expiry: Histogram<u64>,
}

impl Default for GroupTally {
    fn default() -> Self {
        GroupTally {
            group: Group::default(),
            move_ack: new_histogram(),
            reply_ack: new_histogram(),
            after_expiry: new_histogram(),
        }
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl GroupTally {
    /// Adds one room; `heartbeat_left` is how long the victim's heartbeat had to
    /// live at the kill, for its rooms.
    fn add(&mut self, outcome: &RoomOutcome, stored: &Stored, heartbeat_left: Option<Duration>) {
        let g = &mut self.group;
        let code = outcome.code.as_deref().unwrap_or("?");
        g.rooms += 1;
        for r in &outcome.reconnections {
            *g.reconnections.entry(r.cause.clone()).or_insert(0) += 1;
            g.most_attempts = g.most_attempts.max(r.attempts);
        }
        *g.owners_after.entry(stored.owner.clone()).or_insert(0) += 1;
        if stored.routed_to.as_deref() != Some(stored.owner.as_str()) {
            g.routed_elsewhere += 1;
        }
        // Answered before the kill, or (the victim's rooms) before the victim's
        // heartbeat expired, so by the victim itself, its ack already on the way
        // when it died (`--in-flight`): not a failover figure.
        let answered_early = outcome.acked_before_kill
            || heartbeat_left
                .zip(outcome.move_ack)
                .is_some_and(|(left, d)| d < left);
        if answered_early {
            g.answered_early += 1;
        } else if let Some(d) = outcome.move_ack {
            self.move_ack.saturating_record(micros(d));
            if let Some(left) = heartbeat_left {
                self.after_expiry
                    .saturating_record(micros(d.saturating_sub(left)));
            }
        }
        if let Some(d) = outcome.reply_ack {
            self.reply_ack.saturating_record(micros(d));
        }
        // The move sent for the kill was stored by the dying instance but its ack
        // never left: the client's resend must be recognised, not played again.
        let second_move_stored = stored.moves_at_kill.is_some_and(|n| n >= 2);
        if second_move_stored && !answered_early {
            g.stored_unacked_at_kill += 1;
        }
        match &outcome.error {
            None => g.recovered += 1,
            Some(e) => {
                g.failed += 1;
                if g.failures.len() < LISTED {
                    g.failures
                        .push(format!("{code} (owner now {:?}): {e}", stored.owner));
                }
            }
        }
        // Every acknowledged move must be stored; a room that finished must show
        // exactly the acknowledged moves to both players and store nothing else.
        let n = outcome.acknowledged.len() as u64;
        let finished = outcome.error.is_none();
        let mut problems = Vec::new();
        if stored.moves < n || (finished && stored.moves > n) {
            problems.push(format!("{n} moves acknowledged, {} stored", stored.moves));
        }
        if finished {
            for (who, seen) in ["host", "guest"].iter().zip(&outcome.seen) {
                if *seen != outcome.acknowledged {
                    problems.push(format!(
                        "{who} sees {seen:?}, acknowledged {:?}",
                        outcome.acknowledged
                    ));
                }
            }
        }
        if !problems.is_empty() {
            g.mismatched += 1;
            if g.move_mismatches.len() < LISTED {
                g.move_mismatches
                    .push(format!("{code}: {}", problems.join("; ")));
            }
        }
    }

    fn finish(self) -> Group {
        Group {
            move_ack: Spread::of(&self.move_ack),
            reply_ack: Spread::of(&self.reply_ack),
            after_expiry: Spread::of(&self.after_expiry),
            ..self.group
        }
    }
}

/// One room's task: set up, wait for the kill, play two moves, report.
struct RoomTask {
    host_url: String,
    balancer: std::net::SocketAddr,
    permits: Arc<Semaphore>,
    ready: mpsc::Sender<Result<String, String>>,
    stage: watch::Receiver<Stage>,
    patience: Duration,
    sent: Arc<AtomicUsize>,
    acked: Arc<AtomicUsize>,
}

impl RoomTask {
    async fn run(mut self) -> RoomOutcome {
        let mut outcome = RoomOutcome::default();
        let lobby = {
            let Ok(_permit) = self.permits.clone().acquire_owned().await else {
                outcome.error = Some("set-up: closed".into());
                return outcome;
            };
            let limit = Instant::now() + SETUP_PATIENCE;
            let balancer = self.balancer;
            let opened = SeatedLobby::open(
                &self.host_url,
                |code| format!("ws://{balancer}/ws?room={code}"),
                ReconnectPolicy::default(),
                limit,
            )
            .await;
            let played = match opened {
                Ok(mut lobby) => match lobby.play(limit).await {
                    Ok(Some(_)) => Ok(lobby),
                    Ok(None) => Err(format!("{}: the first move took too long", lobby.code)),
                    Err(e) => Err(format!("{}: first move: {e}", lobby.code)),
                },
                Err(e) => Err(e),
            };
            match played {
                Ok(lobby) => lobby,
                Err(e) => {
                    let _ = self.ready.send(Err(e.clone())).await;
                    outcome.error = Some(format!("set-up: {e}"));
                    return outcome;
                }
            }
        };
        outcome.code = Some(lobby.code.clone());
        outcome.set_up = true;
        let _ = self.ready.send(Ok(lobby.code.clone())).await;
        let mut lobby = lobby;
        let result = self.after_set_up(&mut lobby, &mut outcome).await;
        outcome.acknowledged = lobby.acknowledged.clone();
        outcome.seen = [lobby.host.game_moves(), lobby.guest.game_moves()];
        let killed_at = match *self.stage.borrow() {
            Stage::Killed(killed_at) => Some(killed_at),
            _ => None,
        };
        outcome.reconnections = lobby
            .reconnections()
            .into_iter()
            .filter(|r| killed_at.is_some_and(|k| r.at >= k))
            .collect();
        if let Err(e) = result {
            let at = killed_at.map_or(String::new(), |k| {
                format!("{:.1} s after the kill: ", k.elapsed().as_secs_f64())
            });
            let reconnections: Vec<String> = outcome
                .reconnections
                .iter()
                .map(|r| format!("{} ({} attempts)", r.cause, r.attempts))
                .collect();
            outcome.error = Some(format!(
                "{at}{e}; reconnections after the kill: [{}]",
                reconnections.join(", ")
            ));
        }
        outcome
    }

    /// Waits until the stage is no longer `Waiting` (or, with `killed`, until the
    /// kill), and returns it; fails if a player stops meanwhile.
    async fn wait_stage(&mut self, lobby: &mut SeatedLobby, killed: bool) -> Result<Stage, String> {
        loop {
            let stage = *self.stage.borrow_and_update();
            match stage {
                Stage::Killed(_) => return Ok(stage),
                Stage::SendNow if !killed => return Ok(stage),
                _ => {}
            }
            let never = Instant::now() + Duration::from_secs(3600);
            tokio::select! {
                changed = self.stage.changed() => {
                    changed.map_err(|_| "the run stopped".to_owned())?;
                }
                read = lobby.until(never, |_, _| false) => {
                    read?;
                }
            }
        }
    }

    async fn after_set_up(
        &mut self,
        lobby: &mut SeatedLobby,
        outcome: &mut RoomOutcome,
    ) -> Result<(), String> {
        let mut stage = self.wait_stage(lobby, false).await?;
        let mut early: Option<SentMove> = None;
        if matches!(stage, Stage::SendNow) {
            early = Some(lobby.send_move().await?);
            self.sent.fetch_add(1, Ordering::Relaxed);
            stage = self.wait_stage(lobby, true).await?;
        }
        let Stage::Killed(killed_at) = stage else {
            return Err("no kill".into());
        };
        let sent = match early {
            Some(sent) => sent,
            None => lobby.send_move().await?,
        };
        let limit = killed_at + self.patience;
        let Some(acked) = lobby.settle(&sent, limit).await? else {
            return Err(format!(
                "the move sent at the kill was not acknowledged (and seen by both) within {:?}",
                self.patience,
            ));
        };
        self.acked.fetch_add(1, Ordering::Relaxed);
        outcome.acked_before_kill = acked < killed_at;
        outcome.move_ack = Some(acked.saturating_duration_since(killed_at));
        let Some(replied) = lobby.play(limit).await? else {
            return Err(format!(
                "the reply was not acknowledged (and seen by both) within {:?}",
                self.patience
            ));
        };
        outcome.reply_ack = Some(replied.saturating_duration_since(killed_at));
        Ok(())
    }
}

impl FailoverReport {
    /// The figures as a Markdown table.
    pub fn table(&self) -> String {
        let mut out = String::from(
            "| rooms | figure | measured | p50 | p90 | p99 | max |\n\
             |---|---|---:|---:|---:|---:|---:|\n",
        );
        let groups = [
            (format!("{}'s (killed)", self.victim), &self.affected),
            ("the others' (control)".to_owned(), &self.control),
        ];
        for (name, group) in groups {
            let mut rows = vec![
                ("kill → move acknowledged", &group.move_ack),
                ("kill → opponent's reply acknowledged", &group.reply_ack),
            ];
            if group.after_expiry.is_some() {
                rows.push(("heartbeat expiry → move acknowledged", &group.after_expiry));
            }
            for (figure, spread) in rows {
                let cells = match spread {
                    Some(s) => format!(
                        "{} of {} | {:.0} ms | {:.0} ms | {:.0} ms | {:.0} ms",
                        s.count, group.rooms, s.p50_ms, s.p90_ms, s.p99_ms, s.max_ms
                    ),
                    None => format!("0 of {} | — | — | — | —", group.rooms),
                };
                out.push_str(&format!("| {name} | {figure} | {cells} |\n"));
            }
        }
        out
    }

    /// Counts, failures and what the survivors logged.
    pub fn details(&self) -> String {
        let mut out = format!(
            "{} instances, heartbeat TTL {} ms; {} of {} lobbies set up ({} failed{}); moves \
             sent {} the kill; owners before: {:?}; killed {}, whose heartbeat had {} ms \
             left\n",
            self.instances,
            self.heartbeat_ttl_ms,
            self.rooms_set_up,
            self.rooms,
            self.set_up_failures,
            self.first_set_up_error
                .as_ref()
                .map_or(String::new(), |e| format!(", first: {e}")),
            if self.in_flight {
                "just before"
            } else {
                "just after"
            },
            self.owners_before,
            self.victim,
            self.heartbeat_left_ms
                .map_or("(unknown)".to_owned(), |ms| ms.to_string()),
        );
        for (name, g) in [
            ("killed instance's rooms", &self.affected),
            ("control rooms", &self.control),
        ] {
            out.push_str(&format!(
                "{name}: {} rooms, {} recovered, {} failed, {} with moves lost or extra, {} moves \
                 answered before the kill or by the killed instance, {} stored by it but not \
                 answered; owners after: {:?} ({} of them not where HAProxy now routes them); \
                 reconnections after the kill: {:?}, at most {} attempts\n",
                g.rooms,
                g.recovered,
                g.failed,
                g.mismatched,
                g.answered_early,
                g.stored_unacked_at_kill,
                g.owners_after,
                g.routed_elsewhere,
                g.reconnections,
                g.most_attempts,
            ));
            for f in &g.failures {
                out.push_str(&format!("  failed: {f}\n"));
            }
            for m in &g.move_mismatches {
                out.push_str(&format!("  moves: {m}\n"));
            }
        }
        for s in &self.survivors {
            out.push_str(&format!(
                "{}: takeovers {}, writes fenced {}, store conflicts {}, Redis errors {}, \
                 log lines at WARN {} and ERROR {}\n",
                s.id,
                s.takeovers,
                s.writes_fenced,
                s.store_conflicts,
                s.redis_errors,
                s.warnings,
                s.errors
            ));
            for line in &s.first_notable {
                out.push_str(&format!("  {line}\n"));
            }
        }
        out
    }
}
