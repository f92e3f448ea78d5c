//! The room task's clocks, driven through its mailbox on tokio's paused
//! clock.

use std::sync::Arc;

use jumpgate_protocol as wire;
use jumpgate_protocol::{Phase, ServerMessage};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::time::{Duration, Instant};

use super::*;
use crate::config::Settings;
use crate::identity::Identity;
use crate::outbound::{Member, Outbound};
use crate::store::{MemoryStore, OwnershipStore, RoomStore};

const CLOCK: Duration = Duration::from_millis(300);
const BREAK: Duration = Duration::from_millis(200);

fn identity(n: u32) -> Identity {
    Identity {
        id: format!("id{n}"),
        name: format!("player{n}"),
        guest: true,
    }
}

struct Harness {
    commands: super::Mailbox,
    outs: Vec<mpsc::Receiver<Outbound>>,
    store: Arc<MemoryStore>,
    code: RoomCode,
}

async fn start(move_clock: Duration, break_time: Duration) -> Harness {
    let mut settings = Settings::for_address("127.0.0.1:0".parse().unwrap());
    settings.move_clock = move_clock;
    settings.break_time = break_time;
    let host = identity(1);
    let store = Arc::new(MemoryStore::default());
    let code = RoomCode::generate();
    let room = Room::new(
        code.clone(),
        LobbyOptions {
            rule_set: crate::rules::Variant::Draughts(crate::rules::RuleSet::Russian),
            series_length: 3,
            invite_only: false,
            stake: 0,
            pace: crate::lobby::Pace::Live,
            draw_rules: crate::rules::DrawRules::Standard,
        },
        &host,
        &RoomDeps {
            settings: Arc::new(crate::app::room_settings(&settings)),
            store: store.clone(),
            wallets: Arc::new(crate::wallet::MemoryWallets::default()),
            records: Arc::new(crate::records::MemoryRecords::default()),
        },
    );
    let (tx, rx) = super::mailbox(16);
    tokio::spawn(room.run(rx));
    let mut outs = Vec::new();
    for n in 1..=2 {
        let (out, out_rx) = mpsc::channel(256);
        let (reply, reply_rx) = oneshot::channel();
        tx.send(RoomCommand::Enter {
            member: Member {
                conn: u64::from(n),
                version: wire::ProtocolVersion::V1,
                identity: identity(n),
                out,
                kick: Arc::new(Notify::new()),
            },
            seq: 1,
            invite: None,
            watch: false,
            reply,
        })
        .await
        .unwrap();
        assert_eq!(reply_rx.await.unwrap(), super::Entered::Yes, "entered");
        outs.push(out_rx);
    }
    Harness {
        commands: tx,
        outs,
        store,
        code,
    }
}

fn decode(outbound: Outbound) -> ServerMessage {
    match outbound {
        Outbound::Shared(frame) => wire::codec::decode_server(
            wire::Encoding::Json,
            &frame.get(wire::Encoding::Json).clone().into_data(),
        )
        .unwrap(),
        Outbound::Direct(message) => *message,
        Outbound::Moved => ServerMessage::Shutdown {
            reason: "moved".into(),
            reconnect_after_ms: 0,
        },
    }
}

/// Waits (up to `within`) for a state of member `who` matching `pred`.
async fn state_until(
    h: &mut Harness,
    who: usize,
    within: Duration,
    pred: impl Fn(&wire::RoomState) -> bool,
) -> Option<wire::RoomState> {
    let wait = async {
        while let Some(out) = h.outs[who].recv().await {
            if let ServerMessage::State(state) = decode(out)
                && pred(&state)
            {
                return Some(state);
            }
        }
        None
    };
    tokio::time::timeout(within, wait).await.ok().flatten()
}

/// Every state member `who` has been sent so far.
fn drain_states(h: &mut Harness, who: usize) -> Vec<wire::RoomState> {
    let mut states = Vec::new();
    while let Ok(out) = h.outs[who].try_recv() {
        if let ServerMessage::State(state) = decode(out) {
            states.push(state);
        }
    }
    states
}

#[tokio::test(start_paused = true)]
async fn a_lobby_nobody_comes_back_to_closes_after_the_idle_time() {
    let mut h = start(CLOCK, BREAK).await;
    state_until(&mut h, 0, CLOCK / 2, |s| s.phase == Phase::Playing)
        .await
        .expect("playing");
    // Both players vanish mid-series: the clock, not the idle timer,
    // ends the rounds, so the series is finished before anything closes.
    for conn in [1, 2] {
        h.commands
            .send(RoomCommand::Disconnect { conn })
            .await
            .unwrap();
    }
    let idle = Settings::for_address("127.0.0.1:0".parse().unwrap()).idle_lobby;
    tokio::time::sleep(CLOCK * 20).await;
    assert!(
        !h.commands.is_closed(),
        "the finished lobby stays for a while"
    );
    // The series takes at least two rounds and a break (0.8 s) to end on
    // time, and is surely over after 6 s; idleness counts from its end.
    tokio::time::sleep(idle - CLOCK * 20 - Duration::from_millis(100)).await;
    assert!(!h.commands.is_closed(), "not before the idle time");
    tokio::time::sleep(CLOCK * 20 + Duration::from_millis(200)).await;
    assert!(h.commands.is_closed(), "the room task has ended");
}

#[tokio::test(start_paused = true)]
async fn a_lapsed_clock_ends_the_round_and_the_break_starts_the_next() {
    let mut h = start(CLOCK, BREAK).await;
    let playing = state_until(&mut h, 0, CLOCK / 2, |s| s.phase == Phase::Playing)
        .await
        .expect("the series starts when both are seated");
    assert_eq!(playing.series.round, 1);
    assert_eq!(playing.game.as_ref().unwrap().dark_seat, 0);

    // (a) Nobody moves: dark (seat 0) loses on time, and a break starts.
    let started = Instant::now();
    let state = state_until(&mut h, 1, CLOCK * 4, |s| s.phase == Phase::Break)
        .await
        .expect("the round ends on time");
    assert!(started.elapsed() >= CLOCK - Duration::from_millis(50));
    let game = state.game.as_ref().unwrap();
    let result = game.result.unwrap();
    assert_eq!(result.reason, wire::GameEndReason::Timeout);
    assert_eq!(result.winner, Some(wire::Color::Light));
    assert_eq!(state.series.wins, vec![0, 1]);
    assert_eq!(state.series.round, 1);
    assert!(state.series.result.is_none(), "best of three goes on");
    assert!(state.break_ends_at.is_some());

    // (b) The break passes: round two starts on its own, seat 1 opening.
    let state = state_until(&mut h, 1, BREAK * 4, |s| s.phase == Phase::Playing)
        .await
        .expect("round two starts after the break");
    assert_eq!(state.series.round, 2);
    let game = state.game.as_ref().unwrap();
    assert_eq!(game.dark_seat, 1);
    assert!(game.result.is_none());
    assert_eq!(game.ply, 0);
    assert!(state.break_ends_at.is_none());
}

#[tokio::test(start_paused = true)]
async fn a_move_before_the_deadline_resets_the_clock() {
    let clock = Duration::from_millis(600);
    let most = Duration::from_millis(420);
    let mut h = start(clock, BREAK).await;
    let state = state_until(&mut h, 0, clock / 2, |s| s.phase == Phase::Playing)
        .await
        .unwrap();

    // Most of the clock passes, then seat 0 moves.
    tokio::time::sleep(most).await;
    let notation = state.game.as_ref().unwrap().legal_moves[0].notation.clone();
    h.commands
        .send(RoomCommand::Act {
            conn: 1,
            seq: 2,
            action: Action::Move {
                notation: Some(notation),
                path: None,
            },
            since: None,
        })
        .await
        .unwrap();
    let moved = state_until(&mut h, 1, most, |s| {
        s.game.as_ref().is_some_and(|g| g.ply == 1)
    })
    .await
    .expect("the move is applied");
    assert_eq!(moved.phase, Phase::Playing);

    // Most of the clock again: more than one full clock since the start,
    // yet no timeout, because the move reset it.
    tokio::time::sleep(most).await;
    for state in drain_states(&mut h, 1) {
        assert_eq!(state.phase, Phase::Playing, "no timeout yet");
        assert!(state.game.unwrap().result.is_none());
    }

    // Left alone, seat 1 (light, to move) loses on time.
    let state = state_until(&mut h, 0, clock * 2, |s| s.phase == Phase::Break)
        .await
        .expect("the reset clock still lapses");
    let result = state.game.unwrap().result.unwrap();
    assert_eq!(result.reason, wire::GameEndReason::Timeout);
    assert_eq!(result.winner, Some(wire::Color::Dark));
    assert_eq!(state.series.wins, vec![1, 0]);
}

#[tokio::test(start_paused = true)]
async fn a_room_another_instance_took_over_acknowledges_nothing_and_sends_everyone_away() {
    let mut h = start(CLOCK * 100, BREAK).await;
    let state = state_until(&mut h, 0, CLOCK, |s| s.phase == Phase::Playing)
        .await
        .expect("playing");
    drain_states(&mut h, 0);
    drain_states(&mut h, 1);
    // Another instance claims the room: a higher epoch.
    let fence = h
        .store
        .fence(h.code.as_str())
        .await
        .unwrap()
        .expect("stored");
    let other: Arc<str> = Arc::from("other-instance");
    let claimed = h
        .store
        .claim(h.code.as_str(), &fence, &other)
        .await
        .unwrap();
    assert_eq!(claimed.map(|o| o.epoch), Some(fence.epoch + 1));

    let notation = state.game.as_ref().unwrap().legal_moves[0].notation.clone();
    h.commands
        .send(RoomCommand::Act {
            conn: 1,
            seq: 2,
            action: Action::Move {
                notation: Some(notation),
                path: None,
            },
            since: None,
        })
        .await
        .unwrap();
    for who in [0, 1] {
        let mut seen = Vec::new();
        while let Ok(Some(out)) = tokio::time::timeout(CLOCK, h.outs[who].recv()).await {
            seen.push(decode(out));
        }
        assert!(
            !seen
                .iter()
                .any(|m| matches!(m, ServerMessage::Ack { seq: 2 })),
            "the fenced move is not acknowledged: {seen:?}"
        );
        assert!(
            !seen.iter().any(|m| matches!(m, ServerMessage::State(_))),
            "nothing is shown: {seen:?}"
        );
        assert!(
            matches!(seen.last(), Some(ServerMessage::Shutdown { .. })),
            "member {who} is sent away: {seen:?}"
        );
    }
    tokio::time::sleep(CLOCK).await;
    assert!(h.commands.is_closed(), "the room task has stopped");
    let stored = h.store.load(h.code.as_str()).await.unwrap().unwrap();
    assert!(stored.moves.is_empty(), "the fenced move was not stored");
}

#[tokio::test(start_paused = true)]
async fn a_handed_over_room_is_released_at_its_epoch_and_its_members_sent_away() {
    let mut h = start(CLOCK * 100, BREAK).await;
    state_until(&mut h, 0, CLOCK, |s| s.phase == Phase::Playing)
        .await
        .expect("playing");
    let before = h.store.fence(h.code.as_str()).await.unwrap().unwrap();
    let (reply, done) = oneshot::channel();
    h.commands
        .send(RoomCommand::HandOver { to: None, reply })
        .await
        .unwrap();
    assert!(done.await.unwrap(), "handed over");
    let after = h.store.fence(h.code.as_str()).await.unwrap().unwrap();
    assert_eq!(after.owner, None, "released");
    assert_eq!(after.epoch, before.epoch, "a release keeps the epoch");
    for who in [0, 1] {
        let mut last = None;
        while let Ok(out) = h.outs[who].try_recv() {
            last = Some(decode(out));
        }
        assert!(matches!(last, Some(ServerMessage::Shutdown { .. })));
    }
    tokio::time::sleep(CLOCK).await;
    assert!(h.commands.is_closed(), "the room task has stopped");
}
