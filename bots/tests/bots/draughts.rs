//! The computer opponents: they only ever play legal moves, at every level
//! and in every rule set; the stronger levels find simple forced wins; the
//! easy levels are reproducible from their seed.

use std::time::Duration;

use jumpgate_bots::{self as bots, BotConfig, Level, arena};
use jumpgate_rules::{Bitboard, Color, Game, Position, RuleSet, Setup, Square};
use proptest::prelude::*;

/// A square of the internal frame by file and rank (0-based).
fn sq(file: u8, rank: u8) -> Square {
    Square::from_coords(file, rank).expect("on the board")
}

fn squares(list: &[(u8, u8)]) -> Bitboard {
    list.iter().map(|&(f, r)| sq(f, r)).collect()
}

fn position(dark: &[(u8, u8)], light: &[(u8, u8)], turn: Color) -> Position {
    Position::from_setup(Setup {
        by_color: [squares(dark), squares(light)],
        kings: Bitboard::EMPTY,
        turn,
    })
    .expect("a valid test position")
}

/// Small budgets so a whole property run stays quick in the dev profile.
fn quick(level: Level, seed: u64) -> BotConfig {
    BotConfig::new(level)
        .with_seed(seed)
        .with_node_limit(1_500)
        .with_time_budget(Duration::from_millis(20))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn bots_only_play_legal_moves(
        rs in prop::sample::select(RuleSet::ALL.to_vec()),
        dark in prop::sample::select(Level::ALL.to_vec()),
        light in prop::sample::select(Level::ALL.to_vec()),
        seed in any::<u64>(),
        opening in 0usize..8,
    ) {
        let mut game = arena::random_opening(rs, seed, opening);
        let configs = [quick(dark, seed), quick(light, seed.rotate_left(17))];
        for _ in 0..200 {
            let Some(m) = bots::choose_move(&game, &configs[game.turn().index()]) else {
                prop_assert!(game.outcome().is_some(), "no move in a live game");
                break;
            };
            prop_assert!(game.legal_moves().contains(&m), "{m:?} is not in the legal list");
            prop_assert!(game.play(&m).is_ok(), "{m:?} was refused");
        }
    }
}

#[test]
fn no_move_once_the_game_is_over() {
    // Light has no pieces: Dark has already won.
    let pos = position(&[(2, 2)], &[], Color::Light);
    let game = Game::from_position(RuleSet::American, pos);
    assert!(game.outcome().is_some());
    for level in Level::ALL {
        assert_eq!(bots::choose_move(&game, &BotConfig::new(level)), None);
    }
}

/// Material is level. Dark gives up f4-e5; whichever man Light takes it
/// with, a Dark man jumps two back (c3xe5xc7 or g3xe5xg7).
fn two_for_one(rs: RuleSet) -> Game {
    let dark = [(5, 3), (2, 2), (6, 2), (1, 1), (7, 1)];
    let light = [(5, 5), (3, 5), (0, 6), (4, 6), (0, 4)];
    Game::from_position(rs, position(&dark, &light, Color::Dark))
}

/// A level searching a bounded number of nodes, with a clock far beyond
/// them: what it finds does not depend on how busy the machine is.
fn tactic_config(level: Level) -> BotConfig {
    BotConfig::new(level)
        .with_time_budget(Duration::from_secs(60))
        .with_node_limit(300_000)
}

#[test]
fn stronger_levels_find_a_two_for_one_shot() {
    for rs in [
        RuleSet::American,
        RuleSet::Spanish,
        RuleSet::Italian,
        RuleSet::Thai,
    ] {
        let game = two_for_one(rs);
        for level in [Level::Warden, Level::Executive] {
            let config = tactic_config(level);
            let (m, info) = bots::think(&game, &config).expect("a move");
            assert_eq!(
                (m.from(), m.to()),
                (sq(5, 3), sq(4, 4)),
                "{rs} {level}: played {}",
                game.move_text(&m)
            );
            assert!(info.score >= 50, "{rs} {level}: score {}", info.score);
        }
    }
}

/// Light's last man on h4 can only step to g3, where the man on f2 takes
/// it; Dark must wait with a1-b2 rather than spoil the trap.
#[test]
fn stronger_levels_find_a_forced_win_and_play_it_out() {
    for rs in [RuleSet::American, RuleSet::Italian, RuleSet::Spanish] {
        let start = Game::from_position(rs, position(&[(5, 1), (0, 0)], &[(7, 3)], Color::Dark));
        for level in [Level::Warden, Level::Executive] {
            let config = tactic_config(level);
            let (m, info) = bots::think(&start, &config).expect("a move");
            assert_eq!((m.from(), m.to()), (sq(0, 0), sq(1, 1)), "{rs} {level}");
            assert!(info.score > bots::MATE - 100, "{rs} {level}: {info:?}");
            let (_, end) = arena::play_out(start.clone(), &config, &config, 20);
            assert_eq!(end.winner(), Some(Color::Dark), "{rs} {level}");
        }
    }
}

#[test]
fn easy_levels_repeat_themselves_with_the_same_seed() {
    for rs in RuleSet::ALL {
        for level in [Level::Tamer, Level::Driver] {
            let config = BotConfig::new(level)
                .with_seed(99)
                .with_node_limit(5_000)
                .with_time_budget(Duration::from_secs(30));
            let play = || arena::play_out(arena::random_opening(rs, 3, 2), &config, &config, 80);
            let (first, _) = play();
            let (second, _) = play();
            assert_eq!(first.moves(), second.moves(), "{rs} {level}");
        }
    }
}

#[test]
fn the_seed_changes_the_easy_levels_play() {
    let game = Game::new(RuleSet::Russian);
    let chosen: std::collections::HashSet<_> = (0..16)
        .map(|seed| {
            let config = BotConfig::new(Level::Tamer).with_seed(seed);
            bots::choose_move(&game, &config).map(|m| m.result_key())
        })
        .collect();
    assert!(chosen.len() > 1, "sixteen seeds, one opening move");
}

/// The ladder plays every pairing in every rule set asked for, both colours
/// of each opening, and counts every game once.
#[test]
fn the_ladder_counts_every_game_once() {
    use jumpgate_bots::ladder::{self, LadderConfig, PAIRINGS};
    use jumpgate_rules::Variant;
    let config = LadderConfig {
        games: 1,
        rule_sets: vec![Variant::Draughts(RuleSet::Russian), Variant::Orbit],
        executive: Duration::from_millis(5),
        threads: 2,
        ply_cap: 40,
        seed: 3,
    };
    let rows = ladder::run(&config);
    assert_eq!(rows.len(), 2 * PAIRINGS.len());
    for row in rows {
        assert_eq!(row.games, 2, "rounded up to both colours");
        assert_eq!(row.wins + row.draws + row.losses, 2, "{row:?}");
        assert!(row.capped <= row.draws);
    }
}
