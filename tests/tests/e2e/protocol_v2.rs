//! Protocol 2 over real WebSockets: v1 and v2 members (both encodings) in
//! one room see the same room at every version; a v2 member that loses
//! events catches up with `resync { since }`, from the history when it is
//! recent enough and from a snapshot when not; and while Redis stalls, no
//! v2 event goes out until the store has confirmed the change.

use jumpgate_e2e::{Endpoint, JumpgateProcess, Player, RedisServer, TestServer, recv};
use jumpgate_protocol::client::Client;
use jumpgate_protocol::v2::{Changed, Gap, RoomChanges, RoomSnapshot, RoomView};
use jumpgate_protocol::{
    ClientMessage, Encoding, ErrorCode, Phase, RoomState, RuleSet, ServerMessage, Subprotocol,
};

/// How many events a room keeps for `resync` (the server's
/// `room::feed::HISTORY_EVENTS`).
const HISTORY_EVENTS: u64 = 64;

/// A protocol 2 connection and the room its events built.
struct V2Member {
    client: Client,
    view: RoomView,
}

impl V2Member {
    async fn connect(url: &str, encoding: Encoding) -> V2Member {
        let mut client = Client::connect(url, Subprotocol::v2(encoding))
            .await
            .expect("the server speaks protocol 2");
        assert_eq!(client.subprotocol(), Subprotocol::v2(encoding));
        client.greet(None, "e2e-v2").await.expect("welcome");
        V2Member {
            client,
            view: RoomView::new(),
        }
    }

    async fn send(&mut self, build: impl FnOnce(u32) -> ClientMessage) -> u32 {
        let seq = self.client.next_seq();
        self.client.send(&build(seq)).await.unwrap();
        seq
    }

    /// Applies messages until the answer to `seq`; panics on a refusal.
    async fn answer(&mut self, seq: u32) {
        loop {
            let message = recv(&mut self.client).await;
            match &message {
                ServerMessage::Ack { seq: s } if *s == seq => return,
                ServerMessage::Error {
                    seq: Some(s),
                    code,
                    message,
                } if *s == seq => panic!("seq {seq} refused: {code} {message}"),
                _ => {
                    self.view.apply(&message).expect("no gap");
                }
            }
        }
    }

    /// Applies messages until the view holds `version`.
    async fn reach(&mut self, version: u64) {
        while self.view.version() < Some(version) {
            let message = recv(&mut self.client).await;
            self.view.apply(&message).expect("no gap");
        }
    }

    fn room(&self) -> RoomSnapshot {
        self.view.room().expect("a room").clone()
    }
}

/// A room with the clocks' readings out (two frames built a moment apart
/// differ in them) and pieces in one order (events keep a moved piece in
/// its place in the list).
fn normal(mut room: RoomSnapshot) -> RoomSnapshot {
    room.break_ends_at = room.break_ends_at.map(|_| 0);
    room.expires_at = room.expires_at.map(|_| 0);
    if let Some(game) = room.game.as_mut() {
        game.deadline = 0;
        game.remaining_ms = 0;
        game.pieces.sort_by(|a, b| a.square.cmp(&b.square));
    }
    room
}

fn same_room(v2: &V2Member, v1: &RoomState) {
    assert_eq!(
        normal(v2.room()),
        normal(RoomSnapshot::from(v1.clone())),
        "v2 events and the v1 state say the same room"
    );
}

/// A v1 host (MessagePack) with a lobby, a v2 guest (MessagePack) seated,
/// a v2 spectator (JSON) watching; the series started.
async fn mixed_room(server: &impl Endpoint) -> (Player, V2Member, V2Member) {
    let url = server.ws();
    let url = url.as_str();
    let mut host = Player::connect_to(server, Encoding::MsgPack, None).await;
    let seq = host
        .send(|seq| ClientMessage::CreateLobby {
            seq,
            rule_set: RuleSet::American,
            series_length: 3,
            invite_only: false,
            stake: None,
            pace: None,
            draw_rules: None,
        })
        .await;
    host.expect_ack(seq).await;
    let code = host.state_until(|_| true).await.code;
    let mut guest = V2Member::connect(url, Encoding::MsgPack).await;
    let c = code.clone();
    let seq = guest
        .send(|seq| ClientMessage::JoinLobby {
            seq,
            code: c,
            invite: None,
        })
        .await;
    guest.answer(seq).await;
    let mut watcher = V2Member::connect(url, Encoding::Json).await;
    let seq = watcher
        .send(|seq| ClientMessage::Watch {
            seq,
            code,
            invite: None,
        })
        .await;
    watcher.answer(seq).await;
    let state = host
        .state_until(|s| s.phase == Phase::Playing && s.spectators == 1)
        .await;
    guest.reach(state.version).await;
    watcher.reach(state.version).await;
    (host, guest, watcher)
}

/// Plays one move for whoever is to move (the first legal one); returns
/// the host's state after it.
async fn play_one(host: &mut Player, guest: &mut V2Member) -> RoomState {
    if host.my_turn() {
        host.play_first_legal().await;
    } else {
        // The guest plays from its own events, caught up first.
        guest
            .reach(host.state.as_ref().map_or(0, |s| s.version))
            .await;
        let game = guest.room().game.expect("a game");
        let path = game.legal[0].clone();
        let seq = guest
            .send(|seq| ClientMessage::Move {
                seq,
                notation: None,
                path: Some(path),
            })
            .await;
        guest.answer(seq).await;
    }
    let version = host.state.as_ref().map_or(0, |s| s.version);
    host.state_until(|s| s.version > version).await
}

#[tokio::test]
async fn v1_and_v2_members_in_both_encodings_see_one_room() {
    let server = TestServer::start(|_| {}).await;
    let (mut host, mut guest, mut watcher) = mixed_room(&server).await;
    same_room(&guest, host.state.as_ref().unwrap());
    let mut moved = 0;
    for _ in 0..30 {
        let state = play_one(&mut host, &mut guest).await;
        if state.phase != Phase::Playing {
            break;
        }
        for member in [&mut guest, &mut watcher] {
            member.reach(state.version).await;
            same_room(member, &state);
        }
        moved += 1;
    }
    assert!(moved >= 10, "{moved} moves");

    // A draw offer and its refusal are small events too: two versions.
    let start = host.state.as_ref().unwrap().version;
    if host.my_turn() {
        let seq = host.send(|seq| ClientMessage::OfferDraw { seq }).await;
        host.expect_ack(seq).await;
        guest.reach(start + 1).await;
        let seq = guest.send(|seq| ClientMessage::DeclineDraw { seq }).await;
        guest.answer(seq).await;
    } else {
        let seq = guest.send(|seq| ClientMessage::OfferDraw { seq }).await;
        guest.answer(seq).await;
        let seq = host.send(|seq| ClientMessage::DeclineDraw { seq }).await;
        host.expect_ack(seq).await;
    }
    let state = host.state_until(|s| s.version >= start + 2).await;
    watcher.reach(state.version).await;
    same_room(&watcher, &state);
    assert!(state.game.unwrap().draw_declined.is_some());
}

#[tokio::test]
async fn hello_must_name_the_subprotocols_version() {
    let server = TestServer::start(|_| {}).await;
    let mut client = Client::connect(&server.ws_url(), Subprotocol::v2(Encoding::Json))
        .await
        .unwrap();
    let seq = client.next_seq();
    client
        .send(&ClientMessage::Hello {
            seq,
            protocol: 1,
            token: None,
            client: "e2e".into(),
            name: None,
        })
        .await
        .unwrap();
    match recv(&mut client).await {
        ServerMessage::Error { code, .. } => assert_eq!(code, ErrorCode::UnsupportedVersion),
        other => panic!("{other:?}"),
    }
    // A v2 connection is welcomed with both versions listed.
    let mut client = Client::connect(&server.ws_url(), Subprotocol::v2(Encoding::MsgPack))
        .await
        .unwrap();
    let seq = client.next_seq();
    client
        .send(&ClientMessage::Hello {
            seq,
            protocol: 2,
            token: None,
            client: "e2e".into(),
            name: None,
        })
        .await
        .unwrap();
    match recv(&mut client).await {
        ServerMessage::Welcome { protocols, .. } => assert_eq!(protocols, vec![1, 2]),
        other => panic!("{other:?}"),
    }
}

/// Reads messages without applying them until `version` has gone by.
async fn lose_until(member: &mut V2Member, version: u64) -> usize {
    let mut lost = 0;
    loop {
        let message = recv(&mut member.client).await;
        let v = match &message {
            ServerMessage::Moved(m) => m.version,
            ServerMessage::Changed(c) => c.version,
            _ => continue,
        };
        lost += 1;
        if v >= version {
            return lost;
        }
    }
}

/// Sends `resync { since }` and applies the answer (the `ack`, then at
/// least one frame, up to version `until`); returns how many events and
/// snapshots came.
async fn resync(member: &mut V2Member, since: u64, until: u64) -> (usize, usize) {
    let seq = member
        .send(|seq| ClientMessage::Resync { seq, since })
        .await;
    let (mut events, mut snapshots) = (0, 0);
    let mut acked = false;
    while !acked || events + snapshots == 0 || member.view.version() < Some(until) {
        let message = recv(&mut member.client).await;
        match &message {
            ServerMessage::Ack { seq: s } if *s == seq => acked = true,
            ServerMessage::Snapshot(_) => snapshots += 1,
            ServerMessage::Moved(_) | ServerMessage::Changed(_) => events += 1,
            _ => {}
        }
        if let Err(gap) = member.view.apply(&message) {
            panic!("after resync: {gap}");
        }
    }
    (events, snapshots)
}

#[tokio::test]
async fn a_v2_member_that_lost_events_resyncs_from_the_history_or_a_snapshot() {
    let server = TestServer::start(|_| {}).await;
    let (mut host, mut guest, mut watcher) = mixed_room(&server).await;
    let held = watcher.view.version().unwrap();

    // Five versions lost: the next event shows the gap, and `resync` from
    // what it holds brings exactly the missing events back.
    let mut state = host.state.clone().unwrap();
    for _ in 0..5 {
        state = play_one(&mut host, &mut guest).await;
    }
    assert_eq!(lose_until(&mut watcher, state.version).await, 5);
    let state = play_one(&mut host, &mut guest).await;
    let next = recv(&mut watcher.client).await;
    let gap = watcher.view.apply(&next).expect_err("a gap");
    assert_eq!(
        gap,
        Gap::Missed {
            have: held,
            got: state.version
        }
    );
    let (events, snapshots) = resync(&mut watcher, gap.since(), state.version).await;
    assert_eq!((events, snapshots), (6, 0), "from the history");
    same_room(&watcher, &state);

    // More versions lost than the room keeps: a snapshot. Rounds that end
    // are followed by the next (both ask for it).
    let held = watcher.view.version().unwrap();
    let mut last = state;
    while last.version <= held + HISTORY_EVENTS {
        match last.phase {
            Phase::Playing => last = play_one(&mut host, &mut guest).await,
            Phase::Break => {
                let seq = host.send(|seq| ClientMessage::NextRound { seq }).await;
                host.expect_ack(seq).await;
                let seq = guest.send(|seq| ClientMessage::NextRound { seq }).await;
                guest.answer(seq).await;
                last = host
                    .state_until(|s| s.phase != Phase::Break || s.version > last.version + 1)
                    .await;
            }
            other => panic!("the series ended first ({other:?})"),
        }
    }
    lose_until(&mut watcher, last.version).await;
    let (events, snapshots) = resync(&mut watcher, held, last.version).await;
    assert_eq!((events, snapshots), (0, 1), "too far behind: a snapshot");
    same_room(&watcher, &last);

    // Since 0 is always a snapshot.
    let (events, snapshots) = resync(&mut watcher, 0, last.version).await;
    assert_eq!((events, snapshots), (0, 1));

    // A `since` above the room's version is no error: a snapshot of the
    // current version (v2), the state as always (v1, which ignores it).
    let (events, snapshots) = resync(&mut watcher, last.version + 1000, last.version).await;
    assert_eq!((events, snapshots), (0, 1));
    assert_eq!(watcher.view.version(), Some(last.version));
    let seq = host
        .send(|seq| ClientMessage::Resync {
            seq,
            since: last.version + 1000,
        })
        .await;
    host.expect_ack(seq).await;
    let answer = host.state_until(|_| true).await;
    assert_eq!(answer.version, last.version);
}

/// Applies frames until a `changed`, and returns it.
async fn next_changed(member: &mut V2Member) -> Changed {
    loop {
        let message = recv(&mut member.client).await;
        member.view.apply(&message).expect("no gap");
        if let ServerMessage::Changed(changed) = message {
            return changed;
        }
    }
}

/// Whoever is to move offers a draw; returns the host's state after it.
async fn offer_draw(host: &mut Player, guest: &mut V2Member) -> RoomState {
    if host.my_turn() {
        let seq = host.send(|seq| ClientMessage::OfferDraw { seq }).await;
        host.expect_ack(seq).await;
    } else {
        let seq = guest.send(|seq| ClientMessage::OfferDraw { seq }).await;
        guest.answer(seq).await;
    }
    host.state_until(|s| s.game.as_ref().is_some_and(|g| g.draw_offer.is_some()))
        .await
}

/// The first `changed` after a `moved` (a draw offer, made after every
/// other move, which the next move declines) carries the offer in `game`
/// and nothing in `room`: the room shown after the move lists the moved
/// piece where the event left it, the room now in board order, and those
/// are one board, not a new game.
#[tokio::test]
async fn a_change_after_a_move_carries_only_the_fields_it_changed() {
    let server = TestServer::start(|_| {}).await;
    let (mut host, mut guest, mut watcher) = mixed_room(&server).await;
    for _ in 0..5 {
        play_one(&mut host, &mut guest).await;
        let moved = play_one(&mut host, &mut guest).await;
        assert_eq!(moved.phase, Phase::Playing);
        watcher.reach(moved.version).await;
        let offered = offer_draw(&mut host, &mut guest).await;
        let changed = next_changed(&mut watcher).await;
        assert_eq!(changed.version, offered.version);
        assert_eq!(changed.room, RoomChanges::default(), "no whole game");
        let offer = offered.game.as_ref().unwrap().draw_offer;
        assert_eq!(changed.game.draw_offer, Some(offer));
        same_room(&watcher, &offered);
    }
}

/// The `changed` that opens a break (a draw agreed), the v1 state of that
/// version and every later snapshot of it say one `break_ends_at`, to the
/// millisecond.
#[tokio::test]
async fn a_break_ends_at_the_same_millisecond_in_every_frame_of_its_version() {
    let server = TestServer::start(|_| {}).await;
    let (mut host, mut guest, mut watcher) = mixed_room(&server).await;
    let offered = offer_draw(&mut host, &mut guest).await;
    watcher.reach(offered.version).await;
    if host.my_turn() {
        let seq = guest.send(|seq| ClientMessage::AcceptDraw { seq }).await;
        guest.answer(seq).await;
    } else {
        let seq = host.send(|seq| ClientMessage::AcceptDraw { seq }).await;
        host.expect_ack(seq).await;
    }
    let opened = next_changed(&mut watcher).await;
    let ends_at = opened.room.break_ends_at.flatten().expect("a break");
    let state = host.phase(Phase::Break).await;
    assert_eq!(
        (state.version, state.break_ends_at),
        (opened.version, Some(ends_at))
    );
    for _ in 0..20 {
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
        resync(&mut watcher, 0, opened.version).await;
        let snapshot = watcher.room();
        assert_eq!(
            (snapshot.version, snapshot.break_ends_at),
            (opened.version, Some(ends_at)),
            "a snapshot after the event"
        );
    }
}

/// While Redis stalls past the server's timeout, a move is answered
/// `storage_unavailable` and no v2 member is shown anything; once the store
/// answers, the retried move is acknowledged and every member reaches the
/// same room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_unconfirmed_reaches_v2_members_during_a_stall() {
    let redis = RedisServer::start().await;
    let env = vec![
        ("JUMPGATE_REDIS_URL", redis.url()),
        ("JUMPGATE_REDIS_TIMEOUT_MS", "300".to_owned()),
    ];
    let server = JumpgateProcess::start(&env).await;
    let (mut host, mut guest, mut watcher) = mixed_room(&server).await;
    let before = watcher.view.version().unwrap();
    let ply_before = watcher.room().game.unwrap().ply;
    let mover_is_host = host.my_turn();

    redis.pause(1_500).await;
    let (seq, code) = if mover_is_host {
        let (seq, _) = host.send_first_legal().await;
        (seq, host.expect_error(Some(seq)).await)
    } else {
        let path = guest.room().game.unwrap().legal[0].clone();
        let p = path.clone();
        let seq = guest
            .send(|seq| ClientMessage::Move {
                seq,
                notation: None,
                path: Some(p),
            })
            .await;
        let code = loop {
            match recv(&mut guest.client).await {
                ServerMessage::Error {
                    seq: Some(s), code, ..
                } if s == seq => break code,
                other => {
                    guest.view.apply(&other).unwrap();
                }
            }
        };
        (seq, code)
    };
    assert_eq!(code, ErrorCode::StorageUnavailable);
    // Nothing reaches the watcher while the write is unconfirmed.
    let quiet =
        tokio::time::timeout(std::time::Duration::from_millis(100), watcher.client.recv()).await;
    assert!(quiet.is_err(), "no frame during the stall: {quiet:?}");
    assert_eq!(watcher.view.version(), Some(before));

    // After the stall: the same move again, same seq, is acknowledged.
    tokio::time::sleep(std::time::Duration::from_millis(1_200)).await;
    if mover_is_host {
        let notation = host.first_legal_notation();
        host.client
            .send(&ClientMessage::Move {
                seq,
                notation: Some(notation),
                path: None,
            })
            .await
            .unwrap();
        host.expect_ack(seq).await;
    } else {
        let path = guest.room().game.unwrap().legal[0].clone();
        guest
            .client
            .send(&ClientMessage::Move {
                seq,
                notation: None,
                path: Some(path),
            })
            .await
            .unwrap();
        guest.answer(seq).await;
    }
    let state = host.state_until(|s| s.version > before).await;
    watcher.reach(state.version).await;
    same_room(&watcher, &state);
    assert_eq!(
        watcher.room().game.unwrap().ply,
        ply_before + 1,
        "played once"
    );
}
