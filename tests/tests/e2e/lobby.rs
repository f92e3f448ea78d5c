//! The lobby over real WebSockets, in both encodings: series, clocks, draw
//! offers, resign, rematch, invites, spectators, reconnect.

use std::time::Duration;

use jumpgate_e2e::{Player, TestServer, http_get, seated_pair};
use jumpgate_protocol::{
    ClientMessage, Encoding, ErrorCode, GameEndReason, Phase, RuleSet, SeriesEndReason,
    ServerMessage,
};

#[tokio::test]
async fn best_of_three_with_draw_timeout_resign_and_rematch() {
    for encoding in Encoding::ALL {
        let server = TestServer::start(|s| {
            s.move_clock = Duration::from_millis(1500);
            s.break_time = Duration::from_secs(30);
        })
        .await;
        let (mut host, mut guest, _code) =
            seated_pair(&server, encoding, RuleSet::American, 3).await;
        let state = host.state.clone().unwrap();
        assert_eq!(
            state.players[0].as_ref().unwrap().id,
            host.id,
            "host sits in seat 0"
        );
        assert_eq!(
            state.game.as_ref().unwrap().dark_seat,
            0,
            "host opens round one"
        );
        assert!(state.game.as_ref().unwrap().deadline > 0);

        // Round 1: the host offers a draw on their turn, moves, and the
        // guest accepts.
        let seq = host.send(|seq| ClientMessage::OfferDraw { seq }).await;
        host.expect_ack(seq).await;
        host.play_first_legal().await;
        guest
            .state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == 1))
            .await;
        assert_eq!(
            guest
                .state
                .as_ref()
                .unwrap()
                .game
                .as_ref()
                .unwrap()
                .draw_offer,
            Some(jumpgate_protocol::Color::Dark)
        );
        let seq = guest.send(|seq| ClientMessage::AcceptDraw { seq }).await;
        guest.expect_ack(seq).await;
        let state = host.phase(Phase::Break).await;
        assert_eq!(state.series.draws, 1);
        assert_eq!(
            state.game.as_ref().unwrap().result.unwrap().reason,
            GameEndReason::DrawAgreed
        );

        // Both ask for the next round, which skips the 30 s break.
        for p in [&mut host, &mut guest] {
            let seq = p.send(|seq| ClientMessage::NextRound { seq }).await;
            p.expect_ack(seq).await;
        }
        let state = guest
            .state_until(|s| s.phase == Phase::Playing && s.series.round == 2)
            .await;
        assert_eq!(
            state.game.as_ref().unwrap().dark_seat,
            1,
            "the opener alternates"
        );

        // Round 2: the guest, to move, lets the clock lapse.
        let state = host
            .state_until(|s| s.series.round == 2 && s.phase == Phase::Break)
            .await;
        assert_eq!(
            state.game.as_ref().unwrap().result.unwrap().reason,
            GameEndReason::Timeout
        );
        assert_eq!(state.series.wins, vec![1, 0]);

        for p in [&mut host, &mut guest] {
            let seq = p.send(|seq| ClientMessage::NextRound { seq }).await;
            p.expect_ack(seq).await;
        }
        host.state_until(|s| s.phase == Phase::Playing && s.series.round == 3)
            .await;

        // Round 3: the guest resigns, conceding the series.
        let seq = guest.send(|seq| ClientMessage::Resign { seq }).await;
        guest.expect_ack(seq).await;
        let state = host.phase(Phase::Finished).await;
        let result = state.series.result.unwrap();
        assert_eq!(result.winner, Some(0));
        assert_eq!(result.reason, SeriesEndReason::Resigned);

        // Rematch: once both accept, the seats swap.
        let seq = host.send(|seq| ClientMessage::Rematch { seq }).await;
        host.expect_ack(seq).await;
        let seq = guest.send(|seq| ClientMessage::Rematch { seq }).await;
        guest.expect_ack(seq).await;
        let state = host
            .state_until(|s| s.phase == Phase::Playing && s.series.round == 1)
            .await;
        assert_eq!(state.players[0].as_ref().unwrap().id, guest.id);
        assert_eq!(state.players[1].as_ref().unwrap().id, host.id);
        assert_eq!(state.series.wins, vec![0, 0]);
        assert_eq!(state.host, host.id, "the host stays host");
    }
}

#[tokio::test]
async fn a_single_round_lost_on_time_ends_the_series() {
    let server = TestServer::start(|s| s.move_clock = Duration::from_millis(300)).await;
    let (mut host, _guest, _) = seated_pair(&server, Encoding::Json, RuleSet::Russian, 1).await;
    let state = host.phase(Phase::Finished).await;
    let game = state.game.unwrap();
    assert_eq!(game.result.unwrap().reason, GameEndReason::Timeout);
    assert_eq!(
        game.result.unwrap().winner,
        Some(jumpgate_protocol::Color::Light)
    );
    assert_eq!(state.series.result.unwrap().winner, Some(1));
}

#[tokio::test]
async fn join_by_code_and_link_and_invite_only_lobbies() {
    for encoding in Encoding::ALL {
        let server = TestServer::start(|_| {}).await;
        let mut host = Player::connect(&server, encoding).await;
        let seq = host
            .send(|seq| ClientMessage::CreateLobby {
                seq,
                rule_set: RuleSet::Italian,
                series_length: 1,
                invite_only: true,
                stake: None,
                pace: None,
                draw_rules: None,
            })
            .await;
        host.expect_ack(seq).await;
        let state = host.state_until(|_| true).await;
        let invite = state.invite.clone().expect("members see the invite");
        assert_eq!(state.code.len(), 8);

        // The invite link carries the code and the invite.
        let link = state.invite_link.clone().expect("an invite link");
        assert_eq!(
            link,
            format!("http://{}/r/{}?invite={invite}", server.addr, state.code)
        );
        // The public summary behind the invite link.
        let path = link
            .split_once(&server.addr.to_string())
            .unwrap()
            .1
            .to_owned();
        let summary = http_get(server.addr, &path).await.1;
        assert!(summary.contains("\"rule_set\":\"italian\""), "{summary}");
        assert!(summary.contains("\"invite_only\":true"), "{summary}");
        assert!(
            !summary.contains(&invite),
            "the summary never shows the invite"
        );

        // The code alone admits no one, to play or to watch, and says no
        // more than a code without a lobby.
        let mut stranger = Player::connect(&server, encoding).await;
        let nobody = refusal(&mut stranger, "ZZZZZZZZ", None, false).await;
        assert_eq!(nobody.0, ErrorCode::UnknownLobby);
        for (invite, watch) in [(None, false), (Some("wrong"), true)] {
            assert_eq!(
                refusal(&mut stranger, &state.code, invite, watch).await,
                nobody
            );
        }

        // With the invite from the link, the seat is theirs.
        let code = state.code.clone();
        let inv = invite.clone();
        let seq = stranger
            .send(|seq| ClientMessage::JoinLobby {
                seq,
                code,
                invite: Some(inv),
            })
            .await;
        stranger.expect_ack(seq).await;
        let s = stranger.phase(Phase::Playing).await;
        assert_eq!(s.rule_set, RuleSet::Italian);

        // A third player finds the lobby full.
        let mut third = Player::connect(&server, encoding).await;
        let code = state.code.clone();
        let seq = third
            .send(|seq| ClientMessage::JoinLobby {
                seq,
                code,
                invite: Some(invite.clone()),
            })
            .await;
        assert_eq!(third.expect_error(Some(seq)).await, ErrorCode::LobbyFull);
        let seq = third
            .send(|seq| ClientMessage::JoinLobby {
                seq,
                code: "ZZZZZZZZ".into(),
                invite: None,
            })
            .await;
        assert_eq!(third.expect_error(Some(seq)).await, ErrorCode::UnknownLobby);
    }
}

/// The code and message a `join_lobby` (or `watch`) is refused with.
async fn refusal(
    player: &mut Player,
    code: &str,
    invite: Option<&str>,
    watch: bool,
) -> (ErrorCode, String) {
    let (code, invite) = (code.to_owned(), invite.map(str::to_owned));
    let seq = player
        .send(|seq| {
            if watch {
                ClientMessage::Watch { seq, code, invite }
            } else {
                ClientMessage::JoinLobby { seq, code, invite }
            }
        })
        .await;
    loop {
        match player.recv().await {
            ServerMessage::Error {
                seq: Some(s),
                code,
                message,
            } if s == seq => return (code, message),
            ServerMessage::Ack { seq: s } if s == seq => panic!("seq {s} was accepted"),
            _ => {}
        }
    }
}

/// A GET with this `Accept` header: the status and the body (headers
/// dropped: they carry the date).
async fn get_body(server: &TestServer, path: &str, accept: &str) -> (u16, String) {
    let (status, response) =
        jumpgate_e2e::http_exchange(server.addr, "GET", path, &[("Accept", accept)], "").await;
    let body = response
        .split_once("\r\n\r\n")
        .map_or("", |(_, body)| body)
        .to_owned();
    (status, body)
}

/// Without its invite, an invite-only lobby is a code without a lobby on
/// every path: `join_lobby` and `watch` (no invite, a wrong one, any case
/// of the code), its JSON summary and its games over HTTP (no `?invite=`,
/// a wrong one), and the browser page, which is the same for any code.
/// Its seated players come back without the invite; the invite link's
/// `?invite=` opens the summary and the games.
/// `invite` with its last character changed to another, so never the invite itself.
fn wrong_invite(invite: &str) -> String {
    let last = if invite.ends_with('x') { 'y' } else { 'x' };
    format!("{}{last}", &invite[..invite.len() - 1])
}

/// `invite` with every letter in the other case (an invite has letters of
/// both cases, so never the invite itself).
fn swap_case(invite: &str) -> String {
    let swapped: String = invite
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect();
    assert_ne!(swapped, invite, "an invite with letters");
    swapped
}

#[tokio::test]
async fn an_invite_only_lobby_is_indistinguishable_from_no_lobby_without_its_invite() {
    let server = TestServer::start(|_| {}).await;
    let mut host = Player::connect(&server, Encoding::MsgPack).await;
    let seq = host
        .send(|seq| ClientMessage::CreateLobby {
            seq,
            rule_set: RuleSet::American,
            series_length: 1,
            invite_only: true,
            stake: None,
            pace: None,
            draw_rules: None,
        })
        .await;
    host.expect_ack(seq).await;
    let state = host.state_until(|_| true).await;
    let (code, invite) = (state.code.clone(), state.invite.clone().unwrap());
    let mut guest = Player::connect(&server, Encoding::Json).await;
    let (c, i) = (code.clone(), invite.clone());
    guest
        .request(|seq| ClientMessage::JoinLobby {
            seq,
            code: c,
            invite: Some(i),
        })
        .await
        .unwrap();
    guest.phase(Phase::Playing).await;
    // A spectator and a finished game: things the summary and the PDN
    // would give away.
    let mut fan = Player::connect(&server, Encoding::Json).await;
    let (c, i) = (code.clone(), invite.clone());
    fan.request(|seq| ClientMessage::Watch {
        seq,
        code: c,
        invite: Some(i),
    })
    .await
    .unwrap();
    guest
        .request(|seq| ClientMessage::Resign { seq })
        .await
        .unwrap();
    host.phase(Phase::Finished).await;
    let absent = "ZZZZZZZZ";

    // WebSocket, both encodings.
    for encoding in Encoding::ALL {
        let mut stranger = Player::connect(&server, encoding).await;
        let nobody = refusal(&mut stranger, absent, None, false).await;
        assert_eq!(nobody, (ErrorCode::UnknownLobby, nobody_message()));
        let lower = code.to_lowercase();
        let wrong = wrong_invite(&invite);
        // An invite is compared exactly: not in another case, not padded.
        let other_case = swap_case(&invite);
        let padded = format!(" {invite} ");
        for (c, invite, watch) in [
            (code.as_str(), None, false),
            (code.as_str(), None, true),
            (code.as_str(), Some(wrong.as_str()), false),
            (lower.as_str(), Some(wrong.as_str()), true),
            (code.as_str(), Some(""), false),
            (code.as_str(), Some(other_case.as_str()), false),
            (code.as_str(), Some(padded.as_str()), true),
        ] {
            assert_eq!(
                refusal(&mut stranger, c, invite, watch).await,
                nobody,
                "{c} with {invite:?}, watch {watch}"
            );
            assert_eq!(refusal(&mut stranger, absent, invite, watch).await, nobody);
        }
    }

    // A seated player on a new connection needs no invite, to play or to
    // watch (which gives the seat back).
    for watch in [false, true] {
        let mut back =
            Player::connect_with(&server, Encoding::Json, Some(guest.token.clone())).await;
        let c = code.clone();
        back.request(|seq| {
            if watch {
                ClientMessage::Watch {
                    seq,
                    code: c,
                    invite: None,
                }
            } else {
                ClientMessage::JoinLobby {
                    seq,
                    code: c,
                    invite: None,
                }
            }
        })
        .await
        .unwrap();
    }

    // HTTP: the JSON summary and the games, by Accept header and by query.
    let json = "application/json";
    let not_found = get_body(&server, &format!("/r/{absent}"), json).await;
    assert_eq!(not_found.0, 404);
    assert!(not_found.1.contains("\"unknown_lobby\""), "{not_found:?}");
    assert!(not_found.1.contains(&nobody_message()), "{not_found:?}");
    let wrong = wrong_invite(&invite);
    let other_case = swap_case(&invite);
    for c in [code.clone(), code.to_lowercase()] {
        for path in [
            format!("/r/{c}"),
            format!("/r/{c}?format=json"),
            format!("/r/{c}?invite={wrong}&format=json"),
            format!("/r/{c}?invite={other_case}&format=json"),
            format!("/r/{c}?invite=%20{invite}&format=json"),
            format!("/r/{c}?invite=&format=json"),
            format!("/r/{c}/games.pdn"),
            format!("/r/{c}/games.pdn?invite={wrong}"),
            format!("/r/{c}/games.pdn?code={c}&invite"),
        ] {
            let accept = if path.contains('?') { "*/*" } else { json };
            assert_eq!(get_body(&server, &path, accept).await, not_found, "{path}");
        }
    }
    let (status, summary) = get_body(&server, &format!("/r/{code}?invite={invite}"), json).await;
    assert_eq!(status, 200, "{summary}");
    assert!(summary.contains("\"spectators\":1"), "{summary}");
    let (status, summary) = get_body(
        &server,
        &format!("/r/{code}?format=json&invite={invite}"),
        "*/*",
    )
    .await;
    assert_eq!(status, 200, "{summary}");
    let (status, pdn) = get_body(
        &server,
        &format!("/r/{code}/games.pdn?invite={invite}"),
        "*/*",
    )
    .await;
    assert_eq!(status, 200);
    assert!(pdn.contains("[Result"), "the finished game: {pdn}");

    // The browser page is one page for every code.
    let page = get_body(&server, &format!("/r/{absent}"), "text/html").await;
    assert_eq!(page.0, 200);
    assert!(
        page.1.contains("<html") || page.1.contains("<!doctype") || page.1.contains("<!DOCTYPE")
    );
    for path in [format!("/r/{code}"), format!("/r/{code}?invite={wrong}")] {
        assert_eq!(get_body(&server, &path, "text/html").await, page, "{path}");
    }
}

/// What a code without a lobby is told, as the server words it.
fn nobody_message() -> String {
    jumpgate_server::lobby::NO_SUCH_LOBBY.to_owned()
}

#[tokio::test]
async fn spectators_see_every_move_and_cannot_act() {
    for encoding in Encoding::ALL {
        let server = TestServer::start(|_| {}).await;
        let (mut host, mut guest, code) =
            seated_pair(&server, encoding, RuleSet::American, 1).await;
        let mut watcher = Player::connect(&server, encoding).await;
        let c = code.clone();
        let seq = watcher
            .send(|seq| ClientMessage::Watch {
                seq,
                code: c,
                invite: None,
            })
            .await;
        watcher.expect_ack(seq).await;
        let s = watcher.state_until(|s| s.spectators == 1).await;
        assert!(s.game.is_some());

        let mut played = Vec::new();
        for ply in 0..6 {
            let mover = if ply % 2 == 0 { &mut host } else { &mut guest };
            mover
                .state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == ply))
                .await;
            played.push(mover.play_first_legal().await);
            let seen = watcher
                .state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == ply + 1))
                .await;
            assert_eq!(
                seen.game.unwrap().moves,
                played,
                "the spectator sees every move"
            );
        }

        let refusals = [
            ClientMessage::Move {
                seq: 0,
                notation: Some("11-15".into()),
                path: None,
            },
            ClientMessage::OfferDraw { seq: 0 },
            ClientMessage::Resign { seq: 0 },
            ClientMessage::Rematch { seq: 0 },
            ClientMessage::EndMatch { seq: 0 },
            ClientMessage::NextRound { seq: 0 },
        ];
        for message in refusals {
            let seq = watcher.seq();
            let message = with_seq(message, seq);
            watcher.client.send(&message).await.unwrap();
            assert_eq!(
                watcher.expect_error(Some(seq)).await,
                ErrorCode::SpectatorsCannotAct,
                "{message:?}"
            );
        }
    }
}

#[tokio::test]
async fn reconnect_mid_game_resumes_and_a_resent_move_applies_once() {
    for encoding in Encoding::ALL {
        let server = TestServer::start(|_| {}).await;
        let (mut host, guest, code) = seated_pair(&server, encoding, RuleSet::Brazilian, 1).await;
        let guest_token = guest.token.clone();
        let guest_id = guest.id.clone();
        host.play_first_legal().await;
        drop(guest);
        let s = host
            .state_until(|s| s.players[1].as_ref().is_some_and(|p| !p.connected))
            .await;
        assert_eq!(s.phase, Phase::Playing, "the seat is kept");

        let mut back = Player::connect_with(&server, encoding, Some(guest_token)).await;
        assert_eq!(back.id, guest_id, "the token restores the identity");
        let c = code.clone();
        let seq = back
            .send(|seq| ClientMessage::JoinLobby {
                seq,
                code: c,
                invite: None,
            })
            .await;
        back.expect_ack(seq).await;
        let s = back.state_until(|s| s.game.is_some()).await;
        assert_eq!(
            s.game.as_ref().unwrap().ply,
            1,
            "a full snapshot of the game"
        );
        assert!(back.my_turn());

        // The same move sent twice with one seq is applied once.
        let notation = s.game.unwrap().legal_moves[0].notation.clone();
        let seq = back.seq();
        let m = ClientMessage::Move {
            seq,
            notation: Some(notation),
            path: None,
        };
        back.client.send(&m).await.unwrap();
        back.expect_ack(seq).await;
        back.client.send(&m).await.unwrap();
        back.expect_ack(seq).await;
        let s = host
            .state_until(|s| s.game.as_ref().is_some_and(|g| g.ply >= 2))
            .await;
        assert_eq!(s.game.unwrap().ply, 2);
        let resync = back
            .send(|seq| ClientMessage::Resync { seq, since: 0 })
            .await;
        back.expect_ack(resync).await;
        let s = back.state_until(|_| true).await;
        assert_eq!(s.game.unwrap().ply, 2);
    }
}

#[tokio::test]
async fn moves_by_path_and_turn_and_draw_offer_rules() {
    let server = TestServer::start(|_| {}).await;
    let (mut host, mut guest, _) =
        seated_pair(&server, Encoding::MsgPack, RuleSet::Russian, 1).await;
    // Out of turn.
    let seq = guest
        .send(|seq| ClientMessage::Move {
            seq,
            notation: Some("f6-e5".into()),
            path: None,
        })
        .await;
    assert_eq!(guest.expect_error(Some(seq)).await, ErrorCode::NotYourTurn);
    let seq = guest.send(|seq| ClientMessage::OfferDraw { seq }).await;
    assert_eq!(guest.expect_error(Some(seq)).await, ErrorCode::NotYourTurn);
    let seq = guest.send(|seq| ClientMessage::AcceptDraw { seq }).await;
    assert_eq!(guest.expect_error(Some(seq)).await, ErrorCode::NoDrawOffer);
    // Illegal and by path.
    let seq = host
        .send(|seq| ClientMessage::Move {
            seq,
            notation: Some("c3-c4".into()),
            path: None,
        })
        .await;
    assert_eq!(host.expect_error(Some(seq)).await, ErrorCode::IllegalMove);
    let seq = host
        .send(|seq| ClientMessage::Move {
            seq,
            notation: None,
            path: Some(vec!["c3".into(), "d4".into()]),
        })
        .await;
    host.expect_ack(seq).await;
    // An offer made on one's turn is declined by the opponent moving.
    guest
        .state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == 1))
        .await;
    let seq = guest.send(|seq| ClientMessage::OfferDraw { seq }).await;
    guest.expect_ack(seq).await;
    let seq = guest.send(|seq| ClientMessage::OfferDraw { seq }).await;
    assert_eq!(
        guest.expect_error(Some(seq)).await,
        ErrorCode::DrawAlreadyOffered
    );
    guest.play_first_legal().await;
    host.state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == 2))
        .await;
    host.play_first_legal().await;
    let s = guest
        .state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == 3))
        .await;
    assert_eq!(s.game.unwrap().draw_offer, None, "declined by moving");
    // Only the host ends the match.
    let seq = guest.send(|seq| ClientMessage::EndMatch { seq }).await;
    assert_eq!(guest.expect_error(Some(seq)).await, ErrorCode::NotHost);
    let seq = host.send(|seq| ClientMessage::EndMatch { seq }).await;
    host.expect_ack(seq).await;
    let s = guest.phase(Phase::Ended).await;
    assert_eq!(
        s.series.result.unwrap().reason,
        SeriesEndReason::EndedByHost
    );
    assert_eq!(s.series.result.unwrap().winner, None);
    // The finished game is on record as PDN.
    let pdn = http_get(server.addr, &format!("/r/{}/games.pdn", s.code))
        .await
        .1;
    assert!(pdn.contains("[GameType \"25,W,8,8,A0,0\"]"), "{pdn}");
    assert!(pdn.contains("c3-d4"), "{pdn}");
}

#[tokio::test]
async fn leaving_mid_series_concedes_it() {
    let server = TestServer::start(|_| {}).await;
    let (mut host, mut guest, _) = seated_pair(&server, Encoding::Json, RuleSet::Thai, 3).await;
    let seq = guest.send(|seq| ClientMessage::Leave { seq }).await;
    guest.expect_ack(seq).await;
    let s = host.state_until(|s| s.series.result.is_some()).await;
    let result = s.series.result.unwrap();
    assert_eq!(result.winner, Some(0));
    assert_eq!(result.reason, SeriesEndReason::Left);
    assert!(s.players[1].is_none());
}

fn with_seq(message: ClientMessage, seq: u32) -> ClientMessage {
    let json = serde_json_value(&message, seq);
    serde_json::from_value(json).unwrap()
}

fn serde_json_value(message: &ClientMessage, seq: u32) -> serde_json::Value {
    let mut v = serde_json::to_value(message).unwrap();
    v["seq"] = seq.into();
    v
}

/// `GET /r/{CODE}/positions`: the running game replayed by the server, one
/// position per ply, so a page that came in mid-game can show the moves
/// before it arrived. The last position is the board `state` shows (in
/// Space Mode too, whose wormholes come from the game's seed), and an
/// invite-only lobby answers only with its invite, as its summary does.
#[tokio::test]
async fn the_running_games_positions_are_served_per_ply_behind_the_invite() {
    let server = TestServer::start(|_| {}).await;
    for (rule_set, invite_only) in [(RuleSet::American, true), (RuleSet::Space, false)] {
        let mut host = Player::connect(&server, Encoding::Json).await;
        let seq = host
            .send(|seq| ClientMessage::CreateLobby {
                seq,
                rule_set,
                series_length: 3,
                invite_only,
                stake: None,
                pace: None,
                draw_rules: None,
            })
            .await;
        host.expect_ack(seq).await;
        let created = host.state_until(|_| true).await;
        let (code, invite) = (created.code.clone(), created.invite.clone());
        let mut guest = Player::connect(&server, Encoding::Json).await;
        let (c, i) = (code.clone(), invite.clone());
        guest
            .request(|seq| ClientMessage::JoinLobby {
                seq,
                code: c,
                invite: i,
            })
            .await
            .unwrap();
        host.phase(Phase::Playing).await;
        // Before a move: the start alone.
        let query = invite
            .as_ref()
            .map_or(String::new(), |i| format!("?invite={i}"));
        let path = format!("/r/{code}/positions{query}");
        let (status, body) = get_body(&server, &path, "*/*").await;
        assert_eq!(status, 200, "{body}");
        let start: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(start["positions"].as_array().unwrap().len(), 1, "{body}");
        for ply in 1..=3 {
            let mover = if host.my_turn() {
                &mut host
            } else {
                &mut guest
            };
            mover.play_first_legal().await;
            for p in [&mut host, &mut guest] {
                p.state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == ply))
                    .await;
            }
        }
        let game = host.state.clone().unwrap().game.unwrap();
        let (status, body) = get_body(&server, &path, "*/*").await;
        assert_eq!(status, 200, "{body}");
        let view: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(view["code"], code.as_str());
        assert_eq!(view["round"], 1);
        assert_eq!(view["moves"], serde_json::json!(game.moves));
        let positions = view["positions"].as_array().unwrap();
        assert_eq!(positions.len(), 4, "plies 0 to 3: {body}");
        for (ply, position) in positions.iter().enumerate() {
            assert_eq!(position["ply"], ply);
            if ply == 0 {
                assert!(position.get("last_move").is_none(), "{position}");
            } else {
                assert_eq!(
                    position["last_move"]["notation"],
                    game.moves[ply - 1].as_str()
                );
            }
        }
        assert_eq!(positions[0]["pieces"].as_array().unwrap().len(), 24);
        let last = &positions[3];
        assert_eq!(last["pieces"], serde_json::to_value(&game.pieces).unwrap());
        assert_eq!(
            last["last_move"],
            serde_json::to_value(game.last_move.as_ref().unwrap()).unwrap()
        );
        if rule_set == RuleSet::Space {
            assert_eq!(last["space"], serde_json::to_value(&game.space).unwrap());
        }
        // Without its invite an invite-only lobby is not there.
        if let Some(invite) = &invite {
            let not_found = get_body(&server, "/r/ZZZZZZZZ/positions", "*/*").await;
            assert_eq!(not_found.0, 404);
            for path in [
                format!("/r/{code}/positions"),
                format!("/r/{code}/positions?invite={}", wrong_invite(invite)),
            ] {
                assert_eq!(get_body(&server, &path, "*/*").await, not_found, "{path}");
            }
        }
    }
}
