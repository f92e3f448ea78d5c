//! Solo play: a game against the computer, or two people on one device.
//! One task owns each solo game; the computer's searches wait their turn
//! in a fair queue and run on a bounded number of blocking threads (`pool`)
//! so they never slow human games, or, with Redis, go out as jobs to every
//! searcher of the deployment (`jobs`, `worker`). Ranked games (accounts,
//! against the Executive) are stored like rooms and resume after a restart.
//!
//! An identity has one current game, named by its note in the store. A
//! game replaced by a newer one, or a practice game nobody attached to for
//! `--idle-lobby-secs`, is closed: stored as such, taken out of the open
//! set and given the finished TTL, so it is never resumed and its keys go
//! away. A game whose close could not be stored is closed by whoever takes
//! it over next ([`close_discarded`]).
//!
//! Over 700 lines: the game task and the handling of its commands read best
//! together; the search queue and the stored record are split out.

use std::sync::Arc;

use jumpgate_protocol as wire;
use jumpgate_protocol::{ErrorCode, ServerMessage};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::leaderboard::{Leaderboards, RankedOutcome};
use crate::outbound::{ConnId, Outbound, Refusal};
use crate::rules::{MoveInfo, VariantGame};
use crate::store::{OwnerEpoch, RoomWrite, Store, StoreError, WriteError};
use crate::wire_view;

mod handle;
pub mod jobs;
mod pool;
mod record;
mod searchers;
pub mod worker;
pub use handle::{SoloHandle, SoloRequest};
pub use pool::{SearchJob, SearchQueue};
pub use record::{SoloMove, SoloRecord, bot_level, my_game, new_record, solo_record};
use record::{replay, undo_point, wire_level};
pub use searchers::Searchers;

/// How often a game waiting for the computer looks at its place in the
/// search queue (and tells the player when it moved up).
const QUEUE_REFRESH: std::time::Duration = std::time::Duration::from_secs(1);

/// How soon a close that could not be stored is tried again.
const CLOSE_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// Messages to a solo game's task (sent through a [`SoloHandle`], or by
/// the game to itself when the computer has moved).
#[derive(Debug)]
enum SoloCommand {
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
        to: Option<String>,
        reply: tokio::sync::oneshot::Sender<bool>,
    },
    /// Stop if the store names another owner (see `RoomCommand::CheckOwner`).
    CheckOwner,
}

/// The settings a solo game reads.
#[derive(Debug, Clone)]
pub struct SoloSettings {
    /// How long a closed game's keys are kept.
    pub finished_ttl: std::time::Duration,
    /// How long a practice game nobody is attached to stays open.
    pub idle_lobby: std::time::Duration,
    /// Plies after which a ranked game is scored as a draw.
    pub ranked_ply_cap: usize,
}

/// Everything a solo game is given: built once, cloned into every game.
#[derive(Debug, Clone)]
pub struct SoloDeps {
    pub settings: Arc<SoloSettings>,
    pub store: Arc<dyn Store>,
    pub boards: Arc<dyn Leaderboards>,
    pub pool: Searchers,
}

/// One solo game.
#[derive(Debug)]
pub struct SoloGame {
    record: SoloRecord,
    game: VariantGame,
    settings: Arc<SoloSettings>,
    store: Arc<dyn Store>,
    boards: Arc<dyn Leaderboards>,
    pool: Searchers,
    self_tx: mpsc::Sender<SoloCommand>,
    attached: Option<(ConnId, mpsc::Sender<Outbound>)>,
    /// This instance's claim on the game: every write is fenced by it.
    owner: OwnerEpoch,
    /// The task stops: the game belongs to another instance now, or a new
    /// game could not be stored.
    stopped: bool,
    thinking: bool,
    /// The computer's search in the queue while it thinks, and the place
    /// last shown to the player.
    search: Option<u64>,
    shown_place: Option<u32>,
    notations: Vec<String>,
    last_move: Option<MoveInfo>,
    /// The version the store is known to hold.
    stored_version: u64,
    /// The highest version ever sent. A failed write is undone in memory
    /// but may still have landed, so the next write takes a new version
    /// above it, and the store accepts it over the one that landed.
    highest_attempt: u64,
    /// Since when no connection is attached (`None` while one is).
    unattached_since: Option<Instant>,
    /// Left unattached too long: the game is being closed, and takes no
    /// more commands. A close that could not be stored is tried again at
    /// `retry_close_at`.
    closing: bool,
    retry_close_at: Instant,
}

impl SoloGame {
    /// Builds the game from its record (new, or stored before a restart),
    /// owned here at `owner`: its handle, and its task to spawn.
    pub fn start(
        record: SoloRecord,
        owner: OwnerEpoch,
        deps: &SoloDeps,
    ) -> Result<
        (
            SoloHandle,
            impl std::future::Future<Output = ()> + Send + use<>,
        ),
        String,
    > {
        let (self_tx, rx) = mpsc::channel(64);
        let (game, notations, last_move) = replay(&record)?;
        let handle = SoloHandle::new(record.id.clone(), self_tx.clone());
        let game = SoloGame {
            stored_version: record.version,
            highest_attempt: record.version,
            record,
            game,
            settings: deps.settings.clone(),
            store: deps.store.clone(),
            boards: deps.boards.clone(),
            pool: deps.pool.clone(),
            self_tx,
            attached: None,
            owner,
            stopped: false,
            thinking: false,
            search: None,
            shown_place: None,
            notations,
            last_move,
            unattached_since: Some(Instant::now()),
            closing: false,
            retry_close_at: Instant::now(),
        };
        Ok((handle, game.run(rx)))
    }

    async fn run(mut self, mut commands: mpsc::Receiver<SoloCommand>) {
        crate::metrics::METRICS.solo_games_live.inc();
        self.run_until_done(&mut commands).await;
        crate::metrics::METRICS.solo_games_live.dec();
    }

    async fn run_until_done(&mut self, commands: &mut mpsc::Receiver<SoloCommand>) {
        self.score_pending().await;
        self.maybe_think();
        loop {
            let deadline = self.close_deadline();
            let idle = async {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            let waiting = self.search.is_some();
            let queue_tick = async {
                if waiting {
                    tokio::time::sleep(QUEUE_REFRESH).await;
                } else {
                    std::future::pending::<()>().await;
                }
            };
            let command = tokio::select! {
                command = commands.recv() => match command {
                    Some(command) => command,
                    None => break,
                },
                () = idle => {
                    if self.close_abandoned().await {
                        break;
                    }
                    continue;
                }
                () = queue_tick => {
                    self.show_queue_place();
                    continue;
                }
            };
            if let SoloCommand::CloseIfPractice { reply } = command {
                let ranked_in_play = self.record.ranked && self.record.result.is_none();
                if !ranked_in_play {
                    self.discard().await;
                }
                let _ = reply.send(!ranked_in_play);
                if !ranked_in_play {
                    break;
                }
                continue;
            }
            if let SoloCommand::HandOver { to, reply } = command {
                let released = self
                    .store
                    .release(&self.record.id, &self.owner, to.as_deref())
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
            if self.closing {
                self.refuse_closed(command).await;
            } else {
                self.handle(command).await;
            }
            if self.stopped {
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

    /// When the game closes for want of a player: a practice game (or a
    /// finished one) nobody has attached to for the idle time. An
    /// unfinished ranked game never does (leaving it does not forfeit it,
    /// PROTOCOL.md section 14), nor a result still to be scored.
    fn close_deadline(&self) -> Option<Instant> {
        if self.stopped {
            return None;
        }
        if self.closing {
            return Some(self.retry_close_at);
        }
        let since = self.unattached_since?;
        let kept = (self.record.ranked && self.record.result.is_none())
            || self.record.pending_score
            || self.stored_version == 0;
        (!kept).then(|| since + self.settings.idle_lobby)
    }

    /// Closes the game left unattached: stored as closed (out of the open
    /// set, with the finished TTL, the identity's note expiring with it).
    /// Returns whether the task ends; if the close could not be stored it
    /// is tried again shortly, and the game takes no commands meanwhile.
    async fn close_abandoned(&mut self) -> bool {
        if !self.closing {
            tracing::debug!(game = %self.record.id, "closing a solo game left unattached");
        }
        self.closing = true;
        self.record.closed = true;
        if self.persist().await.is_ok() || self.stopped {
            return true;
        }
        self.retry_close_at = Instant::now() + CLOSE_RETRY;
        false
    }

    /// Discards the game for a newer one of its player: stored as closed,
    /// so it is never resumed and its keys expire. A ranked result is
    /// scored first. If the close cannot be stored now (or the result
    /// cannot be scored), the game stays open in the store with the
    /// identity's note naming the newer game, and whoever takes it over
    /// next closes it ([`close_discarded`]).
    async fn discard(&mut self) {
        self.score_pending().await;
        if self.record.pending_score || self.stored_version == 0 || self.stopped {
            return;
        }
        self.record.closed = true;
        if let Err(r) = self.persist().await {
            tracing::info!(game = %self.record.id, why = %r.message, "a replaced solo game could not be stored as closed; it is closed when next taken over");
        }
    }

    /// While closing: a connection that attaches is told the game is gone
    /// (no other command can come from one, as none is attached).
    async fn refuse_closed(&mut self, command: SoloCommand) {
        match command {
            SoloCommand::Attach { out, seq, .. } => {
                let _ = out.try_send(Outbound::Direct(Box::new(ServerMessage::Error {
                    seq: Some(seq),
                    code: ErrorCode::NoGameInProgress,
                    message: "that game was left unattached too long and has closed".into(),
                })));
            }
            SoloCommand::CheckOwner => self.handle(SoloCommand::CheckOwner).await,
            _ => {}
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
            queue: self
                .search
                .filter(|_| self.thinking)
                .and_then(|id| self.pool.place(id)),
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
        let closed = self.record.closed;
        let write = RoomWrite {
            code: self.record.id.clone(),
            owner: self.owner.clone(),
            expected_version: self.stored_version,
            version: self.record.version,
            record: serde_json::to_string(&self.record).unwrap_or_default(),
            moves: Vec::new(),
            finished_games: Vec::new(),
            open: !closed && (!finished || self.record.pending_score),
            expire_after: (finished || closed).then_some(self.settings.finished_ttl),
            seated: Vec::new(),
            unseated: Vec::new(),
        };
        let written = self.store.write_solo(&write, &self.record.owner).await;
        match written {
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
        self.stopped = true;
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
            self.record.score_decided = crate::sync::now_ms();
        }
    }

    async fn score_pending(&mut self) {
        if !self.record.pending_score {
            return;
        }
        let Some(outcome) = ranked_outcome(&self.record) else {
            return;
        };
        let rs = self.record.rule_set.name();
        let counted = self
            .boards
            .record(
                &board_game_id(&self.record),
                rs,
                &self.record.owner,
                &self.record.owner_name,
                outcome,
                self.record.score_decided,
            )
            .await;
        match counted {
            Ok(()) => {}
            Err(StoreError::Expired(why)) => {
                // Counting it now could count it twice: it is left out.
                tracing::error!(game = %self.record.id, %why, "ranked result not counted: decided longer ago than the idempotency window");
                crate::metrics::METRICS
                    .writes_expired
                    .with_label_values(&["ranked_result"])
                    .inc();
            }
            Err(_) => return,
        }
        self.record.pending_score = false;
        let _ = self.persist().await;
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
        let tx = self.self_tx.clone();
        let version = self.record.version;
        // The game's own random seed makes each game's choices its own (the
        // easy levels' strays, the Executive's book moves); the move number
        // makes each move's.
        let seed = self.record.seed ^ (self.record.moves.len() as u64).rotate_left(32);
        let ticket = self.pool.submit(SearchJob {
            key: format!("{}:{version}", self.record.id),
            game: self.game.clone(),
            rule_set: self.record.rule_set,
            game_seed: self.record.seed,
            moves: self.record.moves.iter().map(SoloMove::stored).collect(),
            level,
            seed,
            ranked: self.record.ranked,
        });
        self.search = Some(ticket.id);
        self.shown_place = self.pool.place(ticket.id).map(|p| p.ahead);
        let asked_at = Instant::now();
        tokio::spawn(async move {
            // A game that stops drops its ticket: the queue skips it.
            let chosen = tokio::select! {
                chosen = ticket.chosen => chosen.ok().flatten(),
                () = tx.closed() => return,
            };
            crate::metrics::METRICS
                .search_wait_seconds
                .with_label_values(&[level.name()])
                .observe(asked_at.elapsed().as_secs_f64());
            let _ = tx.send(SoloCommand::BotMoved { version, chosen }).await;
        });
    }

    /// Tells the player when the computer's search moved up the queue.
    fn show_queue_place(&mut self) {
        let Some(id) = self.search else { return };
        let ahead = self.pool.place(id).map(|p| p.ahead);
        if ahead != self.shown_place {
            self.shown_place = ahead;
            self.push_state();
        }
    }

    async fn handle(&mut self, command: SoloCommand) {
        match command {
            SoloCommand::Attach { conn, out, seq } => {
                self.unattached_since = None;
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
                    // Not stored, so nobody could resume it: it ends here
                    // and `start_solo` may simply be sent again.
                    self.stopped = true;
                    return;
                }
                self.attached = Some((conn, out));
                self.send(conn, ServerMessage::Ack { seq });
                self.push_state();
            }
            SoloCommand::Detach { conn } => {
                if self.attached.as_ref().is_some_and(|(c, _)| *c == conn) {
                    self.attached = None;
                    self.unattached_since = Some(Instant::now());
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
                self.record.score_decided = crate::sync::now_ms();
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
            SoloCommand::CheckOwner => {
                if let Ok(Some(fence)) = self.store.fence(&self.record.id).await
                    && !self.owner.holds(&fence)
                {
                    tracing::warn!(game = %self.record.id, "another instance took the game over; stopping it here");
                    self.move_away();
                }
            }
            SoloCommand::CloseIfPractice { .. } | SoloCommand::HandOver { .. } => {}
            SoloCommand::BotMoved { version, chosen } => {
                self.thinking = false;
                self.search = None;
                self.shown_place = None;
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

/// The id a ranked game is counted under on the leaderboard: its id and
/// seed, so a later game that draws the same id is another game; just the
/// id for a result decided before decision times were stored (as it was
/// counted then).
fn board_game_id(record: &SoloRecord) -> String {
    if record.score_decided == 0 {
        record.id.clone()
    } else {
        format!("{}:{:016x}", record.id, record.seed)
    }
}

/// How a finished ranked game ended for its player, if it did.
fn ranked_outcome(record: &SoloRecord) -> Option<RankedOutcome> {
    let result = record.result?;
    Some(match result.winner {
        None => RankedOutcome::Draw,
        Some(w) if w == wire_view::color(record.you) => RankedOutcome::Win,
        Some(_) => RankedOutcome::Loss,
    })
}

/// Closes a stored solo game that was taken over (claimed at `owner`) but
/// must not be resumed: its record says it was closed (the open set was
/// not updated), or the identity's note names another game (it was
/// replaced and its close was not stored). A ranked result still to be
/// scored is scored first; the leaderboard counts each game once, so a
/// score that had landed is not counted again.
pub async fn close_discarded(
    mut record: SoloRecord,
    owner: OwnerEpoch,
    settings: &SoloSettings,
    store: &dyn Store,
    boards: &dyn Leaderboards,
) -> Result<(), WriteError> {
    if record.pending_score
        && let Some(outcome) = ranked_outcome(&record)
    {
        let rs = record.rule_set.name();
        let counted = boards
            .record(
                &board_game_id(&record),
                rs,
                &record.owner,
                &record.owner_name,
                outcome,
                record.score_decided,
            )
            .await;
        match counted {
            Ok(()) => {}
            Err(StoreError::Expired(why)) => {
                tracing::error!(game = %record.id, %why, "ranked result not counted: decided longer ago than the idempotency window");
                crate::metrics::METRICS
                    .writes_expired
                    .with_label_values(&["ranked_result"])
                    .inc();
            }
            Err(e) => return Err(e.into()),
        }
    }
    record.pending_score = false;
    record.closed = true;
    let expected_version = record.version;
    record.version += 1;
    let write = RoomWrite {
        code: record.id.clone(),
        owner,
        expected_version,
        version: record.version,
        record: serde_json::to_string(&record).unwrap_or_default(),
        moves: Vec::new(),
        finished_games: Vec::new(),
        open: false,
        expire_after: Some(settings.finished_ttl),
        seated: Vec::new(),
        unseated: Vec::new(),
    };
    store.write_solo(&write, &record.owner).await
}

#[cfg(test)]
mod tests;
