//! `data-file`: what the embedded store's data file costs — its size after many
//! finished games, and how long a restart takes with many open lobbies in it.
//!
//! One `jumpgate serve --data-dir DIR` on a fresh directory. First `--games` games
//! are played to their end, `--concurrency` at a time, each the shortest way a real
//! pair finishes one: two new guests open a one-game lobby (the host creates it, the
//! other joins by code), whoever is to move plays a move, and the host resigns. Each
//! leaves in the file what every finished game leaves: its lobby's record, the game's
//! PDN, and both players' "my games" entries (the moves of a finished game are folded
//! into its PDN). The files' sizes are read after them. Then `--lobbies` lobbies are
//! opened the same way and left in play (one move each, both players gone), the
//! sizes are read again, and the server is killed with SIGKILL. A new server on the
//! same directory is timed from its spawn until `/readyz` answers 200, which it does
//! only once every stored open lobby is back; its own `jumpgate_resume_seconds` and
//! `jumpgate_lobbies_live` say how long taking them back took and how many it holds.
//!
//! Guests have no records or leaderboard places; those tables stay empty here.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use jumpgate_harness::{JumpgateOptions, JumpgateProcess};
use jumpgate_protocol::{ClientMessage, Pace, Phase, RuleSet};
use serde::Serialize;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::dormant::{answer_and_state, open_with_a_move};
use crate::{cluster, net};

/// Options of `jumpgate-loadtest data-file`.
#[derive(Debug, Clone, clap::Args)]
pub struct DataFileArgs {
    /// The `jumpgate` server binary to start.
    #[arg(
        long,
        env = "JUMPGATE_LOADTEST_JUMPGATE",
        default_value = "target/release/jumpgate"
    )]
    pub jumpgate: PathBuf,
    /// Games played to their end before the lobbies are opened.
    #[arg(long, default_value_t = 100_000)]
    pub games: usize,
    /// Lobbies left in play in the file when the server is killed.
    #[arg(long, default_value_t = 10_000)]
    pub lobbies: usize,
    /// Games (or lobbies) opened at once.
    #[arg(long, default_value_t = 64)]
    pub concurrency: usize,
    /// The data directory (must not exist or be empty; a temporary one,
    /// removed afterwards, if not given).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Pin the server with `taskset -c CPUS`, e.g. 0.
    #[arg(long)]
    pub server_cpus: Option<String>,
    /// Write the report as JSON here.
    #[arg(long)]
    pub out_json: Option<PathBuf>,
}

/// The data directory's files at one moment, bytes.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct FileSizes {
    /// `jumpgate.db`.
    pub data: u64,
    /// `jumpgate.db-wal`, the log not yet folded into the file.
    pub wal: u64,
}

/// What `data-file` measured.
#[derive(Debug, Clone, Serialize)]
pub struct DataFileReport {
    pub lobbies: usize,
    /// Once the lobbies are open, before the kill.
    pub after_lobbies: FileSizes,
    /// From the new server's spawn until `/readyz` answered 200.
    pub restart_seconds: f64,
    /// The server's `jumpgate_resume_seconds`.
    pub resume_seconds: f64,
    /// `jumpgate_lobbies_live` once it was ready.
    pub lobbies_live: f64,
    pub games: usize,
    pub games_seconds: f64,
    /// Once the games are played, the server still running.
    pub after_games: FileSizes,
    /// After the server stopped (SIGTERM): the log folded into the file.
    pub after_stop: FileSizes,
}

pub async fn run(args: &DataFileArgs) -> Result<DataFileReport, String> {
    let (dir, temporary) = match &args.data_dir {
        Some(dir) => (dir.clone(), false),
        None => (
            std::env::temp_dir().join(format!("jumpgate-data-file-{}", std::process::id())),
            true,
        ),
    };
    if std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_some()) {
        return Err(format!("{} is not empty", dir.display()));
    }
    let report = measure(args, &dir).await;
    if temporary {
        let _ = std::fs::remove_dir_all(&dir);
    }
    report
}

async fn measure(args: &DataFileArgs, dir: &Path) -> Result<DataFileReport, String> {
    let addr = net::free_loopback_addr();
    let options = server_options(args, dir, addr);
    let mut server = JumpgateProcess::start_with(&options).await?;

    eprintln!("data-file: opening {} lobbies", args.lobbies);
    in_parallel(
        args.lobbies,
        args.concurrency,
        &server.ws_url(),
        leave_a_game_in_play,
    )
    .await?;
    let after_lobbies = sizes(dir);
    server.kill_9();
    let spawned = Instant::now();
    let mut server = JumpgateProcess::spawn(&options)?;
    let deadline = spawned + Duration::from_secs(600);
    loop {
        if let Some(status) = server.try_wait() {
            return Err(format!(
                "the restarted server exited ({status}): {}",
                server.output_tail()
            ));
        }
        if net::http_get(addr, "/readyz")
            .await
            .is_some_and(|a| a.status == 200)
        {
            break;
        }
        if Instant::now() > deadline {
            return Err("the restarted server was not ready within 600 s".into());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let restart_seconds = spawned.elapsed().as_secs_f64();
    let page = match net::http_get(addr, "/metrics").await {
        Some(answer) if answer.status == 200 => answer.body,
        _ => return Err("/metrics did not answer".into()),
    };

    eprintln!(
        "data-file: ready again after {restart_seconds:.2} s; playing {} games",
        args.games
    );
    let began = Instant::now();
    in_parallel(
        args.games,
        args.concurrency,
        &server.ws_url(),
        finish_a_game,
    )
    .await?;
    let games_seconds = began.elapsed().as_secs_f64();
    let after_games = sizes(dir);
    let stopped = server.terminate();
    if !stopped.success() {
        return Err(format!("the server did not stop cleanly ({stopped})"));
    }
    Ok(DataFileReport {
        lobbies: args.lobbies,
        after_lobbies,
        restart_seconds,
        resume_seconds: cluster::metric_total(&page, "jumpgate_resume_seconds"),
        lobbies_live: cluster::metric_total(&page, "jumpgate_lobbies_live"),
        games: args.games,
        games_seconds,
        after_games,
        after_stop: sizes(dir),
    })
}

fn server_options(args: &DataFileArgs, dir: &Path, addr: SocketAddr) -> JumpgateOptions {
    let mut options = JumpgateOptions::new("jumpgate", &args.jumpgate);
    options.addr = Some(addr);
    options.cpus = args.server_cpus.clone();
    options.args = vec!["--data-dir".into(), dir.display().to_string()];
    options.env = [
        // Lobbies left in play stay so while the run lasts.
        ("JUMPGATE_MOVE_CLOCK_MS", "600000"),
        (
            "JUMPGATE_TOKEN_SECRET",
            "jumpgate-loadtest-token-secret-0123456789",
        ),
        ("JUMPGATE_INSTANCE_ID", "data-file"),
        ("JUMPGATE_MEMORY", "false"),
        ("JUMPGATE_MAX_CONNECTIONS", "17000"),
        ("RUST_LOG", "warn"),
    ]
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .to_vec();
    options
}

/// Runs `one` `n` times, `concurrency` at a time.
async fn in_parallel<F, Fut>(n: usize, concurrency: usize, url: &str, one: F) -> Result<(), String>
where
    F: Fn(String) -> Fut + Copy + Send + 'static,
    Fut: std::future::Future<Output = Result<(), String>> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = JoinSet::new();
    for _ in 0..concurrency.clamp(1, n.max(1)) {
        let next = next.clone();
        let url = url.to_owned();
        workers.spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < n {
                one(url.clone()).await?;
            }
            Ok::<_, String>(())
        });
    }
    while let Some(done) = workers.join_next().await {
        done.map_err(|e| e.to_string())??;
    }
    Ok(())
}

/// A one-game lobby: a move, then the host resigns and both leave.
async fn finish_a_game(url: String) -> Result<(), String> {
    let mut opened = open_with_a_move(&url, RuleSet::American, Pace::Live).await?;
    let seq = opened.host.next_seq();
    opened
        .host
        .send(&ClientMessage::Resign { seq })
        .await
        .map_err(|e| e.to_string())?;
    answer_and_state(&mut opened.host, seq, &opened.code, |s| {
        s.phase == Phase::Finished
    })
    .await
    .map_err(|e| format!("resigning in {}: {e}", opened.code))?;
    let _ = opened.host.close().await;
    let _ = opened.joiner.close().await;
    Ok(())
}

/// A lobby left in play: a move, then both leave.
async fn leave_a_game_in_play(url: String) -> Result<(), String> {
    let opened = open_with_a_move(&url, RuleSet::American, Pace::Live).await?;
    let _ = opened.host.close().await;
    let _ = opened.joiner.close().await;
    Ok(())
}

fn sizes(dir: &Path) -> FileSizes {
    let len = |name: &str| std::fs::metadata(dir.join(name)).map_or(0, |m| m.len());
    FileSizes {
        data: len("jumpgate.db"),
        wal: len("jumpgate.db-wal"),
    }
}

impl DataFileReport {
    /// The figures as the README quotes them.
    pub fn table(&self) -> String {
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        let size = |f: &FileSizes| format!("{:.1} MiB + {:.1} MiB of log", mib(f.data), mib(f.wal));
        [
            "| data file | figure |".to_owned(),
            "|---|---:|".to_owned(),
            format!(
                "| {} lobbies left in play | {} |",
                self.lobbies,
                size(&self.after_lobbies)
            ),
            format!(
                "| restart after kill -9, spawn to ready | {:.2} s |",
                self.restart_seconds
            ),
            format!(
                "| of which taking the lobbies back (`jumpgate_resume_seconds`) | {:.2} s |",
                self.resume_seconds
            ),
            format!("| lobbies live once ready | {} |", self.lobbies_live),
            format!(
                "| then {} games played to their end | {:.1} s ({:.0} games/s) |",
                self.games,
                self.games_seconds,
                self.games as f64 / self.games_seconds.max(1e-9)
            ),
            format!("| file, the server running | {} |", size(&self.after_games)),
            format!(
                "| file after a clean stop | {} ({:.0} B a lobby or game) |",
                size(&self.after_stop),
                (self.after_stop.data + self.after_stop.wal) as f64
                    / (self.games + self.lobbies).max(1) as f64
            ),
        ]
        .join("\n")
    }

    /// The raw sizes.
    pub fn details(&self) -> String {
        format!(
            "bytes (data + log): after the lobbies {} + {}; after the games {} + {}; after the stop {} + {}\n",
            self.after_lobbies.data,
            self.after_lobbies.wal,
            self.after_games.data,
            self.after_games.wal,
            self.after_stop.data,
            self.after_stop.wal
        )
    }
}
