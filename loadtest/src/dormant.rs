//! `dormant`: what an idle correspondence lobby costs once the server has unloaded it
//! (issue 18), and how long loading one again takes when its player comes back.
//!
//! A fresh `redis-server` and one `jumpgate serve` on it, with a short
//! `--correspondence-unload-secs`. A warm-up opens and abandons `--warmup` lobbies so
//! the allocator and the server's tables have grown once; when they are unloaded the
//! baseline is read. Then `--rooms` correspondence lobbies are opened, each the way a
//! real pair does it: the host creates it, a second guest joins, whoever is to move
//! plays one move, and the joiner goes away. The hosts stay connected (a reader task
//! each, so pings are answered), which keeps every lobby in memory for the "loaded"
//! reading. `--joins` joiners then come back one at a time with their tokens and take
//! their seats again in lobbies still in memory; that is the "loaded" join latency.
//! Everyone leaves, the run waits until the server has unloaded every lobby
//! (`jumpgate_rooms_unloaded_total`), lets the allocator settle, and reads again. A
//! second wave of `--rooms` lobbies, opened and abandoned the same way, shows whether
//! the memory of the first is reused or keeps growing. Last, `--joins` joiners of the
//! first wave come back to lobbies now only in Redis: the "unloaded" join latency.
//!
//! A join is timed from sending `join_lobby` (the connection already open and
//! greeted) until both its `ack` and the first `state` of the lobby are in.
//! Memory is the server's resident set (`VmRSS`): pages it touched and still holds,
//! whatever its allocator does with freed memory, so it is an upper bound on what the
//! lobbies themselves hold. Redis's own figure is `used_memory` from `INFO memory`.
//!
//! Kept and maintained (issue 36): README.md and deploy/README.md's sizing cite its
//! figures (server memory per unloaded lobby, Redis per lobby, the join latency to an
//! unloaded one), which operators plan with; `tests/smoke/dormant.rs` runs it small.
//! Over 700 lines: one measurement (set-up, the unload and wake readings, the report)
//! read top to bottom.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use jumpgate_protocol::client::Client;
use jumpgate_protocol::{
    ClientMessage, Color, Encoding, Pace, Phase, RoomState, RuleSet, ServerMessage,
};
use serde::Serialize;
use tokio::sync::oneshot;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::bench::start_jumpgate_logging;
use crate::cluster::{self, RedisProbe};
use crate::net;

/// How long any one answer from the server may take.
const PATIENCE: Duration = Duration::from_secs(15);
/// Connections the run needs besides the hosts and the workers' joiners.
const SPARE_FILES: u64 = 200;

/// Options of `jumpgate-loadtest dormant`.
#[derive(Debug, Clone, clap::Args)]
pub struct DormantArgs {
    /// The `jumpgate` server binary to start.
    #[arg(
        long,
        env = "JUMPGATE_LOADTEST_JUMPGATE",
        default_value = "target/release/jumpgate"
    )]
    pub jumpgate: PathBuf,
    /// Correspondence lobbies in each of the two waves.
    #[arg(long, default_value_t = 10_000)]
    pub rooms: usize,
    /// Comebacks timed, to lobbies in memory and then to unloaded ones.
    #[arg(long, default_value_t = 1_000)]
    pub joins: usize,
    /// Lobbies being opened at once.
    #[arg(long, default_value_t = 64)]
    pub concurrency: usize,
    /// Lobbies opened and unloaded before the baseline is read.
    #[arg(long, default_value_t = 200)]
    pub warmup: usize,
    /// The server's `--correspondence-unload-secs`.
    #[arg(long, default_value_t = 2)]
    pub unload_secs: u64,
    /// Seconds to wait once every lobby is unloaded before reading memory.
    #[arg(long, default_value_t = 5.0)]
    pub settle: f64,
    /// The lobbies' rule set.
    #[arg(long, default_value = "american")]
    pub rule_set: String,
    /// The `redis-server` binary.
    #[arg(long, default_value = "redis-server")]
    pub redis_server: PathBuf,
    /// Write the report as JSON here.
    #[arg(long)]
    pub out_json: Option<PathBuf>,
}

/// The server under test.
#[derive(Debug, Clone)]
pub struct Target {
    /// Its public listener (WebSocket and `/metrics`).
    pub addr: SocketAddr,
    /// Its process, for memory readings (`None` in-process).
    pub pid: Option<u32>,
    /// The Redis it stores lobbies in.
    pub redis_url: String,
}

impl Target {
    fn ws_url(&self) -> String {
        format!("ws://{}/ws", self.addr)
    }
}

/// What to do (see [`DormantArgs`]).
#[derive(Debug, Clone)]
pub struct Plan {
    pub rooms: usize,
    pub joins: usize,
    pub concurrency: usize,
    pub warmup: usize,
    pub rule_set: RuleSet,
    /// The server's unload delay (to bound the waits).
    pub unload: Duration,
    pub settle: Duration,
}

impl Plan {
    fn check(&self) -> Result<(), String> {
        if self.rooms == 0 || self.concurrency == 0 {
            return Err("--rooms and --concurrency must be at least 1".into());
        }
        if self.joins > self.rooms {
            return Err("--joins cannot be more than --rooms".into());
        }
        // The hosts of a whole wave are connected at once (and the server has
        // as many sockets as the load tester).
        let needed = (self.rooms + 2 * self.concurrency) as u64 + SPARE_FILES;
        if let Some(limit) = open_files_limit()
            && needed > limit
        {
            return Err(format!(
                "{} rooms need about {needed} open files and the limit is {limit} \
                 (ulimit -n); use fewer --rooms",
                self.rooms
            ));
        }
        Ok(())
    }
}

/// This process's soft limit on open files.
fn open_files_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// The server and Redis at one moment.
#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    pub label: String,
    /// The server's `VmRSS`, KiB (`None` in-process).
    pub rss_kib: Option<u64>,
    /// `jumpgate_lobbies_live` for the run's rule set.
    pub lobbies_live: f64,
    /// `jumpgate_rooms_unloaded_total` since the run began.
    pub unloaded: u64,
    /// `ZCARD jg:dormant`.
    pub dormant: u64,
    /// Redis `used_memory`, bytes.
    pub redis_used_memory: u64,
    /// Redis `DBSIZE`.
    pub redis_keys: u64,
}

/// Join latencies of one kind.
#[derive(Debug, Clone, Serialize)]
pub struct JoinLatency {
    /// `loaded` or `unloaded`.
    pub kind: String,
    pub joins: usize,
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    pub mean_us: f64,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct DormantReport {
    pub rooms: usize,
    pub joins: usize,
    pub concurrency: usize,
    pub warmup: usize,
    pub rule_set: String,
    pub unload_secs: f64,
    /// Readings in order: baseline, then each wave loaded and unloaded.
    pub snapshots: Vec<Snapshot>,
    /// Seconds each wave took to open its lobbies.
    pub wave_open_seconds: Vec<f64>,
    /// Seconds from the last host leaving until every lobby of the wave was unloaded.
    pub wave_unload_seconds: Vec<f64>,
    /// Server memory per lobby in memory (its host connected), KiB.
    pub kib_per_loaded_room: Option<f64>,
    /// Server memory per unloaded lobby after the first wave, KiB.
    pub kib_per_idle_room: Option<f64>,
    /// Server memory per unloaded lobby after both waves (twice as many), KiB.
    pub kib_per_idle_room_two_waves: Option<f64>,
    /// How much the second wave added per lobby once unloaded, KiB.
    pub second_wave_growth_kib_per_room: Option<f64>,
    /// Server memory per unloaded lobby at the last reading (both waves unloaded,
    /// after the comebacks gave the allocator work to do), KiB.
    pub kib_per_idle_room_at_end: Option<f64>,
    /// Redis memory per stored correspondence lobby, bytes (first wave).
    pub redis_bytes_per_room: f64,
    /// Redis keys per stored lobby (first wave).
    pub redis_keys_per_room: f64,
    pub join_loaded: JoinLatency,
    pub join_unloaded: JoinLatency,
}

impl DormantReport {
    pub fn table(&self) -> String {
        let kib =
            |v: Option<u64>| v.map_or("-".to_owned(), |k| format!("{:.1}", k as f64 / 1024.0));
        let mut out = format!(
            "dormant correspondence lobbies ({} per wave, {}, unloaded after {} s)\n\
             {:<22}  {:>9}  {:>8}  {:>9}  {:>8}  {:>9}  {:>9}\n",
            self.rooms,
            self.rule_set,
            self.unload_secs,
            "reading",
            "RSS MiB",
            "live",
            "unloaded",
            "dormant",
            "Redis MiB",
            "Redis keys"
        );
        for s in &self.snapshots {
            out.push_str(&format!(
                "{:<22}  {:>9}  {:>8}  {:>9}  {:>8}  {:>9.1}  {:>9}\n",
                s.label,
                kib(s.rss_kib),
                s.lobbies_live,
                s.unloaded,
                s.dormant,
                s.redis_used_memory as f64 / 1_048_576.0,
                s.redis_keys,
            ));
        }
        let per = |v: Option<f64>| v.map_or("-".to_owned(), |k| format!("{k:.2}"));
        out.push_str(&format!(
            "\nserver KiB per lobby: loaded {}, unloaded {} (after two waves {}, second \
             wave added {}, at the end {})\nRedis per lobby: {:.0} bytes, {:.1} keys\n\n\
             {:<10}  {:>6}  {:>9}  {:>9}  {:>9}  {:>9}\n",
            per(self.kib_per_loaded_room),
            per(self.kib_per_idle_room),
            per(self.kib_per_idle_room_two_waves),
            per(self.second_wave_growth_kib_per_room),
            per(self.kib_per_idle_room_at_end),
            self.redis_bytes_per_room,
            self.redis_keys_per_room,
            "join to",
            "joins",
            "p50 ms",
            "p99 ms",
            "max ms",
            "mean ms"
        ));
        for j in [&self.join_loaded, &self.join_unloaded] {
            out.push_str(&format!(
                "{:<10}  {:>6}  {:>9.3}  {:>9.3}  {:>9.3}  {:>9.3}\n",
                j.kind,
                j.joins,
                j.p50_us as f64 / 1000.0,
                j.p99_us as f64 / 1000.0,
                j.max_us as f64 / 1000.0,
                j.mean_us / 1000.0,
            ));
        }
        out
    }

    pub fn details(&self) -> String {
        let waves = self
            .wave_open_seconds
            .iter()
            .zip(&self.wave_unload_seconds)
            .enumerate()
            .map(|(i, (open, unload))| {
                format!(
                    "wave {}: opened in {open:.1} s, unloaded {unload:.1} s after",
                    i + 1
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        format!(
            "{waves}.\n\
             RSS is the server's VmRSS: what it touched and still holds, freed memory its \
             allocator keeps included (mimalloc gives freed pages back lazily, when the \
             threads that own them allocate again, so a reading right after an unload can \
             be far above what is live). Per lobby = (reading - baseline) / lobbies; the \
             baseline is read after {} warm-up lobbies were opened and unloaded. Loaded \
             lobbies still have their host connected, so that figure includes one \
             WebSocket each.\n\
             A join is a seated guest coming back with its token: join_lobby sent on a \
             greeted connection, until its ack and the first state; one at a time.\n",
            self.warmup
        )
    }
}

/// The whole `dormant` command: a fresh Redis and one server on it.
pub async fn dormant(args: &DormantArgs) -> Result<DormantReport, String> {
    let rule_set = RuleSet::ALL
        .iter()
        .copied()
        .find(|rs| rs.as_str() == args.rule_set.trim().to_ascii_lowercase())
        .ok_or_else(|| format!("--rule-set: unknown rule set {:?}", args.rule_set))?;
    if !(args.settle.is_finite() && (0.0..=600.0).contains(&args.settle)) {
        return Err("--settle must be 0 to 600 seconds".into());
    }
    let plan = Plan {
        rooms: args.rooms,
        joins: args.joins,
        concurrency: args.concurrency,
        warmup: args.warmup,
        rule_set,
        unload: Duration::from_secs(args.unload_secs.max(1)),
        settle: Duration::from_secs_f64(args.settle),
    };
    plan.check()?;
    let redis = cluster::start_redis(&args.redis_server, false, None).await?;
    let extra = [
        "--redis-url".to_owned(),
        redis.url(),
        "--correspondence-unload-secs".to_owned(),
        args.unload_secs.max(1).to_string(),
        "--max-connections".to_owned(),
        (args.rooms + 2 * args.concurrency + 1_000).to_string(),
    ];
    let server = start_jumpgate_logging("jumpgate", &args.jumpgate, None, &extra, "warn").await?;
    let target = Target {
        addr: server.addr,
        pid: Some(server.pid()),
        redis_url: redis.url(),
    };
    let report = measure(&target, &plan).await;
    let transcript = server.transcript();
    server.stop();
    redis.stop();
    if transcript.errors > 0 {
        return Err(format!(
            "the server logged {} errors: {}",
            transcript.errors,
            transcript.first_notable.join(" / ")
        ));
    }
    report
}

/// Runs the plan against `target`, whose Redis must be empty and whose unload delay
/// is `plan.unload`.
pub async fn measure(target: &Target, plan: &Plan) -> Result<DormantReport, String> {
    plan.check()?;
    cluster::require_loopback_redis(&target.redis_url)?;
    net::require_loopback_addr(target.addr)?;
    let mut probe = RedisProbe::open(&target.redis_url).await?;
    let mut counter = Counter::new(target, plan).await?;

    // Warm-up: lobbies opened and abandoned once before anything is read.
    if plan.warmup > 0 {
        let hosts = open_lobbies(target, plan, plan.warmup).await?;
        release(hosts.into_iter().map(|(_, host)| host).collect()).await;
        counter.wait_unloaded(plan.warmup).await?;
    }
    tokio::time::sleep(plan.settle).await;
    let mut snapshots = vec![snapshot("baseline", target, plan, &counter, &mut probe).await?];
    let baseline = snapshots[0].clone();

    let mut wave_open_seconds = Vec::new();
    let mut wave_unload_seconds = Vec::new();
    let mut joined = None;
    let mut first_wave = Vec::new();
    for wave in 1..=2 {
        let started = Instant::now();
        let opened = open_lobbies(target, plan, plan.rooms).await?;
        wave_open_seconds.push(started.elapsed().as_secs_f64());
        eprintln!(
            "dormant: wave {wave}: {} lobbies open in {:.1} s",
            plan.rooms,
            started.elapsed().as_secs_f64()
        );
        tokio::time::sleep(plan.settle.min(Duration::from_secs(2))).await;
        let label = format!("wave {wave} loaded");
        snapshots.push(snapshot(&label, target, plan, &counter, &mut probe).await?);
        let (lobbies, hosts): (Vec<Lobby>, Vec<Held>) = opened.into_iter().unzip();
        if wave == 1 {
            // Comebacks to lobbies in memory: their hosts are still there.
            joined = Some(time_joins(target, &pick(&lobbies, plan.joins), "loaded").await?);
        }
        let left = Instant::now();
        release(hosts).await;
        counter.wait_unloaded(plan.rooms).await?;
        wave_unload_seconds.push(left.elapsed().as_secs_f64());
        tokio::time::sleep(plan.settle).await;
        let label = format!("wave {wave} unloaded");
        snapshots.push(snapshot(&label, target, plan, &counter, &mut probe).await?);
        if wave == 1 {
            first_wave = lobbies;
        }
    }
    // Comebacks to unloaded lobbies (the first wave's, unloaded the longest).
    let join_unloaded = time_joins(target, &pick(&first_wave, plan.joins), "unloaded").await?;
    counter.wait_unloaded(plan.joins).await?;
    tokio::time::sleep(plan.settle).await;
    snapshots.push(snapshot("after the joins", target, plan, &counter, &mut probe).await?);

    let find = |label: &str| snapshots.iter().find(|s| s.label == label).cloned();
    let (loaded1, idle1, idle2) = (
        find("wave 1 loaded").ok_or("no wave 1 reading")?,
        find("wave 1 unloaded").ok_or("no wave 1 reading")?,
        find("wave 2 unloaded").ok_or("no wave 2 reading")?,
    );
    let per_room = |from: &Snapshot, to: &Snapshot, rooms: usize| {
        Some((to.rss_kib? as f64 - from.rss_kib? as f64) / rooms as f64)
    };
    let rooms = plan.rooms as f64;
    Ok(DormantReport {
        rooms: plan.rooms,
        joins: plan.joins,
        concurrency: plan.concurrency,
        warmup: plan.warmup,
        rule_set: plan.rule_set.as_str().to_owned(),
        unload_secs: plan.unload.as_secs_f64(),
        wave_open_seconds,
        wave_unload_seconds,
        kib_per_loaded_room: per_room(&baseline, &loaded1, plan.rooms),
        kib_per_idle_room: per_room(&baseline, &idle1, plan.rooms),
        kib_per_idle_room_two_waves: per_room(&baseline, &idle2, 2 * plan.rooms),
        second_wave_growth_kib_per_room: per_room(&idle1, &idle2, plan.rooms),
        kib_per_idle_room_at_end: snapshots
            .last()
            .and_then(|last| per_room(&baseline, last, 2 * plan.rooms)),
        redis_bytes_per_room: (idle1.redis_used_memory as f64 - baseline.redis_used_memory as f64)
            / rooms,
        redis_keys_per_room: (idle1.redis_keys as f64 - baseline.redis_keys as f64) / rooms,
        join_loaded: joined.ok_or("no loaded joins")?,
        join_unloaded,
        snapshots,
    })
}

/// Counts the server's unloads since the run began.
struct Counter {
    addr: SocketAddr,
    start: u64,
    /// Unloads the run has waited for so far.
    expected: u64,
    unload: Duration,
}

impl Counter {
    async fn new(target: &Target, plan: &Plan) -> Result<Counter, String> {
        let start = unloaded_total(target.addr).await?;
        Ok(Counter {
            addr: target.addr,
            start,
            expected: 0,
            unload: plan.unload,
        })
    }

    async fn unloaded(&self) -> Result<u64, String> {
        Ok(unloaded_total(self.addr).await?.saturating_sub(self.start))
    }

    /// Waits until `more` lobbies have been unloaded beyond those waited for
    /// already; bounded by the unload delay plus time for the work.
    async fn wait_unloaded(&mut self, more: usize) -> Result<(), String> {
        self.expected += more as u64;
        let limit = self.unload + Duration::from_secs(30) + Duration::from_millis(5 * more as u64);
        let give_up = Instant::now() + limit;
        loop {
            let done = self.unloaded().await?;
            if done >= self.expected {
                return Ok(());
            }
            if Instant::now() >= give_up {
                return Err(format!(
                    "only {done} of {} lobbies were unloaded within {limit:?}",
                    self.expected
                ));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

async fn metrics_page(addr: SocketAddr) -> Result<String, String> {
    match net::http_get(addr, "/metrics").await {
        Some(answer) if answer.status == 200 => Ok(answer.body),
        Some(answer) => Err(format!("/metrics answered {}", answer.status)),
        None => Err("/metrics did not answer".into()),
    }
}

async fn unloaded_total(addr: SocketAddr) -> Result<u64, String> {
    let page = metrics_page(addr).await?;
    Ok(cluster::metric_total(&page, "jumpgate_rooms_unloaded_total") as u64)
}

async fn snapshot(
    label: &str,
    target: &Target,
    plan: &Plan,
    counter: &Counter,
    probe: &mut RedisProbe,
) -> Result<Snapshot, String> {
    let page = metrics_page(target.addr).await?;
    let live = format!(
        "jumpgate_lobbies_live{{rule_set=\"{}\"}}",
        plan.rule_set.as_str()
    );
    let dormant: u64 = probe.zcard(jumpgate_store::keys::DORMANT).await?;
    Ok(Snapshot {
        label: label.to_owned(),
        rss_kib: target.pid.and_then(net::vm_rss_kib),
        lobbies_live: cluster::metric_total(&page, &live),
        unloaded: counter.unloaded().await?,
        dormant,
        redis_used_memory: probe.used_memory().await?,
        redis_keys: probe.db_size().await?,
    })
}

/// A lobby of the run: its code, and its joiner, who comes back later.
#[derive(Debug, Clone)]
pub struct Lobby {
    pub code: String,
    joiner_id: String,
    joiner_token: String,
}

/// `n` of the lobbies, spread evenly over them.
fn pick(lobbies: &[Lobby], n: usize) -> Vec<Lobby> {
    if n == 0 || lobbies.is_empty() {
        return Vec::new();
    }
    (0..n.min(lobbies.len()))
        .map(|i| lobbies[i * lobbies.len() / n.min(lobbies.len())].clone())
        .collect()
}

/// A connection kept open by a task that reads (and so answers pings) until told
/// to close.
struct Held {
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Held {
    fn new(mut client: Client) -> Held {
        let (stop, mut stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = &mut stopped => break,
                    message = client.recv() => {
                        if message.is_err() {
                            return;
                        }
                    }
                }
            }
            let _ = client.close().await;
        });
        Held { stop, task }
    }
}

/// Closes every held connection and waits until they are closed.
async fn release(held: Vec<Held>) {
    let mut tasks = Vec::with_capacity(held.len());
    for h in held {
        let _ = h.stop.send(());
        tasks.push(h.task);
    }
    for task in tasks {
        let _ = task.await;
    }
}

/// Opens `n` lobbies, `plan.concurrency` at a time; their hosts stay connected.
async fn open_lobbies(
    target: &Target,
    plan: &Plan,
    n: usize,
) -> Result<Vec<(Lobby, Held)>, String> {
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = JoinSet::new();
    for _ in 0..plan.concurrency.min(n) {
        let next = next.clone();
        let url = target.ws_url();
        let rule_set = plan.rule_set;
        workers.spawn(async move {
            let mut opened = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < n {
                opened.push(open_lobby(&url, rule_set).await?);
            }
            Ok::<_, String>(opened)
        });
    }
    let mut all = Vec::with_capacity(n);
    let mut failure = None;
    while let Some(result) = workers.join_next().await {
        match result.map_err(|e| e.to_string()).and_then(|r| r) {
            Ok(opened) => all.extend(opened),
            Err(e) => {
                failure.get_or_insert(e);
            }
        }
    }
    match failure {
        Some(e) => {
            release(all.into_iter().map(|(_, held)| held).collect()).await;
            Err(format!("opening lobbies: {e}"))
        }
        None => Ok(all),
    }
}

/// A new guest's greeted connection: the client, its identity id and token.
pub(crate) async fn guest(url: &str) -> Result<(Client, String, String), String> {
    let mut client = within(Client::connect(url, Encoding::MsgPack))
        .await?
        .map_err(|e| format!("connecting to {url}: {e}"))?;
    let greeting = within(client.greet(None, "jumpgate-loadtest"))
        .await?
        .map_err(|e| format!("hello: {e}"))?;
    Ok((client, greeting.identity.id, greeting.token))
}

pub(crate) async fn within<T>(work: impl std::future::Future<Output = T>) -> Result<T, String> {
    tokio::time::timeout(PATIENCE, work)
        .await
        .map_err(|_| format!("no answer within {PATIENCE:?}"))
}

/// Reads until the answer to `seq` and a state of lobby `code` (any code if
/// empty) that `want` accepts are both in; returns that state.
pub(crate) async fn answer_and_state(
    client: &mut Client,
    seq: u32,
    code: &str,
    want: impl Fn(&RoomState) -> bool,
) -> Result<RoomState, String> {
    let mut acked = false;
    let mut state = None;
    let work = async {
        while !acked || state.is_none() {
            match client.recv().await.map_err(|e| e.to_string())? {
                ServerMessage::Ack { seq: s } if s == seq => acked = true,
                ServerMessage::Error {
                    seq: Some(s),
                    code,
                    message,
                } if s == seq => return Err(format!("refused: {code} {message}")),
                ServerMessage::State(s) if (code.is_empty() || s.code == code) && want(&s) => {
                    state = Some(s);
                }
                _ => {}
            }
        }
        Ok(())
    };
    within(work).await??;
    state.ok_or_else(|| "no state".to_owned())
}

pub(crate) fn in_play(state: &RoomState) -> bool {
    state.phase == Phase::Playing && state.game.as_ref().is_some_and(|g| g.result.is_none())
}

/// The seat to move and its first legal move.
pub(crate) fn to_move(state: &RoomState) -> Option<(usize, String)> {
    let game = state.game.as_ref()?;
    let dark = usize::from(game.dark_seat.min(1));
    let seat = if game.turn == Color::Dark {
        dark
    } else {
        1 - dark
    };
    Some((seat, game.legal_moves.first()?.notation.clone()))
}

/// A lobby two new guests opened, the series started and its first move
/// played; both still connected.
pub(crate) struct Opened {
    pub host: Client,
    pub joiner: Client,
    pub code: String,
    pub joiner_id: String,
    pub joiner_token: String,
}

/// Two new guests open a lobby of `rule_set` at `pace` (the host creates
/// it, the other joins by code), and whoever is to move plays one move.
pub(crate) async fn open_with_a_move(
    url: &str,
    rule_set: RuleSet,
    pace: Pace,
) -> Result<Opened, String> {
    let (mut host, host_id, _) = guest(url).await?;
    let (mut joiner, joiner_id, joiner_token) = guest(url).await?;
    let seq = host.next_seq();
    host.send(&ClientMessage::CreateLobby {
        seq,
        rule_set,
        series_length: 1,
        invite_only: false,
        stake: None,
        pace: Some(pace),
        draw_rules: None,
    })
    .await
    .map_err(|e| e.to_string())?;
    let created = answer_and_state(&mut host, seq, "", |_| true).await?;
    if created.pace != pace {
        return Err(format!("lobby {} is not {pace}", created.code));
    }
    let code = created.code;
    let seq = joiner.next_seq();
    joiner
        .send(&ClientMessage::JoinLobby {
            seq,
            code: code.clone(),
            invite: None,
        })
        .await
        .map_err(|e| e.to_string())?;
    let state = answer_and_state(&mut joiner, seq, &code, in_play)
        .await
        .map_err(|e| format!("joining {code}: {e}"))?;
    let (seat, notation) =
        to_move(&state).ok_or_else(|| format!("lobby {code}: no move to play"))?;
    let host_moves = state
        .players
        .get(seat)
        .and_then(Option::as_ref)
        .is_some_and(|p| p.id == host_id);
    let mover = if host_moves { &mut host } else { &mut joiner };
    let seq = mover.next_seq();
    mover
        .send(&ClientMessage::Move {
            seq,
            notation: Some(notation),
            path: None,
        })
        .await
        .map_err(|e| e.to_string())?;
    answer_and_state(mover, seq, &code, |s| {
        s.game.as_ref().is_some_and(|g| g.ply == 1)
    })
    .await
    .map_err(|e| format!("moving in {code}: {e}"))?;
    Ok(Opened {
        host,
        joiner,
        code,
        joiner_id,
        joiner_token,
    })
}

/// A correspondence lobby with a game in play whose joiner has left; its
/// host stays connected (held).
async fn open_lobby(url: &str, rule_set: RuleSet) -> Result<(Lobby, Held), String> {
    let opened = open_with_a_move(url, rule_set, Pace::Correspondence).await?;
    let _ = opened.joiner.close().await;
    Ok((
        Lobby {
            code: opened.code,
            joiner_id: opened.joiner_id,
            joiner_token: opened.joiner_token,
        },
        Held::new(opened.host),
    ))
}

/// Each lobby's joiner comes back with its token, one at a time, and takes its
/// seat again; times `join_lobby` until its ack and the first state.
async fn time_joins(target: &Target, lobbies: &[Lobby], kind: &str) -> Result<JoinLatency, String> {
    let url = target.ws_url();
    let mut histogram = crate::driver::new_histogram();
    let mut total_us = 0u64;
    for lobby in lobbies {
        let mut client = within(Client::connect(&url, Encoding::MsgPack))
            .await?
            .map_err(|e| format!("connecting to {url}: {e}"))?;
        let greeting = within(client.greet(Some(lobby.joiner_token.clone()), "jumpgate-loadtest"))
            .await?
            .map_err(|e| format!("hello: {e}"))?;
        if greeting.identity.id != lobby.joiner_id {
            return Err(format!(
                "the token of {} came back as someone else",
                lobby.code
            ));
        }
        let seq = client.next_seq();
        let sent = Instant::now();
        client
            .send(&ClientMessage::JoinLobby {
                seq,
                code: lobby.code.clone(),
                invite: None,
            })
            .await
            .map_err(|e| e.to_string())?;
        let state = answer_and_state(&mut client, seq, &lobby.code, |_| true)
            .await
            .map_err(|e| format!("coming back to {} ({kind}): {e}", lobby.code))?;
        let took = u64::try_from(sent.elapsed().as_micros()).unwrap_or(u64::MAX);
        let seated = state
            .players
            .iter()
            .flatten()
            .any(|p| p.id == lobby.joiner_id);
        if !seated || !in_play(&state) {
            return Err(format!(
                "{}: the joiner is not back in its seat of a game in play ({:?})",
                lobby.code, state.phase
            ));
        }
        histogram.record(took.max(1)).map_err(|e| e.to_string())?;
        total_us += took;
        let _ = client.close().await;
    }
    let joins = lobbies.len();
    Ok(JoinLatency {
        kind: kind.to_owned(),
        joins,
        p50_us: histogram.value_at_quantile(0.50),
        p99_us: histogram.value_at_quantile(0.99),
        max_us: histogram.max(),
        mean_us: total_us as f64 / joins.max(1) as f64,
    })
}
