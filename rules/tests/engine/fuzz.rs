//! Fuzz targets for the text formats (FEN, move notation, PDN), run inside `cargo test`
//! for a bounded number of cases (proptest, so a failure shrinks and is saved in
//! `fuzz.proptest-regressions`, then tried first on every run).
//!
//! Seeds come from `tests/corpus/` and from random games; the targets edit them
//! character by character (inserting, deleting, replacing, repeating, splicing in part
//! of another seed) and also try arbitrary text. Beyond "no panic", they check that
//! what is read writes back to text that reads the same, that every listed move plays
//! by its own notation, and that a move given as text either plays one of the listed
//! moves or is refused with the game left as it was.
//!
//! `JUMPGATE_FUZZ_CASES=100000 cargo test -p jumpgate-rules --test engine --release fuzz` runs
//! each target longer.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use jumpgate_rules::position::MAX_PATH;
use jumpgate_rules::{Game, RuleSet, Variant, VariantGame, fen, notation, pdn};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence};

/// Cases per target: `JUMPGATE_FUZZ_CASES`, or `default` (what CI runs).
fn config(default: u32) -> Config {
    let cases = std::env::var("JUMPGATE_FUZZ_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(default);
    Config {
        cases,
        // Beside this file, as the other property tests keep theirs.
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..Config::default()
    }
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

/// The seeds of a one-seed-a-line corpus file.
fn corpus_lines(file: &str) -> Vec<(RuleSet, String)> {
    fs::read_to_string(corpus_dir().join(file))
        .unwrap()
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let (rule_set, text) = line.split_once(' ').expect("`RULESET TEXT`");
            (rule_set.parse().expect("a rule set"), text.to_owned())
        })
        .collect()
}

/// A game of `plies` moves chosen by a small fixed generator, so seeds are the same on
/// every run.
fn playout(rule_set: RuleSet, plies: usize, mut state: u64) -> Game {
    let mut game = Game::new(rule_set);
    for _ in 0..plies {
        if game.outcome().is_some() {
            break;
        }
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let legal = game.legal_moves().to_vec();
        game.play(&legal[state as usize % legal.len()]).unwrap();
    }
    game
}

fn random_games() -> impl Iterator<Item = Game> {
    RuleSet::ALL.into_iter().flat_map(|rule_set| {
        [0, 3, 12, 40, 90]
            .into_iter()
            .map(move |plies| playout(rule_set, plies, 0x9e37_79b9 + plies as u64))
    })
}

struct Seeds {
    fen: Vec<(RuleSet, String)>,
    notation: Vec<(RuleSet, String)>,
    pdn: Vec<(RuleSet, String)>,
}

fn seeds() -> &'static Seeds {
    static SEEDS: OnceLock<Seeds> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let mut seeds = Seeds {
            fen: corpus_lines("fen.txt"),
            notation: corpus_lines("notation.txt"),
            pdn: Vec::new(),
        };
        let mut files: Vec<_> = fs::read_dir(corpus_dir().join("pdn"))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        files.sort();
        for path in files {
            let name = path.file_name().unwrap().to_str().unwrap();
            let rule_set = name
                .split('_')
                .next()
                .unwrap()
                .parse()
                .expect("RULESET_*.pdn");
            seeds
                .pdn
                .push((rule_set, fs::read_to_string(&path).unwrap()));
        }
        for game in random_games() {
            let rule_set = game.rule_set();
            seeds
                .fen
                .push((rule_set, fen::write(rule_set, game.position())));
            for m in game.legal_moves() {
                seeds.notation.push((rule_set, game.move_text(m)));
                seeds
                    .notation
                    .push((rule_set, notation::full_text(rule_set, m)));
            }
            seeds
                .pdn
                .push((rule_set, pdn::write(&game, &pdn::PdnTags::default())));
        }
        seeds
    })
}

/// Characters the formats give meaning to, and a few that trip up byte slicing.
const ALPHABET: &str = "0123456789-xX:,KkWBwbDL .\"[]{}*/\n\tabcdefghA1é😀";

fn character() -> impl Strategy<Value = char> {
    prop_oneof![
        8 => prop::sample::select(ALPHABET.chars().collect::<Vec<_>>()),
        1 => any::<char>(),
    ]
}

/// One edit of a text, at character positions taken modulo its length.
#[derive(Debug, Clone)]
enum Edit {
    Insert(usize, char),
    Replace(usize, char),
    Delete(usize, usize),
    Repeat(usize, usize),
    /// Copies a run of another seed's characters over this position.
    Splice(usize, usize, usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    let at = any::<usize>();
    prop_oneof![
        3 => (at, character()).prop_map(|(at, c)| Edit::Insert(at, c)),
        3 => (at, character()).prop_map(|(at, c)| Edit::Replace(at, c)),
        2 => (at, 1usize..6).prop_map(|(at, len)| Edit::Delete(at, len)),
        1 => (at, 1usize..12).prop_map(|(at, len)| Edit::Repeat(at, len)),
        1 => (any::<usize>(), at, at, 1usize..16)
            .prop_map(|(seed, from, to, len)| Edit::Splice(seed, from, to, len)),
    ]
}

fn apply(text: &str, edits: &[Edit], others: &[&str]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for edit in edits {
        let len = chars.len();
        let at = |index: usize| index % (len + 1);
        match *edit {
            Edit::Insert(index, c) => chars.insert(at(index), c),
            Edit::Replace(index, c) if len > 0 => chars[index % len] = c,
            Edit::Delete(index, run) if len > 0 => {
                let start = index % len;
                chars.drain(start..(start + run).min(len));
            }
            Edit::Repeat(index, run) if len > 0 => {
                let start = index % len;
                let piece: Vec<char> = chars[start..(start + run).min(len)].to_vec();
                chars.splice(start..start, piece);
            }
            Edit::Splice(seed, from, to, run) => {
                let other: Vec<char> = others[seed % others.len()].chars().collect();
                if !other.is_empty() {
                    let from = from % other.len();
                    let piece = &other[from..(from + run).min(other.len())];
                    let to = at(to);
                    chars.splice(to..(to + piece.len()).min(len), piece.iter().copied());
                }
            }
            _ => {}
        }
    }
    chars.into_iter().collect()
}

fn rule_set() -> impl Strategy<Value = RuleSet> {
    prop::sample::select(RuleSet::ALL.to_vec())
}

/// A seed of `list` edited, read in its own rule set or (sometimes) another.
fn edited(
    list: fn(&Seeds) -> &[(RuleSet, String)],
    max_edits: usize,
) -> impl Strategy<Value = (RuleSet, String)> {
    (
        any::<prop::sample::Index>(),
        prop::option::weighted(0.2, rule_set()),
        prop::collection::vec(edit(), 0..=max_edits),
    )
        .prop_map(move |(seed, other_rule_set, edits)| {
            let seeds = list(self::seeds());
            let (rule_set, text) = &seeds[seed.index(seeds.len())];
            let others: Vec<&str> = seeds.iter().map(|(_, text)| text.as_str()).collect();
            (
                other_rule_set.unwrap_or(*rule_set),
                apply(text, &edits, &others),
            )
        })
}

/// A FEN that reads writes back to a FEN that reads the same, and the game from it
/// plays its listed moves by their notation.
fn check_fen(rule_set: RuleSet, text: &str) {
    let setup = fen::parse_setup(rule_set, text);
    let Ok(position) = fen::parse(rule_set, text) else {
        return;
    };
    assert!(setup.is_ok());
    let written = fen::write(rule_set, &position);
    assert_eq!(
        fen::parse(rule_set, &written),
        Ok(position),
        "{text:?} → {written}"
    );
    let game = Game::from_position(rule_set, position);
    for m in game.legal_moves().iter().take(4) {
        let mut trial = game.clone();
        let played = trial
            .play_text(&game.move_text(m))
            .expect("a listed move plays by its notation");
        assert_eq!(played.result_key(), m.result_key());
    }
}

/// Move text that reads names 2 to `MAX_PATH` squares and writes back to the same.
fn check_move_text(rule_set: RuleSet, text: &str) {
    let Ok(read) = notation::parse_move_text(rule_set, text) else {
        return;
    };
    assert!((2..=MAX_PATH).contains(&read.squares.len()), "{text:?}");
    let separator = if read.capture {
        rule_set.capture_separator().to_string()
    } else {
        "-".to_owned()
    };
    let names: Vec<String> = read
        .squares
        .iter()
        .map(|&square| notation::square_name(rule_set, square))
        .collect();
    let written = names.join(&separator);
    assert_eq!(
        notation::parse_move_text(rule_set, &written).as_ref(),
        Ok(&read),
        "{text:?} → {written}"
    );
}

/// PDN that reads writes back to PDN that reads as the same game, and writes the same.
fn check_pdn(rule_set: RuleSet, text: &str) {
    let Ok(game) = pdn::read(rule_set, text) else {
        return;
    };
    let tags = pdn::PdnTags::default();
    let written = pdn::write(&game, &tags);
    let again =
        pdn::read(rule_set, &written).unwrap_or_else(|err| panic!("{text:?} → {written}: {err}"));
    assert_eq!(again.moves(), game.moves(), "{written}");
    assert_eq!(again.position(), game.position(), "{written}");
    assert_eq!(pdn::write(&again, &tags), written);
}

/// A move given as text to a game of any rule set plays one of the listed moves, or is
/// refused and leaves the game as it was; and every listed move plays by its notation.
fn check_play_text(game: &VariantGame, text: &str) {
    let legal = game.legal_moves();
    let mut trial = game.clone();
    match trial.play_text(text) {
        Ok(_) => {
            assert_eq!(trial.ply(), game.ply() + 1, "{text:?}");
            let listed = legal.iter().any(|m| {
                let mut other = game.clone();
                other.play_stored(&m.stored).is_ok() && other.fen() == trial.fen()
            });
            assert!(listed, "{text:?} played a move that is not listed");
        }
        Err(_) => {
            assert_eq!(trial.fen(), game.fen(), "{text:?} was refused but moved");
            assert_eq!(trial.ply(), game.ply());
        }
    }
    for m in &legal {
        let mut other = game.clone();
        other
            .play_text(&m.notation)
            .unwrap_or_else(|err| panic!("listed {} does not play: {err}", m.notation));
    }
}

/// A game of `variant` after playing the listed moves these choices pick.
fn game_after(variant: Variant, choices: &[usize]) -> VariantGame {
    let mut game = VariantGame::new(variant, 7);
    for choice in choices {
        let legal = game.legal_moves();
        if legal.is_empty() {
            break;
        }
        game.play_stored(&legal[choice % legal.len()].stored)
            .unwrap();
    }
    game
}

#[test]
fn fuzz_seeds_hold_the_invariants() {
    let seeds = seeds();
    for (rule_set, text) in &seeds.fen {
        check_fen(*rule_set, text);
    }
    for (rule_set, text) in &seeds.notation {
        check_move_text(*rule_set, text);
    }
    for (rule_set, text) in &seeds.pdn {
        check_pdn(*rule_set, text);
    }
    for variant in Variant::ALL {
        let game = VariantGame::new(variant, 7);
        for m in game.legal_moves() {
            check_play_text(&game, &m.path.join("-"));
        }
    }
}

proptest! {
    #![proptest_config(config(2_000))]

    #[test]
    fn fuzz_fen(input in edited(|seeds| &seeds.fen, 4)) {
        check_fen(input.0, &input.1);
    }

    #[test]
    fn fuzz_fen_arbitrary(rule_set in rule_set(), text in "[0-9WBKwbk:,. \"a-hx-]{0,40}") {
        check_fen(rule_set, &text);
    }

    #[test]
    fn fuzz_move_notation(input in edited(|seeds| &seeds.notation, 3)) {
        check_move_text(input.0, &input.1);
    }

    #[test]
    fn fuzz_move_notation_arbitrary(rule_set in rule_set(), text in "\\PC{0,16}") {
        check_move_text(rule_set, &text);
    }
}

proptest! {
    #![proptest_config(config(500))]

    #[test]
    fn fuzz_pdn(input in edited(|seeds| &seeds.pdn, 6)) {
        check_pdn(input.0, &input.1);
    }

    /// Move text, edited from a listed move's, played in a game of every rule set
    /// (Space Mode and the orbit board included).
    #[test]
    fn fuzz_play_text(
        variant in prop::sample::select(Variant::ALL.to_vec()),
        choices in prop::collection::vec(any::<usize>(), 0..24),
        pick in any::<prop::sample::Index>(),
        edits in prop::collection::vec(edit(), 0..3),
    ) {
        let game = game_after(variant, &choices);
        let mut texts: Vec<String> = Vec::new();
        for m in game.legal_moves() {
            texts.push(m.path.join("-"));
            texts.push(m.notation);
        }
        texts.push("11-15".into());
        let others: Vec<&str> = texts.iter().map(String::as_str).collect();
        let text = apply(&texts[pick.index(texts.len())], &edits, &others);
        check_play_text(&game, &text);
    }
}
