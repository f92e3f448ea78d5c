//! `VariantGame`, the one type rooms and solo games play every rule set
//! through: on random playouts of all eight rule sets, every listed move
//! plays by its notation, by its path and by its stored form with the same
//! result; moves that are not listed are refused and change nothing; a
//! replay of the stored moves rebuilds the same game (Space Mode's
//! wormholes included); the moves' squares alone are the listed moves'.

use jumpgate_rules::pdn::{self, PdnTags};
use jumpgate_rules::{Color, DrawRules, Variant, VariantGame};
use proptest::prelude::*;

/// What a client can see of a game; equal views mean equal games.
fn view(game: &VariantGame) -> String {
    let mut pieces: Vec<String> = game
        .pieces()
        .iter()
        .map(|p| format!("{}{:?}{}", p.square, p.color, p.king))
        .collect();
    pieces.sort();
    format!(
        "{} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
        game.fen(),
        pieces,
        game.turn(),
        game.ply(),
        game.wormholes(),
        game.boosts_left(),
        game.points(),
        game.outcome()
    )
}

fn variant() -> impl Strategy<Value = Variant> {
    (0..Variant::ALL.len()).prop_map(|i| Variant::ALL[i])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_listed_move_plays_three_ways_and_replays(
        variant in variant(),
        seed in any::<u64>(),
        choices in proptest::collection::vec(any::<u16>(), 1..60),
    ) {
        let mut game = VariantGame::new(variant, seed);
        let mut stored = Vec::new();
        for choice in choices {
            let legal = game.legal_moves();
            // The squares alone, for clients that need no notation, are the
            // full views' squares, in the same order.
            let paths: Vec<_> = legal
                .iter()
                .map(|m| (m.path.clone(), m.captures.clone(), m.boost, m.teleports.clone()))
                .collect();
            let alone: Vec<_> = game
                .legal_paths()
                .into_iter()
                .map(|m| (m.path, m.captures, m.boost, m.teleports))
                .collect();
            prop_assert_eq!(paths, alone);
            if legal.is_empty() {
                prop_assert!(game.outcome().is_some(), "no moves only once the game is over");
                break;
            }
            for m in &legal {
                let mut by_text = game.clone();
                let played = by_text.play_text(&m.notation);
                prop_assert!(played.is_ok(), "{variant}: {} by notation: {played:?}", m.notation);
                prop_assert_eq!(&played.unwrap().stored, &m.stored);

                let mut by_path = game.clone();
                let played = by_path.play_path(&m.path);
                prop_assert!(played.is_ok(), "{variant}: {:?} by path: {played:?}", m.path);

                let mut by_stored = game.clone();
                prop_assert!(by_stored.play_stored(&m.stored).is_ok());
                prop_assert_eq!(view(&by_text), view(&by_path));
                prop_assert_eq!(view(&by_text), view(&by_stored));

                // Start and end alone name a move whenever no listed move
                // with another path shares them (on every board).
                let ends = [m.path[0].clone(), m.path.last().unwrap().clone()];
                let alone = legal
                    .iter()
                    .all(|o| o.path == m.path || o.path.first() != Some(&ends[0]) || o.path.last() != Some(&ends[1]));
                if alone && m.path.len() > 2 {
                    let mut by_ends = game.clone();
                    let played = by_ends.play_path(&ends);
                    prop_assert!(played.is_ok(), "{variant}: {:?} by its ends: {played:?}", m.path);
                    prop_assert_eq!(&played.unwrap().path, &m.path);
                }
                // In Space Mode, where a wormhole can make two captures share
                // their ends, such ends are refused with the reason.
                if !alone && m.path.len() > 2 && variant == Variant::Space {
                    let mut by_ends = game.clone();
                    let refused = by_ends.play_path(&ends);
                    prop_assert!(
                        refused.as_ref().is_err_and(|e| e.to_string().contains("whole path")),
                        "{:?} by its ends: {:?}", m.path, refused
                    );
                }
            }
            // Refusals change nothing.
            let before = view(&game);
            prop_assert!(game.play_text("not a move").is_err());
            prop_assert!(game.play_path(&["z9".to_owned(), "a1".to_owned()]).is_err());
            prop_assert!(game.play_path(&[]).is_err());
            // Two squares name a move by its ends, and a capture may end where
            // it began (a loop, e.g. a king taking four pieces around a square):
            // [s, s] plays only such a move, and only when it is the one.
            let first = &legal[0].path[0];
            let loops = legal
                .iter()
                .filter(|m| m.path.len() > 1 && m.path.first() == Some(first) && m.path.last() == Some(first))
                .count();
            let mut probe = game.clone();
            let same = probe.play_path(&[first.clone(), first.clone()]);
            prop_assert_eq!(same.is_ok(), loops == 1, "{}: [{}, {}] with {} loops", variant, first, first, loops);
            prop_assert_eq!(view(&game), before);

            let m = &legal[usize::from(choice) % legal.len()];
            let played = game.play_stored(&m.stored).expect("a listed move plays");
            prop_assert_eq!(&played.notation, &m.notation);
            stored.push(played.stored);
        }
        let texts: Vec<&str> = stored.iter().map(String::as_str).collect();
        let (replayed, played) = VariantGame::replay(variant, seed, DrawRules::Standard, &texts).expect("replays");
        prop_assert_eq!(view(&replayed), view(&game));
        prop_assert_eq!(played.len(), stored.len());

        // The PDN export reads back into the same game, with the same tags
        // in every rule set.
        let notations: Vec<String> = played.iter().map(|m| m.notation.clone()).collect();
        let tags = PdnTags {
            dark: Some("Dee \"the\" Dark".into()),
            light: Some("Lee".into()),
            ..PdnTags::default()
        };
        let text = game.pdn(&tags, &notations);
        let back = VariantGame::read_pdn(variant, &text);
        prop_assert!(back.is_ok(), "{variant}: {back:?}\n{text}");
        prop_assert_eq!(view(&back.unwrap()), view(&game), "{}", text);
        let parts = pdn::parts(&text);
        for tag in ["Event", "Date", "White", "Black", "Result"] {
            prop_assert!(parts.tag(tag).is_some(), "{variant}: no {tag} tag\n{text}");
        }
        prop_assert_eq!(parts.tag("GameType").is_some(), variant != Variant::Orbit);
        // Dark moves first; it is White in the rule sets where White does.
        let dark_is_white = matches!(variant, Variant::Draughts(rs) if rs.first_player_letter() == 'W');
        let (white, black) = if dark_is_white { ("Dee \"the\" Dark", "Lee") } else { ("Lee", "Dee \"the\" Dark") };
        prop_assert_eq!(parts.tag("White"), Some(white));
        prop_assert_eq!(parts.tag("Black"), Some(black));
        let expected = match game.outcome().map(|o| o.winner) {
            None => "*",
            Some(None) => "1/2-1/2",
            Some(Some(winner)) => if (winner == Color::Dark) == dark_is_white { "1-0" } else { "0-1" },
        };
        prop_assert_eq!(parts.tag("Result"), Some(expected));
    }
}

#[test]
fn names_round_trip() {
    for v in Variant::ALL {
        assert_eq!(v.name().parse::<Variant>().unwrap(), v);
        // The workspace's test run enables `serde` (the server needs it); a
        // run of this crate alone does not, and still compiles.
        #[cfg(feature = "serde")]
        {
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(json, format!("\"{}\"", v.name()));
            assert_eq!(serde_json::from_str::<Variant>(&json).unwrap(), v);
        }
    }
    assert!("checkers-in-space".parse::<Variant>().is_err());
    assert_eq!(Variant::ALL.len(), 8);
}

#[test]
fn different_seeds_place_different_wormholes() {
    let places: std::collections::HashSet<_> = (0..20)
        .map(|seed| VariantGame::new(Variant::Space, seed).wormholes())
        .collect();
    assert!(places.len() > 5, "seeds vary the wormholes: {places:?}");
    let a = VariantGame::new(Variant::Space, 42).wormholes();
    assert_eq!(a, VariantGame::new(Variant::Space, 42).wormholes());
}

#[test]
fn orbit_pdn_marks_passes_and_points() {
    // Pseudo-random orbit games until one has a pass.
    let mut rng = 0x2545_f491_4f6c_dd1d_u64;
    for _ in 0..500 {
        let mut game = VariantGame::new(Variant::Orbit, 0);
        let mut notations = Vec::new();
        let mut passed = false;
        while game.outcome().is_none() {
            let legal = game.legal_moves();
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let m = &legal[(rng >> 33) as usize % legal.len()];
            let mover = game.turn();
            notations.push(game.play_stored(&m.stored).unwrap().notation);
            passed |= game.turn() == mover && game.outcome().is_none();
        }
        if !passed {
            continue;
        }
        let tags = jumpgate_rules::pdn::PdnTags {
            points: Some([7, 1]),
            ..Default::default()
        };
        let pdn = game.pdn(&tags, &notations);
        assert!(pdn.contains("[Variant \"orbit\"]"), "{pdn}");
        assert!(
            pdn.contains("[Points \"1-7\"]"),
            "points from the tags win, White's (Light's) first: {pdn}"
        );
        assert!(
            pdn.contains(" -- ") || pdn.contains(". --"),
            "a pass is written: {pdn}"
        );
        let written = pdn
            .split_whitespace()
            .filter(|w| w.contains('-') && *w != "--" && !w.starts_with('[') && !w.contains('"'))
            .count();
        assert!(written >= notations.len(), "every move is written: {pdn}");
        return;
    }
    panic!("no orbit game with a pass");
}

#[test]
fn pdn_dates_are_utc_calendar_days() {
    assert_eq!(pdn::utc_date(0), "1970.01.01");
    assert_eq!(pdn::utc_date(951_782_400), "2000.02.29");
    assert_eq!(pdn::utc_date(1_796_083_199), "2026.11.30");
    assert_eq!(pdn::utc_date(4_107_542_400), "2100.03.01");
    let text = "[Event \"x\"]\n[Date \"????.??.??\"]\n\n1. 11-15 *\n";
    assert!(pdn::with_date(text, "2026.11.30").contains("[Date \"2026.11.30\"]"));
    let known = pdn::with_date(text, "2026.11.30");
    assert_eq!(
        pdn::with_date(&known, "1999.01.01"),
        known,
        "a known date is kept"
    );
}
