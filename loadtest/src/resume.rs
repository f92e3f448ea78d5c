//! `resume`: how long a Jumpgate start takes to resume 10,000 or 100,000 open
//! lobbies from Redis, and what they cost it in memory (issue 19).
//!
//! For each `--lobbies N`: a fresh `redis-server`, and a seed `jumpgate serve` on it
//! that opens `--templates` lobbies the way players do (a host creates one, a guest
//! joins, whoever is to move plays a move; both then disconnect), and is killed
//! (SIGKILL). The rest of the N lobbies are copies of those, made straight in Redis
//! by a Lua script sent in batches: each copy's record (`jg:{CODE}:room`, with the
//! code inside rewritten), its moves, finished games and fence (`COPY`), and its
//! entry in `jg:lobbies`, under a fresh code of the room-code alphabet. Every fence
//! (templates too) names an owner that never had a heartbeat, so the new server takes
//! them all over. Then a `jumpgate serve` is spawned on that Redis and timed from the
//! spawn until `/readyz` answers 200 (it answers 503 while the stored lobbies are
//! taken back); `jumpgate_resume_seconds` is the server's own
//! figure for the takeover, and `jumpgate_lobbies_live` must reach N. The resident
//! set (`VmRSS`) is read at ready and again after `--settle`.
//!
//! Last, `--sample` lobbies spread over the copies and the templates are checked:
//! the template's guest comes back with its token and must get its seat back in a
//! game in play (and, when it is to move, play a move the server stores under its
//! new ownership), and a new guest must be able to `watch` the lobby.
//!
//! With `--redis-rtt-ms`, the resuming server reaches Redis through a
//! [`DelayProxy`] that adds that round trip, as a network between them would.
//!
//! Over 700 lines by a few: one experiment's run and report, read top to
//! bottom, and their tests.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use jumpgate_protocol::client::Client;
use jumpgate_protocol::{ClientMessage, Encoding, Pace, RuleSet};
use tokio::time::Instant;

use crate::bench::start_jumpgate_logging;
use crate::cluster::{self, RedisProbe, RedisServer};
use crate::delay::DelayProxy;
use crate::dormant::{answer_and_state, guest, in_play, open_with_a_move, to_move, within};
use crate::net;

mod report;
pub use self::report::{Checked, Filled, ResumeReport, ResumeRun, Resumed};

/// The room-code alphabet (server/src/code.rs): no 0, 1, I or O.
pub const CODE_ALPHABET: &[u8; 32] = b"23456789ABCDEFGHJKLMNPQRSTUVWXYZ";
/// Characters in a room code.
pub const CODE_LENGTH: usize = 8;
/// The owner every copied fence names: an instance that never had a heartbeat.
pub const DEAD_OWNER: &str = "loadtest-dead-instance";
/// Most lobbies one run may store.
const MAX_LOBBIES: usize = 500_000;
/// Copies per script call.
const BATCH: usize = 500;

/// Options of `jumpgate-loadtest resume`.
#[derive(Debug, Clone, clap::Args)]
pub struct ResumeArgs {
    /// The `jumpgate` server binary to start.
    #[arg(
        long,
        env = "JUMPGATE_LOADTEST_JUMPGATE",
        default_value = "target/release/jumpgate"
    )]
    pub jumpgate: PathBuf,
    /// Open lobbies to resume, one run each (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [10_000, 100_000])]
    pub lobbies: Vec<usize>,
    /// Lobbies opened through a real server, that the others copy.
    #[arg(long, default_value_t = 16)]
    pub templates: usize,
    /// Resumed lobbies checked afterwards (seat taken back, watched).
    #[arg(long, default_value_t = 200)]
    pub sample: usize,
    /// The lobbies' rule set.
    #[arg(long, default_value = "american")]
    pub rule_set: String,
    /// Seconds the server may take to become ready.
    #[arg(long, default_value_t = 600.0)]
    pub patience: f64,
    /// Seconds after ready before the second memory reading.
    #[arg(long, default_value_t = 5.0)]
    pub settle: f64,
    /// The `redis-server` binary.
    #[arg(long, default_value = "redis-server")]
    pub redis_server: PathBuf,
    /// A network round trip, in milliseconds, between the resuming server
    /// and Redis: its connection goes through a proxy that holds every
    /// byte half of it each way (0: straight to Redis).
    #[arg(long, default_value_t = 0.0)]
    pub redis_rtt_ms: f64,
    /// Write the report as JSON here.
    #[arg(long)]
    pub out_json: Option<PathBuf>,
}

/// A lobby opened through a server: its code and its two players.
#[derive(Debug, Clone)]
pub struct Template {
    pub code: String,
    /// The guest that joined: its identity and token.
    pub joiner_id: String,
    pub joiner_token: String,
}

/// A lobby stored for the resume: its code and the template it copies.
#[derive(Debug, Clone)]
pub struct Stored {
    pub code: String,
    pub template: usize,
}

/// Parses `--rule-set`.
pub fn parse_rule_set(text: &str) -> Result<RuleSet, String> {
    RuleSet::ALL
        .iter()
        .copied()
        .find(|rs| rs.as_str() == text.trim().to_ascii_lowercase())
        .ok_or_else(|| format!("--rule-set: unknown rule set {text:?}"))
}

/// Opens `n` lobbies with a game in play, one after the other, and disconnects
/// both players of each.
pub async fn open_templates(
    ws_url: &str,
    n: usize,
    rule_set: RuleSet,
) -> Result<Vec<Template>, String> {
    let mut templates = Vec::with_capacity(n);
    for _ in 0..n {
        templates.push(open_template(ws_url, rule_set).await?);
    }
    Ok(templates)
}

async fn open_template(url: &str, rule_set: RuleSet) -> Result<Template, String> {
    let opened = open_with_a_move(url, rule_set, Pace::Live).await?;
    let _ = opened.host.close().await;
    let _ = opened.joiner.close().await;
    Ok(Template {
        code: opened.code,
        joiner_id: opened.joiner_id,
        joiner_token: opened.joiner_token,
    })
}

/// Copies one template under new codes. KEYS: the template's room, moves, games and
/// fence, `jg:lobbies`, then room, moves, games and fence of each copy. ARGV: the
/// template's code, the owner to name, the copies' codes. Returns how many copies.
const COPY_SCRIPT: &str = r"
local record = redis.call('GET', KEYS[1])
if not record then return redis.error_reply('no template ' .. ARGV[1]) end
for i = 3, #ARGV do
  local k = 5 + (i - 3) * 4
  local fresh = string.gsub(record, ARGV[1], ARGV[i])
  redis.call('SET', KEYS[k + 1], fresh)
  redis.call('COPY', KEYS[2], KEYS[k + 2], 'REPLACE')
  redis.call('COPY', KEYS[3], KEYS[k + 3], 'REPLACE')
  redis.call('COPY', KEYS[4], KEYS[k + 4], 'REPLACE')
  redis.call('HSET', KEYS[k + 4], 'owner', ARGV[2])
  redis.call('SADD', KEYS[5], ARGV[i])
end
redis.call('HSET', KEYS[4], 'owner', ARGV[2])
return #ARGV - 2
";

fn room_keys(code: &str) -> [String; 4] {
    [
        format!("jg:{{{code}}}:room"),
        format!("jg:{{{code}}}:moves"),
        format!("jg:{{{code}}}:games"),
        format!("jg:{{{code}}}:fence"),
    ]
}

/// Fresh room codes, none of them in `taken`, from a seeded generator.
pub fn fresh_codes(n: usize, taken: &HashSet<String>, seed: u64) -> Vec<String> {
    let mut state = seed | 1;
    let mut next = move || {
        // xorshift64*
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let mut seen = taken.clone();
    let mut codes = Vec::with_capacity(n);
    while codes.len() < n {
        let bits = next();
        let code: String = (0..CODE_LENGTH)
            .map(|i| char::from(CODE_ALPHABET[((bits >> (5 * i)) & 31) as usize]))
            .collect();
        if seen.insert(code.clone()) {
            codes.push(code);
        }
    }
    codes
}

/// Stores `total` open lobbies in the Redis at `url` (a single Redis): the
/// templates, already there, and copies of them. Returns every stored lobby with
/// its template, templates first.
pub async fn fill(
    url: &str,
    templates: &[Template],
    total: usize,
) -> Result<(Filled, Vec<Stored>), String> {
    if templates.is_empty() || total < templates.len() || total > MAX_LOBBIES {
        return Err(format!(
            "--lobbies must be between the {} templates and {MAX_LOBBIES}",
            templates.len()
        ));
    }
    cluster::require_loopback_redis(url)?;
    let client = redis::Client::open(url).map_err(|e| format!("Redis: {e}"))?;
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| format!("Redis: {e}"))?;
    let first = &templates[0].code;
    let record: Option<String> = redis::cmd("GET")
        .arg(&room_keys(first)[0])
        .query_async(&mut conn)
        .await
        .map_err(|e| format!("Redis: {e}"))?;
    let record = record.ok_or_else(|| format!("template {first} is not stored"))?;
    let taken: HashSet<String> = templates.iter().map(|t| t.code.clone()).collect();
    let codes = fresh_codes(total - templates.len(), &taken, 0x6a75_6d70_6761_7465);
    let mut stored: Vec<Stored> = templates
        .iter()
        .enumerate()
        .map(|(template, t)| Stored {
            code: t.code.clone(),
            template,
        })
        .collect();
    let script = redis::Script::new(COPY_SCRIPT);
    let started = Instant::now();
    let per_template = codes.len().div_ceil(templates.len()).max(1);
    for (template, mine) in codes.chunks(per_template).enumerate() {
        let t = &templates[template];
        for batch in mine.chunks(BATCH) {
            let mut invocation = script.prepare_invoke();
            for key in room_keys(&t.code) {
                invocation.key(key);
            }
            invocation.key("jg:lobbies");
            invocation.arg(&t.code).arg(DEAD_OWNER);
            for code in batch {
                for key in room_keys(code) {
                    invocation.key(key);
                }
                invocation.arg(code);
            }
            let copied: usize = invocation
                .invoke_async(&mut conn)
                .await
                .map_err(|e| format!("copying {}: {e}", t.code))?;
            if copied != batch.len() {
                return Err(format!("copied {copied} of {}", batch.len()));
            }
        }
        stored.extend(mine.iter().map(|code| Stored {
            code: code.clone(),
            template,
        }));
    }
    // Templates not copied (more templates than copies) still need the dead owner.
    for t in templates {
        let () = redis::cmd("HSET")
            .arg(&room_keys(&t.code)[3])
            .arg("owner")
            .arg(DEAD_OWNER)
            .query_async::<i64>(&mut conn)
            .await
            .map(|_| ())
            .map_err(|e| format!("Redis: {e}"))?;
    }
    let copy_seconds = started.elapsed().as_secs_f64();
    let open_set: u64 = redis::cmd("SCARD")
        .arg("jg:lobbies")
        .query_async(&mut conn)
        .await
        .map_err(|e| format!("Redis: {e}"))?;
    let mut probe = RedisProbe::open(url).await?;
    let filled = Filled {
        lobbies: total,
        templates: templates.len(),
        copy_seconds,
        record_bytes: record.len(),
        code_occurrences: record.matches(first.as_str()).count(),
        open_set,
        redis_keys: probe.db_size().await?,
        redis_used_memory: probe.used_memory().await?,
    };
    Ok((filled, stored))
}

async fn metrics_page(addr: SocketAddr) -> Result<String, String> {
    match net::http_get(addr, "/metrics").await {
        Some(answer) if answer.status == 200 => Ok(answer.body),
        Some(answer) => Err(format!("/metrics answered {}", answer.status)),
        None => Err("/metrics did not answer".into()),
    }
}

/// Waits until the server at `addr`, spawned at `started`, answers `/readyz` with
/// 200 (within `patience`), then reads its metrics; waits up to 30 s more for
/// `expected` lobbies of `rule_set` to be live.
pub async fn await_resume(
    addr: SocketAddr,
    pid: Option<u32>,
    started: Instant,
    expected: usize,
    rule_set: RuleSet,
    patience: Duration,
    settle: Duration,
) -> Result<Resumed, String> {
    net::require_loopback_addr(addr)?;
    let give_up = started + patience;
    loop {
        if let Some(answer) = net::http_get(addr, "/readyz").await
            && answer.status == 200
        {
            break;
        }
        if Instant::now() >= give_up {
            return Err(format!("/readyz did not answer 200 within {patience:?}"));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let ready_seconds = started.elapsed().as_secs_f64();
    let rss_kib_at_ready = pid.and_then(net::vm_rss_kib);
    let cpu_at_ready = pid.and_then(net::cpu_time);
    let live_name = format!(
        "jumpgate_lobbies_live{{rule_set=\"{}\"}}",
        rule_set.as_str()
    );
    let mut page = metrics_page(addr).await?;
    let read = |page: &str| {
        let m = |name: &str| cluster::metric_total(page, name);
        Resumed {
            ready_seconds,
            resume_seconds_metric: m("jumpgate_resume_seconds"),
            rooms_left: m("jumpgate_resume_rooms_left"),
            lobbies_live_sum: m("jumpgate_lobbies_live"),
            lobbies_live: m(&live_name),
            games_live_sum: m("jumpgate_games_live"),
            takeovers: m("jumpgate_room_takeovers_total"),
            // The process's own figure counts whole seconds: read /proc
            // when the server is a process of ours.
            server_cpu_seconds: cpu_at_ready
                .map_or_else(|| m("process_cpu_seconds_total"), |t| t.as_secs_f64()),
            redis_cpu_seconds: 0.0,
            redis_commands: 0,
            rss_kib_at_ready,
            rss_kib_settled: None,
        }
    };
    let mut resumed = read(&page);
    let counted = Instant::now() + Duration::from_secs(30);
    while resumed.lobbies_live < expected as f64 && Instant::now() < counted {
        tokio::time::sleep(Duration::from_millis(100)).await;
        page = metrics_page(addr).await?;
        let later = read(&page);
        resumed.lobbies_live = later.lobbies_live;
        resumed.lobbies_live_sum = later.lobbies_live_sum;
    }
    tokio::time::sleep(settle).await;
    resumed.rss_kib_settled = pid.and_then(net::vm_rss_kib);
    Ok(resumed)
}

/// `n` of the stored lobbies, spread evenly, the first template first.
pub fn sample(stored: &[Stored], n: usize) -> Vec<Stored> {
    let n = n.min(stored.len());
    (0..n)
        .map(|i| stored[i * stored.len() / n].clone())
        .collect()
}

/// Checks each lobby of `lobbies`: its template's guest takes its seat back (and
/// moves if it is to), and a new guest watches it.
pub async fn check(ws_url: &str, templates: &[Template], lobbies: &[Stored]) -> Checked {
    let mut checked = Checked {
        lobbies: lobbies.len(),
        seated: 0,
        moved: 0,
        watched: 0,
        join_p50_us: 0,
        join_p99_us: 0,
        join_max_us: 0,
        failures: Vec::new(),
    };
    let mut histogram = crate::driver::new_histogram();
    for lobby in lobbies {
        let template = &templates[lobby.template];
        match retake(ws_url, template, &lobby.code).await {
            Ok((took_us, moved)) => {
                checked.seated += 1;
                checked.moved += usize::from(moved);
                let _ = histogram.record(took_us.max(1));
            }
            Err(e) if checked.failures.len() < 10 => checked.failures.push(e),
            Err(_) => {}
        }
        match watch(ws_url, &lobby.code).await {
            Ok(()) => checked.watched += 1,
            Err(e) if checked.failures.len() < 10 => checked.failures.push(e),
            Err(_) => {}
        }
    }
    if !histogram.is_empty() {
        checked.join_p50_us = histogram.value_at_quantile(0.5);
        checked.join_p99_us = histogram.value_at_quantile(0.99);
        checked.join_max_us = histogram.max();
    }
    checked
}

/// The template's guest takes its seat in `code` back; plays a move if it is to
/// move. Returns the join's round trip, µs, and whether it moved.
async fn retake(url: &str, template: &Template, code: &str) -> Result<(u64, bool), String> {
    let mut client = within(Client::connect(url, Encoding::MsgPack))
        .await?
        .map_err(|e| format!("connecting to {url}: {e}"))?;
    let greeting = within(client.greet(Some(template.joiner_token.clone()), "jumpgate-loadtest"))
        .await?
        .map_err(|e| format!("hello: {e}"))?;
    if greeting.identity.id != template.joiner_id {
        return Err(format!(
            "{code}: the guest's token came back as someone else"
        ));
    }
    let seq = client.next_seq();
    let sent = Instant::now();
    client
        .send(&ClientMessage::JoinLobby {
            seq,
            code: code.to_owned(),
            invite: None,
        })
        .await
        .map_err(|e| e.to_string())?;
    let state = answer_and_state(&mut client, seq, code, |_| true)
        .await
        .map_err(|e| format!("{code}: taking the seat back: {e}"))?;
    let took = u64::try_from(sent.elapsed().as_micros()).unwrap_or(u64::MAX);
    let seat = state
        .players
        .iter()
        .position(|p| p.as_ref().is_some_and(|p| p.id == template.joiner_id));
    let Some(seat) = seat else {
        return Err(format!("{code}: the guest is not back in its seat"));
    };
    if !in_play(&state) {
        return Err(format!("{code}: no game in play ({:?})", state.phase));
    }
    let ply = state.game.as_ref().map_or(0, |g| g.ply);
    let mut moved = false;
    if let Some((to_play, notation)) = to_move(&state)
        && to_play == seat
    {
        let seq = client.next_seq();
        client
            .send(&ClientMessage::Move {
                seq,
                notation: Some(notation),
                path: None,
            })
            .await
            .map_err(|e| e.to_string())?;
        answer_and_state(&mut client, seq, code, |s| {
            s.game.as_ref().is_some_and(|g| g.ply == ply + 1)
        })
        .await
        .map_err(|e| format!("{code}: moving after the resume: {e}"))?;
        moved = true;
    }
    let _ = client.close().await;
    Ok((took, moved))
}

/// A new guest watches `code`.
async fn watch(url: &str, code: &str) -> Result<(), String> {
    let (mut client, _, _) = guest(url).await?;
    let seq = client.next_seq();
    client
        .send(&ClientMessage::Watch {
            seq,
            code: code.to_owned(),
            invite: None,
        })
        .await
        .map_err(|e| e.to_string())?;
    answer_and_state(&mut client, seq, code, in_play)
        .await
        .map_err(|e| format!("{code}: watching: {e}"))?;
    let _ = client.close().await;
    Ok(())
}

/// The median round trip of 50 `PING`s to the Redis at `url`, ms.
async fn median_ping_ms(url: &str) -> Result<f64, String> {
    let mut probe = RedisProbe::open(url).await?;
    let mut times = Vec::with_capacity(50);
    for _ in 0..50 {
        let sent = Instant::now();
        probe.ping().await?;
        times.push(sent.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// The whole `resume` command.
pub async fn resume(args: &ResumeArgs) -> Result<ResumeReport, String> {
    let rule_set = parse_rule_set(&args.rule_set)?;
    if args.lobbies.is_empty() || args.lobbies.len() > 5 {
        return Err("--lobbies takes one to five counts".into());
    }
    if !(1..=1000).contains(&args.templates) || args.sample > 10_000 {
        return Err("--templates must be 1 to 1000 and --sample at most 10000".into());
    }
    if !(1.0..=3600.0).contains(&args.patience) || !(0.0..=600.0).contains(&args.settle) {
        return Err("--patience must be 1 to 3600 s and --settle 0 to 600 s".into());
    }
    if !(0.0..=100.0).contains(&args.redis_rtt_ms) {
        return Err("--redis-rtt-ms must be 0 to 100".into());
    }
    if !args.jumpgate.is_file() {
        return Err(format!("{}: no such binary", args.jumpgate.display()));
    }
    let mut runs = Vec::new();
    let mut empty_rss_kib = None;
    for &n in &args.lobbies {
        if n < args.templates || n > MAX_LOBBIES {
            return Err(format!(
                "--lobbies {n}: must be between --templates ({}) and {MAX_LOBBIES}",
                args.templates
            ));
        }
        let redis = RedisServer::start(&args.redis_server, false, None).await?;
        // The resuming server's way to Redis: through the proxy, if a
        // round trip is asked for.
        let proxy = if args.redis_rtt_ms > 0.0 {
            let upstream = redis
                .url
                .trim_start_matches("redis://")
                .trim_end_matches("/0")
                .parse()
                .map_err(|e| format!("{}: {e}", redis.url))?;
            let one_way = Duration::from_secs_f64(args.redis_rtt_ms / 2000.0);
            Some(DelayProxy::start(upstream, one_way).await?)
        } else {
            None
        };
        let resumer_url = proxy
            .as_ref()
            .map_or(redis.url.clone(), |p| format!("redis://{}/0", p.addr));
        let extra_via = |id: &str, url: &str| {
            vec![
                "--redis-url".to_owned(),
                url.to_owned(),
                "--instance-id".to_owned(),
                id.to_owned(),
            ]
        };
        let extra = |id: &str| extra_via(id, &redis.url);
        if empty_rss_kib.is_none() {
            // The same server on the empty Redis, for the baseline memory.
            let empty =
                start_jumpgate_logging("empty", &args.jumpgate, None, &extra("empty"), "warn")
                    .await?;
            tokio::time::sleep(Duration::from_secs(1)).await;
            empty_rss_kib = empty.pid.and_then(net::vm_rss_kib);
            empty.stop().await;
        }
        eprintln!("resume {n}: opening {} template lobbies", args.templates);
        let mut seed =
            start_jumpgate_logging("seed", &args.jumpgate, None, &extra("seed"), "warn").await?;
        let templates = open_templates(&seed.ws_url(), args.templates, rule_set).await?;
        // A crash: nothing handed over.
        seed.kill_now()?;
        seed.halt().await;
        eprintln!("resume {n}: copying to {n} lobbies");
        let (filled, stored) = fill(&redis.url, &templates, n).await?;
        eprintln!(
            "resume {n}: {} lobbies stored in {:.1} s ({:.0} MiB in Redis); starting jumpgate",
            filled.open_set,
            filled.copy_seconds,
            filled.redis_used_memory as f64 / 1_048_576.0
        );
        let redis_rtt_measured_ms = median_ping_ms(&resumer_url).await?;
        let mut probe = RedisProbe::open(&redis.url).await?;
        let redis_cpu = probe.cpu_seconds().await?;
        let commands: u64 = probe.command_calls().await?.values().sum();
        let started = Instant::now();
        let server = start_jumpgate_logging(
            "jumpgate",
            &args.jumpgate,
            None,
            &extra_via("resumer", &resumer_url),
            "warn",
        )
        .await?;
        let resumed = await_resume(
            server.addr,
            server.pid,
            started,
            n,
            rule_set,
            Duration::from_secs_f64(args.patience),
            // The settle is waited below, once Redis's figures are read.
            Duration::ZERO,
        )
        .await;
        let mut resumed = match resumed {
            Ok(resumed) => resumed,
            Err(e) => {
                let tail = server.output_tail();
                server.stop().await;
                return Err(format!("resume {n}: {e}: {tail}"));
            }
        };
        // Read at ready: the resume's cost (the sweeps that start then
        // read a hundred fences a second).
        resumed.redis_cpu_seconds = probe.cpu_seconds().await? - redis_cpu;
        // Less the two INFO commandstats of this probe.
        resumed.redis_commands = probe
            .command_calls()
            .await?
            .values()
            .sum::<u64>()
            .saturating_sub(commands + 2);
        eprintln!(
            "resume {n}: ready after {:.2} s (resume {:.2} s), {} lobbies live; CPU: server {:.2} s, Redis {:.2} s ({} commands)",
            resumed.ready_seconds,
            resumed.resume_seconds_metric,
            resumed.lobbies_live_sum,
            resumed.server_cpu_seconds,
            resumed.redis_cpu_seconds,
            resumed.redis_commands
        );
        tokio::time::sleep(Duration::from_secs_f64(args.settle)).await;
        resumed.rss_kib_settled = server.pid.and_then(net::vm_rss_kib);
        let checked = check(&server.ws_url(), &templates, &sample(&stored, args.sample)).await;
        let transcript = server.transcript();
        server.stop().await;
        redis.stop().await;
        runs.push(ResumeRun {
            lobbies: n,
            redis_rtt_measured_ms,
            kib_per_lobby: resumed
                .rss_kib_settled
                .zip(empty_rss_kib)
                .map(|(k, empty)| (k as f64 - empty as f64) / n as f64),
            filled,
            resumed,
            checked,
            server_errors: transcript.errors,
            first_server_errors: transcript.first_notable.into_iter().take(5).collect(),
        });
    }
    Ok(ResumeReport {
        rule_set: rule_set.as_str().to_owned(),
        redis_rtt_ms: args.redis_rtt_ms,
        templates: args.templates,
        sample: args.sample,
        empty_rss_kib,
        runs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_codes_are_room_codes_and_new() {
        let taken: HashSet<String> = ["23456789".to_owned()].into();
        let codes = fresh_codes(5000, &taken, 7);
        let unique: HashSet<&String> = codes.iter().collect();
        assert_eq!(unique.len(), 5000);
        for code in &codes {
            assert_eq!(code.len(), CODE_LENGTH);
            assert!(code.bytes().all(|b| CODE_ALPHABET.contains(&b)));
            assert!(!taken.contains(code));
        }
    }

    #[test]
    fn samples_spread() {
        let stored: Vec<Stored> = (0..10)
            .map(|i| Stored {
                code: i.to_string(),
                template: 0,
            })
            .collect();
        let picked: Vec<String> = sample(&stored, 3).into_iter().map(|s| s.code).collect();
        assert_eq!(picked, ["0", "3", "6"]);
        assert!(sample(&stored, 0).is_empty());
        assert_eq!(sample(&stored, 50).len(), 10);
    }
}
