//! The federation draw rules against the seeds' (RULES.md, "Draws"): for
//! each federation rule, a line of play where it draws and the seeds' rules
//! do not, and one where the seeds' rules draw and it does not (where such
//! a line exists: a longer king-only limit can never draw first).
//!
//! Positions are in the internal frame (a1 bottom-left, Dark moving up).
//! Each line is found once ([`find_line`]: king moves or man moves as
//! scheduled, never a capture or a crowning, never one that offers the
//! opponent a capture, so that only the move limits can end it) and played
//! under both sets of rules.

use jumpgate_rules::draw::{DrawTable, Material};
use jumpgate_rules::{
    Bitboard, Color, DrawReason, DrawRules, Game, Move, Outcome, Position, RuleSet, Setup, Square,
    Variant, VariantGame,
};

fn sq(name: &str) -> Square {
    let b = name.as_bytes();
    Square::from_coords(b[0] - b'a', b[1] - b'1').expect("square name")
}

/// `dark`/`light` list squares; a trailing `K` marks a king (e.g. `c3K`).
fn position(dark: &str, light: &str, turn: Color) -> Position {
    let mut by_color = [Bitboard::EMPTY; 2];
    let mut kings = Bitboard::EMPTY;
    for (i, list) in [dark, light].into_iter().enumerate() {
        for item in list.split_whitespace() {
            let (name, king) = match item.strip_suffix('K') {
                Some(n) => (n, true),
                None => (item, false),
            };
            by_color[i] |= sq(name).bb();
            if king {
                kings |= sq(name).bb();
            }
        }
    }
    Position::from_setup(Setup {
        by_color,
        kings,
        turn,
    })
    .expect("valid test position")
}

/// Which kind of move a line plays at a ply.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    King,
    Man,
}

fn kings_only(_: u32) -> Kind {
    Kind::King
}

/// A man move every `n` plies (by whichever side is to move then), king
/// moves otherwise.
fn man_every(n: u32) -> impl Fn(u32) -> Kind + Copy {
    move |ply| if ply % n == 0 { Kind::Man } else { Kind::King }
}

/// The moves of `kind` that capture nothing, crown no man, leave the
/// opponent no capture and do not repeat a position a third time, with the
/// game after each, least repeated first.
fn safe_moves(game: &Game, kind: Kind) -> Vec<(Move, Game)> {
    let mut out = Vec::new();
    for m in game.legal_moves() {
        let by_king = game.position().kings().contains(m.from());
        if m.is_capture() || m.crowns() || (kind == Kind::King) != by_king {
            continue;
        }
        let mut trial = game.clone();
        trial.play(m).unwrap();
        let offers_capture = trial.legal_moves().iter().any(|r| r.is_capture());
        if !offers_capture && trial.repetitions() < 3 {
            out.push((*m, trial));
        }
    }
    out.sort_by_key(|(_, g)| g.repetitions());
    out
}

/// A line of play of `plies` safe moves from `game` (shorter if the game
/// ends first), found depth first: at each ply the kind of move `schedule`
/// names (a man move falls back to a king move), so that only the move
/// limits can end it.
fn find_line(game: &Game, plies: u32, schedule: impl Fn(u32) -> Kind + Copy) -> Vec<Move> {
    fn search(
        game: &Game,
        ply: u32,
        plies: u32,
        schedule: &dyn Fn(u32) -> Kind,
        budget: &mut u32,
        line: &mut Vec<Move>,
    ) -> bool {
        if ply == plies || game.outcome().is_some() {
            return true;
        }
        let mut candidates = safe_moves(game, schedule(ply));
        if schedule(ply) == Kind::Man {
            candidates.extend(safe_moves(game, Kind::King));
        }
        for (m, next) in candidates {
            *budget = budget.checked_sub(1).expect("no safe line found");
            line.push(m);
            if search(&next, ply + 1, plies, schedule, budget, line) {
                return true;
            }
            line.pop();
        }
        false
    }
    let mut line = Vec::new();
    let mut budget = 200_000;
    assert!(
        search(game, 0, plies, &schedule, &mut budget, &mut line),
        "no safe line of {plies} plies"
    );
    line
}

/// Plays `line` under `rules` until it ends or the game does: the plies
/// played and the outcome.
fn replay(rs: RuleSet, pos: Position, rules: DrawRules, line: &[Move]) -> (u32, Option<Outcome>) {
    let mut game = Game::from_position(rs, pos).with_draw_rules(rules);
    let mut plies = 0;
    for m in line {
        if game.outcome().is_some() {
            break;
        }
        game.play(m).unwrap();
        plies += 1;
    }
    (plies, game.outcome())
}

fn draw(reason: DrawReason) -> Option<Outcome> {
    Some(Outcome::Draw { reason })
}

/// One line of up to `plies` plies, found under `found_under` (the rules
/// that let it run longer), played under the seeds' rules and under the
/// federation's.
fn both(
    rs: RuleSet,
    pos: Position,
    plies: u32,
    schedule: impl Fn(u32) -> Kind + Copy,
    found_under: DrawRules,
) -> [(u32, Option<Outcome>); 2] {
    let start = Game::from_position(rs, pos).with_draw_rules(found_under);
    let line = find_line(&start, plies, schedule);
    [DrawRules::Standard, DrawRules::Federation].map(|rules| replay(rs, pos, rules, &line))
}

const STANDARD: DrawRules = DrawRules::Standard;
const FEDERATION: DrawRules = DrawRules::Federation;

// ---- Russian -------------------------------------------------------------

/// Two kings each: the seeds draw after 20 plies of king moves, the
/// federation after 15 moves each (30 plies).
#[test]
fn russian_kings_only_run_is_15_moves_each() {
    let pos = position("a1K c1K", "h8K f8K", Color::Dark);
    let [standard, federation] = both(RuleSet::Russian, pos, 200, kings_only, FEDERATION);
    assert_eq!(standard, (20, draw(DrawReason::NoProgress)));
    assert_eq!(federation, (30, draw(DrawReason::NoProgress)));
}

/// Three kings against a lone king, the three to move: their 15th move
/// (ply 29) without taking the king draws, one ply before the 30-ply
/// king-only limit would. The seeds' rules drew at ply 20 already.
#[test]
fn russian_three_kings_must_win_by_their_15th_move() {
    let pos = position("a1K b2K c1K", "h2K", Color::Dark);
    let [standard, federation] = both(RuleSet::Russian, pos, 200, kings_only, FEDERATION);
    assert_eq!(standard, (20, draw(DrawReason::NoProgress)));
    assert_eq!(federation, (29, draw(DrawReason::EndgameLimit)));

    // With the lone king to move first, the three's 15th move is ply 30.
    let pos = position("a1K b2K c1K", "h2K", Color::Light);
    let [_, federation] = both(RuleSet::Russian, pos, 200, kings_only, FEDERATION);
    assert_eq!(federation.0, 30);
}

/// Four kings against one is the same endgame ("three or more").
#[test]
fn russian_four_kings_against_one_are_limited_too() {
    let pos = position("a1K b2K c1K e1K", "h2K", Color::Dark);
    let [_, federation] = both(RuleSet::Russian, pos, 200, kings_only, FEDERATION);
    assert_eq!(federation, (29, draw(DrawReason::EndgameLimit)));
}

/// King and man each (4 pieces), the men moving now and then: the man
/// moves keep the king-only count low, so the seeds' rules never draw, but
/// the balance of forces stands unchanged and the federation draws after 30
/// moves each.
#[test]
fn russian_four_piece_balance_may_stand_30_moves_each() {
    let pos = position("c1K h2", "f8K a7", Color::Dark);
    let [standard, federation] = both(RuleSet::Russian, pos, 60, man_every(7), STANDARD);
    assert_eq!(standard, (60, None));
    assert_eq!(federation, (60, draw(DrawReason::MaterialUnchanged)));
}

/// The same endgame with only kings moving: the seeds' rules draw at 20
/// plies, the federation's balance rule has not yet (nor its king-only run).
#[test]
fn russian_balance_rule_leaves_a_short_king_run_alone() {
    let pos = position("c1K h2", "f8K a7", Color::Dark);
    let [standard, federation] = both(RuleSet::Russian, pos, 20, kings_only, FEDERATION);
    assert_eq!(standard, (20, draw(DrawReason::NoProgress)));
    assert_eq!(federation, (20, None));
}

/// Six pieces (a king and two men each): 60 moves each.
#[test]
fn russian_six_piece_balance_may_stand_60_moves_each() {
    let pos = position("c1K h2 e1", "f8K a7 d8", Color::Dark);
    let [standard, federation] = both(RuleSet::Russian, pos, 120, man_every(7), STANDARD);
    assert_eq!(standard, (120, None));
    assert_eq!(federation, (120, draw(DrawReason::MaterialUnchanged)));
}

/// A capture changes the balance of forces and restarts the count.
#[test]
fn russian_balance_count_restarts_after_a_capture() {
    let table = RuleSet::Russian.draw_table(DrawRules::Federation);
    // 59 plies with one balance (5 pieces), then a capture (4 pieces): the
    // count starts again.
    let before = position("a1K h2 d4", "h8K a7", Color::Dark);
    let after = position("a1K h2", "h8K a7", Color::Dark);
    let mut history = vec![before; 60];
    history.push(after);
    assert_eq!(table.limit_reached(&history, 0), None);
    history.truncate(60);
    assert_eq!(
        table.limit_reached(&history, 0),
        None,
        "59 plies are not yet 30 moves each"
    );
    history.push(before);
    assert_eq!(
        table.limit_reached(&history, 0),
        Some(DrawReason::MaterialUnchanged)
    );
}

// ---- Brazilian -----------------------------------------------------------

/// Two kings each: 25 moves each (50 plies) under the federation.
#[test]
fn brazilian_kings_only_run_is_25_moves_each() {
    let pos = position("a1K c1K", "h8K f8K", Color::Dark);
    let [standard, federation] = both(RuleSet::Brazilian, pos, 200, kings_only, FEDERATION);
    assert_eq!(standard, (20, draw(DrawReason::NoProgress)));
    assert_eq!(federation, (50, draw(DrawReason::NoProgress)));
}

/// Two kings and a man against a lone king, the man moving every few plies:
/// the seeds' count keeps restarting, the federation's 16 moves each run
/// out at ply 32.
#[test]
fn brazilian_three_pieces_against_a_king_have_16_moves_each() {
    let pos = position("a1K c1K h4", "f8K", Color::Dark);
    let [standard, federation] = both(RuleSet::Brazilian, pos, 32, man_every(8), STANDARD);
    assert_eq!(standard, (32, None));
    assert_eq!(federation, (32, draw(DrawReason::EndgameLimit)));
}

/// Three kings against one, kings only: the seeds' rules draw at ply 20,
/// while the federation allows 16 moves each.
#[test]
fn brazilian_three_kings_outlast_the_seeds_limit() {
    let pos = position("a1K b2K c1K", "h2K", Color::Dark);
    let [standard, federation] = both(RuleSet::Brazilian, pos, 200, kings_only, FEDERATION);
    assert_eq!(standard, (20, draw(DrawReason::NoProgress)));
    assert_eq!(federation, (32, draw(DrawReason::EndgameLimit)));
}

/// Two kings, or one, against a lone king: 5 moves each.
#[test]
fn brazilian_two_pieces_against_a_king_have_5_moves_each() {
    for dark in ["a1K b2K", "a1K"] {
        let pos = position(dark, "h2K", Color::Dark);
        let [standard, federation] = both(RuleSet::Brazilian, pos, 200, kings_only, STANDARD);
        assert_eq!(standard, (20, draw(DrawReason::NoProgress)), "{dark}");
        assert_eq!(federation, (10, draw(DrawReason::EndgameLimit)), "{dark}");
    }
}

/// The endgame count starts when the board becomes that endgame: a capture
/// that turns three pieces against a king into two starts the 5-move count
/// afresh.
#[test]
fn brazilian_endgame_count_starts_on_entry() {
    let table = RuleSet::Brazilian.draw_table(DrawRules::Federation);
    let three = position("a1K c1K e1K", "h8K", Color::Dark);
    let two = position("a1K c1K", "h8K", Color::Dark);
    let mut history = vec![three; 30];
    history.extend([two; 10]);
    assert_eq!(table.limit_reached(&history, 0), None, "9 plies of two");
    history.push(two);
    assert_eq!(
        table.limit_reached(&history, 0),
        Some(DrawReason::EndgameLimit)
    );
}

/// A crowning that stays in the endgame (two kings and a man become three
/// kings) does not restart the 16 moves.
#[test]
fn brazilian_crowning_inside_the_endgame_keeps_the_count() {
    let table = RuleSet::Brazilian.draw_table(DrawRules::Federation);
    let man = position("a1K c1K h6", "f8K", Color::Dark);
    let crowned = position("a1K c1K h8K", "f8K", Color::Dark);
    let mut history = vec![man; 20];
    history.extend([crowned; 12]);
    assert_eq!(table.limit_reached(&history, 0), None, "31 plies");
    history.push(crowned);
    assert_eq!(
        table.limit_reached(&history, 0),
        Some(DrawReason::EndgameLimit)
    );
}

// ---- Italian -------------------------------------------------------------

/// Two kings each: 40 moves each (80 plies) under the federation.
#[test]
fn italian_kings_only_run_is_40_moves_each() {
    let pos = position("a1K c1K", "h8K f8K", Color::Dark);
    let [standard, federation] = both(RuleSet::Italian, pos, 200, kings_only, FEDERATION);
    assert_eq!(standard, (20, draw(DrawReason::NoProgress)));
    assert_eq!(federation, (80, draw(DrawReason::NoProgress)));
}

// ---- Unchanged rule sets and common rules ---------------------------------

/// American (the federation's rule is the seeds'), Spanish and Thai (no
/// clear federation source) keep the seeds' rules.
#[test]
fn american_spanish_and_thai_federation_rules_are_the_seeds() {
    for rs in [RuleSet::American, RuleSet::Spanish, RuleSet::Thai] {
        assert_eq!(
            rs.draw_table(DrawRules::Federation),
            rs.draw_table(DrawRules::Standard),
            "{rs}"
        );
    }
    assert_eq!(
        RuleSet::American.draw_table(DrawRules::Federation),
        DrawTable::king_only(80)
    );
}

/// Every rule set's seeds' table is the king-only run it always had.
#[test]
fn standard_tables_are_the_seeds_king_only_runs() {
    for rs in RuleSet::ALL {
        assert_eq!(
            rs.draw_table(DrawRules::Standard),
            DrawTable::king_only(rs.no_progress_draw_plies())
        );
    }
}

/// Threefold repetition draws under the federation rules too.
#[test]
fn repetition_draws_under_federation_rules() {
    let pos = position("a1K", "h2K", Color::Dark);
    let mut game =
        Game::from_position(RuleSet::Russian, pos).with_draw_rules(DrawRules::Federation);
    for _ in 0..2 {
        for m in ["a1-b2", "h2-g1", "b2-a1", "g1-h2"] {
            let squares: Vec<Square> = m.split('-').map(sq).collect();
            game.play_path(&squares).unwrap();
        }
    }
    assert_eq!(game.outcome(), draw(DrawReason::Repetition));
}

#[test]
fn draw_rules_have_stable_names() {
    for rules in DrawRules::ALL {
        assert_eq!(rules.name().parse::<DrawRules>(), Ok(rules));
    }
    assert_eq!(DrawRules::default(), DrawRules::Standard);
    assert_eq!(DrawRules::Federation.to_string(), "federation");
    assert!("fide".parse::<DrawRules>().is_err());
}

#[test]
fn material_counts_men_and_kings_by_side() {
    let m = Material::of(&position("a1K c1 e1", "h8K", Color::Dark));
    assert_eq!((m.men(Color::Dark), m.kings(Color::Dark)), (2, 1));
    assert_eq!((m.pieces(Color::Light), m.total()), (1, 4));
}

/// The space rule sets keep their own draw rules whatever is asked.
#[test]
fn space_rule_sets_ignore_the_option() {
    for variant in [Variant::Space, Variant::Orbit] {
        let game = VariantGame::with_draw_rules(variant, 1, DrawRules::Federation);
        assert_eq!(game.draw_rules(), DrawRules::Standard);
    }
    let game = VariantGame::with_draw_rules(
        Variant::Draughts(RuleSet::Russian),
        1,
        DrawRules::Federation,
    );
    assert_eq!(game.draw_rules(), DrawRules::Federation);
}
