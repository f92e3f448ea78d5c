//! One lobby: its seats, the series, the game in play and its clock. One
//! task owns each room and is the only writer of its state; connections
//! talk to it by message, and it fans out every change as a versioned
//! `state`, encoded once per encoding.
//!
//! Why this file is long: it still holds the series rules, the write path
//! (conditional writes, unknown outcomes, escrow intents) and the actor
//! loop together. Splitting it into a pure lobby state machine and the task
//! that performs its effects is the structure issue's work, next.

use std::sync::Arc;

use axum::extract::ws::Message;
use jumpgate_protocol as wire;
use jumpgate_protocol::{ErrorCode, Phase, ServerMessage};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::time::{Duration, Instant, sleep_until};

use crate::code::RoomCode;
use crate::config::Settings;
use crate::identity::Identity;
use crate::records::{Records, SeriesRecord};
use crate::rules::variant_game::EndReason;
use crate::rules::{Color, MoveInfo, Variant, VariantGame};
use crate::store::{RoomWrite, Store, StoredMove, StoredRoom, WriteError};
use crate::wallet::{Escrow, Settlement, Wallets};
use crate::wire_view;

pub type ConnId = u64;

/// A message encoded once in both encodings, shared by every recipient.
#[derive(Debug)]
pub struct SharedFrame {
    message: ServerMessage,
    msgpack: std::sync::OnceLock<Message>,
    json: std::sync::OnceLock<Message>,
}

impl SharedFrame {
    pub fn new(message: ServerMessage) -> SharedFrame {
        SharedFrame {
            message,
            msgpack: std::sync::OnceLock::new(),
            json: std::sync::OnceLock::new(),
        }
    }

    /// The message as a WebSocket frame in one encoding, encoded by the first
    /// connection that needs it and shared by the rest (a room whose members all
    /// speak MessagePack never pays for JSON). Cloning the frame shares its bytes.
    pub fn get(&self, encoding: wire::Encoding) -> &Message {
        let cell = match encoding {
            wire::Encoding::MsgPack => &self.msgpack,
            wire::Encoding::Json => &self.json,
        };
        cell.get_or_init(|| {
            crate::connection::to_ws(wire::codec::encode_server(encoding, &self.message))
        })
    }
}

/// What a room sends to one connection.
#[derive(Debug)]
pub enum Outbound {
    Shared(Arc<SharedFrame>),
    Direct(Box<ServerMessage>),
}

/// A connection inside a room.
#[derive(Debug, Clone)]
pub struct Member {
    pub conn: ConnId,
    pub identity: Identity,
    pub out: mpsc::Sender<Outbound>,
    /// Woken when the room drops this connection for falling behind.
    pub kick: Arc<Notify>,
}

/// Something a member asks the room to do.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Action {
    Move {
        notation: Option<String>,
        path: Option<Vec<String>>,
    },
    OfferDraw,
    AcceptDraw,
    DeclineDraw,
    Resign,
    NextRound,
    Rematch,
    EndMatch,
    Resync,
}

/// A refusal sent back to the member who asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: ErrorCode,
    pub message: String,
}

impl Refusal {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Refusal {
        Refusal {
            code,
            message: message.into(),
        }
    }
}

/// Messages to a room task.
#[derive(Debug)]
pub enum RoomCommand {
    /// Join (take or retake a seat) or watch. On success the room sends
    /// `ack` and a `state` to the member itself.
    Enter {
        member: Member,
        seq: u32,
        invite: Option<String>,
        watch: bool,
        reply: oneshot::Sender<Result<(), Refusal>>,
    },
    Act {
        conn: ConnId,
        seq: u32,
        action: Action,
    },
    /// Leave the lobby (giving up the seat). `out` answers even a leave
    /// re-sent after the first one's outcome was unknown.
    Leave {
        conn: ConnId,
        seq: u32,
        out: mpsc::Sender<Outbound>,
    },
    Disconnect {
        conn: ConnId,
    },
    Summary {
        reply: oneshot::Sender<serde_json::Value>,
    },
    Games {
        reply: oneshot::Sender<Vec<String>>,
    },
}

/// Options fixed when a lobby is created.
#[derive(Clone, Debug)]
pub struct LobbyOptions {
    pub rule_set: Variant,
    pub series_length: u8,
    pub invite_only: bool,
    /// Bold Points each player stakes; 0 for a free lobby.
    pub stake: u32,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Seat {
    id: String,
    name: String,
    #[serde(default)]
    guest: bool,
    /// The last action this player had applied: its seq and content, so an
    /// action re-sent (after a reconnect, or after `storage_unavailable`)
    /// is applied once and acknowledged again.
    #[serde(alias = "last_move")]
    last_action: Option<(u32, Action)>,
}

/// A staked series about to start: written to the room's record before the
/// stakes are taken, so a crash or an unanswered wallet call in between is
/// undone (the series refunded, the seating that asked for it reversed)
/// rather than left half-done.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct EscrowIntent {
    /// The series id, `CODE:N`; never used for another series.
    series: String,
    /// The two accounts and what each stakes.
    stakes: [(String, u64); 2],
    /// What asked for the series, to reverse it if the stakes are not taken.
    undo: SeriesStartUndo,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum SeriesStartUndo {
    /// A join filled the lobby: the joiner leaves this seat again.
    Unseat(usize),
    /// Both asked for a rematch: the seats swap back, nobody has asked.
    Unswap,
}

#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
struct Series {
    round: u32,
    wins: [u32; 2],
    draws: u32,
    /// Points per seat, in rule sets scored by points (orbit).
    #[serde(default)]
    points: [u32; 2],
    result: Option<wire::SeriesResult>,
}

#[derive(Debug, Clone)]
struct Round {
    /// Numbers the games of a room, for the move log.
    game_no: u64,
    game: VariantGame,
    dark_seat: usize,
    deadline: Instant,
    draw_offer: Option<Color>,
    notations: Vec<String>,
    last_move: Option<MoveInfo>,
    result: Option<wire::GameResult>,
}

/// The state one room task owns.
#[derive(Debug)]
pub struct Room {
    code: RoomCode,
    options: LobbyOptions,
    invite: Option<String>,
    host: String,
    settings: Arc<Settings>,
    store: Arc<dyn Store>,
    seats: [Option<Seat>; 2],
    members: Vec<Member>,
    phase: Phase,
    series: Series,
    round: Option<Round>,
    break_until: Option<Instant>,
    next_round: [bool; 2],
    rematch: [bool; 2],
    version: u64,
    games_started: u64,
    /// Moves and finished games not yet known to be in the store.
    pending_moves: Vec<StoredMove>,
    pending_games: Vec<(u64, String)>,
    /// The version the store is known to hold.
    stored_version: u64,
    /// The last write sent, kept so that resending it sends the same bytes
    /// (the record holds clock deadlines that would differ if rebuilt).
    last_attempt: Option<(u64, String)>,
    /// Since when memory has been ahead of the store: a write failed or its
    /// outcome is unknown. Nothing is shown, acknowledged or timed until the
    /// store has caught up; the clocks then get this time back.
    unsaved_since: Option<Instant>,
    /// The store refused a write as not following from what it holds: the
    /// room reloads itself from the store before doing anything else.
    stale: bool,
    /// The stored room is gone or does not replay: this task stops.
    halted: bool,
    wallets: Arc<dyn Wallets>,
    /// Numbers the series of this lobby; with the code it names the escrow.
    series_no: u64,
    /// A finished staked series whose pot is not yet paid out or refunded.
    pending_settlement: Option<(String, Settlement)>,
    /// A staked series whose stakes are being taken (see [`EscrowIntent`]).
    escrow_intent: Option<EscrowIntent>,
    records: Arc<dyn Records>,
    /// A finished series between two accounts not yet in the records.
    pending_record: Option<SeriesRecord>,
    /// Seated accounts' records and their head-to-head, as last read.
    record_views: [Option<wire::RecordView>; 2],
    head_to_head: Option<wire::HeadToHead>,
    /// Since when nobody has been connected while no game was in play.
    idle_since: Option<Instant>,
    /// Closed for having been idle too long.
    expired: bool,
}

/// A room as written to the store (JSON). The game itself is rebuilt from
/// the move log.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct RoomRecord {
    code: String,
    rule_set: Variant,
    series_length: u8,
    invite: Option<String>,
    host: String,
    seats: [Option<Seat>; 2],
    phase: Phase,
    series: Series,
    round: Option<RoundRecord>,
    break_until_ms: Option<u64>,
    next_round: [bool; 2],
    rematch: [bool; 2],
    version: u64,
    games_started: u64,
    #[serde(default)]
    stake: u32,
    #[serde(default)]
    series_no: u64,
    #[serde(default)]
    pending_settlement: Option<(String, Settlement)>,
    #[serde(default)]
    pending_record: Option<SeriesRecord>,
    #[serde(default)]
    escrow_intent: Option<EscrowIntent>,
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct RoundRecord {
    game_no: u64,
    dark_seat: usize,
    /// Unix milliseconds when the side to move forfeits.
    deadline_ms: u64,
    draw_offer: Option<Color>,
    notations: Vec<String>,
    result: Option<wire::GameResult>,
    /// Space Mode's wormhole seed; the game replays from it.
    #[serde(default)]
    seed: u64,
}

impl Room {
    pub fn new(
        code: RoomCode,
        options: LobbyOptions,
        host: &Identity,
        settings: Arc<Settings>,
        store: Arc<dyn Store>,
        wallets: Arc<dyn Wallets>,
        records: Arc<dyn Records>,
    ) -> Room {
        let invite = options.invite_only.then(|| nanoid::nanoid!(22));
        Room {
            code,
            options,
            invite,
            host: host.id.clone(),
            settings,
            store,
            seats: [None, None],
            members: Vec::new(),
            phase: Phase::Waiting,
            series: Series::default(),
            round: None,
            break_until: None,
            next_round: [false; 2],
            rematch: [false; 2],
            version: 0,
            games_started: 0,
            pending_moves: Vec::new(),
            pending_games: Vec::new(),
            stored_version: 0,
            last_attempt: None,
            unsaved_since: None,
            stale: false,
            halted: false,
            wallets,
            series_no: 0,
            pending_settlement: None,
            escrow_intent: None,
            records,
            pending_record: None,
            record_views: [None, None],
            head_to_head: None,
            idle_since: None,
            expired: false,
        }
    }

    pub fn code(&self) -> &RoomCode {
        &self.code
    }

    /// Rebuilds a room from the store after a restart. Clocks continue from
    /// their stored deadlines, but the side to move always gets at least
    /// `resume_grace`; a break that ended while the server was down ends now.
    pub fn resume(
        stored: StoredRoom,
        settings: Arc<Settings>,
        store: Arc<dyn Store>,
        wallets: Arc<dyn Wallets>,
        records: Arc<dyn Records>,
    ) -> Result<Room, String> {
        let record: RoomRecord =
            serde_json::from_str(&stored.record).map_err(|e| format!("bad record: {e}"))?;
        let code = RoomCode::parse(&record.code).ok_or("bad room code")?;
        let now = Instant::now();
        let round = match record.round {
            None => None,
            Some(r) => {
                let mut moves: Vec<&StoredMove> = stored
                    .moves
                    .iter()
                    .filter(|m| m.game_no == r.game_no)
                    .collect();
                moves.sort_by_key(|m| m.ply);
                let paths: Vec<&str> = moves.iter().map(|m| m.path.as_str()).collect();
                let (game, mut played) = VariantGame::replay(record.rule_set, r.seed, &paths)?;
                if moves.len() != r.notations.len() {
                    return Err("move log and record disagree".into());
                }
                let deadline =
                    wire_view::instant_from_unix_ms(r.deadline_ms).max(now + settings.resume_grace);
                Some(Round {
                    game_no: r.game_no,
                    game,
                    dark_seat: r.dark_seat,
                    deadline,
                    draw_offer: r.draw_offer,
                    notations: r.notations,
                    last_move: played.pop(),
                    result: r.result,
                })
            }
        };
        Ok(Room {
            code,
            options: LobbyOptions {
                rule_set: record.rule_set,
                series_length: record.series_length,
                invite_only: record.invite.is_some(),
                stake: record.stake,
            },
            invite: record.invite,
            host: record.host,
            settings,
            store,
            seats: record.seats,
            members: Vec::new(),
            phase: record.phase,
            series: record.series,
            round,
            break_until: record.break_until_ms.map(wire_view::instant_from_unix_ms),
            next_round: record.next_round,
            rematch: record.rematch,
            version: record.version,
            games_started: record.games_started,
            pending_moves: Vec::new(),
            pending_games: Vec::new(),
            stored_version: record.version,
            last_attempt: None,
            unsaved_since: None,
            stale: false,
            halted: false,
            wallets,
            series_no: record.series_no,
            pending_settlement: record.pending_settlement,
            escrow_intent: record.escrow_intent,
            records,
            pending_record: record.pending_record,
            record_views: [None, None],
            head_to_head: None,
            idle_since: None,
            expired: false,
        })
    }

    fn record(&self) -> RoomRecord {
        RoomRecord {
            code: self.code.to_string(),
            rule_set: self.options.rule_set,
            series_length: self.options.series_length,
            invite: self.invite.clone(),
            host: self.host.clone(),
            seats: self.seats.clone(),
            phase: self.phase,
            series: self.series.clone(),
            round: self.round.as_ref().map(|r| RoundRecord {
                game_no: r.game_no,
                dark_seat: r.dark_seat,
                deadline_ms: wire_view::unix_ms(r.deadline),
                draw_offer: r.draw_offer,
                notations: r.notations.clone(),
                result: r.result,
                seed: r.game.seed(),
            }),
            break_until_ms: self.break_until.map(wire_view::unix_ms),
            next_round: self.next_round,
            rematch: self.rematch,
            version: self.version,
            games_started: self.games_started,
            stake: self.options.stake,
            series_no: self.series_no,
            pending_settlement: self.pending_settlement.clone(),
            pending_record: self.pending_record.clone(),
            escrow_intent: self.escrow_intent.clone(),
        }
    }

    fn is_empty(&self) -> bool {
        self.members.is_empty() && self.seats.iter().all(Option::is_none)
    }

    /// Whether the lobby can close: nobody is left (or nobody came back),
    /// and no money or record is still to be moved — a lobby with those
    /// stays listed in the store, so a restart finishes them.
    fn can_close(&self) -> bool {
        (self.is_empty() || self.expired)
            && self.escrow_intent.is_none()
            && self.pending_settlement.is_none()
            && self.pending_record.is_none()
    }

    /// Whether memory is ahead of the store.
    fn unsaved(&self) -> bool {
        self.unsaved_since.is_some()
    }

    /// Sends the room and everything pending to the store, conditional on
    /// the version last known stored. Every change bumps `version` first;
    /// resending an unchanged version sends the very same record. On an
    /// unknown outcome the change stays in memory, unshown, until a later
    /// write (the same one, or one that includes it) is confirmed.
    async fn persist(&mut self) -> Result<(), WriteError> {
        let closed = self.can_close();
        let finished = matches!(self.phase, Phase::Finished | Phase::Ended);
        let record = match &self.last_attempt {
            Some((version, record)) if *version == self.version => record.clone(),
            _ => serde_json::to_string(&self.record()).expect("a room record always encodes"),
        };
        self.last_attempt = Some((self.version, record.clone()));
        let write = RoomWrite {
            code: self.code.to_string(),
            expected_version: self.stored_version,
            version: self.version,
            record,
            moves: self.pending_moves.clone(),
            finished_games: self.pending_games.clone(),
            open: !closed,
            expire_after: (closed || finished).then_some(self.settings.finished_ttl),
        };
        match self.store.write(write).await {
            Ok(()) => {
                self.stored_version = self.version;
                self.pending_moves.clear();
                self.pending_games.clear();
                if let Some(since) = self.unsaved_since.take() {
                    tracing::info!(room = %self.code, "store caught up");
                    self.give_back_time(since);
                }
                Ok(())
            }
            Err(e) => {
                match &e {
                    WriteError::Conflict(why) => {
                        tracing::error!(room = %self.code, %why, "write refused by the store; reloading the room");
                        self.stale = true;
                    }
                    WriteError::Unavailable(_) => {
                        crate::metrics::METRICS.writes_unconfirmed.inc();
                        tracing::warn!(room = %self.code, error = %e, "write not confirmed; holding the change until the store answers");
                    }
                }
                self.unsaved_since.get_or_insert_with(Instant::now);
                Err(e)
            }
        }
    }

    /// The clocks stood still while the store could not confirm the room:
    /// the side to move (or the break) gets that time back. Written with
    /// the next change.
    fn give_back_time(&mut self, since: Instant) {
        let lost = since.elapsed();
        if let Some(round) = self.round.as_mut().filter(|r| r.result.is_none()) {
            round.deadline += lost;
        }
        if let Some(until) = self.break_until.as_mut() {
            *until += lost;
        }
    }

    /// A change someone asked for: bump, store it, and in a staked lobby
    /// take the stakes it needs. `Ok` once everything is stored; the caller
    /// then acknowledges and broadcasts.
    async fn save_requested(&mut self) -> Result<(), Refusal> {
        self.version += 1;
        if self.persist().await.is_err() {
            return Err(storage_unavailable());
        }
        if self.escrow_intent.is_some() {
            self.take_stakes().await?;
        }
        Ok(())
    }

    /// A change that happens anyway (a clock, a disconnect): bump and try
    /// to store it; if that fails, the loop retries.
    async fn commit_or_retry(&mut self) {
        self.version += 1;
        // A stale room reloads before it writes anything again.
        if !self.stale {
            let _ = self.persist().await;
        }
    }

    /// Before a new request is taken: the store must hold everything this
    /// room has done, and no stakes may be in doubt. Tries to get there
    /// now; `false` when it cannot yet (the request is then refused with
    /// the retryable `storage_unavailable`).
    async fn settle_doubts(&mut self) -> bool {
        if self.stale && !self.reload().await {
            return false;
        }
        if self.unsaved() {
            if self.persist().await.is_err() {
                return false;
            }
            // What was held back can be shown now.
            self.broadcast();
        }
        if self.escrow_intent.is_some() && !self.release_stakes().await {
            return false;
        }
        // A finished series is paid before anything else happens (a new
        // series must not start over an unpaid one).
        self.settle_pending().await;
        self.pending_settlement.is_none()
    }

    /// Rebuilds the room from what the store holds, after the store refused
    /// a write as not following from it. Connections stay; the stored room
    /// wins (it holds everything that was acknowledged).
    async fn reload(&mut self) -> bool {
        let stored = match self.store.load(self.code.as_str()).await {
            Ok(Some(stored)) => stored,
            Ok(None) if !self.game_in_play() => {
                // The keys expired or were lost. With no game in play,
                // memory holds everything needed: write it afresh.
                tracing::warn!(room = %self.code, "the stored room is gone; writing it again");
                self.stored_version = 0;
                self.last_attempt = None;
                self.stale = false;
                self.version += 1;
                return self.persist().await.is_ok();
            }
            Ok(None) => {
                tracing::error!(room = %self.code, "the stored room is gone mid-game; closing");
                self.halt();
                return false;
            }
            Err(e) => {
                tracing::warn!(room = %self.code, error = %e, "could not reload; will retry");
                return false;
            }
        };
        match Room::resume(
            stored,
            self.settings.clone(),
            self.store.clone(),
            self.wallets.clone(),
            self.records.clone(),
        ) {
            Ok(mut fresh) => {
                fresh.members = std::mem::take(&mut self.members);
                fresh.record_views = std::mem::take(&mut self.record_views);
                fresh.head_to_head = self.head_to_head.take();
                *self = fresh;
                tracing::info!(room = %self.code, version = self.version, "reloaded from the store");
                self.broadcast();
                true
            }
            Err(e) => {
                tracing::error!(room = %self.code, error = %e, "the stored room does not replay; closing");
                crate::metrics::METRICS.rooms_unresumable.inc();
                self.halt();
                false
            }
        }
    }

    /// Stops the room for good: its members are told they are out of it.
    fn halt(&mut self) {
        self.halted = true;
        let left = ServerMessage::Left {
            code: self.code.to_string(),
        };
        for m in self.members.drain(..) {
            let _ = m.out.try_send(Outbound::Direct(Box::new(left.clone())));
        }
    }

    /// Takes the stakes of the series in [`escrow_intent`](Self::escrow_intent),
    /// whose intent is stored, while the player who asked waits.
    async fn take_stakes(&mut self) -> Result<(), Refusal> {
        let Some(intent) = self.escrow_intent.clone() else {
            return Ok(());
        };
        let [(a, sa), (b, sb)] = &intent.stakes;
        let taken = self
            .wallets
            .escrow(&intent.series, [(a, *sa), (b, *sb)])
            .await;
        match taken {
            Ok(Escrow::Taken) => {
                crate::metrics::METRICS
                    .stake_points
                    .with_label_values(&["escrowed"])
                    .inc_by(sa + sb);
                self.escrow_intent = None;
                self.begin_series();
                self.version += 1;
                match self.persist().await {
                    Ok(()) => Ok(()),
                    Err(_) => Err(storage_unavailable()),
                }
            }
            Ok(Escrow::Short(short)) => {
                let name = self
                    .seats
                    .iter()
                    .flatten()
                    .find(|s| s.id == short)
                    .map_or("a player".to_owned(), |s| s.name.clone());
                self.undo_series_start(intent.undo);
                self.version += 1;
                let _ = self.persist().await;
                Err(Refusal::new(
                    ErrorCode::InsufficientFunds,
                    format!(
                        "{name} cannot cover the stake of {} Bold Points; nothing was taken",
                        self.options.stake
                    ),
                ))
            }
            Ok(Escrow::Closed) => {
                tracing::error!(room = %self.code, series = %intent.series, "series id already settled or bound to other stakes");
                self.undo_series_start(intent.undo);
                self.version += 1;
                let _ = self.persist().await;
                Err(storage_unavailable())
            }
            Err(e) => {
                // Unknown: the stakes may or may not be held. Undo by
                // refunding, which also closes the series id against a late
                // escrow; retried by the loop if the wallets stay away.
                tracing::warn!(room = %self.code, error = %e, "taking the stakes went unanswered; undoing");
                self.release_stakes().await;
                Err(storage_unavailable())
            }
        }
    }

    /// Undoes a series start whose stakes are in doubt (nobody is waiting
    /// for it any more: after a failure, on resume): refunds the series —
    /// whatever was taken comes back, and the id can take nothing later —
    /// then reverses the seating that asked for it. `true` when done.
    async fn release_stakes(&mut self) -> bool {
        let Some(intent) = self.escrow_intent.clone() else {
            return true;
        };
        let refund = Settlement::Refund {
            players: intent.stakes.clone().map(|(id, _)| id),
        };
        match self
            .wallets
            .settle(&intent.series, &refund, crate::wallet::utc_day())
            .await
        {
            Ok(settled) => {
                crate::metrics::METRICS
                    .stake_points
                    .with_label_values(&["refunded"])
                    .inc_by(settled.refunded);
                tracing::info!(room = %self.code, series = %intent.series, refunded = settled.refunded, "series start undone");
                self.escrow_intent = None;
                self.undo_series_start(intent.undo);
                self.version += 1;
                let _ = self.persist().await;
                self.broadcast();
                true
            }
            Err(e) => {
                tracing::warn!(room = %self.code, error = %e, "refunding an unstarted series failed; will retry");
                false
            }
        }
    }

    fn undo_series_start(&mut self, undo: SeriesStartUndo) {
        self.escrow_intent = None;
        // The action that asked for the series did not happen after all: a
        // retry of it must be applied afresh, not acknowledged as done.
        for seat in self.seats.iter_mut().flatten() {
            seat.last_action = None;
        }
        match undo {
            SeriesStartUndo::Unseat(seat) => {
                if let Some(gone) = self.seats[seat].take() {
                    self.members.retain(|m| m.identity.id != gone.id);
                }
            }
            SeriesStartUndo::Unswap => {
                self.seats.swap(0, 1);
                self.record_views.swap(0, 1);
                if let Some(h2h) = &mut self.head_to_head {
                    h2h.wins.reverse();
                }
                self.rematch = [false; 2];
            }
        }
    }

    /// Writes a finished series into the records (idempotent; retried),
    /// once the record saying it is due is stored.
    async fn record_pending(&mut self) {
        if self.unsaved() || self.stale {
            return;
        }
        let Some(job) = self.pending_record.clone() else {
            return;
        };
        match self.records.record(&job).await {
            Ok(()) => {
                self.pending_record = None;
                self.refresh_records().await;
                self.commit_or_retry().await;
                self.broadcast();
            }
            Err(e) => {
                tracing::warn!(room = %self.code, error = %e, "recording failed; will retry");
            }
        }
    }

    /// Rereads the seated accounts' records; true when they changed.
    async fn refresh_records(&mut self) -> bool {
        let thresholds = self.settings.rank_thresholds;
        let rule_set = self.options.rule_set.name();
        let mut views: [Option<wire::RecordView>; 2] = [None, None];
        for (i, seat) in self.seats.iter().enumerate() {
            if let Some(s) = seat.as_ref().filter(|s| !s.guest)
                && let Ok(r) = self.records.player(&s.id, rule_set).await
            {
                views[i] = Some(wire::RecordView {
                    rank: thresholds.rank(r.series_won).to_owned(),
                    series_won: r.series_won,
                    streak: r.streak,
                    best_streak: r.best_streak,
                });
            }
        }
        let h2h = match &self.seats {
            [Some(a), Some(b)] if !a.guest && !b.guest => self
                .records
                .head_to_head(&a.id, &b.id)
                .await
                .ok()
                .map(|(x, y, d)| wire::HeadToHead {
                    wins: vec![x, y],
                    draws: d,
                }),
            _ => None,
        };
        let changed = views != self.record_views || h2h != self.head_to_head;
        self.record_views = views;
        self.head_to_head = h2h;
        changed
    }

    /// Pays out or refunds a finished staked series, once the record saying
    /// it is due is stored (write-ahead). Idempotent, so simply retried
    /// until it goes through.
    async fn settle_pending(&mut self) {
        if self.unsaved() || self.stale {
            return;
        }
        let Some((series, settlement)) = self.pending_settlement.clone() else {
            return;
        };
        match self
            .wallets
            .settle(&series, &settlement, crate::wallet::utc_day())
            .await
        {
            Ok(settled) => {
                let metrics = &crate::metrics::METRICS;
                metrics
                    .stake_points
                    .with_label_values(&["paid"])
                    .inc_by(settled.paid);
                metrics
                    .stake_points
                    .with_label_values(&["refunded"])
                    .inc_by(settled.refunded);
                tracing::info!(room = %self.code, %series, paid = settled.paid, refunded = settled.refunded, "stakes settled");
                self.pending_settlement = None;
                self.commit_or_retry().await;
            }
            Err(e) => {
                tracing::warn!(room = %self.code, error = %e, "settlement failed; will retry");
            }
        }
    }

    /// Whether something is waiting on the store or the wallets.
    fn in_doubt(&self) -> bool {
        self.unsaved()
            || self.stale
            || self.escrow_intent.is_some()
            || self.pending_settlement.is_some()
            || self.pending_record.is_some()
    }

    /// The invite token of an invite-only lobby.
    pub fn invite(&self) -> Option<&str> {
        self.invite.as_deref()
    }

    /// Runs the room until nobody is seated or connected.
    pub async fn run(mut self, mut commands: mpsc::Receiver<RoomCommand>) {
        let metrics = &crate::metrics::METRICS;
        let rule_set = self.options.rule_set.name();
        metrics.lobbies_live.with_label_values(&[rule_set]).inc();
        let mut counted_game = self.game_in_play();
        if counted_game {
            metrics.games_live.with_label_values(&[rule_set]).inc();
        }
        // Whatever a crash interrupted is finished (a settlement, a record)
        // or undone (a series start whose stakes were being taken) first.
        self.settle_doubts().await;
        self.settle_pending().await;
        self.record_pending().await;
        self.refresh_records().await;
        loop {
            let now_live = self.game_in_play();
            if now_live != counted_game {
                let gauge = metrics.games_live.with_label_values(&[rule_set]);
                if now_live {
                    gauge.inc()
                } else {
                    gauge.dec()
                }
                counted_game = now_live;
            }
            // A lobby nobody is connected to, with no game in play, closes
            // after a while (a game in play ends by its clock first).
            let idle =
                self.members.is_empty() && !matches!(self.phase, Phase::Playing | Phase::Break);
            if !idle {
                self.idle_since = None;
            } else if self.idle_since.is_none() {
                self.idle_since = Some(Instant::now());
            }
            let timer = self.next_timer();
            let retry = self.in_doubt().then(|| Instant::now() + STORE_RETRY);
            let idle_end = self
                .idle_since
                .filter(|_| !self.expired)
                .map(|t| t + self.settings.idle_lobby);
            tokio::select! {
                command = commands.recv() => match command {
                    Some(command) => self.handle(command).await,
                    None => break,
                },
                () = sleep_or_forever(timer) => self.on_timer().await,
                () = sleep_or_forever(retry) => {
                    self.settle_doubts().await;
                }
                () = sleep_or_forever(idle_end) => {
                    tracing::info!(room = %self.code, "closing a lobby nobody came back to");
                    self.expired = true;
                }
            }

            if self.halted {
                break;
            }
            self.settle_pending().await;
            self.record_pending().await;
            if self.can_close() && !self.stale {
                // Nobody left, or nobody came back: the lobby closes; its
                // keys expire. It ends only once the store has that.
                self.commit_or_retry().await;
                if !self.unsaved() {
                    break;
                }
            }
        }
        if counted_game {
            metrics.games_live.with_label_values(&[rule_set]).dec();
        }
        metrics.lobbies_live.with_label_values(&[rule_set]).dec();
        tracing::debug!(room = %self.code, "room closed");
    }

    fn game_in_play(&self) -> bool {
        self.phase == Phase::Playing && self.round.as_ref().is_some_and(|r| r.result.is_none())
    }

    /// The next clock or break deadline. Clocks stand still while the room
    /// waits on the store (they get that time back when it answers).
    fn next_timer(&self) -> Option<Instant> {
        if self.unsaved() || self.stale || self.escrow_intent.is_some() {
            return None;
        }
        match self.phase {
            Phase::Playing => self
                .round
                .as_ref()
                .filter(|r| r.result.is_none())
                .map(|r| r.deadline),
            Phase::Break => self.break_until,
            _ => None,
        }
    }

    async fn on_timer(&mut self) {
        let now = Instant::now();
        match self.phase {
            Phase::Playing => {
                let lapsed = self
                    .round
                    .as_ref()
                    .is_some_and(|r| r.result.is_none() && r.deadline <= now);
                if lapsed {
                    let loser = self.round.as_ref().map(|r| r.game.turn());
                    if let Some(loser) = loser {
                        tracing::debug!(room = %self.code, "move clock lapsed");
                        crate::metrics::METRICS
                            .clock_forfeits
                            .with_label_values(&[self.options.rule_set.name()])
                            .inc();
                        self.end_round(Some(loser.opposite()), wire::GameEndReason::Timeout);
                        self.commit_or_retry().await;
                        self.broadcast();
                    }
                }
            }
            Phase::Break if self.break_until.is_some_and(|t| t <= now) => {
                self.start_round();
                self.commit_or_retry().await;
                self.broadcast();
            }
            _ => {}
        }
    }

    async fn handle(&mut self, command: RoomCommand) {
        match command {
            RoomCommand::Enter {
                member,
                seq,
                invite,
                watch,
                reply,
            } => {
                if !self.settle_doubts().await {
                    let _ = reply.send(Err(storage_unavailable()));
                    return;
                }
                let seated_before = seat_ids(&self.seats);
                if let Err(refusal) = self.enter(&member, invite.as_deref(), watch) {
                    let _ = reply.send(Err(refusal));
                    return;
                }
                let conn = member.conn;
                self.members.push(member);
                let result = self.save_requested().await;
                if result.is_ok() && seat_ids(&self.seats) != seated_before {
                    self.refresh_records().await;
                }
                match result {
                    Ok(()) => {
                        let _ = reply.send(Ok(()));
                        self.send_to(conn, ServerMessage::Ack { seq });
                        self.broadcast();
                    }
                    Err(refusal) => {
                        // The connection is not attached; a seat taken
                        // stays taken once stored, and joining again gets it.
                        self.members.retain(|m| m.conn != conn);
                        let _ = reply.send(Err(refusal));
                        self.broadcast();
                    }
                }
            }
            RoomCommand::Act { conn, seq, action } => {
                let is_move = matches!(action, Action::Move { .. });
                let started = std::time::Instant::now();
                let result = if !self.settle_doubts().await {
                    Err(storage_unavailable())
                } else {
                    match self.act(conn, seq, action) {
                        Ok(Applied::Changed) => self.save_requested().await.map(|()| true),
                        Ok(Applied::Unchanged) => Ok(false),
                        Ok(Applied::Resync) => {
                            let state = ServerMessage::State(self.state());
                            self.send_to(conn, ServerMessage::Ack { seq });
                            self.send_to(conn, state);
                            return;
                        }
                        Err(refusal) => Err(refusal),
                    }
                };
                if is_move {
                    let metrics = &crate::metrics::METRICS;
                    match &result {
                        Ok(_) => metrics
                            .moves_accepted
                            .with_label_values(&[self.options.rule_set.name()])
                            .inc(),
                        Err(r) => metrics
                            .moves_rejected
                            .with_label_values(&[r.code.as_str()])
                            .inc(),
                    }
                    metrics
                        .move_handling_seconds
                        .observe(started.elapsed().as_secs_f64());
                }
                match result {
                    Ok(changed) => {
                        self.send_to(conn, ServerMessage::Ack { seq });
                        if changed {
                            self.broadcast();
                        }
                    }
                    Err(refusal) => {
                        let insufficient = refusal.code == ErrorCode::InsufficientFunds;
                        self.send_to(
                            conn,
                            ServerMessage::Error {
                                seq: Some(seq),
                                code: refusal.code,
                                message: refusal.message,
                            },
                        );
                        if insufficient {
                            // The rematch calls were cleared.
                            self.broadcast();
                        }
                    }
                }
            }
            RoomCommand::Leave { conn, seq, out } => {
                let reply = |messages: Vec<ServerMessage>| {
                    for message in messages {
                        let _ = out.try_send(Outbound::Direct(Box::new(message)));
                    }
                };
                if !self.settle_doubts().await {
                    reply(vec![ServerMessage::Error {
                        seq: Some(seq),
                        code: ErrorCode::StorageUnavailable,
                        message: "the lobby could not be saved just now; send leave again with the same seq".into(),
                    }]);
                    return;
                }
                if self.member(conn).is_none() {
                    // Already gone: a leave re-sent after its outcome was
                    // unknown, and now stored.
                    reply(vec![
                        ServerMessage::Ack { seq },
                        ServerMessage::Left {
                            code: self.code.to_string(),
                        },
                    ]);
                    return;
                }
                self.leave(conn);
                let messages = match self.save_requested().await {
                    Ok(()) => vec![
                        ServerMessage::Ack { seq },
                        ServerMessage::Left {
                            code: self.code.to_string(),
                        },
                    ],
                    Err(refusal) => vec![ServerMessage::Error {
                        seq: Some(seq),
                        code: refusal.code,
                        message: "leaving is not confirmed yet; send leave again with the same seq to learn the outcome".into(),
                    }],
                };
                reply(messages);
                self.broadcast();
            }
            RoomCommand::Disconnect { conn } => {
                self.members.retain(|m| m.conn != conn);
                self.commit_or_retry().await;
                self.broadcast();
            }
            RoomCommand::Summary { reply } => {
                let _ = reply.send(self.summary());
            }
            RoomCommand::Games { reply } => {
                let games = self
                    .store
                    .games(self.code.as_str())
                    .await
                    .unwrap_or_default();
                let _ = reply.send(games);
            }
        }
    }

    fn enter(&mut self, member: &Member, invite: Option<&str>, watch: bool) -> Result<(), Refusal> {
        let id = &member.identity.id;
        let seated = self.seat_of(id).is_some();
        if !seated && self.invite.is_some() && invite != self.invite.as_deref() {
            return Err(Refusal::new(
                ErrorCode::InviteRequired,
                "this lobby is invite-only: open the invite link",
            ));
        }
        if watch || seated {
            return Ok(());
        }
        if self.options.stake > 0 && member.identity.guest {
            return Err(Refusal::new(
                ErrorCode::AccountRequired,
                "this lobby is played for Bold Points: sign in to take a seat (you can watch)",
            ));
        }
        let Some(free) = self.seats.iter().position(Option::is_none) else {
            return Err(Refusal::new(
                ErrorCode::LobbyFull,
                "both seats are taken; you can watch instead",
            ));
        };
        self.seats[free] = Some(Seat {
            id: id.clone(),
            name: member.identity.name.clone(),
            guest: member.identity.guest,
            last_action: None,
        });
        if self.phase == Phase::Waiting && self.seats.iter().all(Option::is_some) {
            self.start_series(SeriesStartUndo::Unseat(free));
        }
        Ok(())
    }

    fn seat_of(&self, id: &str) -> Option<usize> {
        self.seats
            .iter()
            .position(|s| s.as_ref().is_some_and(|s| s.id == id))
    }

    fn member(&self, conn: ConnId) -> Option<&Member> {
        self.members.iter().find(|m| m.conn == conn)
    }

    fn send_to(&mut self, conn: ConnId, message: ServerMessage) {
        if let Some(m) = self.member(conn)
            && m.out.try_send(Outbound::Direct(Box::new(message))).is_err()
        {
            crate::metrics::METRICS.slow_consumers_dropped.inc();
            m.kick.notify_one();
        }
    }

    /// Applies an action in memory. A refused action changes nothing.
    fn act(&mut self, conn: ConnId, seq: u32, action: Action) -> Result<Applied, Refusal> {
        let Some(member) = self.member(conn) else {
            return Err(Refusal::new(
                ErrorCode::NotInLobby,
                "you are not in this lobby",
            ));
        };
        if action == Action::Resync {
            return Ok(Applied::Resync);
        }
        let id = member.identity.id.clone();
        let Some(seat) = self.seat_of(&id) else {
            return Err(Refusal::new(
                ErrorCode::SpectatorsCannotAct,
                "spectators can only watch",
            ));
        };
        let this = Some((seq, action.clone()));
        if self.seats[seat]
            .as_ref()
            .is_some_and(|s| s.last_action == this)
        {
            // The same action re-sent (after a reconnect, or after
            // `storage_unavailable`): it was applied and is stored.
            return Ok(Applied::Unchanged);
        }
        self.apply(seat, &id, seq, action)?;
        if let Some(s) = self.seats[seat].as_mut() {
            s.last_action = this;
        }
        Ok(Applied::Changed)
    }

    /// Applies a seated player's action; a refusal changes nothing.
    fn apply(&mut self, seat: usize, id: &str, seq: u32, action: Action) -> Result<(), Refusal> {
        match action {
            Action::Move { notation, path } => self.play_move(seat, seq, notation, path),
            Action::OfferDraw => {
                let round = self.round_in_play()?;
                let color = seat_color(round, seat);
                if round.game.turn() != color {
                    return Err(not_your_turn());
                }
                if round.draw_offer.is_some() {
                    return Err(Refusal::new(
                        ErrorCode::DrawAlreadyOffered,
                        "a draw offer is already standing",
                    ));
                }
                self.round_mut().draw_offer = Some(color);
                Ok(())
            }
            Action::AcceptDraw | Action::DeclineDraw => {
                let round = self.round_in_play()?;
                let color = seat_color(round, seat);
                if round.draw_offer != Some(color.opposite()) {
                    return Err(Refusal::new(
                        ErrorCode::NoDrawOffer,
                        "your opponent has not offered a draw",
                    ));
                }
                if action == Action::AcceptDraw {
                    self.end_round(None, wire::GameEndReason::DrawAgreed);
                } else {
                    self.round_mut().draw_offer = None;
                }
                Ok(())
            }
            Action::Resign => {
                if !matches!(self.phase, Phase::Playing | Phase::Break) {
                    return Err(not_now("there is no series to resign"));
                }
                self.concede(
                    seat,
                    wire::GameEndReason::Resigned,
                    wire::SeriesEndReason::Resigned,
                );
                Ok(())
            }
            Action::NextRound => {
                if self.phase != Phase::Break {
                    return Err(not_now("there is no break to end"));
                }
                self.next_round[seat] = true;
                if self.next_round.iter().all(|r| *r) {
                    self.start_round();
                }
                Ok(())
            }
            Action::Rematch => {
                if !matches!(self.phase, Phase::Finished | Phase::Ended)
                    || self.seats.iter().any(Option::is_none)
                {
                    return Err(not_now(
                        "a rematch needs a finished series and both players",
                    ));
                }
                self.rematch[seat] = true;
                if self.rematch.iter().all(|r| *r) {
                    self.seats.swap(0, 1);
                    // The cached records follow their players to the new seats.
                    self.record_views.swap(0, 1);
                    if let Some(h2h) = &mut self.head_to_head {
                        h2h.wins.reverse();
                    }
                    self.start_series(SeriesStartUndo::Unswap);
                }
                Ok(())
            }
            Action::EndMatch => {
                if id != self.host.as_str() {
                    return Err(Refusal::new(
                        ErrorCode::NotHost,
                        "only the host can end the match",
                    ));
                }
                match self.phase {
                    Phase::Playing | Phase::Break => {
                        if self.round.as_ref().is_some_and(|r| r.result.is_none()) {
                            self.end_round_unscored(wire::GameEndReason::EndedByHost);
                        }
                        self.finish(None, wire::SeriesEndReason::EndedByHost);
                        self.phase = Phase::Ended;
                    }
                    Phase::Finished => self.phase = Phase::Ended,
                    Phase::Waiting | Phase::Ended => {
                        return Err(not_now("there is no match to end"));
                    }
                }
                Ok(())
            }
            Action::Resync => Ok(()),
        }
    }

    fn round_in_play(&self) -> Result<&Round, Refusal> {
        match (&self.phase, &self.round) {
            (Phase::Playing, Some(round)) if round.result.is_none() => Ok(round),
            _ => Err(Refusal::new(
                ErrorCode::NoGameInProgress,
                "no game is in progress",
            )),
        }
    }

    fn round_mut(&mut self) -> &mut Round {
        self.round.as_mut().expect("checked by round_in_play")
    }

    fn play_move(
        &mut self,
        seat: usize,
        seq: u32,
        text: Option<String>,
        path: Option<Vec<String>>,
    ) -> Result<(), Refusal> {
        let round = self.round_in_play()?;
        let color = seat_color(round, seat);
        if round.game.turn() != color {
            return Err(not_your_turn());
        }
        let move_clock = self.settings.move_clock;
        let round = self.round.as_mut().expect("checked by round_in_play");
        let m = play_submitted(&mut round.game, text.as_deref(), path.as_deref())?;
        round.notations.push(m.notation.clone());
        // An offer by the opponent is declined by moving; one's own offer
        // stands through the opponent's turn.
        if round.draw_offer == Some(color.opposite()) {
            round.draw_offer = None;
        }
        round.deadline = Instant::now() + move_clock;
        self.pending_moves.push(StoredMove {
            game_no: round.game_no,
            ply: round.game.ply(),
            path: m.stored.clone(),
            text: m.notation.clone(),
            seat: seat as u8,
            seq,
        });
        round.last_move = Some(m);
        if let Some(outcome) = self.round.as_ref().and_then(|r| r.game.outcome()) {
            self.end_round_scored(outcome.winner, end_reason(outcome.reason), outcome.points);
        }
        Ok(())
    }

    /// Both seats are filled for a new series. A free lobby starts it at
    /// once; a staked one records its intent to take both stakes, which the
    /// room carries out once that intent is stored ([`Room::take_stakes`]).
    /// The series number only grows, so a series id is never reused.
    fn start_series(&mut self, undo: SeriesStartUndo) {
        self.series_no += 1;
        let stake = u64::from(self.options.stake);
        if stake == 0 {
            self.begin_series();
            return;
        }
        let [Some(a), Some(b)] = &self.seats else {
            return;
        };
        self.escrow_intent = Some(EscrowIntent {
            series: self.series_id(),
            stakes: [(a.id.clone(), stake), (b.id.clone(), stake)],
            undo,
        });
    }

    fn begin_series(&mut self) {
        self.series = Series::default();
        self.rematch = [false; 2];
        self.start_round();
    }

    fn series_id(&self) -> String {
        format!("{}:{}", self.code, self.series_no)
    }

    fn start_round(&mut self) {
        self.series.round += 1;
        // Seat 0 opens round one; the opening move alternates.
        let dark_seat = if self.series.round % 2 == 1 { 0 } else { 1 };
        self.games_started += 1;
        self.round = Some(Round {
            game_no: self.games_started,
            game: VariantGame::new(self.options.rule_set, rand::random()),
            dark_seat,
            deadline: Instant::now() + self.settings.move_clock,
            draw_offer: None,
            notations: Vec::new(),
            last_move: None,
            result: None,
        });
        self.phase = Phase::Playing;
        self.break_until = None;
        self.next_round = [false; 2];
        tracing::debug!(room = %self.code, game = self.games_started, "game started");
    }

    fn save_game(&mut self) {
        let Some(round) = &self.round else { return };
        let name = |seat: usize| self.seats[seat].as_ref().map(|s| s.name.clone());
        let tags = crate::rules::pdn::PdnTags {
            event: Some(format!(
                "Jumpgate {} round {}",
                self.code, self.series.round
            )),
            date: None,
            dark: name(round.dark_seat),
            light: name(1 - round.dark_seat),
            result_override: round.result.as_ref().map(|r| r.winner.map(color_from_wire)),
            points: round
                .result
                .as_ref()
                .and_then(|r| r.points)
                .map(|p| [p.dark, p.light]),
        };
        let pdn = round.game.pdn(&tags, &round.notations);
        let game_no = round.game_no;
        self.pending_games.push((game_no, pdn));
    }

    /// Ends the round in play without scoring it.
    fn end_round_unscored(&mut self, reason: wire::GameEndReason) {
        if let Some(round) = self.round.as_mut() {
            round.result = Some(wire::GameResult {
                winner: None,
                reason,
                points: None,
            });
            round.draw_offer = None;
        }
        self.save_game();
    }

    /// Ends the round in play off the board (clock, agreement) and moves the
    /// series on. In rule sets scored by points a win off the board is worth
    /// [`FORFEIT_POINTS`] and an agreed draw nothing.
    fn end_round(&mut self, winner: Option<Color>, reason: wire::GameEndReason) {
        let points = self
            .options
            .rule_set
            .scored_by_points()
            .then_some(match winner {
                Some(Color::Dark) => [FORFEIT_POINTS, 0],
                Some(Color::Light) => [0, FORFEIT_POINTS],
                None => [0, 0],
            });
        self.end_round_scored(winner, reason, points);
    }

    /// Ends the round in play, scores it (`points`: Dark's and Light's, in
    /// rule sets scored by points), and moves the series on.
    fn end_round_scored(
        &mut self,
        winner: Option<Color>,
        reason: wire::GameEndReason,
        points: Option<[u32; 2]>,
    ) {
        let Some(round) = self.round.as_mut() else {
            return;
        };
        round.result = Some(wire::GameResult {
            winner: winner.map(wire_view::color),
            reason,
            points: points.map(wire_view::points),
        });
        round.draw_offer = None;
        let dark_seat = round.dark_seat;
        tracing::debug!(room = %self.code, game = round.game_no, ?winner, ?reason, "game ended");
        self.save_game();
        match winner {
            Some(Color::Dark) => self.series.wins[dark_seat] += 1,
            Some(Color::Light) => self.series.wins[1 - dark_seat] += 1,
            None => self.series.draws += 1,
        }
        if let Some([dark, light]) = points {
            self.series.points[dark_seat] += dark;
            self.series.points[1 - dark_seat] += light;
        }
        let length = u32::from(self.options.series_length);
        let leader = |score: [u32; 2]| match score[0].cmp(&score[1]) {
            std::cmp::Ordering::Greater => Some(0),
            std::cmp::Ordering::Less => Some(1),
            std::cmp::Ordering::Equal => None,
        };
        if self.options.rule_set.scored_by_points() {
            if points_series_over(self.series.points, self.series.round, length) {
                self.finish(leader(self.series.points), wire::SeriesEndReason::Points);
                return;
            }
        } else {
            let majority = length / 2 + 1;
            if let Some(seat) = self.series.wins.iter().position(|w| *w >= majority) {
                self.finish(Some(seat), wire::SeriesEndReason::Majority);
                return;
            } else if self.series.round >= 2 * length {
                self.finish(leader(self.series.wins), wire::SeriesEndReason::RoundLimit);
                return;
            }
        }
        {
            self.phase = Phase::Break;
            self.break_until = Some(Instant::now() + self.settings.break_time);
            self.next_round = [false; 2];
        }
    }

    fn finish(&mut self, winner: Option<usize>, reason: wire::SeriesEndReason) {
        // Records count series between two accounts that ended with a
        // result; a match the host ended is not one.
        if reason != wire::SeriesEndReason::EndedByHost
            && let [Some(a), Some(b)] = &self.seats
            && !a.guest
            && !b.guest
        {
            self.pending_record = Some(SeriesRecord {
                series: self.series_id(),
                rule_set: self.options.rule_set.name().to_owned(),
                players: [a.id.clone(), b.id.clone()],
                winner,
            });
        }
        if self.options.stake > 0 {
            let ids: Vec<String> = self.seats.iter().flatten().map(|s| s.id.clone()).collect();
            if let [a, b] = ids.as_slice() {
                let settlement = match winner.and_then(|w| self.seats[w].as_ref()) {
                    Some(w) => Settlement::Winner {
                        winner: w.id.clone(),
                        loser: if w.id == *a { b.clone() } else { a.clone() },
                    },
                    None => Settlement::Refund {
                        players: [a.clone(), b.clone()],
                    },
                };
                self.pending_settlement = Some((self.series_id(), settlement));
            }
        }
        crate::metrics::METRICS
            .series_finished
            .with_label_values(&[reason.as_str()])
            .inc();
        self.series.result = Some(wire::SeriesResult {
            winner: winner.map(|s| s as u8),
            reason,
        });
        self.phase = Phase::Finished;
        self.break_until = None;
        self.rematch = [false; 2];
    }

    /// `seat` gives up the series (resignation or leaving).
    fn concede(
        &mut self,
        seat: usize,
        game_reason: wire::GameEndReason,
        series_reason: wire::SeriesEndReason,
    ) {
        if let Some(round) = self.round.as_mut().filter(|r| r.result.is_none()) {
            let loser = seat_color(round, seat);
            let points = self
                .options
                .rule_set
                .scored_by_points()
                .then_some(match loser {
                    Color::Light => [FORFEIT_POINTS, 0],
                    Color::Dark => [0, FORFEIT_POINTS],
                });
            if let Some([dark, light]) = points {
                let dark_seat = round.dark_seat;
                self.series.points[dark_seat] += dark;
                self.series.points[1 - dark_seat] += light;
            }
            round.result = Some(wire::GameResult {
                winner: Some(wire_view::color(loser.opposite())),
                reason: game_reason,
                points: points.map(wire_view::points),
            });
            round.draw_offer = None;
            self.save_game();
        }
        self.finish(Some(1 - seat), series_reason);
    }

    fn leave(&mut self, conn: ConnId) {
        let Some(index) = self.members.iter().position(|m| m.conn == conn) else {
            return;
        };
        let member = self.members.remove(index);
        let id = member.identity.id;
        let Some(seat) = self.seat_of(&id) else {
            return;
        };
        if matches!(self.phase, Phase::Playing | Phase::Break) {
            self.concede(seat, wire::GameEndReason::Left, wire::SeriesEndReason::Left);
        }
        // Other connections of the same player leave the seat too.
        self.seats[seat] = None;
        self.members.retain(|m| m.identity.id != id);
        if matches!(self.phase, Phase::Finished | Phase::Ended) {
            self.phase = Phase::Waiting;
            self.round = None;
        }
        if self.host == id
            && let Some(other) = self.seats.iter().flatten().next()
        {
            self.host = other.id.clone();
        }
    }

    /// Rounds the series can last: N games scored by points, or up to 2N
    /// when drawn games do not count towards a majority of wins.
    fn max_rounds(&self) -> u32 {
        let length = u32::from(self.options.series_length);
        if self.options.rule_set.scored_by_points() {
            length
        } else {
            2 * length
        }
    }

    /// The link players share: the lobby page, with the invite when needed.
    fn invite_link(&self) -> String {
        let base = format!("{}/r/{}", self.settings.public_url, self.code);
        match &self.invite {
            Some(invite) => format!("{base}?invite={invite}"),
            None => base,
        }
    }

    fn summary(&self) -> serde_json::Value {
        serde_json::json!({
            "code": self.code.as_str(),
            "rule_set": self.options.rule_set.name(),
            "series_length": self.options.series_length,
            "invite_only": self.invite.is_some(),
            "stake": self.options.stake,
            "players": self.seats.iter().map(|s| s.as_ref().map(|s| s.name.clone())).collect::<Vec<_>>(),
            "spectators": self.spectator_count(),
            "phase": self.phase.as_str(),
        })
    }

    fn spectator_count(&self) -> u32 {
        self.members
            .iter()
            .filter(|m| self.seat_of(&m.identity.id).is_none())
            .count() as u32
    }

    /// The full public snapshot.
    pub fn state(&self) -> wire::RoomState {
        let players = self
            .seats
            .iter()
            .zip(&self.record_views)
            .map(|(seat, record)| {
                seat.as_ref().map(|s| wire::PlayerView {
                    record: record.clone(),
                    id: s.id.clone(),
                    name: s.name.clone(),
                    connected: self.members.iter().any(|m| m.identity.id == s.id),
                })
            })
            .collect();
        wire::RoomState {
            version: self.version,
            code: self.code.to_string(),
            rule_set: wire_view::rule_set(self.options.rule_set),
            series_length: self.options.series_length,
            invite_only: self.invite.is_some(),
            stake: self.options.stake,
            invite: self.invite.clone(),
            invite_link: Some(self.invite_link()),
            host: self.host.clone(),
            players,
            head_to_head: self.head_to_head.clone(),
            spectators: self.spectator_count(),
            phase: self.phase,
            series: wire::SeriesView {
                round: self.series.round,
                max_rounds: self.max_rounds(),
                wins: self.series.wins.to_vec(),
                draws: self.series.draws,
                points: self
                    .options
                    .rule_set
                    .scored_by_points()
                    .then(|| self.series.points.to_vec()),
                result: self.series.result,
            },
            game: self.round.as_ref().map(|r| {
                wire_view::game_view(
                    &r.game,
                    r.dark_seat as u8,
                    &r.notations,
                    r.last_move.as_ref(),
                    r.deadline,
                    r.draw_offer,
                    r.result,
                )
            }),
            board: self
                .round
                .is_none()
                .then(|| wire_view::board(self.options.rule_set))
                .flatten(),
            break_ends_at: self.break_until.map(wire_view::unix_ms),
            next_round: self.next_round.to_vec(),
            rematch: self.rematch.to_vec(),
        }
    }

    /// Sends the current state to every member, encoded once per encoding.
    /// Nothing is shown that the store has not confirmed: while a write is
    /// unconfirmed this does nothing, and the state goes out once it is.
    fn broadcast(&mut self) {
        if self.unsaved() || self.stale {
            return;
        }
        let state = self.state();
        let frame = Arc::new(SharedFrame::new(ServerMessage::State(state)));
        self.members
            .retain(|m| match m.out.try_send(Outbound::Shared(frame.clone())) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    tracing::info!(conn = m.conn, "dropping a slow consumer");
                    crate::metrics::METRICS.slow_consumers_dropped.inc();
                    m.kick.notify_one();
                    false
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            });
    }
}

/// What an action did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Applied {
    /// The room changed: store it, then acknowledge and broadcast.
    Changed,
    /// Nothing to store (a re-sent action already applied): acknowledge.
    Unchanged,
    /// The member asked for the full state.
    Resync,
}

/// Bold Points a stored lobby may hold in escrow, and how to release them:
/// for a lobby that cannot be resumed, so the operator can settle it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StrandedStakes {
    pub series: String,
    pub settlement: Settlement,
}

/// What a stored lobby record says about stakes still held: a settlement
/// it had decided (paid as decided), a series start in doubt or a series
/// in play (both refunded). `None` for free lobbies, unreadable records
/// and series already settled.
pub fn stranded_stakes(record: &str) -> Option<StrandedStakes> {
    let record: RoomRecord = serde_json::from_str(record).ok()?;
    if let Some((series, settlement)) = record.pending_settlement {
        return Some(StrandedStakes { series, settlement });
    }
    if let Some(intent) = record.escrow_intent {
        return Some(StrandedStakes {
            series: intent.series,
            settlement: Settlement::Refund {
                players: intent.stakes.map(|(id, _)| id),
            },
        });
    }
    match (&record.seats, record.phase) {
        ([Some(a), Some(b)], Phase::Playing | Phase::Break) if record.stake > 0 => {
            Some(StrandedStakes {
                series: format!("{}:{}", record.code, record.series_no),
                settlement: Settlement::Refund {
                    players: [a.id.clone(), b.id.clone()],
                },
            })
        }
        _ => None,
    }
}

/// Who sits where, to tell whether a change moved anyone.
fn seat_ids(seats: &[Option<Seat>; 2]) -> [Option<String>; 2] {
    [0, 1].map(|i| seats[i].as_ref().map(|s| s.id.clone()))
}

fn seat_color(round: &Round, seat: usize) -> Color {
    if seat == round.dark_seat {
        Color::Dark
    } else {
        Color::Light
    }
}

fn color_from_wire(color: wire::Color) -> Color {
    match color {
        wire::Color::Dark => Color::Dark,
        wire::Color::Light => Color::Light,
    }
}

/// Plays a move as a client submitted it: by notation or by a path of
/// board names (exactly one of the two).
pub fn play_submitted(
    game: &mut VariantGame,
    text: Option<&str>,
    path: Option<&[String]>,
) -> Result<MoveInfo, Refusal> {
    let played = match (text, path) {
        (Some(text), None) => game.play_text(text),
        (None, Some(path)) => game.play_path(path),
        _ => {
            return Err(Refusal::new(
                ErrorCode::IllegalMove,
                "give exactly one of notation or path",
            ));
        }
    };
    played.map_err(|e| Refusal::new(ErrorCode::IllegalMove, e.to_string()))
}

/// The wire's name for why the rules ended a game.
pub fn end_reason(reason: EndReason) -> wire::GameEndReason {
    match reason {
        EndReason::NoPieces => wire::GameEndReason::NoPieces,
        EndReason::NoMoves => wire::GameEndReason::NoMoves,
        EndReason::Repetition => wire::GameEndReason::Repetition,
        EndReason::NoProgress => wire::GameEndReason::MoveLimit,
        EndReason::InARow => wire::GameEndReason::InARow,
        EndReason::HalfLost => wire::GameEndReason::HalfLost,
        EndReason::PlyLimit => wire::GameEndReason::PlyLimit,
    }
}

/// Whether a series scored by points is over after `played` of `length`
/// games: all were played, or the trailing seat cannot catch up even by
/// scoring the most a game gives in every game left (a tie is still
/// possible at exactly that margin, so the series goes on).
pub fn points_series_over(points: [u32; 2], played: u32, length: u32) -> bool {
    let left = length.saturating_sub(played);
    left == 0 || points[0].abs_diff(points[1]) > left * MAX_GAME_POINTS
}

/// Points for a game won off the board (on time, by resignation or by
/// leaving) in rule sets scored by points: as much as all pieces in a row.
pub const FORFEIT_POINTS: u32 = 3;
/// The most points one game can give a player (3 for a row, 2 for a weak
/// opponent).
pub const MAX_GAME_POINTS: u32 = 5;

/// How soon a failed background write is retried.
const STORE_RETRY: Duration = Duration::from_secs(1);

fn storage_unavailable() -> Refusal {
    Refusal::new(
        ErrorCode::StorageUnavailable,
        "the game could not be saved, so nothing changed; try again",
    )
}

fn not_your_turn() -> Refusal {
    Refusal::new(ErrorCode::NotYourTurn, "it is not your turn")
}

fn not_now(message: &str) -> Refusal {
    Refusal::new(ErrorCode::NotNow, message)
}

async fn sleep_or_forever(deadline: Option<Instant>) {
    match deadline {
        Some(t) => sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// Handle to a running room.
#[derive(Clone, Debug)]
pub struct RoomHandle {
    pub code: RoomCode,
    pub commands: mpsc::Sender<RoomCommand>,
}

/// Remaining time before `deadline`, for the wire.
pub fn remaining(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

#[cfg(test)]
mod tests {
    //! The room's clocks, driven directly. The tokio `test-util` feature is
    //! not enabled for this crate, so these use short real clocks rather than
    //! a paused one.

    use super::*;
    use crate::store::MemoryStore;

    const CLOCK: Duration = Duration::from_millis(300);
    const BREAK: Duration = Duration::from_millis(200);

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

    fn identity(n: u32) -> Identity {
        Identity {
            id: format!("id{n}"),
            name: format!("player{n}"),
            guest: true,
        }
    }

    struct Harness {
        commands: mpsc::Sender<RoomCommand>,
        outs: Vec<mpsc::Receiver<Outbound>>,
    }

    async fn start(move_clock: Duration, break_time: Duration) -> Harness {
        let mut settings = Settings::for_address("127.0.0.1:0".parse().unwrap());
        settings.move_clock = move_clock;
        settings.break_time = break_time;
        let host = identity(1);
        let room = Room::new(
            RoomCode::generate(),
            LobbyOptions {
                rule_set: crate::rules::Variant::Draughts(crate::rules::RuleSet::Russian),
                series_length: 3,
                invite_only: false,
                stake: 0,
            },
            &host,
            Arc::new(settings),
            Arc::new(MemoryStore::default()),
            Arc::new(crate::wallet::MemoryWallets::default()),
            Arc::new(crate::records::MemoryRecords::default()),
        );
        let (tx, rx) = mpsc::channel(16);
        tokio::spawn(room.run(rx));
        let mut outs = Vec::new();
        for n in 1..=2 {
            let (out, out_rx) = mpsc::channel(256);
            let (reply, reply_rx) = oneshot::channel();
            tx.send(RoomCommand::Enter {
                member: Member {
                    conn: u64::from(n),
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
            reply_rx.await.unwrap().unwrap();
            outs.push(out_rx);
        }
        Harness { commands: tx, outs }
    }

    fn decode(outbound: Outbound) -> ServerMessage {
        match outbound {
            Outbound::Shared(frame) => wire::codec::decode_server(
                wire::Encoding::Json,
                &frame.get(wire::Encoding::Json).clone().into_data(),
            )
            .unwrap(),
            Outbound::Direct(message) => *message,
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
}
