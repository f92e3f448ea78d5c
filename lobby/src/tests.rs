//! The lobby core's rules, driven directly: no task, no store, no clock but
//! the one passed in. Over 700 lines: one file of examples and one property
//! test over the same private state.

use super::*;

const CLAIM: Duration = Duration::from_secs(2 * 86_400);
const EXPIRY: Duration = Duration::from_secs(7 * 86_400);

fn correspondence_lobby(now: Instant, stake: u32) -> Lobby {
    let options = LobbyOptions {
        rule_set: Variant::Draughts(jumpgate_rules::RuleSet::American),
        series_length: 3,
        invite_only: false,
        stake,
        pace: Pace::Correspondence,
        draw_rules: DrawRules::Standard,
    };
    let timing = Timing {
        move_clock: Duration::from_secs(10),
        break_time: Duration::from_secs(3),
        claim_after: CLAIM,
        expire_after: EXPIRY,
    };
    Lobby::new(RoomCode::generate(), options, None, "a_ann", timing, 1, now)
}

/// Ann and Bob take the two seats, both present.
fn seat_both(lobby: &mut Lobby, now: Instant) {
    for id in ["a_ann", "a_bob"] {
        lobby
            .enter(&account(id), None, false, &|_| true, now)
            .unwrap();
    }
}

/// Ann, in seat 0, opens with 11-15 at `now` (seq 1).
fn opening_move(lobby: &mut Lobby, now: Instant) -> Result<Applied, LobbyError> {
    let opening = Action::Move {
        notation: Some("11-15".into()),
        path: None,
    };
    lobby.act("a_ann", 1, opening, now)
}

fn account(id: &str) -> Identity {
    Identity {
        id: id.into(),
        name: id.into(),
        guest: false,
    }
}

#[test]
fn a_correspondence_series_starts_with_the_host_away_and_no_clock_forfeits() {
    let start = Instant::now();
    let mut lobby = correspondence_lobby(start, 0);
    let away = |_: &str| false;
    lobby
        .enter(&account("a_ann"), None, false, &away, start)
        .unwrap();
    // Days later a friend opens the link while the host is away.
    let joined = start + Duration::from_secs(3 * 86_400);
    lobby
        .enter(&account("a_bob"), None, false, &away, joined)
        .unwrap();
    assert_eq!(lobby.phase, Phase::Playing, "each plays whenever they can");
    // The creator (seat 0) has the first move; the clock is the claim window.
    assert_eq!(lobby.seat_to_move(), Some(0));
    let round = lobby.round.as_ref().unwrap();
    assert_eq!(round.deadline, joined + CLAIM);
    // Nothing forfeits when the window passes: only the expiry is due.
    assert_eq!(lobby.next_deadline(), Some(joined + EXPIRY));
    assert_eq!(lobby.on_clock(joined + CLAIM * 2), ClockEvent::Nothing);
    assert!(lobby.game_in_play());
}

#[test]
fn a_forfeit_is_claimed_only_after_the_window_and_only_against_the_side_to_move() {
    let start = Instant::now();
    let mut lobby = correspondence_lobby(start, 0);
    let here = |_: &str| true;
    seat_both(&mut lobby, start);
    let moved = start + Duration::from_secs(60);
    let played = opening_move(&mut lobby, moved);
    assert_eq!(played, Ok(Applied::Changed));
    assert_eq!(lobby.last_move_at, Some(moved));
    // Bob is to move; Ann may claim only once his window has run out.
    let early = moved + CLAIM - Duration::from_secs(90);
    let before = lobby.version;
    assert_eq!(
        lobby.act("a_ann", 2, Action::ClaimForfeit, early),
        Err(LobbyError::ClaimTooEarly(Duration::from_secs(90)))
    );
    assert_eq!(
        LobbyError::ClaimTooEarly(Duration::from_secs(90)).to_string(),
        "you can claim this game in 1 min 30 s"
    );
    assert_eq!(
        LobbyError::ClaimTooEarly(Duration::from_secs(100_000)).to_string(),
        "you can claim this game in 1 d 3 h 46 min"
    );
    assert!(matches!(
        lobby.act("a_bob", 1, Action::ClaimForfeit, moved + CLAIM),
        Err(LobbyError::NotNow(_))
    ));
    assert_eq!(lobby.version, before, "refusals change nothing");
    assert!(lobby.game_in_play());
    let claimed = lobby.act("a_ann", 3, Action::ClaimForfeit, moved + CLAIM);
    assert_eq!(claimed, Ok(Applied::Changed));
    let result = lobby.round.as_ref().unwrap().result.unwrap();
    assert_eq!(result.reason, GameEnd::ForfeitClaimed);
    assert_eq!(
        result.winner,
        Some(lobby.round.as_ref().unwrap().color_of(0))
    );
    assert_eq!(lobby.series.wins, [1, 0]);
    assert_eq!(lobby.phase, Phase::Break, "a best-of-3 goes on");
    // A live lobby has nothing to claim: its clock decides.
    let mut live = free_lobby();
    live.enter(&guest("g_host", "Host"), None, false, &here, start)
        .unwrap();
    live.enter(&guest("g_two", "Two"), None, false, &here, start)
        .unwrap();
    assert!(matches!(
        live.act("g_two", 1, Action::ClaimForfeit, start + CLAIM),
        Err(LobbyError::NotNow(_))
    ));
}

#[test]
fn a_correspondence_lobby_with_no_move_for_a_week_expires_with_no_winner() {
    let start = Instant::now();
    let mut lobby = correspondence_lobby(start, 100);
    let here = |_: &str| true;
    seat_both(&mut lobby, start);
    // Staked: the series waits for its stakes.
    assert!(lobby.escrow_intent.is_some());
    lobby.begin_series(start);
    let moved = start + Duration::from_secs(3_600);
    opening_move(&mut lobby, moved).unwrap();
    assert_eq!(
        lobby.expires_at(),
        Some(moved + EXPIRY),
        "a move restarts it"
    );
    assert_eq!(
        lobby.on_clock(moved + EXPIRY - Duration::from_millis(1)),
        ClockEvent::Nothing
    );
    assert_eq!(lobby.on_clock(moved + EXPIRY), ClockEvent::Expired);
    assert_eq!(lobby.phase, Phase::Ended);
    let series = lobby.series.result.unwrap();
    assert_eq!((series.winner, series.reason), (None, SeriesEnd::Expired));
    assert_eq!(
        lobby.round.as_ref().unwrap().result.unwrap().reason,
        GameEnd::Expired
    );
    assert!(
        lobby.pending_record.is_none(),
        "nothing is recorded as a win"
    );
    assert!(matches!(
        lobby.pending_settlement,
        Some((_, Settlement::Refund { .. }))
    ));
    assert_eq!(lobby.next_deadline(), None);
    // A lobby nobody joined expires too.
    let mut empty = correspondence_lobby(start, 0);
    empty
        .enter(&account("a_ann"), None, false, &here, start)
        .unwrap();
    assert_eq!(empty.next_deadline(), Some(start + EXPIRY));
    assert_eq!(empty.on_clock(start + EXPIRY), ClockEvent::Expired);
    assert_eq!(empty.phase, Phase::Ended);
    assert!(empty.pending_settlement.is_none());
}

#[test]
fn a_correspondence_lobby_survives_its_record() {
    let start = Instant::now();
    let mut lobby = correspondence_lobby(start, 0);
    seat_both(&mut lobby, start);
    opening_move(&mut lobby, start).unwrap();
    let clock = WallClock {
        now: start,
        unix_ms: 1_800_000_000_000,
    };
    let json = lobby.to_record(clock);
    let moves = lobby.pending_moves.clone();
    // Reloaded a day later: the claim time is kept as stored, no grace.
    let later = WallClock {
        now: start + Duration::from_secs(86_400),
        unix_ms: 1_800_000_000_000 + 86_400_000,
    };
    let back = Lobby::from_record(
        &json,
        &moves,
        lobby.timing,
        later,
        Duration::from_secs(15),
        3,
    )
    .unwrap();
    assert!(back.is_correspondence());
    let deadline = back.round.as_ref().unwrap().deadline;
    assert_eq!(
        later.to_unix_ms(deadline),
        1_800_000_000_000 + CLAIM.as_millis() as u64
    );
    assert_eq!(later.to_unix_ms(back.active_at), 1_800_000_000_000);
    assert_eq!(back.seat_to_move(), Some(1));
    let glance = glance(&json, None).unwrap();
    assert_eq!(glance.to_move, Some(1));
    assert_eq!(glance.last_move_ms, Some(1_800_000_000_000));
    assert_eq!(glance.pace, Pace::Correspondence);
}

#[test]
fn a_series_scored_by_points_ends_when_it_is_decided() {
    // Best of 3: after one game a lead of 10 or less can still be caught.
    assert!(!points_series_over([5, 0], 1, 3));
    assert!(!points_series_over([10, 0], 1, 3));
    assert!(points_series_over([11, 0], 1, 3));
    // With one game left, 5 behind can still tie, 6 behind cannot.
    assert!(!points_series_over([3, 8], 2, 3));
    assert!(points_series_over([2, 8], 2, 3));
    // Every game played: over, even when level.
    assert!(points_series_over([4, 4], 3, 3));
    assert!(points_series_over([0, 0], 1, 1));
}

#[test]
fn an_invite_only_lobby_shows_itself_only_to_its_invite_and_its_seats() {
    let options = LobbyOptions {
        rule_set: Variant::Draughts(jumpgate_rules::RuleSet::American),
        series_length: 1,
        invite_only: true,
        stake: 0,
        pace: Pace::Live,
        draw_rules: DrawRules::Standard,
    };
    let timing = Timing {
        move_clock: Duration::from_secs(10),
        break_time: Duration::from_secs(3),
        claim_after: CLAIM,
        expire_after: EXPIRY,
    };
    let invite = "abcdefghijklmnopqrstuv";
    let mut lobby = Lobby::new(
        RoomCode::generate(),
        options,
        Some(invite.into()),
        "a_ann",
        timing,
        1,
        Instant::now(),
    );
    let person = |id: &str| Identity {
        id: id.into(),
        name: id.into(),
        guest: false,
    };
    let now = Instant::now();
    let before = lobby.version;
    for (who, given) in [
        (None, None),
        (None, Some("abcdefghijklmnopqrstuw")),
        (None, Some("abcdefghijklmnopqrstu")),
        (Some("a_ann"), Some("")),
    ] {
        assert!(!lobby.admits(who, given), "{who:?} with {given:?}");
    }
    for watch in [false, true] {
        assert_eq!(
            lobby.enter(&person("a_ann"), Some("wrong"), watch, &|_| true, now),
            Err(LobbyError::NotInvited)
        );
    }
    assert_eq!(LobbyError::NotInvited.to_string(), NO_SUCH_LOBBY);
    assert_eq!(lobby.version, before, "a refusal changes nothing");
    assert!(lobby.seats.iter().all(Option::is_none));

    assert!(lobby.admits(None, Some(invite)));
    lobby
        .enter(&person("a_ann"), Some(invite), false, &|_| true, now)
        .unwrap();
    // A seat is its own pass: no invite needed to come back, to play or
    // to watch; the HTTP summary (no identity) still needs the invite.
    assert!(lobby.admits(Some("a_ann"), None));
    lobby
        .enter(&person("a_ann"), None, false, &|_| true, now)
        .unwrap();
    lobby
        .enter(&person("a_ann"), None, true, &|_| true, now)
        .unwrap();
    assert!(!lobby.admits(None, None));
    assert!(!lobby.admits(Some("a_bob"), None));
}

fn free_lobby() -> Lobby {
    let options = LobbyOptions {
        rule_set: Variant::Draughts(jumpgate_rules::RuleSet::American),
        series_length: 3,
        invite_only: false,
        stake: 0,
        pace: Pace::Live,
        draw_rules: DrawRules::Standard,
    };
    let timing = Timing {
        move_clock: Duration::from_secs(10),
        break_time: Duration::from_secs(3),
        claim_after: CLAIM,
        expire_after: EXPIRY,
    };
    Lobby::new(
        RoomCode::generate(),
        options,
        None,
        "g_host",
        timing,
        1,
        Instant::now(),
    )
}

fn guest(id: &str, name: &str) -> Identity {
    Identity {
        id: id.into(),
        name: name.into(),
        guest: true,
    }
}

#[test]
fn a_series_waits_for_a_player_who_is_away_and_starts_when_they_are_back() {
    let mut lobby = free_lobby();
    let start = Instant::now();
    let nobody_else = |_: &str| false;
    lobby
        .enter(&guest("g_host", "Host"), None, false, &nobody_else, start)
        .unwrap();
    // The host closed the tab; a friend opens the link.
    lobby
        .enter(
            &guest("g_friend", "Friend"),
            None,
            false,
            &nobody_else,
            start,
        )
        .unwrap();
    assert_eq!(
        lobby.phase,
        Phase::Waiting,
        "no series against an absent host"
    );
    assert!(lobby.round.is_none());
    assert_eq!(lobby.next_deadline(), None, "no clock runs");
    let later = start + Duration::from_secs(3600);
    assert_eq!(lobby.on_clock(later), ClockEvent::Nothing);
    // A spectator arriving changes nothing.
    lobby
        .enter(
            &guest("g_fan", "Fan"),
            None,
            true,
            &|id| id == "g_friend",
            later,
        )
        .unwrap();
    assert_eq!(lobby.phase, Phase::Waiting);
    // The host comes back, under a new name: round 1 starts now, host first.
    lobby
        .enter(
            &guest("g_host", "Hostess"),
            None,
            false,
            &|id| id == "g_friend",
            later,
        )
        .unwrap();
    assert_eq!(lobby.phase, Phase::Playing);
    let round = lobby.round.as_ref().unwrap();
    assert_eq!(round.dark_seat, 0);
    assert_eq!(lobby.next_deadline(), Some(later + Duration::from_secs(10)));
    assert_eq!(lobby.seats[0].as_ref().unwrap().name, "Hostess");
}

#[test]
fn a_series_starts_at_once_when_both_are_present() {
    let mut lobby = free_lobby();
    let now = Instant::now();
    lobby
        .enter(&guest("g_host", "Host"), None, false, &|_| false, now)
        .unwrap();
    lobby
        .enter(
            &guest("g_friend", "Friend"),
            None,
            false,
            &|id| id == "g_host",
            now,
        )
        .unwrap();
    assert_eq!(lobby.phase, Phase::Playing);
}

#[test]
fn a_declined_draw_is_shown_to_the_offerer_until_they_move_or_offer_again() {
    let mut lobby = free_lobby();
    let now = Instant::now();
    let all = |_: &str| true;
    lobby
        .enter(&guest("g_host", "Host"), None, false, &all, now)
        .unwrap();
    lobby
        .enter(&guest("g_friend", "Friend"), None, false, &all, now)
        .unwrap();
    let mv = |n: &str| Action::Move {
        notation: Some(n.into()),
        path: None,
    };
    let declined = |lobby: &Lobby| lobby.round.as_ref().unwrap().draw_declined;
    lobby.act("g_host", 1, Action::OfferDraw, now).unwrap();
    lobby.act("g_host", 2, mv("11-15"), now).unwrap();
    assert_eq!(declined(&lobby), None);
    lobby.act("g_friend", 1, Action::DeclineDraw, now).unwrap();
    assert_eq!(lobby.round.as_ref().unwrap().draw_offer, None);
    assert_eq!(declined(&lobby), Some(Color::Dark), "the offerer is told");
    lobby.act("g_friend", 2, mv("22-18"), now).unwrap();
    assert_eq!(
        declined(&lobby),
        Some(Color::Dark),
        "still shown on their turn"
    );
    lobby.act("g_host", 3, mv("15x22"), now).unwrap();
    assert_eq!(declined(&lobby), None, "gone once the offerer moves");
    // Declining by moving counts too.
    lobby.act("g_friend", 3, Action::OfferDraw, now).unwrap();
    lobby.act("g_friend", 4, mv("25x18"), now).unwrap();
    lobby.act("g_host", 4, mv("8-11"), now).unwrap();
    assert_eq!(declined(&lobby), Some(Color::Light));
    lobby.act("g_friend", 5, Action::OfferDraw, now).unwrap();
    assert_eq!(declined(&lobby), None, "a new offer clears it");
}

#[test]
fn a_game_conceded_mid_play_counts_as_a_round_won_and_a_break_adds_none() {
    let now = Instant::now();
    let all = |_: &str| true;
    let seated = || {
        let mut lobby = free_lobby();
        lobby
            .enter(&guest("g_host", "Host"), None, false, &all, now)
            .unwrap();
        lobby
            .enter(&guest("g_friend", "Friend"), None, false, &all, now)
            .unwrap();
        lobby
    };
    // The friend resigns the running game: the host wins it and the series.
    let mut lobby = seated();
    lobby.act("g_friend", 1, Action::Resign, now).unwrap();
    let result = lobby.round.as_ref().unwrap().result.unwrap();
    assert_eq!(result.reason, GameEnd::Resigned);
    assert_eq!(result.winner, Some(Color::Dark), "the host opened round 1");
    assert_eq!(lobby.series.wins, [1, 0], "the conceded game is a win");
    assert_eq!(lobby.series.result.unwrap().reason, SeriesEnd::Resigned);
    // Leaving mid-game does the same for the one who stays.
    let mut lobby = seated();
    lobby.leave("g_host");
    assert_eq!(lobby.series.wins, [0, 1]);
    // Resigning in a break adds nothing: the last game keeps its result.
    let mut lobby = seated();
    let late = now + Duration::from_secs(11);
    lobby.on_clock(late);
    assert_eq!(lobby.phase, Phase::Break);
    assert_eq!(lobby.series.wins, [0, 1], "the host lost on time");
    lobby.act("g_friend", 1, Action::Resign, late).unwrap();
    assert_eq!(lobby.series.wins, [0, 1]);
    assert_eq!(lobby.series.result.unwrap().winner, Some(0));
}

mod properties {
    //! Random command sequences over two players, a third person and a
    //! guest, with the clock moving and the stakes taken or not, checked
    //! against the series rules after every step.

    use std::collections::HashMap;
    use std::time::{Duration, Instant};

    use proptest::prelude::*;

    use super::super::*;
    use jumpgate_rules::RuleSet;

    const CLOCK: Duration = Duration::from_secs(10);
    const BREAK: Duration = Duration::from_secs(3);

    #[derive(Debug, Clone)]
    enum Step {
        Enter { who: usize, watch: bool },
        Act { who: usize, action: Act },
        Leave { who: usize },
        Wait { secs: u64 },
    }

    #[derive(Debug, Clone, Copy)]
    enum Act {
        Move(usize),
        OfferDraw,
        AcceptDraw,
        DeclineDraw,
        Resign,
        NextRound,
        Rematch,
        EndMatch,
    }

    fn who() -> impl Strategy<Value = usize> {
        // Mostly the two players; sometimes a third account or a guest.
        prop_oneof![4 => Just(0usize), 4 => Just(1usize), 1 => Just(2usize), 1 => Just(3usize)]
    }

    fn act() -> impl Strategy<Value = Act> {
        prop_oneof![
            8 => (0usize..8).prop_map(Act::Move),
            1 => Just(Act::OfferDraw),
            1 => Just(Act::AcceptDraw),
            1 => Just(Act::DeclineDraw),
            1 => Just(Act::Resign),
            2 => Just(Act::NextRound),
            2 => Just(Act::Rematch),
            1 => Just(Act::EndMatch),
        ]
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            2 => (who(), any::<bool>()).prop_map(|(who, watch)| Step::Enter { who, watch }),
            10 => (who(), act()).prop_map(|(who, action)| Step::Act { who, action }),
            1 => who().prop_map(|who| Step::Leave { who }),
            2 => (0u64..25).prop_map(|secs| Step::Wait { secs }),
        ]
    }

    fn identity(who: usize) -> Identity {
        Identity {
            id: ["a_ann", "a_bob", "a_cat", "g_guest"][who].to_owned(),
            name: ["Ann", "Bob", "Cat", "Guest"][who].to_owned(),
            guest: who == 3,
        }
    }

    /// What the room would do with what a transition leaves: stakes taken
    /// (or not, at random), settlements and records taken away.
    struct Shell {
        settled: HashMap<String, u32>,
        begun_staked: Vec<String>,
    }

    impl Shell {
        fn carry_out(&mut self, lobby: &mut Lobby, take: bool, now: Instant) {
            if let Some(intent) = lobby.escrow_intent.clone() {
                assert!(lobby.options.stake > 0, "an escrow intent in a free lobby");
                assert!(
                    !self.begun_staked.contains(&intent.series)
                        && !self.settled.contains_key(&intent.series),
                    "series id {} reused",
                    intent.series
                );
                if take {
                    lobby.begin_series(now);
                    self.begun_staked.push(intent.series);
                } else {
                    lobby.undo_series_start();
                    assert!(lobby.escrow_intent.is_none());
                }
            }
            if let Some((series, _)) = lobby.pending_settlement.take() {
                assert!(
                    self.begun_staked.contains(&series),
                    "settling {series}, which never started with its stakes taken"
                );
                *self.settled.entry(series).or_default() += 1;
            }
            lobby.pending_record = None;
        }
    }

    fn fingerprint(lobby: &Lobby, now: Instant) -> String {
        lobby.to_record(WallClock {
            now,
            unix_ms: 1 << 40,
        })
    }

    fn check_series(lobby: &Lobby) {
        let length = u32::from(lobby.options.series_length);
        let majority = length / 2 + 1;
        let s = &lobby.series;
        assert!(s.wins[0] + s.wins[1] + s.draws <= s.round, "{s:?}");
        match s.result {
            Some(r) => match r.reason {
                SeriesEnd::Majority => {
                    let w = usize::from(r.winner.expect("a majority has a winner"));
                    assert!(s.wins[w] >= majority && s.wins[1 - w] < majority, "{s:?}");
                }
                SeriesEnd::RoundLimit => {
                    assert_eq!(s.round, 2 * length, "{s:?}");
                    assert!(s.wins.iter().all(|w| *w < majority), "{s:?}");
                    let expected = match s.wins[0].cmp(&s.wins[1]) {
                        std::cmp::Ordering::Greater => Some(0),
                        std::cmp::Ordering::Less => Some(1),
                        std::cmp::Ordering::Equal => None,
                    };
                    assert_eq!(r.winner, expected, "{s:?}");
                }
                _ => {}
            },
            None => {
                if matches!(lobby.phase, Phase::Playing | Phase::Break) {
                    assert!(s.wins.iter().all(|w| *w < majority), "{s:?}");
                    assert!(s.round <= 2 * length, "{s:?}");
                }
            }
        }
        if let Some(round) = &lobby.round
            && s.result.is_none()
        {
            // Seat 0 opens the odd rounds, seat 1 the even ones.
            assert_eq!(
                round.dark_seat,
                usize::from(s.round.is_multiple_of(2)),
                "{s:?}"
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn random_play_keeps_the_series_rules(
            steps in proptest::collection::vec(step(), 1..160),
            staked in any::<bool>(),
            length in prop_oneof![Just(1u8), Just(3u8), Just(5u8)],
            takes in proptest::collection::vec(any::<bool>(), 160),
        ) {
            let start = Instant::now();
            let mut now = start;
            let options = LobbyOptions {
                rule_set: Variant::Draughts(RuleSet::American),
                series_length: length,
                invite_only: false,
                stake: if staked { 50 } else { 0 },
                pace: Pace::Live,
                draw_rules: DrawRules::Standard,
            };
            let timing = Timing {
                move_clock: CLOCK,
                break_time: BREAK,
                claim_after: super::CLAIM,
                expire_after: super::EXPIRY,
            };
            let mut lobby =
                Lobby::new(RoomCode::generate(), options, None, "a_ann", timing, 7, start);
            let mut shell = Shell { settled: HashMap::new(), begun_staked: Vec::new() };
            for (i, step) in steps.into_iter().enumerate() {
                let before = fingerprint(&lobby, now);
                let seats_before = lobby.seats.clone().map(|s| s.map(|s| s.id));
                let series_before = lobby.series.clone();
                let round_before = lobby.round.as_ref().map(|r| (r.game_no, r.result));
                let rematch_pending = lobby.rematch;
                match step {
                    Step::Enter { who, watch } => {
                        if lobby.enter(&identity(who), None, watch, &|_| true, now).is_err() {
                            prop_assert_eq!(&fingerprint(&lobby, now), &before, "a refused entry changed the lobby");
                        }
                    }
                    Step::Act { who, action } => {
                        let id = identity(who).id;
                        let seated = lobby.seat_of(&id).is_some();
                        let action = match action {
                            Act::Move(n) => match lobby.round.as_ref() {
                                Some(r) if r.result.is_none() && !r.game.legal_moves().is_empty() => {
                                    let legal = r.game.legal_moves();
                                    Action::Move { notation: Some(legal[n % legal.len()].notation.clone()), path: None }
                                }
                                _ => Action::Move { notation: Some("11-15".into()), path: None },
                            },
                            Act::OfferDraw => Action::OfferDraw,
                            Act::AcceptDraw => Action::AcceptDraw,
                            Act::DeclineDraw => Action::DeclineDraw,
                            Act::Resign => Action::Resign,
                            Act::NextRound => Action::NextRound,
                            Act::Rematch => Action::Rematch,
                            Act::EndMatch => Action::EndMatch,
                        };
                        let rematch = action == Action::Rematch;
                        let result = lobby.act(&id, i as u32, action, now);
                        if !seated {
                            prop_assert!(result.is_err(), "a spectator acted");
                        }
                        if result.is_err() {
                            prop_assert_eq!(&fingerprint(&lobby, now), &before, "a refused action changed the lobby");
                        }
                        if rematch && result.is_ok() && rematch_pending.iter().filter(|r| **r).count() == 1
                            && lobby.rematch == [false; 2] || lobby.escrow_intent.is_some() && rematch
                        {
                            // Both asked: the seats swapped.
                            let now_ids = lobby.seats.clone().map(|s| s.map(|s| s.id));
                            prop_assert_eq!(&now_ids[0], &seats_before[1]);
                            prop_assert_eq!(&now_ids[1], &seats_before[0]);
                        }
                    }
                    Step::Leave { who } => lobby.leave(&identity(who).id),
                    Step::Wait { secs } => {
                        now += Duration::from_secs(secs);
                        lobby.on_clock(now);
                    }
                }
                // A round that ended as a draw scored nobody.
                if let (Some((game, None)), Some(r)) = (round_before, lobby.round.as_ref())
                    && r.game_no == game
                    && let Some(result) = r.result
                    && result.winner.is_none()
                    && lobby.series.round == series_before.round
                    && result.reason != GameEnd::EndedByHost
                {
                    prop_assert_eq!(lobby.series.wins, series_before.wins);
                    prop_assert_eq!(lobby.series.draws, series_before.draws + 1);
                }
                shell.carry_out(&mut lobby, takes[i], now);
                check_series(&lobby);
            }
            for (series, n) in &shell.settled {
                prop_assert_eq!(*n, 1, "series {} settled {} times", series, n);
            }
        }
    }
}
