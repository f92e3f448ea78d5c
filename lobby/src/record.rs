//! The stored form of a lobby (JSON) and how a lobby is rebuilt from it:
//! the record holds everything but the game, which is replayed from the
//! stored moves, and the moves appended after the record was written
//! bring it up to date with their effects. Deadlines are stored as Unix milliseconds, so converting
//! needs the wall clock, which the caller passes in ([`WallClock`]).

use std::time::{Duration, Instant};

use super::{
    Action, EscrowIntent, GameResult, Lobby, LobbyOptions, Pace, Phase, Round, Seat, Series, Timing,
};
use crate::code::RoomCode;
use crate::effects::SeriesRecord;
use crate::effects::Settlement;
use crate::effects::{MoveEffects, StoredMove};
use jumpgate_rules::{Color, DrawRules, Variant, VariantGame};

/// The same moment on both clocks, to convert deadlines.
#[derive(Debug, Clone, Copy)]
pub struct WallClock {
    pub now: Instant,
    pub unix_ms: u64,
}

impl WallClock {
    /// `at` as Unix milliseconds.
    pub fn to_unix_ms(self, at: Instant) -> u64 {
        if at >= self.now {
            self.unix_ms + (at - self.now).as_millis() as u64
        } else {
            self.unix_ms
                .saturating_sub((self.now - at).as_millis() as u64)
        }
    }

    fn to_instant(self, ms: u64) -> Instant {
        if ms >= self.unix_ms {
            self.now + Duration::from_millis(ms - self.unix_ms)
        } else {
            self.now
                .checked_sub(Duration::from_millis(self.unix_ms - ms))
                .unwrap_or(self.now)
        }
    }
}

/// Why a stored lobby cannot be rebuilt.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    #[error("unreadable record: {0}")]
    Record(#[from] serde_json::Error),
    #[error("bad room code {0:?}")]
    Code(String),
    #[error("stored move does not replay: {0}")]
    Replay(String),
    #[error("move log and record disagree ({log} moves logged, {record} recorded)")]
    Disagree { log: usize, record: usize },
    #[error("a move logged after the record cannot follow it: {0}")]
    Tail(String),
}

/// A lobby as written to the store.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct LobbyRecord {
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
    settlement_decided: u64,
    #[serde(default)]
    incarnation: u32,
    #[serde(default)]
    pending_record: Option<SeriesRecord>,
    #[serde(default)]
    escrow_intent: Option<EscrowIntent>,
    #[serde(default)]
    pace: Pace,
    /// Absent in records written before the option: the seeds' rules.
    #[serde(default)]
    draw_rules: DrawRules,
    /// Unix milliseconds the expiry window counts from (absent in records
    /// written before correspondence lobbies: read as the time of loading).
    #[serde(default)]
    active_at_ms: Option<u64>,
    #[serde(default)]
    last_move_ms: Option<u64>,
    /// The seat to move while a game is in play (for `my_games`, which reads
    /// records without replaying them).
    #[serde(default)]
    to_move: Option<u8>,
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct RoundRecord {
    game_no: u64,
    dark_seat: usize,
    /// Unix milliseconds when the side to move forfeits.
    deadline_ms: u64,
    draw_offer: Option<Color>,
    /// The side whose offer was just declined (shown to it until it moves).
    #[serde(default)]
    draw_declined: Option<Color>,
    notations: Vec<String>,
    result: Option<GameResult>,
    /// Space Mode's wormhole seed; the game replays from it.
    #[serde(default)]
    seed: u64,
}

impl Lobby {
    /// The lobby as stored (JSON).
    pub fn to_record(&self, clock: WallClock) -> String {
        let record = LobbyRecord {
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
                deadline_ms: clock.to_unix_ms(r.deadline),
                draw_offer: r.draw_offer,
                draw_declined: r.draw_declined,
                notations: r.notations.clone(),
                result: r.result,
                seed: r.game.seed(),
            }),
            break_until_ms: self.break_until.map(|t| clock.to_unix_ms(t)),
            next_round: self.next_round,
            rematch: self.rematch,
            version: self.version,
            games_started: self.games_started,
            stake: self.options.stake,
            series_no: self.series_no,
            pending_settlement: self.pending_settlement.clone(),
            settlement_decided: self.settlement_decided,
            incarnation: self.incarnation,
            pending_record: self.pending_record.clone(),
            escrow_intent: self.escrow_intent.clone(),
            pace: self.options.pace,
            draw_rules: self.options.draw_rules,
            active_at_ms: Some(clock.to_unix_ms(self.active_at)),
            last_move_ms: self.last_move_at.map(|t| clock.to_unix_ms(t)),
            to_move: self.seat_to_move().map(|s| s as u8),
        };
        serde_json::to_string(&record).expect("a lobby record always encodes")
    }

    /// Rebuilds a lobby from its record and its move log: the game replays
    /// from the logged moves, and the moves logged after the record was
    /// written (appended with their effects) bring the rest of the lobby
    /// up to date. The clock continues from its stored deadline, but the
    /// side to move gets at least `grace`; a break that ended meanwhile
    /// ends at the next clock tick. `seed` starts the sequence of new
    /// games' seeds.
    pub fn from_record(
        json: &str,
        moves: &[StoredMove],
        timing: Timing,
        clock: WallClock,
        grace: Duration,
        seed: u64,
    ) -> Result<Lobby, ResumeError> {
        let record: LobbyRecord = serde_json::from_str(json)?;
        let code = RoomCode::parse(&record.code).ok_or(ResumeError::Code(record.code.clone()))?;
        let mut tail: Vec<&StoredMove> = Vec::new();
        let round = match record.round {
            None => None,
            Some(r) => {
                let mut logged: Vec<&StoredMove> =
                    moves.iter().filter(|m| m.game_no == r.game_no).collect();
                logged.sort_by_key(|m| m.ply);
                let paths: Vec<&str> = logged.iter().map(|m| m.path.as_str()).collect();
                let (game, mut played) =
                    VariantGame::replay(record.rule_set, r.seed, record.draw_rules, &paths)
                        .map_err(ResumeError::Replay)?;
                if logged.len() < r.notations.len() {
                    return Err(ResumeError::Disagree {
                        log: logged.len(),
                        record: r.notations.len(),
                    });
                }
                tail = logged.split_off(r.notations.len());
                Some(Round {
                    game_no: r.game_no,
                    game,
                    dark_seat: r.dark_seat,
                    deadline: clock.to_instant(r.deadline_ms),
                    draw_offer: r.draw_offer,
                    draw_declined: r.draw_declined,
                    notations: r.notations,
                    // Every logged move, those after the record too: the
                    // game has replayed them all.
                    stored: paths.iter().map(|p| (*p).to_owned()).collect(),
                    last_move: played.pop(),
                    result: r.result,
                })
            }
        };
        let mut lobby = Lobby::new(
            code,
            LobbyOptions {
                rule_set: record.rule_set,
                series_length: record.series_length,
                invite_only: record.invite.is_some(),
                stake: record.stake,
                pace: record.pace,
                draw_rules: record.draw_rules,
            },
            record.invite,
            &record.host,
            timing,
            seed,
            record
                .active_at_ms
                .map_or(clock.now, |ms| clock.to_instant(ms)),
        );
        lobby.last_move_at = record.last_move_ms.map(|ms| clock.to_instant(ms));
        lobby.seats = record.seats;
        lobby.phase = record.phase;
        lobby.series = record.series;
        lobby.round = round;
        lobby.break_until = record.break_until_ms.map(|ms| clock.to_instant(ms));
        lobby.next_round = record.next_round;
        lobby.rematch = record.rematch;
        lobby.version = record.version;
        lobby.games_started = record.games_started;
        lobby.series_no = record.series_no;
        lobby.pending_settlement = record.pending_settlement;
        lobby.settlement_decided = record.settlement_decided;
        lobby.incarnation = record.incarnation;
        lobby.pending_record = record.pending_record;
        lobby.escrow_intent = record.escrow_intent;
        for m in &tail {
            lobby.follow_appended(m, clock)?;
        }
        lobby.moves_since_record = tail.len() as u32;
        // A correspondence claim time is a stored fact, not a clock the
        // restart stopped: it gets no grace (nor does a game over).
        if let Some(round) = lobby.round.as_mut().filter(|r| r.result.is_none())
            && record.pace == Pace::Live
        {
            round.deadline = round.deadline.max(clock.now + grace);
        }
        Ok(lobby)
    }

    /// What the move just played changed besides the game, to append it
    /// without rewriting the record ([`MoveEffects`]): `None` unless the
    /// last pending move is its seat's last action and a game is in play.
    pub fn move_effects(&self, clock: WallClock) -> Option<MoveEffects> {
        let m = self.pending_moves.last()?;
        let (seq, submitted) = self
            .seats
            .get(usize::from(m.seat))?
            .as_ref()?
            .last_action
            .as_ref()?;
        if *seq != m.seq || !self.game_in_play() {
            return None;
        }
        Some(MoveEffects {
            version: self.version,
            at_ms: clock.to_unix_ms(self.last_move_at?),
            deadline_ms: clock.to_unix_ms(self.round.as_ref()?.deadline),
            to_move: self.seat_to_move().map(|s| s as u8),
            submitted: serde_json::to_string(submitted).ok()?,
        })
    }

    /// Brings the lobby past a move appended after its record: the move
    /// is in the game already (replayed); what it changed besides is in
    /// its effects, and the draw offer follows from who moved.
    fn follow_appended(&mut self, m: &StoredMove, clock: WallClock) -> Result<(), ResumeError> {
        let at = format!("{}-{}", m.game_no, m.ply);
        let effects = m
            .effects
            .as_ref()
            .ok_or_else(|| ResumeError::Tail(format!("{at} has no effects stored")))?;
        if effects.version <= self.version {
            return Err(ResumeError::Tail(format!(
                "{at} stores version {}, not after {}",
                effects.version, self.version
            )));
        }
        if !self.game_in_play() {
            return Err(ResumeError::Tail(format!("{at} follows no game in play")));
        }
        let seat = usize::from(m.seat);
        let submitted: Action = serde_json::from_str(&effects.submitted)
            .map_err(|e| ResumeError::Tail(format!("{at}: {e}")))?;
        let Some(Some(mover)) = self.seats.get_mut(seat) else {
            return Err(ResumeError::Tail(format!(
                "{at} was played from an empty seat"
            )));
        };
        mover.last_action = Some((m.seq, submitted));
        let round = self.round.as_mut().expect("a game in play has a round");
        let color = round.color_of(seat);
        round.notations.push(m.text.clone());
        round.moved(color);
        round.deadline = clock.to_instant(effects.deadline_ms);
        let at = clock.to_instant(effects.at_ms);
        self.active_at = at;
        self.last_move_at = Some(at);
        self.version = effects.version;
        Ok(())
    }
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
    let record: LobbyRecord = serde_json::from_str(record).ok()?;
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
                series: super::series_id(&record.code, record.series_no, record.incarnation),
                settlement: Settlement::Refund {
                    players: [a.id.clone(), b.id.clone()],
                },
            })
        }
        _ => None,
    }
}

/// What `my_games` needs of a stored lobby, read from its record alone
/// (no replay): cheap enough to read for every lobby of a player.
#[derive(Debug, Clone)]
pub struct RecordGlance {
    pub rule_set: Variant,
    pub pace: Pace,
    pub phase: Phase,
    pub seats: [Option<Seat>; 2],
    /// The seat to move, while a game is in play.
    pub to_move: Option<usize>,
    /// The turn's deadline (live) or claim time (correspondence), Unix ms.
    pub deadline_ms: Option<u64>,
    pub last_move_ms: Option<u64>,
    /// Unix ms the expiry window counts from (correspondence).
    pub active_at_ms: Option<u64>,
}

/// Reads a stored lobby record for `my_games`; `None` if it is not one.
/// `last_move` is the last move logged: one appended after the record
/// was written tells the turn, its deadline and the last move's time.
pub fn glance(record: &str, last_move: Option<&StoredMove>) -> Option<RecordGlance> {
    let record: LobbyRecord = serde_json::from_str(record).ok()?;
    let in_play =
        record.phase == Phase::Playing && record.round.as_ref().is_some_and(|r| r.result.is_none());
    let appended = last_move.and_then(|m| {
        m.effects.as_ref().filter(|e| {
            e.version > record.version
                && record.round.as_ref().map(|r| r.game_no) == Some(m.game_no)
        })
    });
    if let Some(e) = appended {
        return Some(RecordGlance {
            rule_set: record.rule_set,
            pace: record.pace,
            phase: record.phase,
            seats: record.seats,
            to_move: e.to_move.filter(|_| in_play).map(usize::from),
            deadline_ms: Some(e.deadline_ms).filter(|_| in_play),
            last_move_ms: Some(e.at_ms),
            active_at_ms: Some(e.at_ms),
        });
    }
    Some(RecordGlance {
        rule_set: record.rule_set,
        pace: record.pace,
        phase: record.phase,
        seats: record.seats,
        to_move: record.to_move.filter(|_| in_play).map(usize::from),
        deadline_ms: record
            .round
            .as_ref()
            .filter(|_| in_play)
            .map(|r| r.deadline_ms),
        last_move_ms: record.last_move_ms,
        active_at_ms: record.active_at_ms,
    })
}
