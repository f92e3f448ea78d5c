//! The lobby as a pure state machine: seats, the series, the round in play,
//! draw offers and rematches as one value ([`Lobby`]), and the transitions
//! that change it. No I/O, no tokio, no wire format: time comes in as a
//! parameter, refusals are [`LobbyError`]s, and the room task (the
//! server's `room` module) carries out what a transition leaves to do, as
//! the plain values of [`effects`]. The crate's dependencies make that
//! boundary hard to cross: the rules engine, serde, nothing async or
//! networked (the test command checks it).
//!
//! What is left to do is part of the value, so it is stored with it and
//! survives a crash: [`Lobby::escrow_intent`] (take both stakes, then
//! [`Lobby::begin_series`], or [`Lobby::undo_series_start`]),
//! [`Lobby::pending_settlement`] (pay out or refund a finished series),
//! [`Lobby::pending_record`] (count it in the records), and the moves and
//! games not yet stored. A transition that refuses changes nothing.
//!
//! Over 700 lines: every transition works on the same private state, so they
//! stay together; outcomes, series and the stored record are split out.

pub mod code;
pub mod effects;
mod outcome;
mod record;
mod series;

use std::time::{Duration, Instant};

use jumpgate_rules::{Color, DrawRules, MoveInfo, Variant, VariantGame};

pub use crate::code::RoomCode;
pub use crate::effects::{Identity, MoveEffects, SeriesRecord, Settlement, StoredMove};

pub use outcome::{GameEnd, GameResult, Phase, Points, SeriesEnd, SeriesResult};
pub use record::{RecordGlance, ResumeError, StrandedStakes, WallClock, glance, stranded_stakes};
pub use series::{FORFEIT_POINTS, MAX_GAME_POINTS, points_series_over};

/// Options fixed when a lobby is created.
#[derive(Clone, Debug)]
pub struct LobbyOptions {
    pub rule_set: Variant,
    pub series_length: u8,
    pub invite_only: bool,
    /// Bold Points each player stakes; 0 for a free lobby.
    pub stake: u32,
    pub pace: Pace,
    /// The draw rules the games are judged by: the seeds' (the default) or
    /// the rule set's federation's.
    pub draw_rules: DrawRules,
}

/// How fast a lobby is played (stored by these names).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pace {
    /// The move clock forfeits a side that runs out of time.
    #[default]
    Live,
    /// No clock forfeits by itself: after the claim window the opponent may
    /// claim the game ([`Action::ClaimForfeit`]); with no move for the
    /// expiry window the lobby ends with no winner.
    Correspondence,
}

/// How long moves, breaks and correspondence windows last.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    pub move_clock: Duration,
    pub break_time: Duration,
    /// Correspondence: how long the side to move has before the opponent
    /// may claim the game.
    pub claim_after: Duration,
    /// Correspondence: how long a lobby lasts without a move.
    pub expire_after: Duration,
}

/// Something a seated player (or a spectator, who is refused) asks for.
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
    ClaimForfeit,
}

/// A player in a seat.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Seat {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub guest: bool,
    /// The last action this player had applied: its seq and content, so an
    /// action re-sent (after a reconnect, or after `storage_unavailable`)
    /// is applied once and acknowledged again.
    #[serde(alias = "last_move")]
    pub last_action: Option<(u32, Action)>,
}

/// A staked series about to start: stored before the stakes are taken, so
/// a crash or an unanswered wallet call in between is undone (the series
/// refunded, the seating that asked for it reversed) rather than left
/// half-done.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EscrowIntent {
    /// The series id (see [`Lobby::series_id`]); never used for another
    /// series.
    pub series: String,
    /// When the series start was decided (Unix ms, stamped by the first
    /// write that stores it; 0 until then): the escrow and its undoing
    /// carry it (the server keeps an idempotency key for a bounded window
    /// after this moment).
    #[serde(default)]
    pub decided: u64,
    /// The two accounts and what each stakes.
    pub stakes: [(String, u64); 2],
    /// What asked for the series, to reverse it if the stakes are not taken.
    pub undo: SeriesStartUndo,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeriesStartUndo {
    /// A join filled the lobby: the joiner leaves this seat again.
    Unseat(usize),
    /// Both asked for a rematch: the seats swap back, nobody has asked.
    Unswap,
}

/// The score of the series in play (or just finished).
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Series {
    pub round: u32,
    pub wins: [u32; 2],
    pub draws: u32,
    /// Points per seat, in rule sets scored by points (orbit).
    #[serde(default)]
    pub points: [u32; 2],
    pub result: Option<SeriesResult>,
}

/// The round being played (or just ended).
#[derive(Debug, Clone)]
pub struct Round {
    /// Numbers the games of a lobby, for the move log.
    pub game_no: u64,
    pub game: VariantGame,
    pub dark_seat: usize,
    pub deadline: Instant,
    pub draw_offer: Option<Color>,
    /// The side whose draw offer the opponent declined (by `decline_draw`
    /// or by moving), until that side moves or offers again.
    pub draw_declined: Option<Color>,
    pub notations: Vec<String>,
    /// The same moves as the rules engine stores them, so that the
    /// position after any ply can be replayed (`/r/{CODE}/positions`).
    pub stored: Vec<String>,
    pub last_move: Option<MoveInfo>,
    pub result: Option<GameResult>,
}

impl Round {
    /// What a move by `color` does to the draw offer: the opponent's offer
    /// is declined by moving; one's own offer stands through the
    /// opponent's turn, and one's declined offer is forgotten.
    fn moved(&mut self, color: Color) {
        if self.draw_offer == Some(color.opposite()) {
            self.draw_offer = None;
            self.draw_declined = Some(color.opposite());
        } else if self.draw_declined == Some(color) {
            self.draw_declined = None;
        }
    }

    /// The color a seat plays this round.
    pub fn color_of(&self, seat: usize) -> Color {
        if seat == self.dark_seat {
            Color::Dark
        } else {
            Color::Light
        }
    }
}

/// What a transition did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The lobby changed: store it, then acknowledge and broadcast.
    Changed,
    /// Nothing to store (an action re-sent after it was applied).
    Unchanged,
    /// The member asked for the full state.
    Resync,
}

/// What a code that names no lobby is answered, on every path: the lobby
/// an invite-only code names without its invite gets the very same words.
pub const NO_SUCH_LOBBY: &str = "no lobby has that code";

/// Why the lobby refused a request. Texts are defined here, once.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LobbyError {
    /// An invite-only lobby, entered without its invite by someone holding
    /// no seat: refused exactly as a code no lobby has, so that the code
    /// alone does not even tell that the lobby exists.
    #[error("{}", NO_SUCH_LOBBY)]
    NotInvited,
    #[error("this lobby is played for Bold Points: sign in to take a seat (you can watch)")]
    AccountRequired,
    #[error("both seats are taken; you can watch instead")]
    LobbyFull,
    #[error("spectators can only watch")]
    SpectatorsCannotAct,
    #[error("it is not your turn")]
    NotYourTurn,
    #[error("a draw offer is already standing")]
    DrawAlreadyOffered,
    #[error("your opponent has not offered a draw")]
    NoDrawOffer,
    #[error("no game is in progress")]
    NoGameInProgress,
    #[error("only the host can end the match")]
    NotHost,
    #[error("{0}")]
    NotNow(&'static str),
    #[error("{0}")]
    IllegalMove(String),
    /// A forfeit claimed before the claim window ran out; what is left of it.
    #[error("you can claim this game in {}", remaining_text(*.0))]
    ClaimTooEarly(Duration),
}

/// "1 d 4 h 30 min", "12 min 5 s": a time left, for people.
fn remaining_text(left: Duration) -> String {
    let secs = left.as_secs() + u64::from(left.subsec_nanos() > 0);
    let (d, h, m, s) = (secs / 86_400, secs / 3_600 % 24, secs / 60 % 60, secs % 60);
    let parts = [(d, "d"), (h, "h"), (m, "min"), (s, "s")];
    let first = parts.iter().position(|(n, _)| *n > 0).unwrap_or(3);
    parts[first..(first + 3).min(4)]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| format!("{n} {unit}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What the clock did to the lobby (see [`Lobby::on_clock`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockEvent {
    /// Nothing was due.
    Nothing,
    /// A live game's side to move ran out of time and lost.
    Forfeit(Color),
    /// The break ended: the next round started.
    NextRound,
    /// A correspondence lobby had no move for its expiry window: it ended
    /// with no winner (a series in play refunded, nothing recorded).
    Expired,
}

/// Compares two secrets in time that depends on their lengths only.
fn same_secret(given: &str, expected: &str) -> bool {
    given.len() == expected.len()
        && given
            .bytes()
            .zip(expected.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// One lobby's durable state.
#[derive(Debug, Clone)]
pub struct Lobby {
    pub code: RoomCode,
    pub options: LobbyOptions,
    pub invite: Option<String>,
    pub host: String,
    pub seats: [Option<Seat>; 2],
    pub phase: Phase,
    pub series: Series,
    pub round: Option<Round>,
    pub break_until: Option<Instant>,
    pub next_round: [bool; 2],
    pub rematch: [bool; 2],
    /// Grows with every change; a client never sees it go down.
    pub version: u64,
    pub games_started: u64,
    /// Numbers the series of this lobby; with the code it names the escrow.
    pub series_no: u64,
    /// A finished staked series whose pot is not yet paid out or refunded.
    pub pending_settlement: Option<(String, Settlement)>,
    /// When that settlement was decided (Unix ms; 0 until the write that
    /// stores it stamps it).
    pub settlement_decided: u64,
    /// Tells this lobby's series ids from those of an earlier lobby that
    /// had the same code (0 in lobbies stored before it existed: their ids
    /// stay `CODE:N`).
    pub incarnation: u32,
    /// A staked series whose stakes are to be taken.
    pub escrow_intent: Option<EscrowIntent>,
    /// A finished series between two accounts not yet in the records.
    pub pending_record: Option<SeriesRecord>,
    /// Moves and finished games not yet known to be stored.
    pub pending_moves: Vec<StoredMove>,
    pub pending_games: Vec<(u64, String)>,
    /// Moves stored since the record was last written (appended with
    /// their effects; the room rewrites the record every so many).
    pub moves_since_record: u32,
    pub timing: Timing,
    /// Since when nothing has happened for the expiry window to count from:
    /// the lobby's creation, its last move, or the start of its last round.
    pub active_at: Instant,
    /// When the last move was played.
    pub last_move_at: Option<Instant>,
    /// Draws the seeds of new games (Space Mode's wormholes).
    seeds: u64,
}

/// The id of series `series_no` of the lobby `code` of this incarnation
/// (see [`Lobby::series_id`]).
pub fn series_id(code: &str, series_no: u64, incarnation: u32) -> String {
    if incarnation == 0 {
        format!("{code}:{series_no}")
    } else {
        format!("{code}:{series_no}:{incarnation:08x}")
    }
}

impl Lobby {
    /// A new lobby, nobody seated yet. `seed` starts the sequence of game
    /// seeds.
    pub fn new(
        code: RoomCode,
        options: LobbyOptions,
        invite: Option<String>,
        host: &str,
        timing: Timing,
        seed: u64,
        now: Instant,
    ) -> Lobby {
        Lobby {
            code,
            options,
            invite,
            host: host.to_owned(),
            seats: [None, None],
            phase: Phase::Waiting,
            series: Series::default(),
            round: None,
            break_until: None,
            next_round: [false; 2],
            rematch: [false; 2],
            version: 0,
            games_started: 0,
            series_no: 0,
            pending_settlement: None,
            settlement_decided: 0,
            incarnation: (seed as u32) | 1,
            escrow_intent: None,
            pending_record: None,
            pending_moves: Vec::new(),
            pending_games: Vec::new(),
            moves_since_record: 0,
            timing,
            active_at: now,
            last_move_at: None,
            seeds: seed,
        }
    }

    /// Whether this is a correspondence lobby.
    pub fn is_correspondence(&self) -> bool {
        self.options.pace == Pace::Correspondence
    }

    /// How long the side to move has: the move clock, or in correspondence
    /// the claim window.
    fn turn_window(&self) -> Duration {
        match self.options.pace {
            Pace::Live => self.timing.move_clock,
            Pace::Correspondence => self.timing.claim_after,
        }
    }

    /// Correspondence: when the lobby expires unless a move is played.
    pub fn expires_at(&self) -> Option<Instant> {
        (self.is_correspondence() && self.phase != Phase::Ended)
            .then(|| self.active_at + self.timing.expire_after)
    }

    /// The seat whose move it is, while a game is in play.
    pub fn seat_to_move(&self) -> Option<usize> {
        let round = self.round.as_ref().filter(|_| self.game_in_play())?;
        let turn = round.game.turn();
        Some(if round.color_of(0) == turn { 0 } else { 1 })
    }

    pub fn seat_of(&self, id: &str) -> Option<usize> {
        self.seats
            .iter()
            .position(|s| s.as_ref().is_some_and(|s| s.id == id))
    }

    /// Whether the lobby shows itself to `who` (an identity id; `None` for
    /// an anonymous HTTP request) bringing `invite`: any lobby that is not
    /// invite-only, an invite-only one to those with its invite and to
    /// identities holding a seat. Everyone else must be told what a code
    /// without a lobby is told.
    pub fn admits(&self, who: Option<&str>, invite: Option<&str>) -> bool {
        let Some(expected) = &self.invite else {
            return true;
        };
        who.is_some_and(|id| self.seat_of(id).is_some())
            || invite.is_some_and(|given| same_secret(given, expected))
    }

    /// Whether a game is being played (not over).
    pub fn game_in_play(&self) -> bool {
        self.phase == Phase::Playing && self.round.as_ref().is_some_and(|r| r.result.is_none())
    }

    /// Rounds the series can last: N games scored by points, or up to 2N
    /// when drawn games do not count towards a majority of wins.
    pub fn max_rounds(&self) -> u32 {
        let length = u32::from(self.options.series_length);
        if self.options.rule_set.scored_by_points() {
            length
        } else {
            2 * length
        }
    }

    /// The series id of the current (or last) series: `CODE:N:INCARNATION`
    /// (8 hex digits), or `CODE:N` in a lobby stored before incarnations.
    /// Never the id of another series, even of a lobby that had the same
    /// code before.
    pub fn series_id(&self) -> String {
        series_id(self.code.as_str(), self.series_no, self.incarnation)
    }

    /// Gives the pending wallet and record writes their decision time,
    /// once: called before every write of the lobby, so the first write
    /// that stores one stores its time, and every retry or replay carries
    /// it.
    pub fn stamp_decisions(&mut self, now_ms: u64) {
        if let Some(intent) = self.escrow_intent.as_mut().filter(|i| i.decided == 0) {
            intent.decided = now_ms;
        }
        if self.pending_settlement.is_some() && self.settlement_decided == 0 {
            self.settlement_decided = now_ms;
        }
        if let Some(job) = self.pending_record.as_mut().filter(|j| j.decided == 0) {
            job.decided = now_ms;
        }
    }

    /// Takes a seat (or retakes one's own, under the name `who` has now),
    /// or joins as a spectator. `present` tells whether an identity has a
    /// connection in the room (the one entering always has). When both
    /// seats are filled in phase `waiting` and both players are present,
    /// the series starts (see [`Lobby::start_series`]); a series never
    /// starts its clock against a player who is away.
    pub fn enter(
        &mut self,
        who: &Identity,
        invite: Option<&str>,
        watch: bool,
        present: &dyn Fn(&str) -> bool,
        now: Instant,
    ) -> Result<(), LobbyError> {
        if !self.admits(Some(&who.id), invite) {
            return Err(LobbyError::NotInvited);
        }
        // A correspondence series starts as soon as both seats are taken:
        // each plays whenever they can.
        let correspondence = self.is_correspondence();
        let here = |id: &str| correspondence || id == who.id || present(id);
        if let Some(seat) = self.seat_of(&who.id) {
            if let Some(s) = self.seats[seat].as_mut() {
                s.name.clone_from(&who.name);
            }
            // The player who was away is back: the joiner asked for the series.
            self.start_when_both_here(1 - seat, &here, now);
            return Ok(());
        }
        if watch {
            return Ok(());
        }
        if self.options.stake > 0 && who.guest {
            return Err(LobbyError::AccountRequired);
        }
        let Some(free) = self.seats.iter().position(Option::is_none) else {
            return Err(LobbyError::LobbyFull);
        };
        self.seats[free] = Some(Seat {
            id: who.id.clone(),
            name: who.name.clone(),
            guest: who.guest,
            last_action: None,
        });
        self.start_when_both_here(free, &here, now);
        Ok(())
    }

    /// Both seats filled while `waiting`: the series starts once both
    /// players are present; until then the lobby waits, with no clock
    /// running. `joiner` is the seat given up again if a staked series
    /// cannot take its stakes.
    fn start_when_both_here(
        &mut self,
        joiner: usize,
        present: &dyn Fn(&str) -> bool,
        now: Instant,
    ) {
        if self.phase != Phase::Waiting || self.escrow_intent.is_some() {
            return;
        }
        let [Some(a), Some(b)] = &self.seats else {
            return;
        };
        if present(&a.id) && present(&b.id) {
            self.start_series(SeriesStartUndo::Unseat(joiner), now);
        }
    }

    /// Applies an action of identity `id`. A refused action changes nothing;
    /// an action re-sent with the same `seq` after it was applied is
    /// [`Applied::Unchanged`].
    pub fn act(
        &mut self,
        id: &str,
        seq: u32,
        action: Action,
        now: Instant,
    ) -> Result<Applied, LobbyError> {
        if action == Action::Resync {
            return Ok(Applied::Resync);
        }
        let Some(seat) = self.seat_of(id) else {
            return Err(LobbyError::SpectatorsCannotAct);
        };
        let again = self.seats[seat]
            .as_ref()
            .and_then(|s| s.last_action.as_ref())
            .is_some_and(|(last, done)| *last == seq && *done == action);
        if again {
            return Ok(Applied::Unchanged);
        }
        // Applied by reference and then kept as the seat's last action:
        // no copy of it is made, even for a refused one.
        self.apply(seat, id, seq, &action, now)?;
        if let Some(s) = self.seats[seat].as_mut() {
            s.last_action = Some((seq, action));
        }
        Ok(Applied::Changed)
    }

    fn apply(
        &mut self,
        seat: usize,
        id: &str,
        seq: u32,
        action: &Action,
        now: Instant,
    ) -> Result<(), LobbyError> {
        match action {
            Action::Move { notation, path } => {
                self.play_move(seat, seq, notation.as_deref(), path.as_deref(), now)
            }
            Action::OfferDraw => {
                let round = self.round_in_play()?;
                let color = round.color_of(seat);
                if round.game.turn() != color {
                    return Err(LobbyError::NotYourTurn);
                }
                if round.draw_offer.is_some() {
                    return Err(LobbyError::DrawAlreadyOffered);
                }
                let round = self.round_mut();
                round.draw_offer = Some(color);
                round.draw_declined = None;
                Ok(())
            }
            Action::AcceptDraw | Action::DeclineDraw => {
                let round = self.round_in_play()?;
                let color = round.color_of(seat);
                if round.draw_offer != Some(color.opposite()) {
                    return Err(LobbyError::NoDrawOffer);
                }
                if *action == Action::AcceptDraw {
                    self.end_round(None, GameEnd::DrawAgreed, now);
                } else {
                    let round = self.round_mut();
                    round.draw_offer = None;
                    round.draw_declined = Some(color.opposite());
                }
                Ok(())
            }
            Action::Resign => {
                if !matches!(self.phase, Phase::Playing | Phase::Break) {
                    return Err(LobbyError::NotNow("there is no series to resign"));
                }
                self.concede(seat, GameEnd::Resigned, SeriesEnd::Resigned);
                Ok(())
            }
            Action::NextRound => {
                if self.phase != Phase::Break {
                    return Err(LobbyError::NotNow("there is no break to end"));
                }
                self.next_round[seat] = true;
                if self.next_round.iter().all(|r| *r) {
                    self.start_round(now);
                }
                Ok(())
            }
            Action::Rematch => {
                if !matches!(self.phase, Phase::Finished | Phase::Ended)
                    || self.seats.iter().any(Option::is_none)
                {
                    return Err(LobbyError::NotNow(
                        "a rematch needs a finished series and both players",
                    ));
                }
                self.rematch[seat] = true;
                if self.rematch.iter().all(|r| *r) {
                    self.seats.swap(0, 1);
                    self.start_series(SeriesStartUndo::Unswap, now);
                }
                Ok(())
            }
            Action::EndMatch => {
                if id != self.host {
                    return Err(LobbyError::NotHost);
                }
                match self.phase {
                    Phase::Playing | Phase::Break => {
                        if self.round.as_ref().is_some_and(|r| r.result.is_none()) {
                            self.end_round_unscored(GameEnd::EndedByHost);
                        }
                        self.finish(None, SeriesEnd::EndedByHost);
                        self.phase = Phase::Ended;
                    }
                    Phase::Finished => self.phase = Phase::Ended,
                    Phase::Waiting | Phase::Ended => {
                        return Err(LobbyError::NotNow("there is no match to end"));
                    }
                }
                Ok(())
            }
            Action::ClaimForfeit => {
                if !self.is_correspondence() {
                    return Err(LobbyError::NotNow(
                        "only correspondence games are claimed; in live games the move clock decides",
                    ));
                }
                let round = self.round_in_play()?;
                let color = round.color_of(seat);
                if round.game.turn() == color {
                    return Err(LobbyError::NotNow("it is your move: play it instead"));
                }
                if now < round.deadline {
                    return Err(LobbyError::ClaimTooEarly(round.deadline - now));
                }
                self.end_round(Some(color), GameEnd::ForfeitClaimed, now);
                Ok(())
            }
            Action::Resync => Ok(()),
        }
    }

    fn round_in_play(&self) -> Result<&Round, LobbyError> {
        match (&self.phase, &self.round) {
            (Phase::Playing, Some(round)) if round.result.is_none() => Ok(round),
            _ => Err(LobbyError::NoGameInProgress),
        }
    }

    fn round_mut(&mut self) -> &mut Round {
        self.round.as_mut().expect("checked by round_in_play")
    }

    fn play_move(
        &mut self,
        seat: usize,
        seq: u32,
        text: Option<&str>,
        path: Option<&[String]>,
        now: Instant,
    ) -> Result<(), LobbyError> {
        let round = self.round_in_play()?;
        let color = round.color_of(seat);
        if round.game.turn() != color {
            return Err(LobbyError::NotYourTurn);
        }
        let window = self.turn_window();
        let round = self.round.as_mut().expect("checked by round_in_play");
        // An illegal move leaves the game as it was, and so the lobby.
        let m = play_submitted(&mut round.game, text, path)?;
        self.active_at = now;
        self.last_move_at = Some(now);
        round.notations.push(m.notation.clone());
        round.stored.push(m.stored.clone());
        round.moved(color);
        round.deadline = now + window;
        self.pending_moves.push(StoredMove {
            game_no: round.game_no,
            ply: round.game.ply(),
            path: m.stored.clone(),
            text: m.notation.clone(),
            seat: seat as u8,
            seq,
            effects: None,
        });
        round.last_move = Some(m);
        if let Some(outcome) = self.round.as_ref().and_then(|r| r.game.outcome()) {
            self.end_round_scored(
                outcome.winner,
                GameEnd::from_rules(outcome.reason),
                outcome.points,
                now,
            );
        }
        Ok(())
    }

    /// Identity `id` leaves: mid-series this concedes it; the seat is
    /// emptied; a finished lobby goes back to waiting; the host passes to
    /// the other player.
    pub fn leave(&mut self, id: &str) {
        let Some(seat) = self.seat_of(id) else {
            return;
        };
        if matches!(self.phase, Phase::Playing | Phase::Break) {
            self.concede(seat, GameEnd::Left, SeriesEnd::Left);
        }
        self.seats[seat] = None;
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

    /// Both seats are filled for a new series. A free lobby starts it at
    /// once; a staked one records its intent to take both stakes, which the
    /// room carries out once that intent is stored. The series number only
    /// grows, so a series id is never reused.
    fn start_series(&mut self, undo: SeriesStartUndo, now: Instant) {
        self.series_no += 1;
        let stake = u64::from(self.options.stake);
        if stake == 0 {
            self.begin_series(now);
            return;
        }
        let [Some(a), Some(b)] = &self.seats else {
            return;
        };
        self.escrow_intent = Some(EscrowIntent {
            series: self.series_id(),
            decided: 0,
            stakes: [(a.id.clone(), stake), (b.id.clone(), stake)],
            undo,
        });
    }

    /// Starts the series: both stakes are held (or none are needed).
    pub fn begin_series(&mut self, now: Instant) {
        self.escrow_intent = None;
        self.series = Series::default();
        self.rematch = [false; 2];
        self.start_round(now);
    }

    /// Reverses the seating that asked for a series whose stakes were not
    /// taken. Returns the identity that lost its seat, if one did.
    pub fn undo_series_start(&mut self) -> Option<String> {
        let intent = self.escrow_intent.take()?;
        // The action that asked for the series did not happen after all: a
        // retry of it must be applied afresh, not acknowledged as done.
        for seat in self.seats.iter_mut().flatten() {
            seat.last_action = None;
        }
        match intent.undo {
            SeriesStartUndo::Unseat(seat) => self.seats[seat].take().map(|s| s.id),
            SeriesStartUndo::Unswap => {
                self.seats.swap(0, 1);
                self.rematch = [false; 2];
                None
            }
        }
    }

    fn start_round(&mut self, now: Instant) {
        self.series.round += 1;
        // Seat 0 opens round one; the opening move alternates.
        let dark_seat = if self.series.round % 2 == 1 { 0 } else { 1 };
        self.games_started += 1;
        self.active_at = now;
        self.round = Some(Round {
            game_no: self.games_started,
            game: VariantGame::with_draw_rules(
                self.options.rule_set,
                self.next_seed(),
                self.options.draw_rules,
            ),
            dark_seat,
            deadline: now + self.turn_window(),
            draw_offer: None,
            draw_declined: None,
            notations: Vec::new(),
            stored: Vec::new(),
            last_move: None,
            result: None,
        });
        self.phase = Phase::Playing;
        self.break_until = None;
        self.next_round = [false; 2];
    }

    /// The next game seed (SplitMix64).
    fn next_seed(&mut self) -> u64 {
        self.seeds = self.seeds.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.seeds;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// When the clock or the break next needs the lobby's attention. In
    /// correspondence no clock forfeits by itself: what is due is the end of
    /// a break, or the lobby's expiry.
    pub fn next_deadline(&self) -> Option<Instant> {
        if let Some(expiry) = self.expires_at() {
            return Some(match self.phase {
                Phase::Break => self.break_until.map_or(expiry, |b| b.min(expiry)),
                _ => expiry,
            });
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

    /// The clock at `now`: in a live lobby the side to move loses on time
    /// when its deadline has passed; a correspondence lobby with no move for
    /// its expiry window ends; a break that is over starts the next round.
    pub fn on_clock(&mut self, now: Instant) -> ClockEvent {
        if self.expires_at().is_some_and(|t| t <= now) {
            self.expire();
            return ClockEvent::Expired;
        }
        match self.phase {
            Phase::Playing if !self.is_correspondence() => {
                let lapsed = self
                    .round
                    .as_ref()
                    .filter(|r| r.result.is_none() && r.deadline <= now)
                    .map(|r| r.game.turn());
                match lapsed {
                    Some(loser) => {
                        self.end_round(Some(loser.opposite()), GameEnd::Timeout, now);
                        ClockEvent::Forfeit(loser)
                    }
                    None => ClockEvent::Nothing,
                }
            }
            Phase::Break if self.break_until.is_some_and(|t| t <= now) => {
                self.start_round(now);
                ClockEvent::NextRound
            }
            _ => ClockEvent::Nothing,
        }
    }

    /// A correspondence lobby nobody moved in for the expiry window: the
    /// game in play ends unscored, a series in play ends with no winner
    /// (stakes refunded, nothing recorded), and nothing more is played.
    fn expire(&mut self) {
        if matches!(self.phase, Phase::Playing | Phase::Break) {
            if self.round.as_ref().is_some_and(|r| r.result.is_none()) {
                self.end_round_unscored(GameEnd::Expired);
            }
            self.finish(None, SeriesEnd::Expired);
        }
        self.phase = Phase::Ended;
        self.break_until = None;
    }

    /// The clocks stood still for `lost` (the store could not confirm the
    /// lobby): the side to move, or the break, gets that time back.
    pub fn give_back_time(&mut self, lost: Duration) {
        if let Some(round) = self.round.as_mut().filter(|r| r.result.is_none()) {
            round.deadline += lost;
        }
        if let Some(until) = self.break_until.as_mut() {
            *until += lost;
        }
    }
}

/// Plays a move as a client submitted it: by notation or by a path of
/// board names (exactly one of the two).
pub fn play_submitted(
    game: &mut VariantGame,
    text: Option<&str>,
    path: Option<&[String]>,
) -> Result<MoveInfo, LobbyError> {
    let played = match (text, path) {
        (Some(text), None) => game.play_text(text),
        (None, Some(path)) => game.play_path(path),
        _ => {
            return Err(LobbyError::IllegalMove(
                "give exactly one of notation or path".into(),
            ));
        }
    };
    played.map_err(|e| LobbyError::IllegalMove(e.to_string()))
}

#[cfg(test)]
mod draw_rules_tests;
#[cfg(test)]
mod record_tests;
#[cfg(test)]
mod tests;
