//! `allocs`: how many heap allocations, and how many bytes, the server makes
//! for one move, in each protocol, in memory or on Redis.
//!
//! It needs a `jumpgate` built to count them (`--features count-allocations`:
//! the process's allocations on `/metrics`). For each protocol it runs the
//! closed-loop game load twice on the same server, a short and a long phase with
//! the same games; the difference between the two phases' allocations, divided
//! by the difference between their moves, is what one more move costs: what
//! the phases spend once (connecting, opening lobbies, the clients' greetings)
//! cancels out. Allocations are counted, not timed, so the figure hardly depends
//! on a quiet machine.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use jumpgate_protocol::{ProtocolVersion, RuleSet};
use serde::Serialize;

use crate::bench::start_jumpgate;
use crate::cluster::start_redis;
use crate::driver::{self, Games, Kind, Pace};
use crate::net;

/// Options of `jumpgate-loadtest allocs`.
#[derive(Debug, Clone, clap::Args)]
pub struct AllocsArgs {
    /// A `jumpgate` built with `--features count-allocations`.
    #[arg(
        long,
        env = "JUMPGATE_LOADTEST_JUMPGATE",
        default_value = "target/count-allocs/release/jumpgate"
    )]
    pub jumpgate: PathBuf,
    /// Run the server on a Redis of its own (started here).
    #[arg(long)]
    pub redis: bool,
    /// The `redis-server` binary, with `--redis`.
    #[arg(long, default_value = "redis-server")]
    pub redis_server: PathBuf,
    /// Drive a running server at this loopback address instead of starting one
    /// (a server run under a heap profiler, say); it must count allocations too.
    #[arg(long)]
    pub server: Option<std::net::SocketAddr>,
    /// Games played at once, as fast as answers come.
    #[arg(long, default_value_t = 20)]
    pub games: usize,
    /// The short phase, seconds; the long one is three times as long.
    #[arg(long, default_value_t = 2.0)]
    pub seconds: f64,
    /// Only this protocol (1 or 2); both when left out.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=2))]
    pub protocol: Option<u32>,
    /// Write the report as JSON here.
    #[arg(long)]
    pub out_json: Option<PathBuf>,
}

/// What one more move cost, in one protocol.
#[derive(Debug, Clone, Serialize)]
pub struct MoveCost {
    pub protocol: u32,
    /// Moves answered in the short and the long phase.
    pub moves: [u64; 2],
    /// Allocations (reallocations included) during each phase.
    pub allocations: [u64; 2],
    pub allocations_per_move: f64,
    pub bytes_per_move: f64,
}

/// The report of `allocs`.
#[derive(Debug, Clone, Serialize)]
pub struct AllocsReport {
    pub store: &'static str,
    pub games: usize,
    pub rule_set: &'static str,
    pub costs: Vec<MoveCost>,
}

impl AllocsReport {
    /// A Markdown table: one row per protocol.
    pub fn table(&self) -> String {
        let mut out = format!(
            "allocs: {} games, {}, server {}\n| protocol | allocations a move | bytes allocated a move | moves (short, long phase) |\n|---:|---:|---:|---|\n",
            self.games, self.rule_set, self.store
        );
        for c in &self.costs {
            out.push_str(&format!(
                "| {} | {:.1} | {:.0} | {}, {} |\n",
                c.protocol, c.allocations_per_move, c.bytes_per_move, c.moves[0], c.moves[1]
            ));
        }
        out
    }
}

/// The counters the server shows: allocations plus reallocations, and bytes.
async fn counted(server: SocketAddr) -> Result<(u64, u64), String> {
    let page = match net::http_get(server, "/metrics").await {
        Some(answer) if answer.status == 200 => answer.body,
        _ => return Err("/metrics did not answer".into()),
    };
    let value = |name: &str| {
        page.lines().find_map(|line| {
            line.strip_prefix(name)?
                .strip_prefix(' ')?
                .parse::<u64>()
                .ok()
        })
    };
    match (
        value("jumpgate_allocations_total"),
        value("jumpgate_reallocations_total"),
        value("jumpgate_allocated_bytes_total"),
    ) {
        (Some(a), Some(r), Some(b)) => Ok((a + r, b)),
        _ => Err(
            "the server's /metrics shows no allocation counts: build it with \
                  `cargo build --release -p jumpgate-server --features count-allocations`"
                .into(),
        ),
    }
}

pub async fn allocs(args: &AllocsArgs) -> Result<AllocsReport, String> {
    let mut redis = None;
    let mut started = None;
    let addr = match args.server {
        Some(addr) => {
            net::require_loopback_addr(addr)?;
            addr
        }
        None => {
            let mut extra = Vec::new();
            if args.redis {
                let r = start_redis(&args.redis_server, false, None).await?;
                extra.extend(["--redis-url".to_owned(), r.url()]);
                redis = Some(r);
            } else {
                extra.push("--memory".to_owned());
            }
            let server = start_jumpgate("jumpgate", &args.jumpgate, None, &extra).await?;
            let addr = server.addr;
            started = Some(server);
            addr
        }
    };
    let url = format!("ws://{addr}/ws");
    counted(addr).await?;
    let rule_set = RuleSet::American;
    let mut costs = Vec::new();
    let protocols = [ProtocolVersion::V1, ProtocolVersion::V2]
        .into_iter()
        .filter(|p| args.protocol.is_none_or(|only| only == p.number()));
    for protocol in protocols {
        let mut moves = [0; 2];
        let mut allocations = [0; 2];
        let mut bytes = [0; 2];
        for (i, seconds) in [args.seconds, args.seconds * 3.0].into_iter().enumerate() {
            let label = format!("allocs v{} {seconds} s", protocol.number());
            eprintln!("phase: {label}: {} games, closed loop", args.games);
            let before = counted(addr).await?;
            let stats = driver::run_phase(
                &label,
                Kind::Jumpgate,
                &url,
                Games {
                    count: args.games,
                    rule_set,
                    protocol,
                },
                Pace::Closed,
                Duration::from_secs_f64(seconds),
            )
            .await?;
            // The phase's last frames and closing connections are counted too.
            tokio::time::sleep(Duration::from_millis(500)).await;
            let after = counted(addr).await?;
            moves[i] = stats.ops;
            allocations[i] = after.0 - before.0;
            bytes[i] = after.1 - before.1;
        }
        let more_moves = moves[1].saturating_sub(moves[0]).max(1) as f64;
        costs.push(MoveCost {
            protocol: protocol.number(),
            moves,
            allocations,
            allocations_per_move: allocations[1].saturating_sub(allocations[0]) as f64 / more_moves,
            bytes_per_move: bytes[1].saturating_sub(bytes[0]) as f64 / more_moves,
        });
    }
    drop(started);
    drop(redis);
    Ok(AllocsReport {
        store: if args.redis { "on Redis" } else { "in memory" },
        games: args.games,
        rule_set: "american",
        costs,
    })
}
