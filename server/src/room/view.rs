//! What a room shows: the lobby as the protocol's `state`, the summary
//! shown before joining, and the lobby's names for phases and results in wire terms.

use jumpgate_protocol as wire;
use tokio::time::Instant;

use super::Room;
use crate::lobby::{GameEnd, GameResult, Pace, Phase, SeriesEnd, SeriesResult};
use crate::wire_view;

pub fn phase(p: Phase) -> wire::Phase {
    match p {
        Phase::Waiting => wire::Phase::Waiting,
        Phase::Playing => wire::Phase::Playing,
        Phase::Break => wire::Phase::Break,
        Phase::Finished => wire::Phase::Finished,
        Phase::Ended => wire::Phase::Ended,
    }
}

pub fn pace(p: Pace) -> wire::Pace {
    match p {
        Pace::Live => wire::Pace::Live,
        Pace::Correspondence => wire::Pace::Correspondence,
    }
}

pub fn game_end(reason: GameEnd) -> wire::GameEndReason {
    match reason {
        GameEnd::NoPieces => wire::GameEndReason::NoPieces,
        GameEnd::NoMoves => wire::GameEndReason::NoMoves,
        GameEnd::Resigned => wire::GameEndReason::Resigned,
        GameEnd::Timeout => wire::GameEndReason::Timeout,
        GameEnd::DrawAgreed => wire::GameEndReason::DrawAgreed,
        GameEnd::Repetition => wire::GameEndReason::Repetition,
        GameEnd::MoveLimit => wire::GameEndReason::MoveLimit,
        GameEnd::EndgameLimit => wire::GameEndReason::EndgameLimit,
        GameEnd::MaterialUnchanged => wire::GameEndReason::MaterialUnchanged,
        GameEnd::Left => wire::GameEndReason::Left,
        GameEnd::EndedByHost => wire::GameEndReason::EndedByHost,
        GameEnd::InARow => wire::GameEndReason::InARow,
        GameEnd::HalfLost => wire::GameEndReason::HalfLost,
        GameEnd::PlyLimit => wire::GameEndReason::PlyLimit,
        GameEnd::ForfeitClaimed => wire::GameEndReason::ForfeitClaimed,
        GameEnd::Expired => wire::GameEndReason::Expired,
    }
}

pub fn game_result(r: GameResult) -> wire::GameResult {
    wire::GameResult {
        winner: r.winner.map(wire_view::color),
        reason: game_end(r.reason),
        points: r.points.map(|p| wire_view::points([p.dark, p.light])),
    }
}

pub fn series_end(reason: SeriesEnd) -> wire::SeriesEndReason {
    match reason {
        SeriesEnd::Majority => wire::SeriesEndReason::Majority,
        SeriesEnd::RoundLimit => wire::SeriesEndReason::RoundLimit,
        SeriesEnd::Resigned => wire::SeriesEndReason::Resigned,
        SeriesEnd::Left => wire::SeriesEndReason::Left,
        SeriesEnd::EndedByHost => wire::SeriesEndReason::EndedByHost,
        SeriesEnd::Points => wire::SeriesEndReason::Points,
        SeriesEnd::Expired => wire::SeriesEndReason::Expired,
    }
}

fn series_result(r: SeriesResult) -> wire::SeriesResult {
    wire::SeriesResult {
        winner: r.winner,
        reason: series_end(r.reason),
    }
}

impl Room {
    /// The link players share: the lobby page, with the invite when needed.
    fn invite_link(&self) -> String {
        let base = format!("{}/r/{}", self.settings.public_url, self.lobby.code);
        match &self.lobby.invite {
            Some(invite) => format!("{base}?invite={invite}"),
            None => base,
        }
    }

    /// What the lobby is, as shown before joining it.
    pub(super) fn summary(&self) -> wire::LobbySummary {
        let lobby = &self.lobby;
        wire::LobbySummary {
            code: lobby.code.to_string(),
            rule_set: wire_view::rule_set(lobby.options.rule_set),
            pace: pace(lobby.options.pace),
            series_length: lobby.options.series_length,
            invite_only: lobby.invite.is_some(),
            stake: lobby.options.stake,
            host_name: lobby
                .seat_of(&lobby.host)
                .and_then(|s| lobby.seats[s].as_ref())
                .map(|s| s.name.clone()),
            host_away: lobby.seat_of(&lobby.host).is_some()
                && !self.members.iter().any(|m| m.identity.id == lobby.host),
            players: lobby
                .seats
                .iter()
                .map(|s| s.as_ref().map(|s| s.name.clone()))
                .collect(),
            spectators: self.spectator_count(),
            phase: phase(lobby.phase),
            expires_at: lobby
                .expires_at()
                .map(|t| wire_view::unix_ms(Instant::from_std(t))),
            draw_rules: wire_view::draw_rules(lobby.options.draw_rules),
        }
    }

    fn spectator_count(&self) -> u32 {
        self.members
            .iter()
            .filter(|m| self.lobby.seat_of(&m.identity.id).is_none())
            .count() as u32
    }

    /// The full public snapshot.
    pub fn state(&self) -> wire::RoomState {
        let lobby = &self.lobby;
        let players = lobby
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
            version: lobby.version,
            code: lobby.code.to_string(),
            rule_set: wire_view::rule_set(lobby.options.rule_set),
            series_length: lobby.options.series_length,
            pace: pace(lobby.options.pace),
            expires_at: lobby
                .expires_at()
                .map(|t| wire_view::unix_ms(Instant::from_std(t))),
            draw_rules: wire_view::draw_rules(lobby.options.draw_rules),
            invite_only: lobby.invite.is_some(),
            stake: lobby.options.stake,
            invite: lobby.invite.clone(),
            invite_link: Some(self.invite_link()),
            host: lobby.host.clone(),
            players,
            head_to_head: self.head_to_head.clone(),
            spectators: self.spectator_count(),
            phase: phase(lobby.phase),
            series: wire::SeriesView {
                round: lobby.series.round,
                max_rounds: lobby.max_rounds(),
                wins: lobby.series.wins.to_vec(),
                draws: lobby.series.draws,
                points: lobby
                    .options
                    .rule_set
                    .scored_by_points()
                    .then(|| lobby.series.points.to_vec()),
                result: lobby.series.result.map(series_result),
            },
            game: lobby.round.as_ref().map(|r| {
                let mut view = wire_view::game_view(
                    &r.game,
                    r.dark_seat as u8,
                    &r.notations,
                    r.last_move.as_ref(),
                    Instant::from_std(r.deadline),
                    r.draw_offer,
                    r.result.map(game_result),
                );
                view.draw_declined = r.draw_declined.map(wire_view::color);
                view
            }),
            board: lobby
                .round
                .is_none()
                .then(|| wire_view::board(lobby.options.rule_set))
                .flatten(),
            break_ends_at: lobby
                .break_until
                .map(|t| wire_view::unix_ms(Instant::from_std(t))),
            next_round: lobby.next_round.to_vec(),
            rematch: lobby.rematch.to_vec(),
        }
    }
}

/// The running (or last) game's position after every ply, for
/// `GET /r/{CODE}/positions`: what a page that came in mid-game needs to
/// show the moves before it arrived, replayed here by the rules engine so
/// that no client has to know the rules.
#[derive(Debug, serde::Serialize)]
pub struct GamePositions {
    pub code: String,
    /// The series round the game belongs to.
    pub round: u32,
    pub dark_seat: u8,
    /// The game's moves in the rule set's notation, as `state` lists them.
    pub moves: Vec<String>,
    /// One entry per ply from 0 (the start) to the last move played.
    pub positions: Vec<PositionView>,
}

/// The board after one ply.
#[derive(Debug, serde::Serialize)]
pub struct PositionView {
    pub ply: u32,
    pub pieces: Vec<wire::PieceView>,
    /// The move that led here (none at ply 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_move: Option<wire::MoveView>,
    /// Space Mode: wormholes and thruster boosts left.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub space: Option<wire::SpaceView>,
    /// Orbit: the points each side would score were the game to end here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub points: Option<wire::Points>,
}

fn position_view(
    game: &crate::rules::VariantGame,
    last_move: Option<wire::MoveView>,
) -> PositionView {
    let pieces = game
        .pieces()
        .into_iter()
        .map(|p| wire::PieceView {
            square: p.square,
            color: wire_view::color(p.color),
            king: p.king,
        })
        .collect();
    let space = match (game.wormholes(), game.boosts_left()) {
        (Some(wormholes), Some([dark, light])) => Some(wire::SpaceView {
            wormholes,
            boosts: wire::Boosts { dark, light },
        }),
        _ => None,
    };
    PositionView {
        ply: game.ply(),
        pieces,
        last_move,
        space,
        points: game.points().map(wire_view::points),
    }
}

/// What replaying the round needs, copied out of the room: the replay
/// (legal moves worked out again at every ply) runs outside the room's
/// task, so that `GET /r/{CODE}/positions`, which anyone holding a public
/// code may ask often, never makes the room's moves wait.
#[derive(Debug)]
pub struct PositionsReplay {
    code: String,
    round: u32,
    game: Option<ReplayedGame>,
}

#[derive(Debug)]
struct ReplayedGame {
    dark_seat: u8,
    notations: Vec<String>,
    variant: crate::rules::Variant,
    seed: u64,
    draw_rules: crate::rules::DrawRules,
    stored: Vec<String>,
}

impl PositionsReplay {
    /// Replays the round's stored moves from its start. Before the first
    /// round the lists are empty; a stored move that does not replay
    /// (never expected) ends them early.
    pub fn replay(self) -> GamePositions {
        let mut view = GamePositions {
            code: self.code,
            round: self.round,
            dark_seat: 0,
            moves: Vec::new(),
            positions: Vec::new(),
        };
        let Some(round) = self.game else {
            return view;
        };
        view.dark_seat = round.dark_seat;
        view.moves = round.notations;
        let mut game =
            crate::rules::VariantGame::with_draw_rules(round.variant, round.seed, round.draw_rules);
        view.positions.push(position_view(&game, None));
        for stored in &round.stored {
            match game.play_stored(stored) {
                Ok(played) => view.positions.push(position_view(
                    &game,
                    Some(wire_view::into_move_view(played)),
                )),
                Err(error) => {
                    tracing::error!(room = %view.code, %error, "a stored move does not replay");
                    break;
                }
            }
        }
        view
    }
}

impl Room {
    /// The round's moves to replay for `/r/{CODE}/positions`: only copied
    /// here; [`PositionsReplay::replay`] does the work, off the room's task.
    pub(super) fn positions(&self) -> PositionsReplay {
        let lobby = &self.lobby;
        PositionsReplay {
            code: lobby.code.to_string(),
            round: lobby.series.round,
            game: lobby.round.as_ref().map(|round| ReplayedGame {
                dark_seat: round.dark_seat as u8,
                notations: round.notations.clone(),
                variant: round.game.variant(),
                seed: round.game.seed(),
                draw_rules: round.game.draw_rules(),
                stored: round.stored.clone(),
            }),
        }
    }
}
