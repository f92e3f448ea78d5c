//! Protocol 2 against the room's own view code: random series in several
//! rule sets (moves by path, draw offers answered every way, resignations,
//! breaks, rematches, players and spectators coming and going), with v1 and
//! v2 members side by side. At every version, what each v2 member built by
//! applying events (after a trip through its encoding, some of them lost
//! and recovered with `resync { since }`) equals the snapshot the room
//! itself sends, and the v1 member's `state` says the same room.

use std::sync::Arc;

use jumpgate_protocol as wire;
use jumpgate_protocol::v2::{Gap, RoomSnapshot, RoomView};
use jumpgate_protocol::{Encoding, Phase, ProtocolVersion, ServerMessage};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::time::Duration;

use super::*;
use crate::config::Settings;
use crate::identity::Identity;
use crate::lobby::Action;
use crate::outbound::{Member, Outbound};
use crate::rules::{RuleSet, Variant};
use crate::store::MemoryStore;

fn identity(n: u64) -> Identity {
    Identity {
        id: format!("id{n}"),
        name: format!("player{n}"),
        guest: true,
    }
}

/// One connection in the room under test.
struct Conn {
    conn: ConnId,
    who: u64,
    version: ProtocolVersion,
    encoding: Encoding,
    out: mpsc::Sender<Outbound>,
    rx: mpsc::Receiver<Outbound>,
    /// v2: the room as this member's events built it.
    view: RoomView,
    /// v1: the last state.
    state: Option<wire::RoomState>,
    seq: u32,
    inside: bool,
    /// v2: drops events now and then, to be recovered by `resync`.
    lossy: bool,
    /// v2: the version held when an event showed a gap; events are
    /// ignored until the `resync` from it.
    gap: Option<u64>,
}

/// Bytes of `moved` frames (MessagePack) and of v1 states, per move.
#[derive(Default)]
struct Sizes {
    moved_bytes: usize,
    moved: usize,
    v1_bytes: usize,
    v1: usize,
}

struct Game {
    commands: Mailbox,
    conns: Vec<Conn>,
    rng: StdRng,
    sizes: Sizes,
    resyncs: usize,
    /// The last refusal's text.
    refused: Option<String>,
}

/// A frame as its member's client would read it.
fn received(outbound: Outbound, encoding: Encoding) -> Option<ServerMessage> {
    let message = match outbound {
        Outbound::Shared(frame) => frame.get(encoding).clone(),
        Outbound::Direct(message) => {
            crate::outbound::to_ws(wire::codec::encode_server(encoding, &message))
        }
        Outbound::Moved => return None,
    };
    Some(wire::codec::decode_server(encoding, &message.into_data()).expect("decodes"))
}

impl Game {
    async fn new(rule_set: Variant, seed: u64) -> Game {
        Game::with_pace(rule_set, crate::lobby::Pace::Live, seed).await
    }

    async fn with_pace(rule_set: Variant, pace: crate::lobby::Pace, seed: u64) -> Game {
        let mut settings = Settings::for_address("127.0.0.1:0".parse().unwrap());
        settings.move_clock = Duration::from_secs(3_600);
        settings.break_time = Duration::from_secs(3_600);
        let room = Room::new(
            RoomCode::generate(),
            LobbyOptions {
                rule_set,
                series_length: 3,
                invite_only: false,
                stake: 0,
                pace,
                draw_rules: crate::rules::DrawRules::Standard,
            },
            &identity(1),
            &RoomDeps {
                settings: Arc::new(crate::app::room_settings(&settings)),
                store: Arc::new(MemoryStore::default()),
                wallets: Arc::new(crate::wallet::MemoryWallets::default()),
                records: Arc::new(crate::records::MemoryRecords::default()),
            },
        );
        let (commands, rx) = super::mailbox(16);
        tokio::spawn(room.run(rx));
        let mut game = Game {
            commands,
            conns: Vec::new(),
            rng: StdRng::seed_from_u64(seed),
            sizes: Sizes::default(),
            resyncs: 0,
            refused: None,
        };
        // Seat 0 in v2 MessagePack, seat 1 in v1, a v2 JSON spectator that
        // loses events, a v2 prober asking the room for snapshots, and a
        // v1 spectator that comes and goes.
        let v2 = ProtocolVersion::V2;
        let v1 = ProtocolVersion::V1;
        for (conn, who, version, encoding, lossy) in [
            (1, 1, v2, Encoding::MsgPack, false),
            (2, 2, v1, Encoding::MsgPack, false),
            (3, 3, v2, Encoding::Json, true),
            (4, 4, v2, Encoding::MsgPack, false),
            (5, 5, v1, Encoding::Json, false),
        ] {
            let (out, rx) = mpsc::channel(1_024);
            game.conns.push(Conn {
                conn,
                who,
                version,
                encoding,
                out,
                rx,
                view: RoomView::new(),
                state: None,
                seq: 0,
                inside: false,
                lossy,
                gap: None,
            });
            game.enter(game.conns.len() - 1).await;
        }
        game
    }

    async fn enter(&mut self, i: usize) {
        let c = &mut self.conns[i];
        c.seq += 1;
        let (reply, reply_rx) = oneshot::channel();
        self.commands
            .send(RoomCommand::Enter {
                member: Member {
                    conn: c.conn,
                    version: c.version,
                    identity: identity(c.who),
                    out: c.out.clone(),
                    kick: Arc::new(Notify::new()),
                },
                seq: c.seq,
                invite: None,
                watch: c.who > 2,
                reply,
            })
            .await
            .unwrap();
        assert_eq!(reply_rx.await.unwrap(), Entered::Yes);
        c.inside = true;
        self.settle().await;
    }

    async fn disconnect(&mut self, i: usize) {
        let conn = self.conns[i].conn;
        self.commands
            .send(RoomCommand::Disconnect { conn })
            .await
            .unwrap();
        self.conns[i].inside = false;
        // Waits for the room to have handled it (the prober's resync
        // queues behind it).
        self.settle().await;
        // What was sent before the disconnect is gone with the connection.
        while self.conns[i].rx.try_recv().is_ok() {}
        self.conns[i].view = RoomView::new();
        self.conns[i].state = None;
    }

    /// Sends `action` from connection `i`; returns whether it was accepted.
    async fn act(&mut self, i: usize, action: Action, since: Option<u64>) -> bool {
        let c = &mut self.conns[i];
        c.seq += 1;
        let seq = c.seq;
        self.commands
            .send(RoomCommand::Act {
                conn: c.conn,
                seq,
                action,
                since,
            })
            .await
            .unwrap();
        let mut accepted = None;
        // The answer comes before (or with) everything the action caused.
        while accepted.is_none() {
            let out = self.conns[i].rx.recv().await.expect("the room answers");
            let encoding = self.conns[i].encoding;
            let Some(message) = received(out, encoding) else {
                continue;
            };
            match &message {
                ServerMessage::Ack { seq: s } if *s == seq => accepted = Some(true),
                ServerMessage::Error {
                    seq: Some(s),
                    message: text,
                    ..
                } if *s == seq => {
                    self.refused = Some(text.clone());
                    accepted = Some(false);
                }
                _ => {}
            }
            self.take(i, message);
        }
        accepted.unwrap()
    }

    /// Hands member `i` one message: a v1 state is kept, v2 frames are
    /// applied (a lossy member drops some events; the gap that shows is
    /// noted for [`settle`](Self::settle) to fill with `resync`).
    fn take(&mut self, i: usize, message: ServerMessage) {
        if let ServerMessage::Moved(_) = &message
            && i == 0
        {
            let frame = wire::codec::encode_server(Encoding::MsgPack, &message);
            self.sizes.moved_bytes += frame.len();
            self.sizes.moved += 1;
        }
        let event = matches!(message, ServerMessage::Moved(_) | ServerMessage::Changed(_));
        let lose = event && self.conns[i].lossy && self.rng.random_ratio(1, 12);
        let c = &mut self.conns[i];
        match c.version {
            ProtocolVersion::V1 => {
                if let ServerMessage::State(state) = message {
                    c.state = Some(state);
                }
            }
            ProtocolVersion::V2 => {
                if lose || (event && c.gap.is_some()) {
                    return;
                }
                match c.view.apply(&message) {
                    Ok(_) => {}
                    Err(Gap::Missed { have, .. }) => c.gap = Some(have),
                    Err(gap) => panic!("member {i}: {gap} ({message:?})"),
                }
            }
        }
    }

    /// Checks every member against the room's own snapshot. The prober
    /// asks for one (`resync` from 0: always whole); its answer is queued
    /// behind everything sent so far, so the room has handled every
    /// command by then. Members then get what is queued for them, and a
    /// v2 member that shows a gap, or is behind because the event it lost
    /// was the last, resyncs from what it holds.
    async fn settle(&mut self) {
        let Some(prober) = self.conns.get(3).filter(|c| c.inside).map(|_| 3) else {
            self.deliver();
            return;
        };
        // Events before the answer are applied to the prober's view.
        self.act(prober, Action::Resync, Some(0)).await;
        let events_built = self.conns[prober].view.clone();
        let out = self.conns[prober].rx.try_recv().expect("a snapshot");
        let Some(ServerMessage::Snapshot(snapshot)) = received(out, Encoding::MsgPack) else {
            panic!("resync from 0 is answered with a snapshot");
        };
        let truth = normal(snapshot.clone());
        if let Some(room) = events_built.room() {
            let built = normal(room.clone());
            assert!(
                built == truth,
                "the prober's events differ: {}",
                game_difference(&built, &truth)
            );
        }
        self.conns[prober].view = RoomView::from_snapshot(snapshot);
        loop {
            self.deliver();
            let behind = (0..self.conns.len()).find(|&i| {
                let c = &self.conns[i];
                c.inside
                    && c.version == ProtocolVersion::V2
                    && (c.gap.is_some() || c.view.version() < Some(truth.version))
            });
            let Some(i) = behind else {
                break;
            };
            let since = self.conns[i].gap.take().or(self.conns[i].view.version());
            self.resyncs += 1;
            self.act(i, Action::Resync, since).await;
        }
        for (i, c) in self.conns.iter().enumerate() {
            if !c.inside {
                continue;
            }
            match c.version {
                ProtocolVersion::V2 => {
                    let room = c.view.room().expect("shown the room");
                    assert_eq!(normal(room.clone()), truth, "member {i}");
                }
                ProtocolVersion::V1 => {
                    let state = c.state.clone().expect("shown the room");
                    assert_eq!(normal(RoomSnapshot::from(state)), truth, "v1 member {i}");
                }
            }
        }
    }

    /// Hands every member what is queued for it.
    fn deliver(&mut self) {
        for i in 0..self.conns.len() {
            while let Ok(out) = self.conns[i].rx.try_recv() {
                let encoding = self.conns[i].encoding;
                if let Some(message) = received(out, encoding) {
                    self.take(i, message);
                }
            }
        }
    }

    /// The connection of whoever sits in `seat` (a rematch swaps seats).
    fn seat_conn(&self, seat: usize) -> usize {
        let room = self.room();
        let id = &room.players[seat].as_ref().expect("seated").id;
        self.conns
            .iter()
            .position(|c| identity(c.who).id == *id)
            .expect("a seated member")
    }

    fn room(&self) -> RoomSnapshot {
        self.conns[0]
            .view
            .room()
            .expect("seat 0 sees the room")
            .clone()
    }

    /// One random step; false once the room is over.
    async fn step(&mut self) -> bool {
        let room = self.room();
        let roll = self.rng.random_range(0..100);
        match room.phase {
            Phase::Playing => {
                let game = room.game.as_ref().expect("a game in play");
                let to_move = if game.turn == wire::Color::Dark {
                    game.dark_seat as usize
                } else {
                    1 - game.dark_seat as usize
                };
                let other = 1 - to_move;
                if roll < 3 {
                    let i = self.seat_conn(to_move);
                    self.act(i, Action::OfferDraw, None).await;
                } else if roll < 6 && game.draw_offer.is_some() {
                    let answer = if roll < 5 {
                        Action::DeclineDraw
                    } else {
                        Action::AcceptDraw
                    };
                    let i = self.seat_conn(other);
                    self.act(i, answer, None).await;
                } else if roll < 7 {
                    let seat = self.rng.random_range(0..2);
                    let i = self.seat_conn(seat);
                    self.act(i, Action::Resign, None).await;
                } else if roll < 9 {
                    // The v1 player or the v1 spectator drops and comes back.
                    let i = if roll < 8 { 1 } else { 4 };
                    if self.conns[i].inside {
                        self.disconnect(i).await;
                    } else {
                        self.enter(i).await;
                    }
                } else {
                    let moves: Vec<_> = game
                        .legal
                        .iter()
                        .chain(&game.legal_boosts)
                        .cloned()
                        .collect();
                    let path = moves[self.rng.random_range(0..moves.len())].clone();
                    let action = Action::Move {
                        notation: None,
                        path: Some(path),
                    };
                    let seat = self.seat_conn(to_move);
                    assert!(
                        self.act(seat, action, None).await,
                        "a legal move: {:?}",
                        self.refused
                    );
                }
            }
            Phase::Break => {
                for seat in [0, 1] {
                    self.act(seat, Action::NextRound, None).await;
                }
            }
            Phase::Finished => {
                if roll < 70 {
                    for seat in [0, 1] {
                        self.act(seat, Action::Rematch, None).await;
                    }
                } else {
                    self.act(0, Action::EndMatch, None).await;
                }
            }
            Phase::Waiting | Phase::Ended => return false,
        }
        // Seat 1 may have stayed away: it comes back to play.
        if !self.conns[1].inside {
            self.enter(1).await;
        }
        self.settle().await;
        true
    }
}

/// A room with the readings of the clock taken out (they differ between
/// two frames built a moment apart) and pieces in one order (events keep a
/// moved piece in its place in the list).
fn normal(mut room: RoomSnapshot) -> RoomSnapshot {
    room.break_ends_at = room.break_ends_at.map(|_| 0);
    room.expires_at = room.expires_at.map(|_| 0);
    if let Some(game) = room.game.as_mut() {
        assert_eq!(
            game.result.is_none(),
            game.deadline != 0,
            "a game in play has a deadline"
        );
        game.deadline = 0;
        game.remaining_ms = 0;
        game.pieces.sort_by(|a, b| a.square.cmp(&b.square));
    }
    room
}

/// Which game fields two rooms differ in, for a failure message.
fn game_difference(a: &RoomSnapshot, b: &RoomSnapshot) -> String {
    let (Some(a), Some(b)) = (&a.game, &b.game) else {
        return format!("{:?}", jumpgate_protocol::v2::Changed::between(a, b));
    };
    let a = serde_json::to_value(a).unwrap();
    let b = serde_json::to_value(b).unwrap();
    let (serde_json::Value::Object(a), serde_json::Value::Object(b)) = (a, b) else {
        unreachable!("a game is an object")
    };
    a.iter()
        .chain(b.iter())
        .filter(|(k, _)| a.get(*k) != b.get(*k))
        .map(|(k, _)| format!("{k}: {:?} vs {:?}", a.get(k), b.get(k)))
        .collect::<Vec<_>>()
        .join("; ")
}

async fn play(rule_set: Variant, seed: u64, steps: usize) -> Game {
    let mut game = Game::new(rule_set, seed).await;
    for _ in 0..steps {
        if !game.step().await {
            break;
        }
    }
    game
}

const RULE_SETS: [Variant; 8] = [
    Variant::Draughts(RuleSet::American),
    Variant::Draughts(RuleSet::Russian),
    Variant::Draughts(RuleSet::Brazilian),
    Variant::Draughts(RuleSet::Spanish),
    Variant::Draughts(RuleSet::Italian),
    Variant::Draughts(RuleSet::Thai),
    Variant::Space,
    Variant::Orbit,
];

#[tokio::test]
async fn events_build_the_rooms_the_server_shows() {
    let mut report = Vec::new();
    for (n, rule_set) in RULE_SETS.into_iter().enumerate() {
        let mut sizes = Sizes::default();
        let mut resyncs = 0;
        for seed in 0..3 {
            let game = play(rule_set, 1_000 * n as u64 + seed, 400).await;
            sizes.moved_bytes += game.sizes.moved_bytes;
            sizes.moved += game.sizes.moved;
            resyncs += game.resyncs;
        }
        assert!(sizes.moved > 50, "{rule_set:?}: {} moves", sizes.moved);
        assert!(resyncs > 0, "{rule_set:?}: a lost event was recovered");
        report.push(format!(
            "{}: {} moves, {:.0} B per moved event (MessagePack), {resyncs} resyncs",
            rule_set.name(),
            sizes.moved,
            sizes.moved_bytes as f64 / sizes.moved as f64,
        ));
    }
    // The figures PROTOCOL.md quotes: run with --nocapture to see them.
    println!("{}", report.join("\n"));
}

/// A correspondence lobby: every move also pushes its expiry back, which
/// `moved` carries in `room`.
#[tokio::test]
async fn correspondence_moves_carry_the_new_expiry() {
    for seed in 0..2 {
        let mut game = Game::with_pace(
            Variant::Draughts(RuleSet::American),
            crate::lobby::Pace::Correspondence,
            500 + seed,
        )
        .await;
        let mut expiries = 0;
        for _ in 0..150 {
            let before = game.room().expires_at;
            if !game.step().await {
                break;
            }
            expiries += usize::from(game.room().expires_at != before);
        }
        assert!(game.sizes.moved > 20, "{} moves", game.sizes.moved);
        assert!(expiries > 0, "the expiry moved with the moves");
    }
}

/// v1's full state per move in the same random games, for comparison.
#[tokio::test]
async fn v1_states_per_move_for_comparison() {
    let mut lines = Vec::new();
    for (n, rule_set) in RULE_SETS.into_iter().enumerate() {
        let mut game = Game::new(rule_set, 77 + n as u64).await;
        let mut sizes = Sizes::default();
        for _ in 0..200 {
            if let Some(state) = game.conns[1].state.clone()
                && state.phase == Phase::Playing
            {
                let frame =
                    wire::codec::encode_server(Encoding::MsgPack, &ServerMessage::State(state));
                sizes.v1_bytes += frame.len();
                sizes.v1 += 1;
            }
            if !game.step().await {
                break;
            }
        }
        assert!(sizes.v1 > 0);
        lines.push(format!(
            "{}: {:.0} B per v1 state (MessagePack)",
            rule_set.name(),
            sizes.v1_bytes as f64 / sizes.v1 as f64
        ));
    }
    println!("{}", lines.join("\n"));
}
