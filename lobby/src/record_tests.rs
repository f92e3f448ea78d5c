//! A lobby rebuilt from an older record plus the moves appended after it
//! (with their effects) is the lobby itself: random live games with draw
//! offers, declines, clock forfeits, breaks and record rewrites, checked
//! after every step against the record the lobby would write now.

use proptest::prelude::*;

use super::*;
use jumpgate_rules::RuleSet;

const CLOCK: Duration = Duration::from_secs(10);
const BREAK: Duration = Duration::from_secs(3);
/// The wall clock's Unix milliseconds at the test's start.
const EPOCH_MS: u64 = 1_800_000_000_000;

#[derive(Debug, Clone, Copy)]
enum Step {
    /// The side to move plays its n-th legal move (modulo their number).
    Move(usize),
    /// The side to move offers a draw; the other declines or accepts it.
    Offer,
    Decline,
    Accept,
    Wait(u64),
    /// Both ask for the next round (a break) or a rematch.
    Next,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        12 => (0usize..8).prop_map(Step::Move),
        1 => Just(Step::Offer),
        1 => Just(Step::Decline),
        1 => Just(Step::Accept),
        1 => (0u64..12).prop_map(Step::Wait),
        1 => Just(Step::Next),
    ]
}

fn player(seat: usize) -> &'static str {
    ["a_ann", "a_bob"][seat]
}

/// The store as the room would leave it: the last record written, and
/// the move log (moves written with a record carry no effects).
struct Stored {
    record: String,
    log: Vec<StoredMove>,
}

fn clock(start: Instant, now: Instant) -> WallClock {
    WallClock {
        now,
        unix_ms: EPOCH_MS + (now - start).as_millis() as u64,
    }
}

/// Stores a change the way the room does: a move that is the only change
/// and leaves its game in play is appended with its effects (unless the
/// record is due every `compact` moves); anything else rewrites the record.
fn store(lobby: &mut Lobby, stored: &mut Stored, compact: u32, wall: WallClock) {
    lobby.version += 1;
    let appended = match lobby.pending_moves.as_slice() {
        [_] if lobby.moves_since_record + 1 < compact => lobby.move_effects(wall),
        _ => None,
    };
    let mut moves = std::mem::take(&mut lobby.pending_moves);
    match appended {
        Some(effects) => {
            moves[0].effects = Some(effects);
            lobby.moves_since_record += 1;
        }
        None => {
            stored.record = lobby.to_record(wall);
            lobby.moves_since_record = 0;
        }
    }
    stored.log.extend(moves);
    lobby.pending_games.clear();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]
    #[test]
    fn a_record_and_the_moves_appended_after_it_rebuild_the_lobby(
        steps in proptest::collection::vec(step(), 1..120),
        compact in prop_oneof![Just(1u32), Just(2u32), Just(5u32), Just(32u32)],
    ) {
        let start = Instant::now();
        let mut now = start;
        let options = LobbyOptions {
            rule_set: Variant::Draughts(RuleSet::American),
            series_length: 3,
            invite_only: false,
            stake: 0,
            pace: Pace::Live,
            draw_rules: DrawRules::Standard,
        };
        let timing = Timing {
            move_clock: CLOCK,
            break_time: BREAK,
            claim_after: Duration::from_secs(86_400),
            expire_after: Duration::from_secs(7 * 86_400),
        };
        let mut lobby = Lobby::new(RoomCode::generate(), options, None, "a_ann", timing, 7, start);
        let mut stored = Stored { record: String::new(), log: Vec::new() };
        for id in ["a_ann", "a_bob"] {
            let who = crate::effects::Identity { id: id.into(), name: id.into(), guest: false };
            lobby.enter(&who, None, false, &|_| true, now).unwrap();
            store(&mut lobby, &mut stored, compact, clock(start, now));
        }
        for (i, step) in steps.into_iter().enumerate() {
            let seq = i as u32 + 10;
            let to_move = lobby.seat_to_move();
            let changed = match step {
                Step::Move(n) => to_move.is_some_and(|seat| {
                    let legal = lobby.round.as_ref().unwrap().game.legal_moves();
                    let action = Action::Move {
                        notation: Some(legal[n % legal.len()].notation.clone()),
                        path: None,
                    };
                    lobby.act(player(seat), seq, action, now).is_ok()
                }),
                Step::Offer => to_move
                    .is_some_and(|seat| lobby.act(player(seat), seq, Action::OfferDraw, now).is_ok()),
                Step::Decline | Step::Accept => to_move.is_some_and(|seat| {
                    let action = if matches!(step, Step::Decline) {
                        Action::DeclineDraw
                    } else {
                        Action::AcceptDraw
                    };
                    lobby.act(player(1 - seat), seq, action, now).is_ok()
                }),
                Step::Wait(secs) => {
                    now += Duration::from_secs(secs);
                    lobby.on_clock(now) != ClockEvent::Nothing
                }
                Step::Next => {
                    let ask = if lobby.phase == Phase::Break { Action::NextRound } else { Action::Rematch };
                    let a = lobby.act(player(0), seq, ask.clone(), now).is_ok();
                    let b = lobby.act(player(1), seq, ask, now).is_ok();
                    a || b
                }
            };
            if changed {
                store(&mut lobby, &mut stored, compact, clock(start, now));
            }
            let wall = clock(start, now);
            let rebuilt = Lobby::from_record(
                &stored.record,
                &stored.log,
                timing,
                wall,
                Duration::ZERO,
                7,
            );
            let rebuilt = match rebuilt {
                Ok(rebuilt) => rebuilt,
                Err(e) => return Err(TestCaseError::fail(format!("does not rebuild: {e}"))),
            };
            prop_assert_eq!(rebuilt.to_record(wall), lobby.to_record(wall));
            prop_assert_eq!(rebuilt.moves_since_record, lobby.moves_since_record);
            // The round's moves as stored, which `/r/{CODE}/positions` replays.
            prop_assert_eq!(
                rebuilt.round.as_ref().map(|r| &r.stored),
                lobby.round.as_ref().map(|r| &r.stored)
            );
            // "My games" reads the record and the last move only.
            let glanced = glance(&stored.record, stored.log.last()).unwrap();
            let current = glance(&lobby.to_record(wall), None).unwrap();
            let shown = |g: &RecordGlance| {
                let seats = g.seats.clone().map(|s| s.map(|s| s.id));
                (g.phase, seats, g.to_move, g.deadline_ms, g.last_move_ms, g.active_at_ms)
            };
            prop_assert_eq!(shown(&glanced), shown(&current));
        }
    }
}

/// A one-game American lobby at `pace` with a_ann and a_bob seated, and its
/// timing.
fn american_pair(pace: Pace, start: Instant) -> (Lobby, Timing) {
    let options = LobbyOptions {
        rule_set: Variant::Draughts(RuleSet::American),
        series_length: 1,
        invite_only: false,
        stake: 0,
        pace,
        draw_rules: DrawRules::Standard,
    };
    let timing = Timing {
        move_clock: CLOCK,
        break_time: BREAK,
        claim_after: Duration::from_secs(86_400),
        expire_after: Duration::from_secs(7 * 86_400),
    };
    let mut lobby = Lobby::new(
        RoomCode::generate(),
        options,
        None,
        "a_ann",
        timing,
        7,
        start,
    );
    for id in ["a_ann", "a_bob"] {
        let who = crate::effects::Identity {
            id: id.into(),
            name: id.into(),
            guest: false,
        };
        lobby.enter(&who, None, false, &|_| true, start).unwrap();
    }
    (lobby, timing)
}

/// A move logged after the record but without its effects (a log that
/// does not follow from the record) is refused, not guessed at.
#[test]
fn a_move_after_the_record_without_effects_does_not_rebuild() {
    let start = Instant::now();
    let (mut lobby, timing) = american_pair(Pace::Live, start);
    let wall = clock(start, start);
    lobby.version = 2;
    let record = lobby.to_record(wall);
    let opening = Action::Move {
        notation: Some("11-15".into()),
        path: None,
    };
    lobby.act("a_ann", 1, opening, start).unwrap();
    lobby.version += 1;
    let mut log = lobby.pending_moves.clone();
    let rebuilt = Lobby::from_record(&record, &log, timing, wall, Duration::ZERO, 7);
    assert!(matches!(rebuilt, Err(ResumeError::Tail(_))), "{rebuilt:?}");
    // With its effects it rebuilds; with a version not after the record's,
    // it does not.
    let mut effects = lobby.move_effects(wall).unwrap();
    log[0].effects = Some(effects.clone());
    let rebuilt = Lobby::from_record(&record, &log, timing, wall, Duration::ZERO, 7).unwrap();
    assert_eq!(rebuilt.to_record(wall), lobby.to_record(wall));
    effects.version = 2;
    log[0].effects = Some(effects);
    let rebuilt = Lobby::from_record(&record, &log, timing, wall, Duration::ZERO, 7);
    assert!(matches!(rebuilt, Err(ResumeError::Tail(_))), "{rebuilt:?}");
}

/// A move refused as illegal leaves the lobby exactly as it was: its
/// record (the last move's time and the expiry window's start included)
/// does not change.
#[test]
fn an_illegal_move_changes_nothing_in_the_record() {
    let start = Instant::now();
    let (mut lobby, _) = american_pair(Pace::Correspondence, start);
    let later = start + Duration::from_secs(3_600);
    let wall = clock(start, later);
    let before = lobby.to_record(wall);
    let illegal = Action::Move {
        notation: Some("9-5".into()),
        path: None,
    };
    let refused = lobby.act("a_ann", 1, illegal, later);
    assert!(
        matches!(refused, Err(LobbyError::IllegalMove(_))),
        "{refused:?}"
    );
    assert_eq!(lobby.to_record(wall), before);
}
