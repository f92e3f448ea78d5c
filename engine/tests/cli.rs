//! Runs the real `jumpgate-engine` binary once per tool at the smallest
//! sizes that still do the work, and checks what it prints: the known
//! perft counts, a finished ladder, match, self-play file, fit and book,
//! and (standard error being a pipe here) no progress and no escape codes.

use std::path::PathBuf;
use std::process::Command;

/// Runs the binary with `args`; returns its standard output after checking
/// that it succeeded, printed nothing on standard error and no escape
/// codes anywhere.
fn engine(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_jumpgate-engine"))
        .args(args)
        .output()
        .expect("jumpgate-engine runs");
    let stdout = String::from_utf8(out.stdout).expect("UTF-8 output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {}\n{stderr}", out.status);
    assert!(stderr.is_empty(), "{args:?} wrote on stderr: {stderr:?}");
    assert!(
        !stdout.contains('\x1b'),
        "{args:?}: escape codes in {stdout:?}"
    );
    stdout
}

/// A file name of this test's own in Cargo's scratch directory.
fn scratch(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("engine-cli-{name}"))
}

#[test]
fn perft_prints_the_known_counts() {
    let out = engine(&["perft", "--variant", "american", "--depth", "3"]);
    assert!(
        out.starts_with("perft american depth 3 paths: 302 leaves in "),
        "{out}"
    );
    assert!(out.trim_end().ends_with("M leaves/s)"), "{out}");
    // Seven first moves below the start, 302 leaves under them together.
    let out = engine(&["perft", "--depth", "3", "--divide"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 8, "{out}");
    let sum: u64 = lines[..7]
        .iter()
        .map(|l| {
            l.rsplit_once(' ')
                .expect("move count")
                .1
                .parse::<u64>()
                .expect("count")
        })
        .sum();
    assert_eq!(sum, 302, "{out}");
    let out = engine(&["perft", "--variant", "orbit", "--depth", "1"]);
    assert!(out.starts_with("perft orbit depth 1 moves: "), "{out}");
    let out = engine(&["perft", "--variant", "space", "--depth", "1"]);
    assert!(
        out.starts_with("perft space depth 1 results, seed 1: "),
        "{out}"
    );
}

#[test]
fn perft_refuses_the_draughts_options_for_the_small_games() {
    let out = Command::new(env!("CARGO_BIN_EXE_jumpgate-engine"))
        .args(["perft", "--variant", "orbit", "--depth", "1", "--unique"])
        .output()
        .expect("jumpgate-engine runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("jumpgate-engine: --fen and --unique are for the draughts"),
        "{stderr}"
    );
}

#[test]
fn a_two_game_ladder_prints_its_table() {
    let out = engine(&[
        "ladder",
        "--games",
        "2",
        "--rule-set",
        "american",
        "--executive-ms",
        "5",
        "--ply-cap",
        "30",
    ]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("ladder: 2 games per pairing"), "{out}");
    assert!(lines[1].starts_with("rule set"), "{out}");
    // Three pairings, then the summary.
    assert_eq!(lines.len(), 6, "{out}");
    assert!(lines[2].starts_with("american   Driver v Tamer"), "{out}");
    assert!(
        lines[5].contains("of 3 pairings below the 75% goal"),
        "{out}"
    );
}

#[test]
fn a_one_opening_match_prints_both_games_and_the_score() {
    let out = engine(&[
        "versus",
        "--rule-set",
        "american",
        "--openings",
        "1",
        "--nodes",
        "300",
        "--ply-cap",
        "30",
    ]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("versus: Executive (current) v Executive v1"),
        "{out}"
    );
    assert_eq!(
        lines.iter().filter(|l| l.contains(" opening ")).count(),
        2,
        "{out}"
    );
    assert!(out.contains("american: current "), "{out}");
    assert!(lines.last().is_some_and(|l| l.ends_with(" s")), "{out}");
}

#[test]
fn a_node_budget_plays_the_clock_and_both_report_nodes() {
    let out = engine(&[
        "versus",
        "--rule-set",
        "russian",
        "--openings",
        "1",
        "--nodes",
        "300",
        "--baseline",
        "current",
        "--baseline-ms",
        "5",
        "--ply-cap",
        "20",
    ]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].contains("current 300 nodes a move, baseline 5 ms a move"),
        "{out}"
    );
    let games: Vec<&&str> = lines.iter().filter(|l| l.contains(" opening ")).collect();
    assert_eq!(games.len(), 2, "{out}");
    assert!(
        games.iter().all(|l| l.contains(" nodes/move current ")),
        "{out}"
    );
    assert!(out.contains("nodes a searched move: current "), "{out}");
}

#[test]
fn selfplay_data_is_tuned_and_a_book_is_built() {
    let data = scratch("american.txt");
    let data_arg = data.to_str().expect("UTF-8 path");
    let out = engine(&[
        "selfplay",
        "--rule-set",
        "american",
        "--games",
        "2",
        "--nodes",
        "200",
        "--out",
        data_arg,
    ]);
    assert!(out.contains(" positions from 2 games in "), "{out}");
    let written = std::fs::read_to_string(&data).expect("self-play file");
    assert!(!written.is_empty());
    assert!(
        written
            .lines()
            .all(|l| l.ends_with(" 1") || l.ends_with(" 0") || l.ends_with(" 0.5"))
    );

    let fit = engine(&[
        "tune",
        "--rule-set",
        "american",
        "--data",
        data_arg,
        "--steps",
        "3",
    ]);
    assert!(fit.starts_with("// american: "), "{fit}");
    assert!(
        fit.contains("pub(crate) const AMERICAN: TunedWeights = TunedWeights {"),
        "{fit}"
    );
    // What tune prints, versus reads back (here only as far as the
    // openings: no game is asked for).
    let weights = scratch("fit.txt");
    std::fs::write(&weights, &fit).expect("write the fit");
    let out = engine(&[
        "versus",
        "--rule-set",
        "american",
        "--openings",
        "0",
        "--weights",
        weights.to_str().expect("UTF-8 path"),
    ]);
    assert!(out.starts_with("versus: "), "{out}");

    let book = scratch("american.bin");
    let out = engine(&[
        "book",
        "--rule-set",
        "american",
        "--full-plies",
        "1",
        "--max-plies",
        "2",
        "--nodes",
        "500",
        "--out",
        book.to_str().expect("UTF-8 path"),
    ]);
    assert!(
        out.starts_with("american: ") && out.contains(" book moves in "),
        "{out}"
    );
    let bytes = std::fs::read(&book).expect("book file");
    assert!(!bytes.is_empty() && bytes.len().is_multiple_of(12));
}
