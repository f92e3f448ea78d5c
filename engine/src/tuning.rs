//! `selfplay` and `tune`: the files behind the Executive's fitted
//! evaluation. Self-play writes positions with their games' results; the
//! fit (`jumpgate_bots::texel`) reads them and prints the weights as Rust
//! for bots/src/weights.rs, in the form `versus --weights` reads back.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use jumpgate_bots::ExecutiveVersion;
use jumpgate_bots::texel::{self, Sample};
use jumpgate_bots::tuned::{FEATURES, NAMED_FEATURES, TunedWeights, feature_name};
use jumpgate_rules::{RuleSet, fen};

use crate::progress::Progress;

#[derive(Debug, clap::Args)]
pub struct SelfplayArgs {
    #[arg(long)]
    pub rule_set: RuleSet,
    /// Games to play.
    #[arg(long, default_value_t = 1000)]
    pub games: usize,
    /// Nodes a move (deterministic play).
    #[arg(long, default_value_t = 4000)]
    pub nodes: u64,
    /// Seeds the random openings.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Where to write the positions: one `FEN result` line each, the
    /// result Dark's (1, 0.5 or 0).
    #[arg(long)]
    pub out: PathBuf,
    /// Whose weights the players evaluate with: current or v2 (the first
    /// fit, which made the data of the current Russian, American and
    /// Brazilian weights).
    #[arg(long, default_value = "current")]
    pub weights_of: ExecutiveVersion,
}

#[derive(Debug, clap::Args)]
pub struct TuneArgs {
    #[arg(long)]
    pub rule_set: RuleSet,
    /// Files written by `selfplay`.
    #[arg(long, required = true, num_args = 1..)]
    pub data: Vec<PathBuf>,
    /// Full passes of the optimiser.
    #[arg(long, default_value_t = 2000)]
    pub steps: usize,
    /// Pull towards the starting weights: this times the squared distance
    /// (in men) of each weight from its start is added to the error.
    #[arg(long, default_value_t = 0.001)]
    pub prior: f64,
    /// The weights the fit starts from (and `--prior` pulls towards):
    /// current or v2 (the first fit, where the current Russian,
    /// American and Brazilian fits began).
    #[arg(long, default_value = "current")]
    pub start: ExecutiveVersion,
}

/// The weights a tuned Executive version evaluates with (V1 has none).
fn weights_of(
    version: ExecutiveVersion,
    rule_set: RuleSet,
) -> Result<&'static TunedWeights, String> {
    TunedWeights::of_version(version, rule_set)
        .ok_or_else(|| "v1 has no fitted weights: choose current or v2".to_string())
}

/// Plays the games and writes their quiet positions to `--out`.
pub fn run_selfplay(args: &SelfplayArgs) -> Result<(), String> {
    let started = Instant::now();
    let progress = Progress::bar(args.games as u64, "games");
    let samples = texel::self_play_reporting(
        args.rule_set,
        args.games,
        args.seed,
        args.nodes,
        weights_of(args.weights_of, args.rule_set)?,
        |played| progress.set(played as u64),
    );
    progress.finish();
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

/// Reads the `selfplay` files, fits and prints the weights.
pub fn run_tune(args: &TuneArgs) -> Result<(), String> {
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
    let progress = Progress::bar(args.steps as u64, "passes");
    let fit = texel::fit_reporting(
        args.rule_set,
        &samples,
        start,
        args.steps,
        args.prior,
        |step| progress.set(step as u64),
    );
    progress.finish();
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

/// Reads the weights that `tune` printed: its `mg: [...]` and `eg: [...]`.
pub(crate) fn read_weights(path: &Path, rule_set: RuleSet) -> Result<TunedWeights, String> {
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
