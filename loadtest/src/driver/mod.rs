//! The client side: games between two real protocol clients, echo pairs shaped the same
//! way, and idle connections; each phase bounded in time.
//!
//! A *game* is a host and a guest in a lobby (series of 1). Both players speak the
//! phase's protocol, MessagePack. In protocol 1 whoever's turn it is plays
//! `legal_moves[0]` by its notation from the latest `state`; in protocol 2 each player
//! keeps a [`RoomView`] current from `snapshot`, `moved` and `changed`, asks `resync`
//! when an event skips a version, and plays the first path of `legal`. The round trip
//! measured is `move` → its `ack`. Both players then read the resulting state or event
//! before the next move, so the opponent always answers from what the server sent, and
//! the frames either received meanwhile are counted ([`Client::traffic`]) as the move's
//! bytes. When a game ends, both leave and the host opens a new lobby.
//!
//! An *echo pair* does the same against the echo server: the two connections take
//! turns sending one frame of the size of a `move` message and waiting for it to come
//! back. The frame is shaped as a MessagePack `ack` (with a padding field, which
//! receivers ignore), so the same client decodes it.
//!
//! Open loop (the latency phase): every game follows a fixed schedule of intended send
//! times, and a round trip is measured from the *intended* time, so a slow answer that
//! delays later moves is charged to those moves too (no coordinated omission). After a
//! lobby restart the schedule starts again from the moment both connections may send
//! (see below), since setting up a lobby is not a move. Closed loop (the saturation
//! phase): send as soon as the previous answer is in.
//!
//! Every Jumpgate connection keeps at least [`MIN_SEND_GAP`] between its messages,
//! which holds it under the server's rate limit (40 messages a second per connection,
//! closing at 120); load is spread over many games instead. That self-imposed wait is
//! never counted as latency: a closed-loop round trip starts when the message really
//! leaves, and an open-loop schedule never asks for a send the pacing would hold back.
//! Echo connections are not paced (the echo server has no limit), so the saturated
//! echo figure is what the stack itself can carry, not what the pacing lets through.
//!
//! Why the raw [`Client`] and not the SDK's `Session`: this is the hot path of `bench`,
//! thousands of players whose round trips are the figures. A `Session` puts a driver
//! task between the caller and the socket, so every message would cross two channels
//! and a task switch before it is timed, and on a loaded two-core machine that hop is
//! itself part of the latency measured; it also reconnects, which a latency run must
//! not do silently (a lost connection here is an error to report). The players read
//! and send on their own connection instead, and count its frames.
//!
//! Over 700 lines: every phase shares the same connection plumbing; splitting
//! it by phase is still to do.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hdrhistogram::Histogram;
use jumpgate_protocol::client::{Client, ClientError, Traffic};
use jumpgate_protocol::codec::{self, Frame};
use jumpgate_protocol::v2::{Gap, RoomView};
use jumpgate_protocol::{
    BotLevel, ClientMessage, Color, DecodeError, Encoding, Phase, ProtocolVersion, RoomState,
    RuleSet, ServerMessage, SoloMode, SoloState, Subprotocol,
};
use serde::Serialize;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep_until, timeout_at};

mod conn;
mod echo;
mod game;
mod idle;
mod phase;
mod schedule;
mod solo;

pub use echo::{EchoFrames, move_frame_len};
pub use idle::{IdleConnections, run_idle};
pub use phase::run_phase;
pub use solo::{SoloCounters, SoloLoad};

use conn::Conn;
use echo::{Pair, play_pair};
use game::{Game, Player, play_game};
use schedule::{Outcome, Schedule, micros};

/// How long any single answer may take before the connection counts as failed.
pub const PATIENCE: Duration = Duration::from_secs(10);
/// The least time between two messages on one connection: at most 36 a second, under
/// the server's limit of 40.
pub const MIN_SEND_GAP: Duration = Duration::from_micros(27_800);
/// The highest open-loop rate one game may be asked for, in moves a second. Moves
/// alternate between the two players, so each connection sends half of them.
pub const MAX_RATE_PER_GAME: f64 = 60.0;
/// Connections or games being set up at once.
const SETUP_CONCURRENCY: usize = 128;
/// Spreads the games' send times over a millisecond evenly whatever their number.
const GOLDEN_RATIO_FRACTION: f64 = 0.618_033_988_749_895;
/// How long answers due before the end of a phase may still arrive after it.
const GRACE: Duration = Duration::from_secs(2);
/// The largest latency the histograms hold, in microseconds (a minute).
const MAX_LATENCY_US: u64 = 60_000_000;
/// The notation whose `move` message sets the size of echo frames.
const TYPICAL_NOTATION: &str = "11-15";

/// Which kind of server a phase drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The Jumpgate server: games.
    Jumpgate,
    /// The echo baseline: echo pairs.
    Echo,
}

impl Kind {
    /// What one operation is called in reports.
    pub fn unit(self) -> &'static str {
        match self {
            Kind::Jumpgate => "moves",
            Kind::Echo => "echoes",
        }
    }
}

/// The games of a phase: how many, what they play, which protocol their players speak
/// (echo pairs use only the count).
#[derive(Clone, Copy, Debug)]
pub struct Games {
    /// Games (or echo pairs).
    pub count: usize,
    /// The rule set of every lobby.
    pub rule_set: RuleSet,
    /// The players' protocol (MessagePack in both).
    pub protocol: ProtocolVersion,
}

impl Games {
    /// `count` games of `rule_set` between protocol 1 players.
    pub fn v1(count: usize, rule_set: RuleSet) -> Games {
        Games {
            count,
            rule_set,
            protocol: ProtocolVersion::V1,
        }
    }
}

/// How a phase paces its sends.
#[derive(Clone, Copy, Debug)]
pub enum Pace {
    /// A fixed schedule: this many operations a second in total over all games.
    Open {
        /// Operations a second, summed over all games.
        rate: f64,
    },
    /// As fast as answers come back.
    Closed,
}

/// Counters the progress line reads while a phase runs.
#[derive(Debug, Default)]
pub struct Progress {
    /// Operations answered so far.
    pub ops: AtomicU64,
    /// Games or pairs that failed.
    pub errors: AtomicU64,
    /// Lobbies opened after a game ended.
    pub lobbies: AtomicU64,
}

/// What a phase measured.
#[derive(Debug, Clone)]
pub struct PhaseStats {
    /// The phase's name, e.g. "latency jumpgate".
    pub label: String,
    /// The server kind driven.
    pub kind: Kind,
    /// Games (or echo pairs) that were set up and ran.
    pub games: usize,
    /// Operations answered within the phase.
    pub ops: u64,
    /// The measured window in seconds.
    pub seconds: f64,
    /// Games or pairs that failed (set-up or during the phase).
    pub errors: u64,
    /// The first failure, for the report.
    pub first_error: Option<String>,
    /// Lobbies opened after games ended.
    pub lobbies: u64,
    /// Round trips in microseconds.
    pub latency_us: Histogram<u64>,
    /// When the measured window began (it lasts `seconds`).
    pub window_start: Instant,
    /// The protocol the players spoke (echo: 1, unused).
    pub protocol: ProtocolVersion,
    /// Moves whose frames were counted in `move_traffic` (those answered in the window
    /// whose states or events both players then read).
    pub metered_moves: u64,
    /// The frames of those moves, both players together: the `move` out, and in, its
    /// `ack` and each player's state (v1) or event (v2).
    pub move_traffic: Traffic,
    /// Protocol 2: events that skipped a version, each answered with a `resync`.
    pub gaps: u64,
}

impl PhaseStats {
    /// Operations a second over the measured window.
    pub fn per_second(&self) -> f64 {
        if self.seconds > 0.0 {
            self.ops as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// What the idle phase opened.
#[derive(Debug, Clone, Serialize)]
pub struct IdleStats {
    /// Connections open (and greeted) at the time of the second reading.
    pub connections: usize,
    /// The server's `VmRSS` before opening them, KiB; absent without a process id.
    pub rss_before_kib: Option<u64>,
    /// The server's `VmRSS` with all of them open, KiB.
    pub rss_after_kib: Option<u64>,
    /// Connections that could not be opened.
    pub errors: u64,
    /// The first failure.
    pub first_error: Option<String>,
}

impl IdleStats {
    /// Resident bytes added per open connection, when both readings exist.
    pub fn bytes_per_connection(&self) -> Option<f64> {
        let (before, after) = (self.rss_before_kib?, self.rss_after_kib?);
        if self.connections == 0 {
            return None;
        }
        Some(after.saturating_sub(before) as f64 * 1024.0 / self.connections as f64)
    }
}

/// A fresh latency histogram (microseconds, 3 significant figures).
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).expect("valid histogram bounds")
}

/// The limit for one wait: [`PATIENCE`] from now, but never past `hard`.
fn wait_limit(hard: Instant) -> Instant {
    (Instant::now() + PATIENCE).min(hard)
}

fn timed_out(what: &str) -> String {
    format!("no answer to {what} within {PATIENCE:?}")
}

/// Notes what a message from the server says about a player's lobby: a
/// state of `code` (or of any lobby while `code` is unknown) becomes the
/// newest; an error without `seq` or a shutdown ends the run.
pub(crate) fn absorb(
    code: Option<&str>,
    state: &mut Option<RoomState>,
    message: ServerMessage,
) -> Result<(), String> {
    match message {
        ServerMessage::State(new) => {
            if code.is_none_or(|code| code == new.code) {
                *state = Some(new);
            }
            Ok(())
        }
        ServerMessage::Error {
            seq: None,
            code,
            message,
        } => Err(format!("server error: {code} {message}")),
        ServerMessage::Shutdown { .. } => Err("the server is shutting down".into()),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_frames_are_move_sized_acks() {
        let frames = EchoFrames::new();
        for seq in [1, 200, 70_000, u32::MAX] {
            let frame = frames.frame(seq);
            assert_eq!(frame.len(), move_frame_len(seq), "seq {seq}");
            let decoded = codec::decode_server(Encoding::MsgPack, &frame).unwrap();
            assert_eq!(decoded, ServerMessage::Ack { seq });
        }
    }
}
