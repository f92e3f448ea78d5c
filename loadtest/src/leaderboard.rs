//! `leaderboard`: how long a page of the public leaderboard takes to read at
//! 10,000, 100,000 and 1,000,000 players, over HTTP from a real server, and how much
//! of Redis's time each read takes.
//!
//! A fresh `redis-server` and one `jumpgate serve` on it. The players are written
//! straight into Redis in the server's layout (`crate::leaderboard` in the server:
//! the standings hash and the sorted order, whose members are the place keys), not by
//! playing; the board grows from one size to the next. Before measuring, the first
//! page is read back and checked against the tie order, so a layout that drifted
//! from the server's fails the run instead of measuring nothing. Then `--reads` pages
//! chosen uniformly over the whole board (deep ones included) are read one after
//! the other on one keep-alive connection. `INFO commandstats` before and after gives
//! Redis's own time per read (the microseconds Redis spent in the read's commands).

use jumpgate_store::keys;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::time::Instant;

use crate::cluster::{self, InstanceOptions, RedisProbe};

/// Players written per pipeline.
const WRITE_BATCH: usize = 2_000;
/// The rule set whose board is filled.
const RULE_SET: &str = "american";

/// Options of `jumpgate-loadtest leaderboard`.
#[derive(Debug, Clone, clap::Args)]
pub struct LeaderboardArgs {
    /// The `jumpgate` server binary to start.
    #[arg(
        long,
        env = "JUMPGATE_LOADTEST_JUMPGATE",
        default_value = "target/release/jumpgate"
    )]
    pub jumpgate: PathBuf,
    /// Board sizes to measure, smallest first (the board grows between them).
    #[arg(long, value_delimiter = ',', default_value = "10000,100000,1000000")]
    pub players: Vec<usize>,
    /// Pages read at each size.
    #[arg(long, default_value_t = 2000)]
    pub reads: usize,
    /// Players per page (the endpoint's `per_page`, at most 100).
    #[arg(long, default_value_t = 25)]
    pub per_page: usize,
    /// Whole-board reads (`HGETALL` of the standings, what a page cost before the
    /// sorted order) timed at each size up to `--whole-board-max`, for comparison.
    #[arg(long, default_value_t = 20)]
    pub whole_board_reads: usize,
    /// Largest board whose whole-board reads are timed.
    #[arg(long, default_value_t = 100_000)]
    pub whole_board_max: usize,
    /// The `redis-server` binary.
    #[arg(long, default_value = "redis-server")]
    pub redis_server: PathBuf,
    /// Write the report as JSON here.
    #[arg(long)]
    pub out_json: Option<PathBuf>,
}

/// One board size.
#[derive(Debug, Clone, Serialize)]
pub struct SizeReport {
    pub players: usize,
    pub reads: usize,
    /// Page read over HTTP, from the request to the last byte, microseconds.
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    /// Redis's time per read (its commands' `usec` in `INFO commandstats`).
    pub redis_us_per_read: f64,
    /// Redis memory used once the board has this many players, bytes.
    pub redis_used_memory: u64,
    /// For comparison, a whole-board read (`HGETALL`, as before the sorted order):
    /// its time at the client (median) and Redis's time per read, when timed.
    pub whole_board_p50_us: Option<u64>,
    pub whole_board_redis_us: Option<f64>,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct LeaderboardReport {
    pub per_page: usize,
    pub sizes: Vec<SizeReport>,
}

impl LeaderboardReport {
    pub fn table(&self) -> String {
        let mut out = format!(
            "leaderboard page read ({} per page, uniform over the board)\n\
             {:>10}  {:>8}  {:>9}  {:>9}  {:>9}  {:>13}  {:>10}  {:>18}\n",
            self.per_page,
            "players",
            "reads",
            "p50 ms",
            "p99 ms",
            "max ms",
            "Redis µs/read",
            "Redis MB",
            "whole board ms/µs"
        );
        for s in &self.sizes {
            let whole = match (s.whole_board_p50_us, s.whole_board_redis_us) {
                (Some(p50), Some(redis)) => format!("{:.1} / {redis:.0}", p50 as f64 / 1000.0),
                _ => "not timed".to_owned(),
            };
            out.push_str(&format!(
                "{:>10}  {:>8}  {:>9.3}  {:>9.3}  {:>9.3}  {:>13.1}  {:>10.1}  {whole:>18}\n",
                s.players,
                s.reads,
                s.p50_us as f64 / 1000.0,
                s.p99_us as f64 / 1000.0,
                s.max_us as f64 / 1000.0,
                s.redis_us_per_read,
                s.redis_used_memory as f64 / 1_048_576.0,
            ));
        }
        out
    }

    pub fn details(&self) -> String {
        "Redis µs/read: ZCARD + ZRANGE + EXISTS, as timed by Redis itself.\n\
         whole board: one HGETALL of the standings (what every page read cost before the \
         sorted order), median at the client in ms / Redis's µs per call.\n"
            .to_owned()
    }
}

/// A generated player: counts spread so that ties on points, wins and games are
/// common and names repeat, as on a real board.
fn standing(n: usize) -> (String, u32, u32, u32, String) {
    let mut x = (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5151;
    let mut next = |m: u64| {
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 29;
        (x % m) as u32
    };
    let wins = next(60);
    let draws = next(30);
    let losses = next(60);
    let name = format!("Player {}", next(50_000));
    (format!("a_{n}"), wins, draws, losses, name)
}

/// The server's place key (`PlaceKey::new` in the server's `leaderboard` module).
fn place_key(account: &str, points: u32, wins: u32, games: u32, name: &str) -> String {
    format!(
        "{:010}{:010}{:010}{name}\0{account}",
        u32::MAX - points,
        u32::MAX - wins,
        games
    )
}

/// Writes players `from..to` into the board, in the server's layout.
async fn fill(probe: &mut RedisProbe, from: usize, to: usize) -> Result<(), String> {
    let board = keys::board_key(RULE_SET);
    let order = keys::board_order_key(RULE_SET);
    let mut n = from;
    while n < to {
        let end = (n + WRITE_BATCH).min(to);
        let mut pipe = redis::pipe();
        for i in n..end {
            let (account, wins, draws, losses, name) = standing(i);
            let points = 3 * wins + draws;
            let games = wins + draws + losses;
            let json = serde_json::json!({
                "name": name, "points": points, "wins": wins,
                "draws": draws, "losses": losses, "games": games,
            });
            pipe.hset(&board, &account, json.to_string())
                .ignore()
                .zadd(&order, place_key(&account, points, wins, games, &name), 0)
                .ignore();
        }
        pipe.set(keys::board_ordered_key(RULE_SET), 1).ignore();
        probe.query(&pipe).await?;
        n = end;
    }
    Ok(())
}

/// One keep-alive HTTP/1.1 connection to the server.
struct Http {
    reader: BufReader<tokio::net::TcpStream>,
}

impl Http {
    async fn connect(addr: std::net::SocketAddr) -> Result<Http, String> {
        let stream = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(Http {
            reader: BufReader::new(stream),
        })
    }

    /// GETs `path`; the status and the body.
    async fn get(&mut self, path: &str) -> Result<(u16, String), String> {
        let request = format!("GET {path} HTTP/1.1\r\nHost: loadtest\r\n\r\n");
        self.reader
            .get_mut()
            .write_all(request.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut status = 0;
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            self.reader
                .read_line(&mut line)
                .await
                .map_err(|e| e.to_string())?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if status == 0 {
                status = l
                    .split_whitespace()
                    .nth(1)
                    .and_then(|s| s.parse().ok())
                    .ok_or("no status line")?;
            } else if let Some((k, v)) = l.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().map_err(|_| "bad content-length")?;
            }
        }
        let mut body = vec![0; length];
        self.reader
            .read_exact(&mut body)
            .await
            .map_err(|e| e.to_string())?;
        Ok((status, String::from_utf8_lossy(&body).into_owned()))
    }
}

/// Checks a page against the tie order: points down, then wins down, then games
/// up, then name up, and the board's size.
fn check_page(body: &str, players: usize) -> Result<(), String> {
    let page: serde_json::Value =
        serde_json::from_str(body).map_err(|e| format!("unreadable page: {e}"))?;
    if page["total"].as_u64() != Some(players as u64) {
        return Err(format!(
            "the board holds {} players, not {players}",
            page["total"]
        ));
    }
    let rank = |e: &serde_json::Value| {
        (
            std::cmp::Reverse(e["points"].as_u64().unwrap_or(0)),
            std::cmp::Reverse(e["wins"].as_u64().unwrap_or(0)),
            e["games"].as_u64().unwrap_or(0),
            e["name"].as_str().unwrap_or("").to_owned(),
        )
    };
    let entries = page["entries"].as_array().ok_or("no entries")?;
    if entries.is_empty() || !entries.windows(2).all(|w| rank(&w[0]) <= rank(&w[1])) {
        return Err(format!("the page is not in the tie order: {body}"));
    }
    Ok(())
}

/// Times `reads` whole-board reads (`HGETALL` of the standings): the median at
/// the client, microseconds, and Redis's microseconds per call.
async fn whole_board(probe: &mut RedisProbe, reads: usize) -> Result<(u64, f64), String> {
    let board = keys::board_key(RULE_SET);
    let usec = |stats: &std::collections::BTreeMap<String, u64>| {
        stats.get("hgetall").copied().unwrap_or(0)
    };
    let before = usec(&probe.command_usec().await?);
    let mut took = Vec::with_capacity(reads);
    for _ in 0..reads {
        let sent = Instant::now();
        probe.query(redis::pipe().hgetall(&board).ignore()).await?;
        took.push(sent.elapsed().as_micros() as u64);
    }
    let after = usec(&probe.command_usec().await?);
    took.sort_unstable();
    Ok((took[took.len() / 2], (after - before) as f64 / reads as f64))
}

/// Redis's microseconds in the commands a page read sends, so far.
async fn read_usec(probe: &mut RedisProbe) -> Result<u64, String> {
    let stats = probe.command_usec().await?;
    Ok(["zcard", "zrange", "exists"]
        .iter()
        .map(|c| stats.get(*c).copied().unwrap_or(0))
        .sum())
}

/// What to measure: board sizes, reads and page size (see [`LeaderboardArgs`]).
#[derive(Debug, Clone)]
pub struct Plan {
    pub players: Vec<usize>,
    pub reads: usize,
    pub per_page: usize,
    pub whole_board_reads: usize,
    pub whole_board_max: usize,
}

impl Plan {
    fn check(&self) -> Result<(), String> {
        if self.players.is_empty() || !self.players.windows(2).all(|w| w[0] < w[1]) {
            return Err("--players must be rising sizes".into());
        }
        if !(1..=100).contains(&self.per_page) || self.reads == 0 {
            return Err("--per-page must be 1 to 100 and --reads at least 1".into());
        }
        Ok(())
    }
}

/// The whole `leaderboard` command: a fresh Redis and one instance on it.
pub async fn leaderboard(args: &LeaderboardArgs) -> Result<LeaderboardReport, String> {
    let plan = Plan {
        players: args.players.clone(),
        reads: args.reads,
        per_page: args.per_page,
        whole_board_reads: args.whole_board_reads,
        whole_board_max: args.whole_board_max,
    };
    plan.check()?;
    let redis = cluster::start_redis(&args.redis_server, false, None).await?;
    let instances = cluster::start_instances(&InstanceOptions {
        program: args.jumpgate.clone(),
        count: 1,
        redis_url: redis.url(),
        heartbeat_ttl_ms: 3000,
        log: "error".into(),
    })
    .await?;
    let report = measure(&redis.url(), instances[0].process.addr, &plan).await;
    for instance in instances {
        instance.process.stop();
    }
    redis.stop();
    report
}

/// Fills the board of the Redis at `redis_url` (which the server at `server`
/// uses) to each size of the plan in turn, and reads pages from the server.
pub async fn measure(
    redis_url: &str,
    server: std::net::SocketAddr,
    plan: &Plan,
) -> Result<LeaderboardReport, String> {
    plan.check()?;
    cluster::require_loopback_redis(redis_url)?;
    let mut probe = RedisProbe::open(redis_url).await?;
    let mut http = Http::connect(server).await?;
    let mut sizes = Vec::new();
    let mut written = 0;
    for &players in &plan.players {
        let started = Instant::now();
        fill(&mut probe, written, players).await?;
        written = players;
        eprintln!(
            "leaderboard: {players} players written in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let first = format!("/api/leaderboards/{RULE_SET}?page=1&per_page=100");
        let (status, body) = http.get(&first).await?;
        if status != 200 {
            return Err(format!("{first} answered {status}: {body}"));
        }
        check_page(&body, players)?;

        let pages = players.div_ceil(plan.per_page) as u64;
        let mut histogram = crate::driver::new_histogram();
        let mut x = players as u64 ^ 0x2545_f491_4f6c_dd1d;
        let before = read_usec(&mut probe).await?;
        for _ in 0..plan.reads {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let page = x % pages + 1;
            let path = format!(
                "/api/leaderboards/{RULE_SET}?page={page}&per_page={}",
                plan.per_page
            );
            let sent = Instant::now();
            let (status, body) = http.get(&path).await?;
            let took = sent.elapsed();
            if status != 200 || !body.contains("\"entries\":[{") {
                return Err(format!("{path} answered {status}: {body}"));
            }
            histogram
                .record(took.as_micros().max(1) as u64)
                .map_err(|e| e.to_string())?;
        }
        let after = read_usec(&mut probe).await?;
        let (whole_board_p50_us, whole_board_redis_us) =
            if plan.whole_board_reads > 0 && players <= plan.whole_board_max {
                let (p50, redis) = whole_board(&mut probe, plan.whole_board_reads).await?;
                (Some(p50), Some(redis))
            } else {
                (None, None)
            };
        sizes.push(SizeReport {
            players,
            reads: plan.reads,
            p50_us: histogram.value_at_quantile(0.50),
            p99_us: histogram.value_at_quantile(0.99),
            max_us: histogram.max(),
            redis_us_per_read: (after - before) as f64 / plan.reads as f64,
            redis_used_memory: probe.used_memory().await?,
            whole_board_p50_us,
            whole_board_redis_us,
        });
        // Let the server's and Redis's background work settle between sizes.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(LeaderboardReport {
        per_page: plan.per_page,
        sizes,
    })
}
