//! The `jumpgate` binary: parses the command line and hands over to the
//! library. `serve` runs the server; `perft` counts move trees; `ladder`
//! plays the computer opponents against each other; `versus` plays the
//! Executive against its previous version; `selfplay` and `tune` fit the
//! Executive's evaluation weights; `book` builds its opening book.

use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};
use jumpgate_server::rules::orbit::OrbitGame;
use jumpgate_server::rules::space::{SpaceGame, SpaceMove};
use jumpgate_server::rules::{Position, Variant, fen, perft};

/// Every message builds and drops a state's many small strings and vectors;
/// mimalloc serves them faster than glibc's allocator (see loadtest/README.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(
    name = "jumpgate",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("JUMPGATE_BUILD_COMMIT"), ")"),
    about = "Jumpgate: a realtime checkers lobby server"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the lobby server.
    Serve(Box<jumpgate_server::config::ServeConfig>),
    /// Count the leaves of the move tree from a position (single-threaded).
    Perft(PerftArgs),
    /// Play the computer levels against each other and print their scores.
    Ladder(LadderArgs),
    /// Play the Executive against its previous version and print the score.
    Versus(VersusArgs),
    /// Write self-play positions with their games' results, for `tune`.
    Selfplay(SelfplayArgs),
    /// Fit the Executive's evaluation weights to `selfplay` positions and
    /// print them as Rust for bots/src/weights.rs.
    Tune(TuneArgs),
    /// Build the Executive's opening book of a rule set (bots/book/).
    Book(BookArgs),
}

#[derive(Debug, clap::Args)]
struct PerftArgs {
    /// Rule set: american, brazilian, russian, spanish, italian, thai,
    /// space (Space Mode) or orbit (the orbit game).
    #[arg(long, default_value = "american")]
    variant: Variant,
    /// Plies to search.
    #[arg(long)]
    depth: u32,
    /// Start from this PDN FEN instead of the rule set's start position.
    #[arg(long)]
    fen: Option<String>,
    /// Count capture paths with the same origin, destination and captured
    /// set once per node.
    #[arg(long)]
    unique: bool,
    /// Also print the count below each first move.
    #[arg(long)]
    divide: bool,
    /// Space Mode only: the game's seed (it places the wormholes).
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn run_perft(args: &PerftArgs) -> Result<(), String> {
    let rs = match args.variant {
        Variant::Draughts(rs) => rs,
        kind @ (Variant::Space | Variant::Orbit) => {
            if args.fen.is_some() || args.unique {
                return Err(format!(
                    "--fen and --unique are for the draughts rule sets, not {}",
                    kind.name()
                ));
            }
            return run_game_perft(kind, args);
        }
    };
    let pos = match &args.fen {
        Some(text) => fen::parse(rs, text).map_err(|e| format!("bad FEN: {e}"))?,
        None => Position::start(rs),
    };
    if args.divide {
        let game = jumpgate_server::rules::Game::from_position(rs, pos);
        for (m, n) in perft::divide(rs, &pos, args.depth, args.unique) {
            println!("{} {n}", game.move_text(&m));
        }
    }
    let started = Instant::now();
    let leaves = perft::perft(rs, &pos, args.depth, args.unique);
    let secs = started.elapsed().as_secs_f64();
    let rate = per_second(leaves, secs);
    println!(
        "perft {rs} depth {} {}: {leaves} leaves in {secs:.3} s ({:.1} M leaves/s)",
        args.depth,
        if args.unique { "unique" } else { "paths" },
        rate / 1e6
    );
    Ok(())
}

/// Perft for Space Mode and the orbit game, by their engines' own counts.
fn run_game_perft(kind: Variant, args: &PerftArgs) -> Result<(), String> {
    let started;
    let leaves;
    let what;
    match kind {
        Variant::Space => {
            let game = SpaceGame::new(args.seed);
            if args.divide && args.depth > 0 {
                for m in game.legal_moves() {
                    let mut next = game.clone();
                    next.play(&m).map_err(|e| e.to_string())?;
                    println!("{} {}", space_move_text(&m), next.perft(args.depth - 1));
                }
            }
            started = Instant::now();
            leaves = game.perft(args.depth);
            what = format!("results, seed {}", args.seed);
        }
        Variant::Orbit => {
            let game = OrbitGame::new();
            if args.divide && args.depth > 0 {
                for m in game.legal_moves() {
                    let mut next = game.clone();
                    next.play(&m).map_err(|e| e.to_string())?;
                    println!("{} {}", game.move_text(&m), next.perft(args.depth - 1));
                }
            }
            started = Instant::now();
            leaves = game.perft(args.depth);
            what = "moves".to_owned();
        }
        Variant::Draughts(_) => unreachable!("draughts perft is run_perft's"),
    }
    let secs = started.elapsed().as_secs_f64();
    let rate = per_second(leaves, secs);
    println!(
        "perft {} depth {} {what}: {leaves} leaves in {secs:.3} s ({:.1} M leaves/s)",
        kind.name(),
        args.depth,
        rate / 1e6
    );
    Ok(())
}

/// A Space Mode move as clicked: `c3-d4`, `c3xe5xg7`, a boost marked `^`.
fn space_move_text(m: &SpaceMove) -> String {
    let joint = if m.captured.is_empty() { "-" } else { "x" };
    let squares: Vec<String> = m.path.iter().map(|sq| format!("{sq:?}")).collect();
    let mut text = squares.join(joint);
    if m.boost {
        text.push('^');
    }
    text
}

/// An optional listen address for the start-up log: the address, or "off".
fn shown(addr: Option<std::net::SocketAddr>) -> String {
    addr.map_or_else(|| "off".to_owned(), |a| a.to_string())
}

fn serve(config: &jumpgate_server::config::ServeConfig) -> Result<(), String> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    if config.log_json {
        builder.json().init();
    } else {
        builder.init();
    }
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let settings = jumpgate_server::config::Settings::from_config(config, addr)?;
        tracing::info!(
            listen = %addr,
            public_url = %settings.public_url,
            move_clock_ms = settings.move_clock.as_millis() as u64,
            break_ms = settings.break_time.as_millis() as u64,
            token_secret = "<redacted>",
            redis = settings.redis_url.is_some(),
            metrics_listen = %shown(settings.metrics_listen),
            shutdown_grace_ms = settings.shutdown_grace.as_millis() as u64,
            resume_grace_ms = settings.resume_grace.as_millis() as u64,
            resume_batch = settings.resume_batch,
            instance = %settings.instance_id,
            accounts_issuer = settings.accounts.as_ref().map_or("", |a| a.issuer.as_str()),
            accounts_audience = settings.accounts.as_ref().map_or("", |a| a.audience.as_str()),
            account_keys = settings.accounts.as_ref().map_or(0, |a| a.hs256.len() + a.rs256.len() + a.eddsa.len()),
            initial_grant = settings.wallet_rules.initial_grant,
            daily_cap = settings.wallet_rules.daily_cap,
            admin_api = settings.admin_token.is_some(),
            admin_listen = %shown(settings.admin_listen),
            rank_thresholds = %settings.rank_thresholds.0.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
            ranked_ply_cap = settings.ranked_ply_cap,
            bot_threads = settings.bot_threads,
            executive_ms = settings.executive_budget.as_millis() as u64,
            tcp_nodelay = settings.tcp_nodelay,
            "jumpgate listening"
        );
        match &settings.redis_url {
            Some(_) => tracing::info!("lobbies, wallets, records and leaderboards are stored in Redis"),
            None => tracing::warn!(
                "no Redis configured (--redis-url): lobbies, wallets, records and leaderboards \
                 live in memory and will not survive a restart"
            ),
        }
        let shutdown = async {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            let sigterm = async {
                match term.as_mut() {
                    Some(term) => {
                        term.recv().await;
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                () = sigterm => {}
            }
            tracing::info!("shutting down");
        };
        jumpgate_server::run(listener, settings, shutdown)
            .await
            .map_err(|e| e.to_string())
    })
}

#[derive(Debug, clap::Args)]
struct LadderArgs {
    /// Games per pairing and rule set (rounded up to an even number: each
    /// opening is played with both colours).
    #[arg(long, default_value_t = 16)]
    games: usize,
    /// Only these rule sets, comma-separated: the six draughts rule sets,
    /// space (Space Mode), orbit (the orbit game). Default: all eight.
    #[arg(long, value_delimiter = ',')]
    rule_set: Vec<Variant>,
    /// The Executive's time per move in the ladder, in milliseconds (the
    /// server default is 1000; smaller keeps the ladder short).
    #[arg(long, default_value_t = 100)]
    executive_ms: u64,
    /// Games played at once.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Plies after which a game is scored as a draw.
    #[arg(long, default_value_t = 300)]
    ply_cap: usize,
    /// Seeds the openings and the bots.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// Plays each level against the level below in every rule set and prints
/// the upper level's score (the games are `jumpgate_bots::ladder`'s).
fn run_ladder(args: &LadderArgs) -> Result<(), String> {
    use jumpgate_server::bots::ladder::{self, LadderConfig};
    let config = LadderConfig {
        games: args.games,
        rule_sets: if args.rule_set.is_empty() {
            Variant::ALL.to_vec()
        } else {
            args.rule_set.clone()
        },
        executive: std::time::Duration::from_millis(args.executive_ms),
        threads: args.threads.max(1),
        ply_cap: args.ply_cap,
        seed: args.seed,
    };
    println!(
        "ladder: {} games per pairing, openings of 2-4 random plies, ply cap {}, \
         Executive at {} ms per move (server default 1000 ms), {} threads, seed {}",
        config.games_per_pairing(),
        args.ply_cap,
        args.executive_ms,
        config.threads,
        args.seed
    );
    let started = Instant::now();
    let rows = ladder::run(&config);
    println!(
        "{:<10} {:<21} {:>5} {:>4} {:>4} {:>4} {:>7} {:>6}",
        "rule set", "pairing", "games", "W", "D", "L", "score", "capped"
    );
    let weak = rows.iter().filter(|r| r.score() < 75.0).count();
    for row in &rows {
        println!(
            "{:<10} {:<21} {:>5} {:>4} {:>4} {:>4} {:>6.1}% {:>6}",
            row.rule_set.name(),
            format!("{} v {}", row.upper.title(), row.lower.title()),
            row.games,
            row.wins,
            row.draws,
            row.losses,
            row.score(),
            row.capped
        );
    }
    println!(
        "{} of {} pairings below the 75% goal; {:.0} s",
        weak,
        rows.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

#[derive(Debug, clap::Args)]
struct VersusArgs {
    /// Rule sets, comma-separated (draughts only).
    #[arg(long, value_delimiter = ',', default_value = "russian")]
    rule_set: Vec<jumpgate_server::rules::RuleSet>,
    /// Balanced openings per rule set, each played with both colours.
    #[arg(long, default_value_t = 12)]
    openings: usize,
    /// Time per move for both sides, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    ms: u64,
    /// Plies after which a game is scored as a draw.
    #[arg(long, default_value_t = 300)]
    ply_cap: usize,
    /// Seeds the openings.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Games played at once (1 keeps the timing fair on a busy machine).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Both sides search this many nodes a move instead of `--ms`: an
    /// evaluation-only comparison that the machine's load cannot skew.
    #[arg(long)]
    nodes: Option<u64>,
    /// Try these weights (a `tune` output) for the current Executive;
    /// only with one rule set.
    #[arg(long)]
    weights: Option<std::path::PathBuf>,
    /// The frozen version to play against: v1 or v2.
    #[arg(long, default_value = "v1")]
    baseline: jumpgate_server::bots::ExecutiveVersion,
    /// Try these search refinements for the current Executive
    /// (comma-separated: lmr, aspiration, history, table, threat, unsure, whole; or none).
    #[arg(long, value_parser = jumpgate_server::bots::SearchFeatures::parse)]
    search: Option<jumpgate_server::bots::SearchFeatures>,
}

/// Plays the current Executive against a frozen one
/// (`jumpgate_bots::versus`) and prints each game and the total.
fn run_versus(args: &VersusArgs) -> Result<(), String> {
    use jumpgate_server::bots::versus::{self, OPENING_PLIES, VersusConfig, VersusGame};
    let config = VersusConfig {
        rule_sets: args.rule_set.clone(),
        openings: args.openings,
        time_budget: std::time::Duration::from_millis(args.ms),
        baseline: args.baseline,
        ply_cap: args.ply_cap,
        seed: args.seed,
        threads: args.threads.max(1),
        nodes: args.nodes,
        search: args.search,
        weights: match &args.weights {
            Some(path) if args.rule_set.len() == 1 => {
                Some(&*Box::leak(Box::new(read_weights(path, args.rule_set[0])?)))
            }
            Some(_) => return Err("--weights needs exactly one --rule-set".into()),
            None => None,
        },
    };
    let pace = match args.nodes {
        Some(n) => format!("{n} nodes a move"),
        None => format!("{} ms a move", args.ms),
    };
    let base = args.baseline.name();
    println!(
        "versus: Executive (current) v Executive {base}, {} balanced openings of {} random plies \
         per rule set, both colours, {pace}, ply cap {}, seed {}{}",
        args.openings,
        OPENING_PLIES,
        args.ply_cap,
        args.seed,
        args.search
            .map_or(String::new(), |s| format!(", current's search {s:?}"))
    );
    let started = Instant::now();
    let line = |g: &VersusGame| {
        println!(
            "{:<10} opening {:>2} current as {:<5} {:>3} {:>4} plies  ms/move current {:>4} {base} {:>4}  depth {:.1}",
            g.rule_set.name(),
            g.opening,
            g.current_color.name(),
            match g.score {
                1.0 => "1-0",
                0.0 => "0-1",
                _ => "½-½",
            },
            g.plies,
            g.used[0].as_millis() / u128::from(g.searched[0].max(1)),
            g.used[1].as_millis() / u128::from(g.searched[1].max(1)),
            g.depth_sum as f64 / f64::from(g.searched[0].max(1)),
        );
    };
    let games = versus::run(&config, line);
    for rs in &args.rule_set {
        let these: Vec<&VersusGame> = games.iter().filter(|g| g.rule_set == *rs).collect();
        summarise(rs.name(), base, &these);
    }
    if args.rule_set.len() > 1 {
        summarise("all", base, &games.iter().collect::<Vec<_>>());
    }
    println!("{:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Reads the weights that `tune` printed: its `mg: [...]` and `eg: [...]`.
fn read_weights(
    path: &std::path::Path,
    rule_set: jumpgate_server::rules::RuleSet,
) -> Result<jumpgate_server::bots::tuned::TunedWeights, String> {
    use jumpgate_server::bots::tuned::{FEATURES, NAMED_FEATURES, TunedWeights};
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let list = |name: &str| -> Result<[i32; FEATURES], String> {
        let start = text
            .find(&format!("{name}: ["))
            .ok_or_else(|| format!("{}: no {name}", path.display()))?;
        let rest = &text[start + name.len() + 3..];
        let end = rest.find(']').ok_or("unclosed list")?;
        let values: Vec<i32> = rest[..end]
            .split(',')
            .map(|v| v.trim().parse::<i32>().map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()?;
        // A list of the named features alone leaves every man square at 0.
        let mut all = [0; FEATURES];
        if values.len() != FEATURES && values.len() != NAMED_FEATURES {
            return Err(format!(
                "{name} needs {NAMED_FEATURES} or {FEATURES} weights"
            ));
        }
        all[..values.len()].copy_from_slice(&values);
        Ok(all)
    };
    Ok(TunedWeights {
        mg: list("mg")?,
        eg: list("eg")?,
        start_men: TunedWeights::for_rule_set(rule_set).start_men,
    })
}

/// Prints a group of versus games: score, Elo and time use.
fn summarise(name: &str, base: &str, games: &[&jumpgate_server::bots::versus::VersusGame]) {
    use jumpgate_server::bots::versus::elo;
    let n = games.len();
    if n == 0 {
        return;
    }
    let points: f64 = games.iter().map(|g| g.score).sum();
    let wins = games.iter().filter(|g| g.score == 1.0).count();
    let losses = games.iter().filter(|g| g.score == 0.0).count();
    let per_move = |side: usize| {
        let used: f64 = games.iter().map(|g| g.used[side].as_secs_f64()).sum();
        let moves: u32 = games.iter().map(|g| g.searched[side]).sum();
        1000.0 * used / f64::from(moves.max(1))
    };
    println!(
        "{name}: current {points:.1}/{n} = {:.1}% (+{wins} ={} -{losses}), Elo {:+.0}; \
         ms used a move: current {:.0}, {base} {:.0}",
        100.0 * points / n as f64,
        n - wins - losses,
        elo(points / n as f64),
        per_move(0),
        per_move(1),
    );
}

#[derive(Debug, clap::Args)]
struct SelfplayArgs {
    #[arg(long)]
    rule_set: jumpgate_server::rules::RuleSet,
    /// Games to play.
    #[arg(long, default_value_t = 1000)]
    games: usize,
    /// Nodes a move (deterministic play).
    #[arg(long, default_value_t = 4000)]
    nodes: u64,
    /// Seeds the random openings.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where to write the positions: one `FEN result` line each, the
    /// result Dark's (1, 0.5 or 0).
    #[arg(long)]
    out: std::path::PathBuf,
    /// Whose weights the players evaluate with: current or v2 (the first
    /// fit, which made the data of the current Russian, American and
    /// Brazilian weights).
    #[arg(long, default_value = "current")]
    weights_of: jumpgate_server::bots::ExecutiveVersion,
}

/// The weights a tuned Executive version evaluates with (V1 has none).
fn weights_of(
    version: jumpgate_server::bots::ExecutiveVersion,
    rule_set: jumpgate_server::rules::RuleSet,
) -> Result<&'static jumpgate_server::bots::tuned::TunedWeights, String> {
    jumpgate_server::bots::tuned::TunedWeights::of_version(version, rule_set)
        .ok_or_else(|| "v1 has no fitted weights: choose current or v2".to_string())
}

fn run_selfplay(args: &SelfplayArgs) -> Result<(), String> {
    use std::fmt::Write as _;
    let started = Instant::now();
    let samples = jumpgate_server::bots::texel::self_play(
        args.rule_set,
        args.games,
        args.seed,
        args.nodes,
        weights_of(args.weights_of, args.rule_set)?,
    );
    let mut text = String::new();
    for s in &samples {
        let fen = fen::write(args.rule_set, &s.position);
        let _ = writeln!(text, "{fen} {}", s.dark_result);
    }
    std::fs::write(&args.out, text).map_err(|e| format!("{}: {e}", args.out.display()))?;
    println!(
        "{} positions from {} games in {:.0} s",
        samples.len(),
        args.games,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

#[derive(Debug, clap::Args)]
struct TuneArgs {
    #[arg(long)]
    rule_set: jumpgate_server::rules::RuleSet,
    /// Files written by `selfplay`.
    #[arg(long, required = true, num_args = 1..)]
    data: Vec<std::path::PathBuf>,
    /// Full passes of the optimiser.
    #[arg(long, default_value_t = 2000)]
    steps: usize,
    /// Pull towards the starting weights: this times the squared distance
    /// (in men) of each weight from its start is added to the error.
    #[arg(long, default_value_t = 0.001)]
    prior: f64,
    /// The weights the fit starts from (and `--prior` pulls towards):
    /// current or v2 (the first fit, where the current Russian,
    /// American and Brazilian fits began).
    #[arg(long, default_value = "current")]
    start: jumpgate_server::bots::ExecutiveVersion,
}

fn run_tune(args: &TuneArgs) -> Result<(), String> {
    use jumpgate_server::bots::texel::{self, Sample};
    use jumpgate_server::bots::tuned::{FEATURES, feature_name};
    let mut samples = Vec::new();
    for path in &args.data {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        for line in text.lines() {
            let (fen_text, result) = line
                .rsplit_once(' ')
                .ok_or_else(|| format!("{}: no result in {line:?}", path.display()))?;
            let position = fen::parse(args.rule_set, fen_text).map_err(|e| e.to_string())?;
            let dark_result = result.parse::<f64>().map_err(|e| e.to_string())?;
            samples.push(Sample {
                position,
                dark_result,
            });
        }
    }
    let start = weights_of(args.start, args.rule_set)?;
    let fit = texel::fit(args.rule_set, &samples, start, args.steps, args.prior);
    println!(
        "// {}: {} positions, k {:.5}, mean squared error {:.5} -> {:.5}",
        args.rule_set.name(),
        fit.samples,
        fit.k,
        fit.error_before,
        fit.error_after
    );
    let names: Vec<String> = (0..FEATURES)
        .map(|i| feature_name(args.rule_set, i))
        .collect();
    println!("//   {}", names.join(", "));
    let list = |w: &[i32]| w.iter().map(i32::to_string).collect::<Vec<_>>().join(", ");
    println!(
        "pub(crate) const {}: TunedWeights = TunedWeights {{\n    mg: [{}],\n    eg: [{}],\n    start_men: {},\n}};",
        args.rule_set.name().to_uppercase(),
        list(&fit.weights.mg),
        list(&fit.weights.eg),
        fit.weights.start_men
    );
    Ok(())
}

#[derive(Debug, clap::Args)]
struct BookArgs {
    #[arg(long)]
    rule_set: jumpgate_server::rules::RuleSet,
    /// Plies from the start within which every move is followed.
    #[arg(long, default_value_t = 2)]
    full_plies: usize,
    /// Plies from the start within which book moves are followed.
    #[arg(long, default_value_t = 6)]
    max_plies: usize,
    /// Nodes searched per position (all its moves scored together).
    #[arg(long, default_value_t = 1_000_000)]
    nodes: u64,
    /// The file to write (bots/book/<rule set>.bin).
    #[arg(long)]
    out: std::path::PathBuf,
}

fn run_book(args: &BookArgs) -> Result<(), String> {
    let started = Instant::now();
    let bytes = jumpgate_server::bots::book::build(
        args.rule_set,
        args.full_plies,
        args.max_plies,
        args.nodes,
        |done| {
            if done % 50 == 0 {
                eprintln!("{done} positions, {:.0} s", started.elapsed().as_secs_f64());
            }
        },
    );
    std::fs::write(&args.out, &bytes).map_err(|e| format!("{}: {e}", args.out.display()))?;
    println!(
        "{}: {} book moves in {:.0} s",
        args.rule_set.name(),
        bytes.len() / 12,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `count` over `secs` seconds, as a rate (0 for no time at all).
fn per_second(count: u64, secs: f64) -> f64 {
    if secs > 0.0 { count as f64 / secs } else { 0.0 }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Serve(config) => serve(config),
        Command::Perft(args) => run_perft(args),
        Command::Ladder(args) => run_ladder(args),
        Command::Versus(args) => run_versus(args),
        Command::Selfplay(args) => run_selfplay(args),
        Command::Tune(args) => run_tune(args),
        Command::Book(args) => run_book(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("jumpgate: {message}");
            ExitCode::from(2)
        }
    }
}
