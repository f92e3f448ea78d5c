//! The innocent game of the flood part: two players from 127.0.0.1 in one lobby,
//! timing each `move` → `ack`.

use std::net::Ipv4Addr;
use std::time::Duration;

use hdrhistogram::Histogram;
use jumpgate_protocol::client::{Client, ClientError};
use jumpgate_protocol::{
    ClientMessage, Color, DecodeError, Encoding, Phase, RoomState, RuleSet, ServerMessage,
};
use serde::Serialize;
use tokio::time::{Instant, sleep_until, timeout_at};

use super::socket::tcp_from;
use super::{Target, micros};
use crate::driver::{PATIENCE, new_histogram};

/// The innocent players' address (the default source address).
const INNOCENT: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);

/// A greeted player in the innocent game, with the newest state of its lobby.
#[derive(Debug)]
struct Seat {
    client: Client,
    id: String,
    code: Option<String>,
    state: Option<RoomState>,
}

impl Seat {
    async fn connect(target: &Target, limit: Instant) -> Result<Seat, String> {
        let stream = timeout_at(limit, tcp_from(INNOCENT, target.addr))
            .await
            .map_err(|_| "connecting timed out".to_owned())??;
        let url = target.ws_url();
        let connecting = Client::connect_on(stream, &url, Encoding::MsgPack);
        let mut client = timeout_at(limit, connecting)
            .await
            .map_err(|_| "connecting timed out".to_owned())?
            .map_err(|e| format!("connecting: {e}"))?;
        let greeting = timeout_at(limit, client.greet(None, "jumpgate-loadtest edge"))
            .await
            .map_err(|_| "no welcome in time".to_owned())?
            .map_err(|e| format!("hello: {e}"))?;
        Ok(Seat {
            client,
            id: greeting.identity.id,
            code: None,
            state: None,
        })
    }

    fn absorb(&mut self, message: ServerMessage) -> Result<(), String> {
        crate::driver::absorb(self.code.as_deref(), &mut self.state, message)
    }

    /// Sends a request and waits for its `ack`; returns when it came.
    async fn request(
        &mut self,
        build: impl FnOnce(u32) -> ClientMessage,
        limit: Instant,
    ) -> Result<Instant, String> {
        let seq = self.client.next_seq();
        let message = build(seq);
        let kind = message.kind();
        self.client
            .send(&message)
            .await
            .map_err(|e| e.to_string())?;
        let mut others = Vec::new();
        let answer = timeout_at(limit, self.client.answer(seq, |m| others.push(m))).await;
        let at = Instant::now();
        for message in others {
            self.absorb(message)?;
        }
        match answer {
            Err(_) => Err(format!("no answer to {kind} within {PATIENCE:?}")),
            Ok(Err(e)) => Err(e.to_string()),
            Ok(Ok(Ok(()))) => Ok(at),
            Ok(Ok(Err(refusal))) => Err(format!("{kind} refused: {refusal}")),
        }
    }

    /// Reads until the stored state satisfies `pred`.
    async fn state_until(
        &mut self,
        pred: impl Fn(&RoomState) -> bool,
        limit: Instant,
    ) -> Result<(), String> {
        loop {
            if self.state.as_ref().is_some_and(&pred) {
                return Ok(());
            }
            match timeout_at(limit, self.client.recv()).await {
                Err(_) => return Err(format!("no state in time ({PATIENCE:?})")),
                Ok(Ok(message)) => self.absorb(message)?,
                Ok(Err(ClientError::Decode(DecodeError::UnknownType { .. }))) => {}
                Ok(Err(e)) => return Err(e.to_string()),
            }
        }
    }
}

/// Whether `host_id` is to play, and what, in `state`; `None` when no game is on.
fn next_move(state: &RoomState, host_id: &str) -> Option<(bool, String)> {
    let game = state.game.as_ref()?;
    if state.phase != Phase::Playing || game.result.is_some() {
        return None;
    }
    let seat = if game.turn == Color::Dark {
        usize::from(game.dark_seat)
    } else {
        1 - usize::from(game.dark_seat).min(1)
    };
    let host = state
        .players
        .get(seat)
        .and_then(Option::as_ref)
        .is_some_and(|p| p.id == host_id);
    let notation = game.legal_moves.first()?.notation.clone();
    Some((host, notation))
}

/// Two players in one American lobby (series of 1), from 127.0.0.1.
#[derive(Debug)]
pub(super) struct Duel {
    host: Seat,
    guest: Seat,
}

fn playing(state: &RoomState) -> bool {
    state.phase == Phase::Playing && state.game.as_ref().is_some_and(|g| g.result.is_none())
}

impl Duel {
    pub(super) async fn open(target: &Target) -> Result<Duel, String> {
        let limit = Instant::now() + PATIENCE;
        let mut host = Seat::connect(target, limit).await?;
        let mut guest = Seat::connect(target, limit).await?;
        host.request(
            |seq| ClientMessage::CreateLobby {
                seq,
                rule_set: RuleSet::American,
                series_length: 1,
                invite_only: false,
                stake: None,
                pace: None,
                draw_rules: None,
            },
            limit,
        )
        .await?;
        host.state_until(|_| true, limit).await?;
        let code = host.state.as_ref().map(|s| s.code.clone());
        host.code.clone_from(&code);
        guest.code.clone_from(&code);
        let join = code.unwrap_or_default();
        guest
            .request(
                |seq| ClientMessage::JoinLobby {
                    seq,
                    code: join,
                    invite: None,
                },
                limit,
            )
            .await?;
        guest.state_until(playing, limit).await?;
        host.state_until(playing, limit).await?;
        Ok(Duel { host, guest })
    }

    /// Both call a rematch (no new room: the per-identity room rate stays out of it)
    /// and wait for the new game.
    async fn rematch(&mut self) -> Result<(), String> {
        let limit = Instant::now() + PATIENCE;
        let version = self.host.state.as_ref().map_or(0, |s| s.version);
        for seat in [&mut self.host, &mut self.guest] {
            seat.request(|seq| ClientMessage::Rematch { seq }, limit)
                .await?;
        }
        let fresh = |s: &RoomState| playing(s) && s.version > version;
        self.host.state_until(fresh, limit).await?;
        self.guest.state_until(fresh, limit).await
    }

    /// Plays `moves` moves, one every `gap` (open loop: each round trip counts from
    /// its intended send time), both players seeing each move before the next.
    pub(super) async fn play(&mut self, moves: usize, gap: Duration) -> Result<Played, String> {
        let mut played = Played {
            latency_us: new_histogram(),
            rematches: 0,
            seconds: 0.0,
        };
        let started = Instant::now();
        let hard = started + gap * (moves as u32) * 4 + Duration::from_secs(60);
        let mut next = Instant::now() + gap;
        let mut done = 0;
        while done < moves {
            if Instant::now() > hard {
                return Err(format!("hard stop after {done} moves"));
            }
            let state = self.host.state.as_ref().ok_or("no state")?;
            let Some((host_moves, notation)) = next_move(state, &self.host.id) else {
                self.rematch().await?;
                played.rematches += 1;
                // Setting up the next game is not a move.
                next = next.max(Instant::now() + gap);
                continue;
            };
            let version = state.version;
            sleep_until(next).await;
            let intended = next;
            next += gap;
            let (mover, other) = if host_moves {
                (&mut self.host, &mut self.guest)
            } else {
                (&mut self.guest, &mut self.host)
            };
            let limit = Instant::now() + PATIENCE;
            let acked = mover
                .request(
                    |seq| ClientMessage::Move {
                        seq,
                        notation: Some(notation),
                        path: None,
                    },
                    limit,
                )
                .await?;
            played.latency_us.saturating_record(micros(intended, acked));
            done += 1;
            mover.state_until(|s| s.version > version, limit).await?;
            let seen = mover.state.as_ref().map_or(version, |s| s.version);
            other.state_until(|s| s.version >= seen, limit).await?;
        }
        played.seconds = started.elapsed().as_secs_f64();
        Ok(played)
    }
}

/// What one phase of play brought back.
#[derive(Debug)]
pub(super) struct Played {
    pub(super) latency_us: Histogram<u64>,
    pub(super) rematches: u64,
    pub(super) seconds: f64,
}

/// One phase of the innocent game.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PlaySummary {
    /// "quiet" or "under flood".
    pub label: String,
    /// Moves acknowledged.
    pub moves: u64,
    /// Seconds the phase took.
    pub seconds: f64,
    /// New games started by rematch.
    pub rematches: u64,
    /// `move` → `ack` from the intended send time, microseconds.
    pub p50_us: u64,
    /// 90th percentile.
    pub p90_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// Slowest.
    pub max_us: u64,
    /// The server's CPU time during the phase, ms.
    pub server_cpu_ms: Option<u64>,
    /// That as a share of one core.
    pub server_cpu_share: Option<f64>,
    /// The load tester's own CPU time during the phase, ms.
    pub client_cpu_ms: Option<u64>,
    /// Flood messages the server answered during the phase (`ack` or `error`).
    pub flood_answered: u64,
    /// Of those, `rate_limited` refusals (the connection's own 40 a second).
    pub flood_refused: u64,
    /// `jumpgate_messages_throttled_total` went up by this much.
    pub throttled: Option<f64>,
}

impl PlaySummary {
    /// Flood messages answered per second.
    pub fn flood_answered_per_second(&self) -> f64 {
        if self.seconds > 0.0 {
            self.flood_answered as f64 / self.seconds
        } else {
            0.0
        }
    }
}
