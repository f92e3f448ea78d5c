//! The `jumpgate-loadtest` binary: `bench` runs the whole comparison, `bench-bots`
//! compares human move latency with and without bot games, `echo-server` runs the
//! baseline server on its own; `failover` and `ownership-cost` measure ownership
//! across several instances on one Redis; `leaderboard` times a leaderboard page at
//! 10k to 1M players; `edge` measures the server's connection cap, deadlines and
//! per-address limits under abuse; `dormant` measures the memory of unloaded
//! correspondence lobbies and the time to load one on a join; `bench-cluster`
//! compares saturated moves/s on a Redis Cluster and on one Redis; `data-file` measures
//! the embedded store's file size and restart time. Retired
//! experiments are listed in loadtest/README.md with the commit that last had them.

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use jumpgate_loadtest::{
    allocs, bench, bench_cluster, bots, data_file, dormant, echo, edge, failover, leaderboard, net,
    ownership_cost, solo_wait, svg,
};
use serde::Serialize;

#[derive(Debug, Parser)]
#[command(
    name = "jumpgate-loadtest",
    version,
    about = "Load tester for Jumpgate, with a WebSocket echo server as the baseline"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start Jumpgate and the echo server, run every phase, print the table.
    Bench(Box<bench::BenchArgs>),
    /// Start Jumpgate and measure human move latency without and then with solo games
    /// against the Executive keeping the bot pool busy.
    BenchBots(Box<bots::BotsArgs>),
    /// Start an instance (and, with --workers, a Redis and bot-worker processes) for
    /// each player count and measure how long players wait for the Executive's moves.
    SoloWait(Box<solo_wait::SoloWaitArgs>),
    /// Start Redis, several instances and HAProxy, kill the instance owning most
    /// rooms, and time its rooms until they are playable again.
    Failover(Box<failover::FailoverArgs>),
    /// Start Redis and several instances and count the Redis commands they send
    /// with no rooms and with idle rooms.
    OwnershipCost(Box<ownership_cost::OwnershipCostArgs>),
    /// Start Redis and one instance, write players straight into a leaderboard and
    /// time page reads at each board size.
    Leaderboard(Box<leaderboard::LeaderboardArgs>),
    /// Start Jumpgate with its edge limits and measure them under abuse: connections
    /// at the cap, half-open and un-greeted connections, an innocent game under a flood.
    Edge(Box<edge::EdgeArgs>),
    /// Start Redis and one instance, open correspondence lobbies, let the server
    /// unload them, and measure its memory per unloaded lobby and the join latency
    /// to a lobby in memory and to an unloaded one.
    Dormant(Box<dormant::DormantArgs>),
    /// Start one Redis and a three-master Redis Cluster, a Jumpgate on each, and run
    /// the same saturation load on both.
    BenchCluster(Box<bench_cluster::BenchClusterArgs>),
    /// Start one instance on a fresh data directory, play games to their end and leave
    /// lobbies in play, then kill it and time a restart: the embedded store's file
    /// size and restart time.
    DataFile(Box<data_file::DataFileArgs>),
    /// Start a Jumpgate built with `--features count-allocations` and count the
    /// heap allocations and bytes one more move costs, in each protocol.
    Allocs(Box<allocs::AllocsArgs>),
    /// Run the echo baseline: every data frame is sent back as is.
    EchoServer {
        /// Loopback address to listen on.
        #[arg(long, env = "JUMPGATE_ECHO_LISTEN", default_value = "127.0.0.1:8081")]
        listen: SocketAddr,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(args) => run_bench(&args),
        Command::BenchBots(args) => run_bench_bots(&args),
        Command::SoloWait(args) => run_solo_wait(&args),
        Command::Allocs(args) => run_allocs(&args),
        Command::EchoServer { listen } => run_echo(listen),
        Command::BenchCluster(args) => run_bench_cluster(&args),
        Command::Failover(args) => runtime().and_then(|rt| {
            let report = rt.block_on(failover::failover(&args))?;
            print_report(&report.table(), &report.details(), &report, &args.out_json)
        }),
        Command::OwnershipCost(args) => runtime().and_then(|rt| {
            let report = rt.block_on(ownership_cost::ownership_cost(&args))?;
            print_report(&report.table(), &report.details(), &report, &args.out_json)
        }),
        Command::Leaderboard(args) => runtime().and_then(|rt| {
            let report = rt.block_on(leaderboard::leaderboard(&args))?;
            print_report(&report.table(), &report.details(), &report, &args.out_json)
        }),
        Command::Edge(args) => run_edge(&args),
        Command::DataFile(args) => runtime().and_then(|rt| {
            let report = rt.block_on(data_file::run(&args))?;
            print_report(&report.table(), &report.details(), &report, &args.out_json)
        }),
        Command::Dormant(args) => runtime().and_then(|rt| {
            let report = rt.block_on(dormant::dormant(&args))?;
            print_report(&report.table(), &report.details(), &report, &args.out_json)
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("jumpgate-loadtest: {message}");
            ExitCode::from(2)
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Runtime::new().map_err(|e| format!("cannot start tokio: {e}"))
}

fn run_bench_cluster(args: &bench_cluster::BenchClusterArgs) -> Result<(), String> {
    // Before the runtime exists, so its worker threads inherit the affinity.
    if let Some(cpus) = &args.client_cpus {
        pin_self(cpus)?;
    }
    let report = runtime()?.block_on(bench_cluster::bench_cluster(args))?;
    print_report(&report.table(), &report.details(), &report, &args.out_json)
}

fn run_edge(args: &edge::EdgeArgs) -> Result<(), String> {
    // Before the runtime exists, so its worker threads inherit the affinity.
    if let Some(cpus) = &args.client_cpus {
        pin_self(cpus)?;
    }
    let report = runtime()?.block_on(edge::edge(args))?;
    print_report(&report.table(), &report.details(), &report, &args.out_json)
}

/// Prints the table and details, and writes the report as JSON when asked.
fn print_report(
    table: &str,
    details: &str,
    report: &impl Serialize,
    out_json: &Option<std::path::PathBuf>,
) -> Result<(), String> {
    println!("{table}");
    print!("{details}");
    write_json(report, out_json)
}

/// Writes `report` as pretty JSON to `out_json`, when given.
fn write_json(
    report: &impl Serialize,
    out_json: &Option<std::path::PathBuf>,
) -> Result<(), String> {
    if let Some(path) = out_json {
        let json = serde_json::to_string_pretty(report).map_err(|e| e.to_string())?;
        std::fs::write(path, json + "\n")
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

fn run_echo(listen: SocketAddr) -> Result<(), String> {
    net::require_loopback_addr(listen)?;
    runtime()?.block_on(async {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
        eprintln!("echo server listening on {listen}");
        echo::serve(listener, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await;
        Ok(())
    })
}

/// Pins this process (all its threads, and the ones made later) to `cpus`.
fn pin_self(cpus: &str) -> Result<(), String> {
    let status = std::process::Command::new("taskset")
        .args(["-a", "-p", "-c", cpus, &std::process::id().to_string()])
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("cannot run taskset: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("taskset -c {cpus} failed: {status}"))
    }
}

fn run_bench(args: &bench::BenchArgs) -> Result<(), String> {
    // Before the runtime exists, so its worker threads inherit the affinity.
    if let Some(cpus) = &args.client_cpus {
        pin_self(cpus)?;
    }
    let report = runtime()?.block_on(bench::bench(args))?;
    println!("{}", report.table());
    print!("{}", report.details());
    write_json(&report, &args.out_json)?;
    if let Some(path) = &args.out_svg {
        std::fs::write(path, svg::latency_plot(&report))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

fn run_allocs(args: &allocs::AllocsArgs) -> Result<(), String> {
    let report = runtime()?.block_on(allocs::allocs(args))?;
    println!("{}", report.table());
    write_json(&report, &args.out_json)
}

fn run_solo_wait(args: &solo_wait::SoloWaitArgs) -> Result<(), String> {
    let report = runtime()?.block_on(solo_wait::solo_wait(args))?;
    write_json(&report, &args.out_json)?;
    Ok(())
}

fn run_bench_bots(args: &bots::BotsArgs) -> Result<(), String> {
    // Before the runtime exists, so its worker threads inherit the affinity.
    if let Some(cpus) = &args.client_cpus {
        pin_self(cpus)?;
    }
    let report = runtime()?.block_on(bots::bench_bots(args))?;
    println!("{}", report.table());
    print!("{}", report.details());
    write_json(&report, &args.out_json)?;
    Ok(())
}
