//! Solo play: a game against the computer, or two people on one device.
//! One task owns each solo game; the computer thinks on a bounded pool of
//! blocking threads so it never slows human games. Ranked games (accounts,
//! against the Executive) are stored like rooms and resume after a restart.

use std::sync::Arc;

use jumpgate_protocol as wire;
use jumpgate_protocol::{ErrorCode, ServerMessage};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::bots::Level;
use crate::config::Settings;
use crate::identity::Identity;
use crate::leaderboard::{Leaderboards, RankedOutcome};
use crate::outbound::{ConnId, Outbound, Refusal};
use crate::rules::{Color, MoveInfo, Variant, VariantGame};
use crate::store::{OwnerEpoch, RoomWrite, Store, WriteError};
use crate::wire_view;

mod pool;
pub use pool::BotPool;

/// Messages to a solo game's task.
#[derive(Debug)]
pub enum SoloCommand {
    Attach {
        conn: ConnId,
        out: mpsc::Sender<Outbound>,
        seq: u32,
    },
    Move {
        conn: ConnId,
        seq: u32,
        notation: Option<String>,
        path: Option<Vec<String>>,
    },
    Undo {
        conn: ConnId,
        seq: u32,
    },
    Resign {
        conn: ConnId,
        seq: u32,
    },
    Resync {
        conn: ConnId,
        seq: u32,
    },
    Detach {
        conn: ConnId,
    },
    BotMoved {
        version: u64,
        /// The move in its stored form.
        chosen: Option<String>,
    },
    /// Ends the task unless it holds an unfinished ranked game; replies
    /// whether it closed.
    CloseIfPractice {
        reply: tokio::sync::oneshot::Sender<bool>,
    },
    /// Give the game up for another instance (see `RoomCommand::HandOver`).
    HandOver {
        reply: tokio::sync::oneshot::Sender<bool>,
    },
}

/// Handle to a running solo game.
#[derive(Clone, Debug)]
pub struct SoloHandle {
    pub id: String,
    pub commands: mpsc::Sender<SoloCommand>,
}

/// The stored form of a solo game (JSON, in the store like a room record).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SoloRecord {
    /// Always "solo", to tell these apart from rooms at resume.
    pub kind: String,
    pub id: String,
    pub owner: String,
    pub owner_name: String,
    pub rule_set: Variant,
    /// Space Mode's wormhole seed.
    #[serde(default)]
    pub seed: u64,
    pub same_device: bool,
    pub level: Option<Level>,
    pub ranked: bool,
    pub you: Color,
    /// The moves played, as stored.
    pub moves: Vec<SoloMove>,
    pub result: Option<wire::GameResult>,
    pub version: u64,
    /// A ranked result not yet on the leaderboard.
    pub pending_score: bool,
}

/// A stored solo move: the form [`VariantGame::play_stored`] reads.
/// Records written before the space rule sets hold lists of square indices.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SoloMove {
    Stored(String),
    Squares(Vec<u8>),
}

impl SoloMove {
    fn stored(&self) -> String {
        match self {
            SoloMove::Stored(s) => s.clone(),
            SoloMove::Squares(squares) => squares
                .iter()
                .map(u8::to_string)
                .collect::<Vec<_>>()
                .join(","),
        }
    }
}

/// One solo game.
#[derive(Debug)]
pub struct SoloGame {
    record: SoloRecord,
    game: VariantGame,
    settings: Arc<Settings>,
    store: Arc<dyn Store>,
    boards: Arc<dyn Leaderboards>,
    pool: Arc<BotPool>,
    self_tx: mpsc::Sender<SoloCommand>,
    attached: Option<(ConnId, mpsc::Sender<Outbound>)>,
    /// This instance's claim on the game: every write is fenced by it.
    owner: OwnerEpoch,
    /// The game belongs to another instance now: the task stops.
    moved: bool,
    thinking: bool,
    notations: Vec<String>,
    last_move: Option<MoveInfo>,
    /// The version the store is known to hold.
    stored_version: u64,
    /// The highest version ever sent. A failed write is undone in memory
    /// but may still have landed, so the next write takes a new version
    /// above it, and the store accepts it over the one that landed.
    highest_attempt: u64,
}

fn bot_level(level: Option<wire::BotLevel>) -> Level {
    match level {
        Some(wire::BotLevel::Tamer) => Level::Tamer,
        Some(wire::BotLevel::Driver) => Level::Driver,
        Some(wire::BotLevel::Warden) => Level::Warden,
        Some(wire::BotLevel::Executive) | None => Level::Executive,
    }
}

fn wire_level(level: Level) -> wire::BotLevel {
    match level {
        Level::Tamer => wire::BotLevel::Tamer,
        Level::Driver => wire::BotLevel::Driver,
        Level::Warden => wire::BotLevel::Warden,
        Level::Executive => wire::BotLevel::Executive,
    }
}

/// Checks a `start_solo` request and builds the record of the new game; its
/// id is `S` + a room code, which the load balancer routes like the code.
pub fn new_record(
    identity: &Identity,
    rule_set: Variant,
    mode: wire::SoloMode,
    level: Option<wire::BotLevel>,
    ranked: bool,
) -> Result<SoloRecord, Refusal> {
    let same_device = mode == wire::SoloMode::SameDevice;
    let level = (!same_device).then(|| bot_level(level));
    if ranked {
        if identity.guest {
            return Err(Refusal::new(
                ErrorCode::AccountRequired,
                "ranked games need an account: sign in, or play practice",
            ));
        }
        if same_device || level != Some(Level::Executive) {
            return Err(Refusal::new(
                ErrorCode::InvalidOptions,
                "only games against the Executive are ranked",
            ));
        }
    }
    Ok(SoloRecord {
        kind: "solo".into(),
        id: format!("S{}", crate::code::RoomCode::generate()),
        owner: identity.id.clone(),
        owner_name: identity.name.clone(),
        rule_set,
        seed: rand::random(),
        same_device,
        level,
        ranked,
        you: Color::Dark,
        moves: Vec::new(),
        result: None,
        version: 0,
        pending_score: false,
    })
}

impl SoloGame {
    /// Builds the game from its record (new, or stored before a restart).
    pub fn from_record(
        record: SoloRecord,
        owner: OwnerEpoch,
        settings: Arc<Settings>,
        store: Arc<dyn Store>,
        boards: Arc<dyn Leaderboards>,
        pool: Arc<BotPool>,
        self_tx: mpsc::Sender<SoloCommand>,
    ) -> Result<SoloGame, String> {
        let (game, notations, last_move) = replay(&record)?;
        Ok(SoloGame {
            stored_version: record.version,
            highest_attempt: record.version,
            record,
            game,
            settings,
            store,
            boards,
            pool,
            self_tx,
            attached: None,
            owner,
            moved: false,
            thinking: false,
            notations,
            last_move,
        })
    }

    pub fn id(&self) -> &str {
        &self.record.id
    }

    pub fn owner(&self) -> &str {
        &self.record.owner
    }

    pub async fn run(mut self, mut commands: mpsc::Receiver<SoloCommand>) {
        self.score_pending().await;
        self.maybe_think();
        while let Some(command) = commands.recv().await {
            if let SoloCommand::CloseIfPractice { reply } = command {
                let ranked_in_play = self.record.ranked && self.record.result.is_none();
                let _ = reply.send(!ranked_in_play);
                if !ranked_in_play {
                    break;
                }
                continue;
            }
            if let SoloCommand::HandOver { reply } = command {
                let released = self
                    .store
                    .release(&self.record.id, &self.owner)
                    .await
                    .is_ok();
                if released {
                    crate::metrics::METRICS.room_handovers.inc();
                    self.move_away();
                }
                let _ = reply.send(released);
                if released {
                    break;
                }
                continue;
            }
            self.handle(command).await;
            if self.moved {
                break;
            }
            self.score_pending().await;
            // A finished game nobody watches has nothing left to do.
            if self.record.result.is_some() && !self.record.pending_score && self.attached.is_none()
            {
                break;
            }
        }
    }

    fn send(&self, conn: ConnId, message: ServerMessage) {
        if let Some((c, out)) = &self.attached
            && *c == conn
        {
            let _ = out.try_send(Outbound::Direct(Box::new(message)));
        }
    }

    fn refuse(&self, conn: ConnId, seq: u32, r: Refusal) {
        self.send(
            conn,
            ServerMessage::Error {
                seq: Some(seq),
                code: r.code,
                message: r.message,
            },
        );
    }

    fn push_state(&self) {
        if let Some((conn, _)) = &self.attached {
            self.send(*conn, ServerMessage::SoloState(self.view()));
        }
    }

    fn view(&self) -> wire::SoloState {
        let far = tokio::time::Instant::now();
        let mut game = wire_view::game_view(
            &self.game,
            0,
            &self.notations,
            self.last_move.as_ref(),
            far,
            None,
            self.record.result,
        );
        game.deadline = 0;
        game.remaining_ms = 0;
        if self.thinking || self.is_bot_turn() {
            game.legal_moves.clear();
            game.must_capture.clear();
        }
        wire::SoloState {
            version: self.record.version,
            id: self.record.id.clone(),
            rule_set: wire_view::rule_set(self.record.rule_set),
            mode: if self.record.same_device {
                wire::SoloMode::SameDevice
            } else {
                wire::SoloMode::Computer
            },
            level: self.record.level.map(wire_level),
            ranked: self.record.ranked,
            you: (!self.record.same_device).then(|| wire_view::color(self.record.you)),
            thinking: self.thinking,
            game,
        }
    }

    fn is_bot_turn(&self) -> bool {
        !self.record.same_device
            && self.game.turn() != self.record.you
            && self.record.result.is_none()
    }

    /// Writes the record; on failure the caller undoes its change. The
    /// record holds every move, so the next write stores the whole game
    /// as it is then, whatever a failed write left behind.
    async fn persist(&mut self) -> Result<(), Refusal> {
        self.highest_attempt = self.highest_attempt.max(self.record.version) + 1;
        self.record.version = self.highest_attempt;
        let finished = self.record.result.is_some();
        let write = RoomWrite {
            code: self.record.id.clone(),
            owner: self.owner.clone(),
            expected_version: self.stored_version,
            version: self.record.version,
            record: serde_json::to_string(&self.record).unwrap_or_default(),
            moves: Vec::new(),
            finished_games: Vec::new(),
            open: !finished || self.record.pending_score,
            expire_after: finished.then_some(self.settings.finished_ttl),
        };
        match self.store.write(write).await {
            Ok(()) => {
                self.stored_version = self.record.version;
                Ok(())
            }
            Err(WriteError::Fenced(why)) => {
                tracing::warn!(game = %self.record.id, %why, "another instance took the game over; stopping it here");
                self.move_away();
                Err(Refusal::new(
                    ErrorCode::RoomUnavailable,
                    "the game moved to another server instance; reconnect and resume it",
                ))
            }
            Err(e) => {
                tracing::warn!(game = %self.record.id, error = %e, "solo write failed");
                if matches!(e, WriteError::Conflict(_)) {
                    // The stored game is not the one this task last wrote
                    // (its keys expired, or another writer): this task
                    // holds every acknowledged move, so the next write
                    // replaces whatever is stored.
                    self.stored_version = match self.store.load(&self.record.id).await {
                        Ok(Some(stored)) => solo_record(&stored.record).map_or(0, |r| r.version),
                        _ => 0,
                    };
                    self.highest_attempt = self.highest_attempt.max(self.stored_version);
                }
                Err(Refusal::new(
                    ErrorCode::StorageUnavailable,
                    "the game could not be saved just now; try again",
                ))
            }
        }
    }

    /// Stops the game here for good: the player is told to reconnect.
    fn move_away(&mut self) {
        self.moved = true;
        if let Some((_, out)) = self.attached.take() {
            let _ = out.try_send(Outbound::Moved);
        }
    }

    fn rebuild(&mut self) {
        if let Ok((game, notations, last_move)) = replay(&self.record) {
            self.game = game;
            self.notations = notations;
            self.last_move = last_move;
        }
    }

    /// Marks the result once the game is over (rules, 500-ply cap, resign).
    fn settle_result(&mut self) {
        if self.record.result.is_some() {
            return;
        }
        let result = match self.game.outcome() {
            Some(outcome) => Some(wire::GameResult {
                winner: outcome.winner.map(wire_view::color),
                reason: crate::room::view::game_end(crate::lobby::GameEnd::from_rules(
                    outcome.reason,
                )),
                points: outcome.points.map(wire_view::points),
            }),
            None if self.record.ranked
                && self.game.ply() as usize >= self.settings.ranked_ply_cap =>
            {
                Some(wire::GameResult {
                    winner: None,
                    reason: wire::GameEndReason::MoveLimit,
                    points: None,
                })
            }
            None => None,
        };
        if result.is_some() {
            self.record.result = result;
            self.record.pending_score = self.record.ranked;
        }
    }

    async fn score_pending(&mut self) {
        if !self.record.pending_score {
            return;
        }
        let Some(result) = self.record.result else {
            return;
        };
        let outcome = match result.winner {
            None => RankedOutcome::Draw,
            Some(w) if w == wire_view::color(self.record.you) => RankedOutcome::Win,
            Some(_) => RankedOutcome::Loss,
        };
        let rs = self.record.rule_set.name();
        if self
            .boards
            .record(
                &self.record.id,
                rs,
                &self.record.owner,
                &self.record.owner_name,
                outcome,
            )
            .await
            .is_ok()
        {
            self.record.pending_score = false;
            let _ = self.persist().await;
        }
    }

    /// Starts the computer's search when it is its turn.
    fn maybe_think(&mut self) {
        if self.thinking || !self.is_bot_turn() {
            return;
        }
        let Some(level) = self.record.level else {
            return;
        };
        self.thinking = true;
        let game = self.game.clone();
        let pool = self.pool.clone();
        let tx = self.self_tx.clone();
        let version = self.record.version;
        let seed = self.record.moves.len() as u64 ^ u64::from(self.record.id.len() as u32);
        tokio::spawn(async move {
            let chosen = pool.think(game, level, seed).await;
            let _ = tx.send(SoloCommand::BotMoved { version, chosen }).await;
        });
    }

    async fn handle(&mut self, command: SoloCommand) {
        match command {
            SoloCommand::Attach { conn, out, seq } => {
                // A new game is stored before it is acknowledged, so any
                // instance can resume it.
                if self.stored_version == 0
                    && let Err(refusal) = self.persist().await
                {
                    let _ = out.try_send(Outbound::Direct(Box::new(ServerMessage::Error {
                        seq: Some(seq),
                        code: refusal.code,
                        message: refusal.message,
                    })));
                    return;
                }
                self.attached = Some((conn, out));
                self.send(conn, ServerMessage::Ack { seq });
                self.push_state();
            }
            SoloCommand::Detach { conn } => {
                if self.attached.as_ref().is_some_and(|(c, _)| *c == conn) {
                    self.attached = None;
                }
            }
            SoloCommand::Resync { conn, seq } => {
                self.send(conn, ServerMessage::Ack { seq });
                self.push_state();
            }
            SoloCommand::Move {
                conn,
                seq,
                notation: text,
                path,
            } => match self.human_move(text, path).await {
                Ok(()) => {
                    self.send(conn, ServerMessage::Ack { seq });
                    self.maybe_think();
                    self.push_state();
                }
                Err(r) => self.refuse(conn, seq, r),
            },
            SoloCommand::Undo { conn, seq } => match self.undo().await {
                Ok(()) => {
                    self.send(conn, ServerMessage::Ack { seq });
                    self.maybe_think();
                    self.push_state();
                }
                Err(r) => self.refuse(conn, seq, r),
            },
            SoloCommand::Resign { conn, seq } => {
                if self.record.result.is_some() {
                    self.refuse(
                        conn,
                        seq,
                        Refusal::new(ErrorCode::NoGameInProgress, "the game is over"),
                    );
                    return;
                }
                let before = self.record.clone();
                let loser = if self.record.same_device {
                    self.game.turn()
                } else {
                    self.record.you
                };
                self.record.result = Some(wire::GameResult {
                    winner: Some(wire_view::color(loser.opposite())),
                    reason: wire::GameEndReason::Resigned,
                    points: None,
                });
                self.record.pending_score = self.record.ranked;
                match self.persist().await {
                    Ok(()) => {
                        self.send(conn, ServerMessage::Ack { seq });
                        self.push_state();
                    }
                    Err(r) => {
                        self.record = before;
                        self.refuse(conn, seq, r);
                    }
                }
            }
            SoloCommand::CloseIfPractice { .. } | SoloCommand::HandOver { .. } => {}
            SoloCommand::BotMoved { version, chosen } => {
                self.thinking = false;
                if version != self.record.version || self.record.result.is_some() {
                    // The position changed while it thought (undo): think again.
                    self.maybe_think();
                    return;
                }
                let Some(chosen) = chosen else { return };
                let before = (
                    self.record.clone(),
                    self.game.clone(),
                    self.notations.clone(),
                    self.last_move.clone(),
                );
                if let Ok(m) = self.game.play_stored(&chosen) {
                    self.notations.push(m.notation.clone());
                    self.record.moves.push(SoloMove::Stored(m.stored.clone()));
                    self.last_move = Some(m);
                    self.settle_result();
                    if self.persist().await.is_err() {
                        (self.record, self.game, self.notations, self.last_move) = before;
                        // Try again shortly: the store may be back.
                        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                        self.maybe_think();
                        return;
                    }
                }
                // On the orbit board the player may have had to pass, so
                // the computer can be to move again.
                self.maybe_think();
                self.push_state();
            }
        }
    }

    async fn human_move(
        &mut self,
        text: Option<String>,
        path: Option<Vec<String>>,
    ) -> Result<(), Refusal> {
        if self.record.result.is_some() {
            return Err(Refusal::new(
                ErrorCode::NoGameInProgress,
                "the game is over",
            ));
        }
        if self.thinking || self.is_bot_turn() {
            return Err(Refusal::new(
                ErrorCode::NotYourTurn,
                "the computer is to move",
            ));
        }
        let before = (
            self.record.clone(),
            self.game.clone(),
            self.notations.clone(),
            self.last_move.clone(),
        );
        let m = crate::lobby::play_submitted(&mut self.game, text.as_deref(), path.as_deref())
            .map_err(crate::room::refusal)?;
        self.notations.push(m.notation.clone());
        self.record.moves.push(SoloMove::Stored(m.stored.clone()));
        self.last_move = Some(m);
        self.settle_result();
        if let Err(r) = self.persist().await {
            (self.record, self.game, self.notations, self.last_move) = before;
            return Err(r);
        }
        Ok(())
    }

    /// Takes back the player's last turn and the computer's reply; on one
    /// device, the last move. Undo makes a ranked game practice for good.
    async fn undo(&mut self) -> Result<(), Refusal> {
        if self.record.result.is_some() {
            return Err(Refusal::new(
                ErrorCode::NotNow,
                "the game is over; a finished result cannot be undone",
            ));
        }
        if self.thinking {
            return Err(Refusal::new(ErrorCode::NotNow, "the computer is thinking"));
        }
        let before = self.record.clone();
        let Some(keep) = undo_point(&self.record) else {
            return Err(Refusal::new(ErrorCode::NotNow, "there is nothing to undo"));
        };
        self.record.moves.truncate(keep);
        if self.record.ranked {
            // Said clearly to the player: the state shows ranked = false.
            self.record.ranked = false;
        }
        if let Err(r) = self.persist().await {
            self.record = before;
            return Err(r);
        }
        self.rebuild();
        Ok(())
    }
}

/// How many moves stay after an undo, or `None` when there is nothing to
/// undo. On one device: all but the last. Against the computer: those
/// before your last move, so the computer's replies go with it (on the
/// orbit board a side that cannot move passes, so turns do not always
/// alternate).
fn undo_point(record: &SoloRecord) -> Option<usize> {
    if record.same_device {
        record.moves.len().checked_sub(1)
    } else {
        movers(record)
            .iter()
            .rposition(|&mover| mover == record.you)
    }
}

/// Who made each of a record's moves.
fn movers(record: &SoloRecord) -> Vec<Color> {
    let mut game = VariantGame::new(record.rule_set, record.seed);
    record
        .moves
        .iter()
        .map(|m| {
            let mover = game.turn();
            let _ = game.play_stored(&m.stored());
            mover
        })
        .collect()
}

/// The game, its move texts and its last move, replayed from a record.
fn replay(record: &SoloRecord) -> Result<(VariantGame, Vec<String>, Option<MoveInfo>), String> {
    let stored: Vec<String> = record.moves.iter().map(SoloMove::stored).collect();
    let stored: Vec<&str> = stored.iter().map(String::as_str).collect();
    let (game, mut played) = VariantGame::replay(record.rule_set, record.seed, &stored)?;
    let notations = played.iter().map(|m| m.notation.clone()).collect();
    Ok((game, notations, played.pop()))
}

/// The solo game a stored record holds, if it is one (rooms have no
/// `kind: "solo"`).
pub fn solo_record(json: &str) -> Option<SoloRecord> {
    serde_json::from_str::<SoloRecord>(json)
        .ok()
        .filter(|r| r.kind == "solo")
}

#[cfg(test)]
mod tests;
