//! Data-driven perft: every `tests/perft/*.perft` file lists positions and
//! the leaf counts they must give. `deep` lines run only in the ignored test
//! (`cargo test --release -p jumpgate-rules --test engine -- --ignored perft`).
//!
//! File format: `rules NAME`, then `fen start|FEN` to start a case, then
//! `[deep] perft|unique DEPTH COUNT` lines. `#` starts a comment.

use std::fs;
use std::path::PathBuf;

use jumpgate_rules::{Position, RuleSet, fen, perft::perft};

struct Check {
    file: String,
    rule_set: RuleSet,
    fen: String,
    position: Position,
    depth: u32,
    unique: bool,
    expected: u64,
    deep: bool,
}

fn load() -> Vec<Check> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/perft");
    let mut files: Vec<_> = fs::read_dir(&dir)
        .expect("perft data directory")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "perft"))
        .collect();
    files.sort();
    assert!(files.len() >= 6, "one data file per rule set");
    let mut checks = Vec::new();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = fs::read_to_string(&path).expect("readable perft file");
        let mut rule_set = None;
        let mut position = None;
        let mut fen_text = String::new();
        for (n, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap().trim();
            if line.is_empty() {
                continue;
            }
            let at = format!("{name}:{}", n + 1);
            let (deep, line) = match line.strip_prefix("deep ") {
                Some(rest) => (true, rest),
                None => (false, line),
            };
            let (word, rest) = line.split_once(' ').expect(&at);
            match word {
                "rules" => rule_set = Some(rest.parse::<RuleSet>().expect(&at)),
                "fen" => {
                    let rs = rule_set.expect(&at);
                    fen_text = rest.to_owned();
                    position = Some(if rest == "start" {
                        Position::start(rs)
                    } else {
                        fen::parse(rs, rest).unwrap_or_else(|e| panic!("{at}: {e}"))
                    });
                }
                "perft" | "unique" => {
                    let mut nums = rest
                        .split_whitespace()
                        .map(|x| x.parse::<u64>().expect(&at));
                    let depth = nums.next().expect(&at) as u32;
                    let expected = nums.next().expect(&at);
                    checks.push(Check {
                        file: at,
                        rule_set: rule_set.expect("rules line first"),
                        fen: fen_text.clone(),
                        position: position.expect("fen line first"),
                        depth,
                        unique: word == "unique",
                        expected,
                        deep,
                    });
                }
                other => panic!("{at}: unknown keyword {other}"),
            }
        }
    }
    checks
}

fn run(deep: bool) {
    let checks: Vec<Check> = load().into_iter().filter(|c| c.deep == deep).collect();
    assert!(!checks.is_empty());
    let mut failures = Vec::new();
    for c in &checks {
        let got = perft(c.rule_set, &c.position, c.depth, c.unique);
        if got != c.expected {
            failures.push(format!(
                "{}: {} {} depth {} {}: expected {}, got {got}",
                c.file,
                c.rule_set,
                c.fen,
                c.depth,
                if c.unique { "unique" } else { "paths" },
                c.expected
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "perft mismatches:\n{}",
        failures.join("\n")
    );
}

#[test]
fn perft_tables() {
    run(false);
}

#[test]
#[ignore = "deep counts; run with --release -- --ignored"]
fn perft_tables_deep() {
    run(true);
}
