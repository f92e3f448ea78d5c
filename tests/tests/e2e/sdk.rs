//! The SDK's `Session` against the real server, in both protocol versions and both
//! encodings: answers matched to concurrent requests (and to requests sent in two
//! steps), typed refusals, the room kept
//! equal to a fresh full state after every event, and, across a kill -9 of a `jumpgate`
//! process on Redis, the seat resumed (and the reconnection told) and an in-flight move
//! applied once; solo games.
//! The examples
//! `random_bot` and `spectator`, built by cargo and run as processes, play and follow a
//! whole game.

use std::path::PathBuf;
use std::time::Duration;

use jumpgate_e2e::table::{OUTAGE_PATIENCE, restart_policy};
use jumpgate_e2e::{JumpgateProcess, PATIENCE, RedisServer, TestServer};
use jumpgate_protocol::client::Client;
use jumpgate_protocol::codec::{Encoding, ProtocolVersion, Subprotocol};
use jumpgate_protocol::reconnect::Reentry;
use jumpgate_protocol::session::{
    HttpError, LobbyAddress, NewLobby, NewSoloGame, Reply, Session, SessionError, SessionEvent,
    SessionOptions, SessionState,
};
use jumpgate_protocol::v2::RoomSnapshot;
use jumpgate_protocol::{
    BotLevel, ClientMessage, Color, ErrorCode, Phase, ServerMessage, SoloMode,
};

/// Every subprotocol the SDK speaks.
fn subprotocols() -> [Subprotocol; 4] {
    [
        Subprotocol::v1(Encoding::MsgPack),
        Subprotocol::v1(Encoding::Json),
        Subprotocol::v2(Encoding::MsgPack),
        Subprotocol::v2(Encoding::Json),
    ]
}

/// Quick retries, enough of them to outlast a restart.
fn options(subprotocol: Subprotocol) -> SessionOptions {
    SessionOptions {
        subprotocol,
        client_name: "jumpgate-e2e-sdk".into(),
        policy: restart_policy(),
        ..SessionOptions::default()
    }
}

async fn connect(url: &str, subprotocol: Subprotocol) -> Session {
    tokio::time::timeout(PATIENCE, Session::connect(url, options(subprotocol)))
        .await
        .expect("connected in time")
        .expect("connected and welcomed")
}

/// `future` within [`PATIENCE`], or the test fails.
async fn soon<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, future)
        .await
        .expect("in time")
}

/// A room as two readings of it can agree: piece order carries no meaning, and clock
/// readings (deadlines, time left, the break's end, the expiry) are computed from the
/// server's clock when each message is written (PROTOCOL.md section 21), so only
/// whether they are there is compared.
fn normal(mut room: RoomSnapshot) -> RoomSnapshot {
    room.break_ends_at = room.break_ends_at.map(|_| 0);
    room.expires_at = room.expires_at.map(|_| 0);
    if let Some(game) = room.game.as_mut() {
        game.deadline = u64::from(game.deadline != 0);
        game.remaining_ms = 0;
        game.pieces.sort_by(|a, b| a.square.cmp(&b.square));
    }
    room
}

/// The room as a fresh full state says it is now: `resync` from 0 on a plain client
/// of the room (v1 answers with `state`, v2 with `snapshot`).
async fn fresh_room(checker: &mut Client) -> RoomSnapshot {
    let seq = checker.next_seq();
    checker
        .send(&ClientMessage::Resync { seq, since: 0 })
        .await
        .unwrap();
    let answer = soon(checker.answer(seq, |_| {})).await.unwrap();
    assert_eq!(answer, Ok(()), "resync acknowledged");
    loop {
        match soon(checker.recv()).await.unwrap() {
            ServerMessage::State(state) => return RoomSnapshot::from(state),
            ServerMessage::Snapshot(snapshot) => return snapshot,
            _ => {}
        }
    }
}

/// Waits until `session` holds the room at `fresh`'s version, and checks it is the
/// same room.
async fn holds(session: &Session, fresh: &RoomSnapshot, what: &str) {
    let state = soon(session.wait_for(|s| {
        s.room
            .as_ref()
            .is_some_and(|room| room.version >= fresh.version)
    }))
    .await
    .unwrap();
    let room = state.room.expect("a room");
    assert_eq!(room.version, fresh.version, "{what}: nothing else happened");
    assert_eq!(normal(room), normal(fresh.clone()), "{what}");
}

/// A host and a guest seated in a new lobby (series of 1), both speaking
/// `subprotocol`; the guest joins by the invite link.
async fn seated(
    url: &str,
    subprotocol: Subprotocol,
    lobby: NewLobby,
) -> (Session, Session, LobbyAddress) {
    let host = connect(url, subprotocol).await;
    let room = soon(host.create_lobby(lobby)).await.unwrap();
    assert_eq!(host.state().seat(), Some(0));
    let link = room.invite_link.expect("an invite link");
    let address: LobbyAddress = link.parse().unwrap();
    assert_eq!(address.code, room.code);
    let guest = connect(url, subprotocol).await;
    soon(guest.join(&address)).await.unwrap();
    for session in [&host, &guest] {
        soon(session.wait_for(|s| {
            s.room
                .as_ref()
                .is_some_and(|room| room.phase == Phase::Playing)
        }))
        .await
        .unwrap();
    }
    assert_eq!(guest.state().seat(), Some(1));
    (host, guest, address)
}

/// The session whose turn it is, of the two.
fn mover<'a>(host: &'a Session, guest: &'a Session) -> &'a Session {
    if host.state().my_turn() { host } else { guest }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_match_concurrent_answers_and_type_refusals() {
    let server = TestServer::start(|_| {}).await;
    for subprotocol in subprotocols() {
        let lobby = NewLobby {
            invite_only: true,
            ..NewLobby::default()
        };
        let (host, guest, address) = seated(&server.ws_url(), subprotocol, lobby).await;
        let waiting = if host.state().my_turn() {
            &guest
        } else {
            &host
        };

        // Both sessions, several requests each, all at once.
        let (ping, info, games, refused, version_ack, guest_ping, guest_games) = soon(async {
            tokio::join!(
                host.ping(),
                host.lobby_info(&address),
                host.my_games(),
                waiting.play("11-15"),
                host.request(|seq| ClientMessage::Resync { seq, since: 0 }),
                guest.ping(),
                guest.my_games(),
            )
        })
        .await;
        ping.unwrap();
        let info = info.unwrap();
        assert_eq!(info.code, address.code, "{subprotocol}");
        assert!(info.invite_only);
        for games in [games.unwrap(), guest_games.unwrap()] {
            assert!(
                games.iter().any(|game| game.code == address.code),
                "{subprotocol}: {games:?}"
            );
        }
        assert_eq!(
            refused.unwrap_err().code(),
            Some(ErrorCode::NotYourTurn),
            "{subprotocol}"
        );
        assert_eq!(version_ack.unwrap(), Reply::Ack);
        guest_ping.unwrap();

        // In two steps: each request is sent, with its `seq`, before either answer is
        // awaited; the answers come to the right one whatever order they are awaited in.
        let first = soon(host.send(|seq| ClientMessage::Ping { seq })).await;
        let second = soon(host.send(|seq| ClientMessage::Ping { seq })).await;
        let (first, second) = (first.unwrap(), second.unwrap());
        assert!(second.seq() > first.seq(), "{subprotocol}");
        assert_eq!(soon(second.answer()).await.unwrap(), Reply::Ack);
        assert_eq!(soon(first.answer()).await.unwrap(), Reply::Ack);

        // Typed refusals, with the server's codes.
        let mover = mover(&host, &guest);
        let illegal = soon(mover.play(vec!["a1".to_owned(), "h8".to_owned()])).await;
        assert_eq!(illegal.unwrap_err().code(), Some(ErrorCode::IllegalMove));
        let outsider = connect(&server.ws_url(), subprotocol).await;
        let unknown = soon(outsider.join(&LobbyAddress::code("ZZZZZZZZ"))).await;
        assert_eq!(unknown.unwrap_err().code(), Some(ErrorCode::UnknownLobby));
        // Without its invite, an invite-only lobby is not there (PROTOCOL.md section 15).
        let no_invite = soon(outsider.watch(&LobbyAddress::code(&address.code))).await;
        assert_eq!(no_invite.unwrap_err().code(), Some(ErrorCode::UnknownLobby));
        let not_in = soon(outsider.offer_draw()).await;
        match not_in {
            Err(SessionError::Refused { code, message }) => {
                assert_eq!(code, ErrorCode::NotInLobby);
                assert!(!message.is_empty());
            }
            other => panic!("{subprotocol}: {other:?}"),
        }
        // With the invite, watching works, and the spectator is in no seat.
        let watched = soon(outsider.watch(&address)).await.unwrap();
        assert_eq!(watched.code, address.code);
        assert_eq!(outsider.state().seat(), None);

        for session in [host, guest, outsider] {
            session.close().await;
        }
    }
}

/// Plays until the game is over: the side to move plays its first legal move; on the
/// fourth ply the mover offers a draw and it is declined; on the tenth the mover
/// resigns. After every step both sessions must hold exactly the room a fresh full
/// state shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_room_equals_a_fresh_full_state_after_every_event() {
    let server = TestServer::start(|_| {}).await;
    for subprotocol in subprotocols() {
        let (host, guest, address) =
            seated(&server.ws_url(), subprotocol, NewLobby::default()).await;
        let mut checker = Client::connect(&server.ws_url(), subprotocol)
            .await
            .unwrap();
        soon(checker.greet(None, "jumpgate-e2e-checker"))
            .await
            .unwrap();
        let seq = checker.next_seq();
        let code = address.code.clone();
        checker
            .send(&ClientMessage::Watch {
                seq,
                code,
                invite: None,
            })
            .await
            .unwrap();
        assert_eq!(soon(checker.answer(seq, |_| {})).await.unwrap(), Ok(()));

        let fresh = fresh_room(&mut checker).await;
        for session in [&host, &guest] {
            holds(session, &fresh, "after the spectator came").await;
        }
        let mut host_events = host.events();
        for ply in 1..=10 {
            let mover = mover(&host, &guest);
            let other = if std::ptr::eq(mover, &host) {
                &guest
            } else {
                &host
            };
            let step = if ply == 10 {
                soon(mover.resign()).await.unwrap();
                "resign"
            } else {
                if ply == 4 {
                    soon(mover.offer_draw()).await.unwrap();
                    let offered = fresh_room(&mut checker).await;
                    for session in [&host, &guest] {
                        holds(session, &offered, "draw offered").await;
                    }
                    soon(other.wait_for(|s| {
                        s.room
                            .as_ref()
                            .and_then(|room| room.game.as_ref())
                            .is_some_and(|game| game.draw_offer.is_some())
                    }))
                    .await
                    .unwrap();
                    soon(other.decline_draw()).await.unwrap();
                    let declined = fresh_room(&mut checker).await;
                    for session in [&host, &guest] {
                        holds(session, &declined, "draw declined").await;
                    }
                }
                let path = mover.state().legal_paths().remove(0);
                soon(mover.play(path)).await.unwrap();
                "move"
            };
            let fresh = fresh_room(&mut checker).await;
            for session in [&host, &guest] {
                holds(session, &fresh, &format!("{subprotocol} ply {ply}: {step}")).await;
            }
        }
        let over = host.room().unwrap();
        assert!(over.game.unwrap().result.is_some(), "{subprotocol}");
        // On protocol 2 the room was kept by applying events, not by snapshots alone.
        let (mut moved, mut changed) = (0, 0);
        while let Ok(event) = host_events.try_recv() {
            match event {
                SessionEvent::Message(ServerMessage::Moved(_)) => moved += 1,
                SessionEvent::Message(ServerMessage::Changed(_)) => changed += 1,
                _ => {}
            }
        }
        if subprotocol.version == ProtocolVersion::V2 {
            assert!(
                moved >= 8 && changed >= 2,
                "{subprotocol}: {moved} moved, {changed} changed"
            );
        } else {
            assert_eq!((moved, changed), (0, 0), "{subprotocol}");
        }
        assert_eq!(over.phase, Phase::Finished);
        checker.close().await.unwrap();
        host.close().await;
        guest.close().await;
    }
}

/// SIGSTOP the server, send a move (it waits in the frozen process's socket), kill -9,
/// start a new process on the same address and Redis: the session comes back by
/// itself, takes its seat again, sends the move again with its `seq`, and `play`
/// returns its `ack`. The game holds the move once, and play goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_kill_9_a_session_resumes_its_seat_and_its_move_counts_once() {
    let redis = RedisServer::start().await;
    let env = [
        ("JUMPGATE_REDIS_URL", redis.url()),
        ("JUMPGATE_MOVE_CLOCK_MS", "120000".to_owned()),
    ];
    let mut first = JumpgateProcess::start(&env).await;
    let subprotocol = Subprotocol::v2(Encoding::MsgPack);
    let (host, guest, address) = seated(&first.ws_url(), subprotocol, NewLobby::default()).await;

    let opening = mover(&host, &guest).state().legal_paths().remove(0);
    soon(mover(&host, &guest).play(opening)).await.unwrap();
    let after_first = soon(host.wait_for(|s| {
        s.room
            .as_ref()
            .and_then(|room| room.game.as_ref())
            .is_some_and(|game| game.ply == 1)
    }))
    .await
    .unwrap();
    soon(guest.wait_for(|s| {
        s.room.as_ref().map(|r| r.version) >= after_first.room.as_ref().map(|r| r.version)
    }))
    .await
    .unwrap();

    let host_moves = host.state().my_turn();
    let (sender, other) = if host_moves {
        (&host, &guest)
    } else {
        (&guest, &host)
    };
    let seat = sender.state().seat();
    let in_flight = sender.state().legal_paths().remove(0);
    let mut reconnections = sender.reconnections();
    first.signal("STOP");
    let sending = tokio::spawn({
        let sender = sender.clone();
        let path = in_flight.clone();
        async move { sender.play(path).await }
    });
    // Nothing can answer it: the process is frozen.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!sending.is_finished(), "a frozen server answered");
    first.kill_9();
    let _second = JumpgateProcess::start_at(first.addr, &env).await;

    let answer = tokio::time::timeout(OUTAGE_PATIENCE, sending)
        .await
        .expect("the move answered after the restart")
        .unwrap();
    assert_eq!(
        answer.map(|_| ()).map_err(|e| e.to_string()),
        Ok(()),
        "the re-sent move acknowledged"
    );
    for session in [&host, &guest] {
        let state = tokio::time::timeout(
            OUTAGE_PATIENCE,
            session.wait_for(|s| {
                s.reconnections >= 1
                    && s.room
                        .as_ref()
                        .and_then(|room| room.game.as_ref())
                        .is_some_and(|game| game.ply == 2)
            }),
        )
        .await
        .expect("back in the room with the move")
        .unwrap();
        let room = state.room.as_ref().unwrap();
        assert_eq!(room.code, address.code);
        let game = room.game.as_ref().unwrap();
        assert_eq!(
            game.moves.len(),
            2,
            "every acknowledged move, once: {:?}",
            game.moves
        );
        assert_eq!(game.last_move.as_ref().unwrap().path, in_flight);
    }
    assert_eq!(sender.state().seat(), seat, "the same seat");
    // The reconnection, as the reconnections feed tells it: back in the room.
    let reconnection = reconnections.try_recv().expect("the reconnection was told");
    assert!(
        matches!(reconnection.room, Reentry::Rejoined(_)),
        "{reconnection:?}"
    );
    assert!(reconnection.attempts >= 1);
    // Play goes on, with the other player's move.
    soon(other.wait_for(|s| s.my_turn())).await.unwrap();
    let reply = other.state().legal_paths().remove(0);
    soon(other.play(reply)).await.unwrap();
    let state = soon(sender.wait_for(|s| {
        s.room
            .as_ref()
            .and_then(|room| room.game.as_ref())
            .is_some_and(|game| game.ply == 3)
    }))
    .await
    .unwrap();
    assert_eq!(state.room.unwrap().game.unwrap().moves.len(), 3);
}

/// Builds the examples with cargo (the same target directory and profile as this test)
/// and returns the paths of `names`' executables.
fn build_examples(names: &[&str]) -> Vec<PathBuf> {
    let mut command = std::process::Command::new(env!("CARGO"));
    command.args([
        "build",
        "-p",
        "jumpgate-protocol",
        "--features",
        "client",
        "--message-format=json-render-diagnostics",
    ]);
    for name in names {
        command.args(["--example", name]);
    }
    let output = command
        .stderr(std::process::Stdio::inherit())
        .output()
        .unwrap();
    assert!(output.status.success(), "cargo build --example failed");
    let stdout = String::from_utf8(output.stdout).unwrap();
    names
        .iter()
        .map(|name| {
            stdout
                .lines()
                .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
                .filter(|message| message["reason"] == "compiler-artifact")
                .filter(|message| message["target"]["name"] == *name)
                .find_map(|message| message["executable"].as_str().map(PathBuf::from))
                .unwrap_or_else(|| panic!("no executable for example {name}"))
        })
        .collect()
}

/// Runs an example binary with `args`, its output piped, killed if the test ends first.
fn spawn_example(binary: &PathBuf, args: &[&str]) -> tokio::process::Child {
    tokio::process::Command::new(binary)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

/// What the example `name` printed, once it has exited by itself (within
/// [`PATIENCE`]) with success.
async fn example_stdout(name: &str, child: tokio::process::Child) -> String {
    let output = tokio::time::timeout(PATIENCE, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{name} did not exit"))
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{name} failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The host plays pseudo-random moves until the series is over (within
/// [`OUTAGE_PATIENCE`]), and returns the finished room.
async fn host_plays_until_finished(host: &Session) -> RoomSnapshot {
    tokio::time::timeout(OUTAGE_PATIENCE, async {
        let mut acted_on = 0;
        loop {
            let state = host
                .wait_for(|s| {
                    s.room.as_ref().is_some_and(|room| {
                        room.version > acted_on && (room.phase == Phase::Finished || s.my_turn())
                    })
                })
                .await
                .unwrap();
            let room = state.room.as_ref().unwrap();
            acted_on = room.version;
            if room.phase == Phase::Finished {
                return room.clone();
            }
            let legal = state.legal_paths();
            let path = legal[(room.version as usize * 7) % legal.len()].clone();
            match host.play(path).await {
                Ok(_) => {}
                Err(err) if err.code() == Some(ErrorCode::NotYourTurn) => {}
                Err(err) => panic!("the host's move: {err}"),
            }
        }
    })
    .await
    .expect("the game ended in time")
}

/// protocol/README.md's first example (`examples/first_session.rs`, kept equal to it
/// by the protocol crate's tests), run as a process: it joins a lobby by its invite
/// link, plays the series against the host to its end, and exits by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_session_example_plays_a_series_to_its_end_and_exits() {
    let binaries = tokio::task::spawn_blocking(|| build_examples(&["first_session"]))
        .await
        .unwrap();
    let server = TestServer::start(|_| {}).await;
    let url = server.ws_url();
    let host = connect(&url, Subprotocol::v2(Encoding::MsgPack)).await;
    let room = soon(host.create_lobby(NewLobby::default())).await.unwrap();
    let link = room.invite_link.clone().expect("an invite link");
    let playing = spawn_example(&binaries[0], &[&url, &link]);
    let finished = host_plays_until_finished(&host).await;
    assert!(!finished.game.as_ref().unwrap().moves.is_empty());
    let stdout = example_stdout("first_session", playing).await;
    assert!(stdout.contains("series over"), "{stdout}");
}

/// CLIENTS.md's Rust snippets and the README's pages snippet (`examples/doc_snippets.rs`,
/// kept equal to them by the protocol crate's tests), run as a process against a real
/// server: it joins, plays a move when its turn comes, reads the lobby's pages, and
/// comes back with its token as the same player.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_docs_snippets_run_against_a_server() {
    let binaries = tokio::task::spawn_blocking(|| build_examples(&["doc_snippets"]))
        .await
        .unwrap();
    let server = TestServer::start(|_| {}).await;
    let url = server.ws_url();
    let host = connect(&url, Subprotocol::v2(Encoding::MsgPack)).await;
    let room = soon(host.create_lobby(NewLobby::default())).await.unwrap();
    let running = spawn_example(&binaries[0], &[&url, &room.code]);
    let host_plays = tokio::spawn({
        let host = host.clone();
        async move {
            while let Ok(state) = host.wait_for(|s| s.my_turn()).await {
                host.play(state.legal_paths()[0].clone()).await.unwrap();
            }
        }
    });
    let stdout = example_stdout("doc_snippets", running).await;
    host_plays.abort();
    assert!(stdout.contains("played; the game is at ply"), "{stdout}");
    assert!(stdout.contains("Playing"), "the summary's phase: {stdout}");
    assert!(stdout.contains("back as g_"), "{stdout}");
    host.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_random_bot_and_spectator_examples_finish_a_game() {
    let binaries = tokio::task::spawn_blocking(|| build_examples(&["random_bot", "spectator"]))
        .await
        .unwrap();
    let (bot, spectator) = (&binaries[0], &binaries[1]);
    let server = TestServer::start(|_| {}).await;
    let url = server.ws_url();
    let host = connect(&url, Subprotocol::v2(Encoding::MsgPack)).await;
    let room = soon(host.create_lobby(NewLobby::default())).await.unwrap();
    let code = room.code.clone();

    // The spectator speaks protocol 2 in JSON, the bot protocol 1 in MessagePack.
    let watching = spawn_example(spectator, &[&url, &code, "--protocol", "2", "--json"]);
    soon(host.wait_for(|s| s.room.as_ref().is_some_and(|room| room.spectators == 1)))
        .await
        .unwrap();
    let playing = spawn_example(bot, &[&url, &code, "--protocol", "1"]);

    // The host plays random moves too, until the game is over.
    let finished = host_plays_until_finished(&host).await;
    let moves = finished.game.as_ref().unwrap().moves.clone();
    assert!(!moves.is_empty());

    for (name, child) in [("random_bot", playing), ("spectator", watching)] {
        let stdout = example_stdout(name, child).await;
        assert!(stdout.contains("series over"), "{name}: {stdout}");
        if name == "spectator" {
            // A drawn game of a one-game series is replayed, so the spectator may
            // print several games, each ended by its `game over` line: the last is
            // the finished game, and holds each of its moves once.
            let mut games: Vec<Vec<&str>> = vec![Vec::new()];
            for line in stdout.lines() {
                if let Some(notation) = line.strip_prefix("move ") {
                    games.last_mut().unwrap().push(notation);
                } else if line.starts_with("game over") {
                    games.push(Vec::new());
                }
            }
            assert!(games.len() >= 2, "{stdout}");
            let last = &games[games.len() - 2];
            assert_eq!(*last, moves, "the spectator printed every move, once");
            assert!(stdout.contains("game over"), "{stdout}");
        }
    }
    host.close().await;
}

/// Solo games through the session: one on one device (both sides, undo, leave), and
/// one against the computer, whose replies arrive as new solo states by themselves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn solo_games_keep_their_state_and_tell_each_move() {
    let server = TestServer::start(|_| {}).await;
    let session = connect(&server.ws_url(), Subprotocol::v2(Encoding::Json)).await;
    let mut events = session.events();
    let game = NewSoloGame {
        mode: SoloMode::SameDevice,
        ..NewSoloGame::default()
    };
    let started = soon(session.start_solo(game)).await.unwrap();
    assert!(started.game.moves.is_empty());
    let ply = |s: &SessionState| s.solo.as_ref().map_or(0, |solo| solo.game.ply);
    for n in 1..=2 {
        let state = soon(session.wait_for(|s| s.my_turn() && ply(s) == n - 1))
            .await
            .unwrap();
        let path = state.legal_paths().remove(0);
        soon(session.play(path)).await.unwrap();
        soon(session.wait_for(|s| ply(s) == n)).await.unwrap();
    }
    soon(session.undo()).await.unwrap();
    let undone = soon(session.wait_for(|s| ply(s) == 1)).await.unwrap();
    let moves = undone.solo.unwrap().game.moves;
    let mut told = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let SessionEvent::MovePlayed { notation } = event {
            told.push(notation);
        }
    }
    assert_eq!(
        told.len(),
        2,
        "each move told once, none for the undo: {told:?}"
    );
    assert_eq!(told[0], moves[0]);
    soon(session.leave()).await.unwrap();
    assert!(session.solo().is_none(), "leaving ends the solo game here");

    // Against the computer: our move, then its reply comes by itself.
    let game = NewSoloGame {
        level: Some(BotLevel::Tamer),
        ..NewSoloGame::default()
    };
    let started = soon(session.start_solo(game)).await.unwrap();
    assert_eq!(started.you, Some(Color::Dark));
    let state = soon(session.wait_for(|s| s.my_turn())).await.unwrap();
    soon(session.play(state.legal_paths().remove(0)))
        .await
        .unwrap();
    let replied = soon(session.wait_for(|s| ply(s) == 2 && s.my_turn()))
        .await
        .unwrap();
    assert_eq!(replied.solo.unwrap().game.moves.len(), 2);
    session.close().await;
}

/// Two bots written as protocol/README.md teaches them (wait for `my_turn() ||
/// finished()`, then `play`, choosing each move from the state `play` or `wait_for`
/// returned), playing a whole game while the `jumpgate` process is killed (SIGKILL)
/// and started again on its Redis, twice: no move either sends is refused as illegal
/// or out of turn, through the reconnections and the moves sent again after them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bots_in_the_documented_idiom_play_through_restarts_with_no_refused_move() {
    let redis = RedisServer::start().await;
    let env = [
        ("JUMPGATE_REDIS_URL", redis.url()),
        ("JUMPGATE_MOVE_CLOCK_MS", "120000".to_owned()),
    ];
    let mut server = JumpgateProcess::start(&env).await;
    let (host, guest, _) = seated(
        &server.ws_url(),
        Subprotocol::v2(Encoding::MsgPack),
        NewLobby::default(),
    )
    .await;
    let bot = |session: Session| {
        tokio::spawn(async move {
            let mut played = 0usize;
            loop {
                let state = session
                    .wait_for(|s| s.my_turn() || s.finished())
                    .await
                    .map_err(|e| e.to_string())?;
                if state.finished() {
                    return Ok::<usize, String>(played);
                }
                let legal = state.legal_paths();
                let path = legal[played % legal.len()].clone();
                session
                    .play(path.clone())
                    .await
                    .map_err(|e| format!("move {} at ply {played}: {e}", path.join("-")))?;
                played += 1;
            }
        })
    };
    let playing = [bot(host.clone()), bot(guest.clone())];
    for at_ply in [6, 20] {
        let reached = tokio::time::timeout(
            OUTAGE_PATIENCE,
            host.wait_for(|s| {
                s.finished()
                    || s.room
                        .as_ref()
                        .and_then(|room| room.game.as_ref())
                        .is_some_and(|game| game.ply >= at_ply)
            }),
        )
        .await
        .expect("the game went on")
        .unwrap();
        assert!(!reached.finished(), "the game ended before ply {at_ply}");
        server.kill_9();
        server = JumpgateProcess::start_at(server.addr, &env).await;
    }
    let mut moves = 0;
    for (who, bot) in ["host", "guest"].into_iter().zip(playing) {
        let played = tokio::time::timeout(Duration::from_secs(120), bot)
            .await
            .unwrap_or_else(|_| panic!("the {who}'s game never ended"))
            .unwrap();
        moves += played.unwrap_or_else(|e| panic!("the {who}'s bot: {e}"));
    }
    let state = host.state();
    assert!(state.reconnections >= 2, "{}", state.reconnections);
    let room = state.room.unwrap();
    // A drawn game of a one-game series is played again: then the last game
    // holds only some of the moves.
    if room.series.round == 1 {
        let game = room.game.unwrap();
        assert_eq!(game.moves.len(), moves, "every move played, once");
    }
}

/// `SessionOptions::name` asks for a guest's display name in `hello`, as the
/// TypeScript package's `name` option does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_asks_for_its_guest_name() {
    let server = TestServer::start(|_| {}).await;
    let session = Session::connect(
        &server.ws_url(),
        SessionOptions {
            name: Some("Ada Lovelace".to_owned()),
            ..options(Subprotocol::v2(Encoding::Json))
        },
    )
    .await
    .unwrap();
    assert_eq!(session.identity().name, "Ada Lovelace");
    let plain = connect(&server.ws_url(), Subprotocol::v2(Encoding::Json)).await;
    assert_ne!(plain.identity().name, "Ada Lovelace");
}

/// A server without Redis killed (SIGKILL) with a move in flight and started again:
/// its lobbies are gone, so the session cannot re-enter its room, and the move it was
/// waiting on fails with `SessionError::RoomLost` (not sent again, so not refused
/// `not_in_lobby`); the session is in no room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_in_flight_when_the_room_is_lost_fails_as_room_lost() {
    let env = [("JUMPGATE_MOVE_CLOCK_MS", "120000".to_owned())];
    let mut first = JumpgateProcess::start(&env).await;
    let (host, guest, address) = seated(
        &first.ws_url(),
        Subprotocol::v2(Encoding::Json),
        NewLobby::default(),
    )
    .await;
    let sender = mover(&host, &guest).clone();
    let path = sender.state().legal_paths().remove(0);
    first.signal("STOP");
    let sending = tokio::spawn({
        let sender = sender.clone();
        async move { sender.play(path).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!sending.is_finished(), "a frozen server answered");
    first.kill_9();
    let _second = JumpgateProcess::start_at(first.addr, &env).await;
    let answer = tokio::time::timeout(OUTAGE_PATIENCE, sending)
        .await
        .expect("the move answered after the restart")
        .unwrap();
    match answer {
        Err(SessionError::RoomLost { kind, room, code }) => {
            assert_eq!(kind, "move");
            assert_eq!(room, address.code);
            assert_eq!(code, ErrorCode::UnknownLobby);
        }
        other => panic!("expected RoomLost, got {other:?}"),
    }
    assert!(sender.state().room.is_none(), "in no room");
}

/// `Session::pages` reads a lobby's HTTP pages: the summary and the finished games'
/// PDN of an invite-only lobby with its invite, the `404` `unknown_lobby` without it
/// (the same as for a code without a lobby).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lobby_pages_give_the_summary_and_the_finished_games() {
    let server = TestServer::start(|_| {}).await;
    let lobby = NewLobby {
        invite_only: true,
        ..NewLobby::default()
    };
    let (host, guest, address) =
        seated(&server.ws_url(), Subprotocol::v2(Encoding::MsgPack), lobby).await;
    assert!(
        address.invite.is_some(),
        "an invite-only lobby's link has its invite"
    );
    let pages = guest.pages().unwrap();
    let before = soon(pages.finished_games_pdn(&address)).await.unwrap();
    assert_eq!(before, "", "no game has ended yet");
    let first = mover(&host, &guest);
    let path = first.state().legal_paths().remove(0);
    soon(first.play(path.clone())).await.unwrap();
    soon(host.resign()).await.unwrap();
    soon(guest.wait_for(|s| s.finished())).await.unwrap();

    let summary = soon(pages.lobby_summary(&address)).await.unwrap();
    assert_eq!(summary.code, address.code);
    assert!(summary.invite_only);
    assert_eq!(summary.phase, Phase::Finished);
    let pdn = soon(pages.finished_games_pdn(&address)).await.unwrap();
    assert_eq!(pdn.matches("[Result \"").count(), 1, "one game: {pdn}");
    // PDN writes American squares by number (`1. 12-16`), whatever the session sent.
    let moves = pdn
        .lines()
        .find(|l| l.starts_with("1. "))
        .expect("a move text");
    let first_move = moves.split(' ').nth(1).unwrap();
    assert!(
        first_move.split('-').all(|sq| sq.parse::<u8>().is_ok()) && first_move.contains('-'),
        "the move played ({path:?}) as square numbers: {pdn}"
    );

    let without_invite = LobbyAddress::code(&address.code);
    for missing in [without_invite, LobbyAddress::code("ZZZZZZZZ")] {
        match soon(pages.lobby_summary(&missing)).await {
            Err(e) => {
                assert_eq!(e.code(), Some("unknown_lobby"), "{e}");
                assert!(matches!(e, HttpError::Status { status: 404, .. }), "{e}");
            }
            Ok(summary) => panic!("{missing} was shown: {summary:?}"),
        }
    }
}
