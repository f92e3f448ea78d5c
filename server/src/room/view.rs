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
