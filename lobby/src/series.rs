//! How rounds end and series are scored: majority of wins or the 2N round
//! cap (points in orbit), forfeits, concessions, and what a finished series
//! leaves to settle and record.

use std::time::Instant;

use super::{GameEnd, GameResult, Lobby, Phase, Points, SeriesEnd, SeriesResult};
use crate::effects::SeriesRecord;
use crate::effects::Settlement;
use jumpgate_rules::Color;

/// Points for a game won off the board (on time, by resignation or by
/// leaving) in rule sets scored by points: as much as all pieces in a row.
pub const FORFEIT_POINTS: u32 = 3;
/// The most points one game can give a player (3 for a row, 2 for a weak
/// opponent).
pub const MAX_GAME_POINTS: u32 = 5;

/// Whether a series scored by points is over after `played` of `length`
/// games: all were played, or the trailing seat cannot catch up even by
/// scoring the most a game gives in every game left (a tie is still
/// possible at exactly that margin, so the series goes on).
pub fn points_series_over(points: [u32; 2], played: u32, length: u32) -> bool {
    let left = length.saturating_sub(played);
    left == 0 || points[0].abs_diff(points[1]) > left * MAX_GAME_POINTS
}

fn points(p: [u32; 2]) -> Points {
    Points {
        dark: p[0],
        light: p[1],
    }
}

impl Lobby {
    /// Keeps the PDN of the round that just ended, to be stored.
    fn save_game(&mut self) {
        let Some(round) = &self.round else { return };
        let name = |seat: usize| self.seats[seat].as_ref().map(|s| s.name.clone());
        let tags = jumpgate_rules::pdn::PdnTags {
            event: Some(format!(
                "Jumpgate {} round {}",
                self.code, self.series.round
            )),
            date: None,
            dark: name(round.dark_seat),
            light: name(1 - round.dark_seat),
            result_override: round.result.as_ref().map(|r| r.winner),
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
    pub(super) fn end_round_unscored(&mut self, reason: GameEnd) {
        if let Some(round) = self.round.as_mut() {
            round.result = Some(GameResult {
                winner: None,
                reason,
                points: None,
            });
            round.draw_offer = None;
            round.draw_declined = None;
        }
        self.save_game();
    }

    /// Ends the round in play off the board (clock, agreement) and moves the
    /// series on. In rule sets scored by points a win off the board is worth
    /// [`FORFEIT_POINTS`] and an agreed draw nothing.
    pub(super) fn end_round(&mut self, winner: Option<Color>, reason: GameEnd, now: Instant) {
        let points = self
            .options
            .rule_set
            .scored_by_points()
            .then_some(match winner {
                Some(Color::Dark) => [FORFEIT_POINTS, 0],
                Some(Color::Light) => [0, FORFEIT_POINTS],
                None => [0, 0],
            });
        self.end_round_scored(winner, reason, points, now);
    }

    /// Ends the round in play, scores it (`points`: Dark's and Light's, in
    /// rule sets scored by points), and moves the series on: finished, or a
    /// break before the next round.
    pub(super) fn end_round_scored(
        &mut self,
        winner: Option<Color>,
        reason: GameEnd,
        game_points: Option<[u32; 2]>,
        now: Instant,
    ) {
        let Some(round) = self.round.as_mut() else {
            return;
        };
        round.result = Some(GameResult {
            winner,
            reason,
            points: game_points.map(points),
        });
        round.draw_offer = None;
        round.draw_declined = None;
        let dark_seat = round.dark_seat;
        self.save_game();
        match winner {
            Some(Color::Dark) => self.series.wins[dark_seat] += 1,
            Some(Color::Light) => self.series.wins[1 - dark_seat] += 1,
            None => self.series.draws += 1,
        }
        if let Some([dark, light]) = game_points {
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
                self.finish(leader(self.series.points), SeriesEnd::Points);
                return;
            }
        } else {
            let majority = length / 2 + 1;
            if let Some(seat) = self.series.wins.iter().position(|w| *w >= majority) {
                self.finish(Some(seat), SeriesEnd::Majority);
                return;
            } else if self.series.round >= 2 * length {
                self.finish(leader(self.series.wins), SeriesEnd::RoundLimit);
                return;
            }
        }
        self.phase = Phase::Break;
        self.break_until = Some(now + self.timing.break_time);
        self.next_round = [false; 2];
    }

    /// The series is over: what it leaves to settle and to record.
    pub(super) fn finish(&mut self, winner: Option<usize>, reason: SeriesEnd) {
        // Records count series between two accounts that ended with a
        // result; a match the host ended, or one that expired, is not one.
        if !matches!(reason, SeriesEnd::EndedByHost | SeriesEnd::Expired)
            && let [Some(a), Some(b)] = &self.seats
            && !a.guest
            && !b.guest
        {
            self.pending_record = Some(SeriesRecord {
                series: self.series_id(),
                rule_set: self.options.rule_set.name().to_owned(),
                players: [a.id.clone(), b.id.clone()],
                winner,
                decided: 0,
            });
        }
        if self.options.stake > 0
            && let [Some(a), Some(b)] = &self.seats
        {
            let settlement = match winner {
                Some(w) => Settlement::Winner {
                    winner: if w == 0 { a.id.clone() } else { b.id.clone() },
                    loser: if w == 0 { b.id.clone() } else { a.id.clone() },
                },
                None => Settlement::Refund {
                    players: [a.id.clone(), b.id.clone()],
                },
            };
            self.pending_settlement = Some((self.series_id(), settlement));
            self.settlement_decided = 0;
        }
        self.series.result = Some(SeriesResult {
            winner: winner.map(|s| s as u8),
            reason,
        });
        self.phase = Phase::Finished;
        self.break_until = None;
        self.rematch = [false; 2];
    }

    /// `seat` gives up the series (resignation or leaving).
    pub(super) fn concede(&mut self, seat: usize, game_reason: GameEnd, series_reason: SeriesEnd) {
        if let Some(round) = self.round.as_mut().filter(|r| r.result.is_none()) {
            let loser = round.color_of(seat);
            let forfeit = self
                .options
                .rule_set
                .scored_by_points()
                .then_some(match loser {
                    Color::Light => [FORFEIT_POINTS, 0],
                    Color::Dark => [0, FORFEIT_POINTS],
                });
            if let Some([dark, light]) = forfeit {
                let dark_seat = round.dark_seat;
                self.series.points[dark_seat] += dark;
                self.series.points[1 - dark_seat] += light;
            }
            // The running game is won off the board, as on time: it counts
            // as a round won, so the score a page shows agrees with the
            // game's result.
            self.series.wins[1 - seat] += 1;
            round.result = Some(GameResult {
                winner: Some(loser.opposite()),
                reason: game_reason,
                points: forfeit.map(points),
            });
            round.draw_offer = None;
            round.draw_declined = None;
            self.save_game();
        }
        self.finish(Some(1 - seat), series_reason);
    }
}
