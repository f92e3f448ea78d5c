//! `perft`: counts the leaves of the move tree from a position, for every
//! rule set, Space Mode and the orbit game (`jumpgate perft` in the server
//! binary is the same command).

use std::time::Instant;

use jumpgate_rules::orbit::OrbitGame;
use jumpgate_rules::space::{SpaceGame, SpaceMove};
use jumpgate_rules::{Game, Position, Variant, fen, perft};

use crate::per_second;

#[derive(Debug, clap::Args)]
pub struct PerftArgs {
    /// Rule set: american, brazilian, russian, spanish, italian, thai,
    /// space (Space Mode) or orbit (the orbit game).
    #[arg(long, default_value = "american")]
    pub variant: Variant,
    /// Plies to search.
    #[arg(long)]
    pub depth: u32,
    /// Start from this PDN FEN instead of the rule set's start position.
    #[arg(long)]
    pub fen: Option<String>,
    /// Count capture paths with the same origin, destination and captured
    /// set once per node.
    #[arg(long)]
    pub unique: bool,
    /// Also print the count below each first move.
    #[arg(long)]
    pub divide: bool,
    /// Space Mode only: the game's seed (it places the wormholes).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// Prints the count (and with `--divide` the count below each first move).
pub fn run(args: &PerftArgs) -> Result<(), String> {
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
        let game = Game::from_position(rs, pos);
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
        Variant::Draughts(_) => unreachable!("draughts perft is run's"),
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
