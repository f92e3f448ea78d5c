//! The mix a simulated year follows (how the day's games split between kinds of
//! play, who plays them, how long rooms stay open) and the arithmetic from it to the
//! rooms the retention policy leaves alive at the end of the year.

use serde::Serialize;

/// Rule sets a default run spreads accounts over (every rule set the server has).
const ALL_RULE_SETS: [&str; 8] = [
    "american",
    "brazilian",
    "russian",
    "spanish",
    "italian",
    "thai",
    "space",
    "orbit",
];

/// The mix: every figure the year is generated from. Shares are of the games
/// played a day and must add up to 1.
#[derive(Debug, Clone, clap::Args, Serialize)]
pub struct MixArgs {
    /// Games finished a day, every kind together.
    #[arg(long, default_value_t = 100_000.0)]
    pub games_per_day: f64,
    /// Days simulated.
    #[arg(long, default_value_t = 365)]
    pub days: u32,
    /// Share of games played in free live lobbies between two guests.
    #[arg(long, default_value_t = 0.30)]
    pub guest_free_share: f64,
    /// Share of games played in free live lobbies between two accounts.
    #[arg(long, default_value_t = 0.22)]
    pub account_free_share: f64,
    /// Share of games played in staked live lobbies (accounts).
    #[arg(long, default_value_t = 0.10)]
    pub staked_share: f64,
    /// Share of games played in correspondence lobbies (accounts, free).
    #[arg(long, default_value_t = 0.03)]
    pub correspondence_share: f64,
    /// Share of games that are practice games against the computer.
    #[arg(long, default_value_t = 0.25)]
    pub practice_share: f64,
    /// Share of games that are ranked games against the Executive (accounts).
    #[arg(long, default_value_t = 0.10)]
    pub ranked_share: f64,
    /// Of the practice games, the share played by accounts (the rest by guests).
    #[arg(long, default_value_t = 0.30)]
    pub practice_account_share: f64,
    /// Distinct accounts that play at least once in the simulated days.
    #[arg(long, default_value_t = 200_000)]
    pub accounts: u32,
    /// Accounts that play on an average day.
    #[arg(long, default_value_t = 20_000)]
    pub daily_accounts: u32,
    /// How unevenly play is spread over accounts: account i (from 0) plays on
    /// c / (i + 1)^skew days of the year (at least one, at most every day), c chosen
    /// so that the days add up to days × daily accounts. 0: everyone alike.
    #[arg(long, default_value_t = 1.0)]
    pub activity_skew: f64,
    /// Series played in a live lobby before it closes (1: no rematch).
    #[arg(long, default_value_t = 2)]
    pub series_per_lobby: u32,
    /// Games a series is the best of (1, 3, 5 or 7); every lobby kind.
    #[arg(long, default_value_t = 1)]
    pub series_length: u8,
    /// Bold Points each player stakes in a staked lobby.
    #[arg(long, default_value_t = 50)]
    pub stake: u32,
    /// Chance that an account's next lobby is against someone it played before
    /// (otherwise: anyone playing that day). Drives the distinct opponent pairs.
    #[arg(long, default_value_t = 0.5)]
    pub regular_opponent_share: f64,
    /// Share of series between accounts that end drawn.
    #[arg(long, default_value_t = 0.05)]
    pub series_draw_share: f64,
    /// Minutes a live lobby stays open, on average (its rooms in play at the end).
    #[arg(long, default_value_t = 20.0)]
    pub live_lobby_minutes: f64,
    /// Minutes a solo game takes, on average (solo games in play at the end).
    #[arg(long, default_value_t = 10.0)]
    pub solo_game_minutes: f64,
    /// Days a correspondence lobby stays open (one series of one game, then up to
    /// a week until both leave or it expires).
    #[arg(long, default_value_t = 10.0)]
    pub correspondence_days: f64,
    /// Plies played in a sample of a game still in play (live, correspondence,
    /// solo, abandoned ranked).
    #[arg(long, default_value_t = 30)]
    pub plies_in_play: u32,
    /// Share of ranked games abandoned unfinished: the server keeps one until its
    /// account starts another solo game.
    #[arg(long, default_value_t = 0.05)]
    pub ranked_abandon_share: f64,
    /// Solo games a guest plays a day (one note per guest, naming its last game).
    #[arg(long, default_value_t = 2.0)]
    pub solo_games_per_guest: f64,
    /// Rule sets played, most popular first (each account has a favourite, drawn
    /// with weight 1/rank).
    #[arg(long, value_delimiter = ',', default_values_t = ALL_RULE_SETS.map(String::from))]
    pub rule_sets: Vec<String>,
    /// Share of an account's games played outside its favourite rule set.
    #[arg(long, default_value_t = 0.2)]
    pub other_rule_set_share: f64,
    /// Characters of an account's `sub` (its id is `a_SUB`).
    #[arg(long, default_value_t = 28)]
    pub account_sub_len: usize,
    /// Server instances (heartbeats and lists of owned rooms).
    #[arg(long, default_value_t = 3)]
    pub instances: u32,
    /// The servers' `--finished-ttl-secs`.
    #[arg(long, default_value_t = 86_400)]
    pub finished_ttl_secs: u64,
    /// The servers' `--idempotency-window-secs`.
    #[arg(long, default_value_t = 30 * 86_400)]
    pub idempotency_window_secs: u64,
    /// The servers' `--ledger-keep`.
    #[arg(long, default_value_t = 100)]
    pub ledger_keep: usize,
    /// The servers' `--initial-grant`.
    #[arg(long, default_value_t = 1_000)]
    pub initial_grant: u64,
    /// The servers' `--daily-cap`.
    #[arg(long, default_value_t = 5_000)]
    pub daily_cap: u64,
    /// Generate this fraction of the year's rooms and accounts (games a day,
    /// accounts and daily accounts scaled alike) and extrapolate the figures
    /// linearly to the whole; 1: full scale.
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Seeds every random choice, so a run can be repeated.
    #[arg(long, default_value_t = 0x7965_6172)]
    pub seed: u64,
}

/// The kinds of room the year leaves in Redis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RoomKind {
    /// A free live lobby of two guests, closed within the finished TTL.
    GuestClosed,
    /// A free live lobby of two accounts, closed.
    AccountClosed,
    /// A staked live lobby, closed.
    StakedClosed,
    /// A live lobby with a game in play.
    LiveInPlay,
    /// A correspondence lobby with a game in play, unloaded (parked).
    CorrespondenceOpen,
    /// A correspondence lobby both players left after its series, closed.
    CorrespondenceClosed,
    /// A practice game against the computer, finished.
    PracticeFinished,
    /// A ranked game against the Executive, finished.
    RankedFinished,
    /// A ranked game left unfinished: kept open until its account starts another.
    RankedAbandoned,
    /// A solo game in play.
    SoloInPlay,
}

impl RoomKind {
    pub const ALL: [RoomKind; 10] = [
        RoomKind::GuestClosed,
        RoomKind::AccountClosed,
        RoomKind::StakedClosed,
        RoomKind::LiveInPlay,
        RoomKind::CorrespondenceOpen,
        RoomKind::CorrespondenceClosed,
        RoomKind::PracticeFinished,
        RoomKind::RankedFinished,
        RoomKind::RankedAbandoned,
        RoomKind::SoloInPlay,
    ];

    pub fn label(self) -> &'static str {
        match self {
            RoomKind::GuestClosed => "guest free lobbies, closed",
            RoomKind::AccountClosed => "account free lobbies, closed",
            RoomKind::StakedClosed => "staked lobbies, closed",
            RoomKind::LiveInPlay => "live lobbies in play",
            RoomKind::CorrespondenceOpen => "correspondence lobbies open (unloaded)",
            RoomKind::CorrespondenceClosed => "correspondence lobbies, closed",
            RoomKind::PracticeFinished => "practice solo games, finished",
            RoomKind::RankedFinished => "ranked solo games, finished",
            RoomKind::RankedAbandoned => "ranked solo games abandoned (open)",
            RoomKind::SoloInPlay => "solo games in play",
        }
    }

    /// A solo game (id `S` + a code) rather than a lobby.
    pub fn is_solo(self) -> bool {
        matches!(
            self,
            RoomKind::PracticeFinished
                | RoomKind::RankedFinished
                | RoomKind::RankedAbandoned
                | RoomKind::SoloInPlay
        )
    }

    /// Still open: no TTL, listed in `jg:lobbies`.
    pub fn is_open(self) -> bool {
        matches!(
            self,
            RoomKind::LiveInPlay
                | RoomKind::CorrespondenceOpen
                | RoomKind::RankedAbandoned
                | RoomKind::SoloInPlay
        )
    }
}

/// Games a day of each kind of play.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct DailyGames {
    pub guest_free: f64,
    pub account_free: f64,
    pub staked: f64,
    pub correspondence: f64,
    pub practice_guest: f64,
    pub practice_account: f64,
    pub ranked: f64,
}

/// Games per series as the samples played them (a drawn game of a series of one
/// is played again), per lobby kind.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct GamesPerSeries {
    pub guest: f64,
    pub account: f64,
    pub staked: f64,
    pub correspondence: f64,
}

/// Rooms alive at the end of the year, per kind, before the simulation adds the
/// abandoned ranked games (which depend on who played last).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct RoomCounts {
    pub guest_closed: f64,
    pub account_closed: f64,
    pub staked_closed: f64,
    pub live_in_play: f64,
    pub correspondence_open: f64,
    pub correspondence_closed: f64,
    pub practice_finished: f64,
    pub ranked_finished: f64,
    pub solo_in_play: f64,
}

impl MixArgs {
    /// Refuses a mix that does not add up.
    pub fn check(&self) -> Result<(), String> {
        let shares = [
            self.guest_free_share,
            self.account_free_share,
            self.staked_share,
            self.correspondence_share,
            self.practice_share,
            self.ranked_share,
        ];
        if shares.iter().any(|s| !(0.0..=1.0).contains(s)) {
            return Err("every share must be between 0 and 1".into());
        }
        let total: f64 = shares.iter().sum();
        if (total - 1.0).abs() > 1e-6 {
            return Err(format!("the six game shares add up to {total}, not 1"));
        }
        let unit = [
            self.practice_account_share,
            self.regular_opponent_share,
            self.series_draw_share,
            self.ranked_abandon_share,
            self.other_rule_set_share,
        ];
        if unit.iter().any(|s| !(0.0..=1.0).contains(s)) {
            return Err("shares and chances must be between 0 and 1".into());
        }
        if !(self.games_per_day > 0.0 && self.games_per_day <= 10_000_000.0) {
            return Err("--games-per-day must be above 0 and at most 10,000,000".into());
        }
        if !(1..=3660).contains(&self.days) {
            return Err("--days must be 1 to 3660".into());
        }
        if !(self.scale > 0.0 && self.scale <= 1.0) {
            return Err("--scale must be above 0 and at most 1".into());
        }
        if self.daily_accounts == 0 || self.daily_accounts > self.accounts {
            return Err("--daily-accounts must be 1 to --accounts".into());
        }
        if u64::from(self.daily_accounts) * u64::from(self.days) < u64::from(self.accounts) {
            return Err(
                "every account plays at least once: --daily-accounts × --days must reach \
                 --accounts"
                    .into(),
            );
        }
        if ![1, 3, 5, 7].contains(&self.series_length) || self.series_per_lobby == 0 {
            return Err(
                "--series-length must be 1, 3, 5 or 7; --series-per-lobby at least 1".into(),
            );
        }
        if !(10..=1000).contains(&self.stake) {
            return Err("--stake must be 10 to 1000".into());
        }
        if self.rule_sets.is_empty() || self.rule_sets.len() > 8 {
            return Err("--rule-sets takes one to eight rule sets".into());
        }
        if !(8..=126).contains(&self.account_sub_len) {
            return Err("--account-sub-len must be 8 to 126".into());
        }
        let positive = [
            self.live_lobby_minutes,
            self.solo_game_minutes,
            self.correspondence_days,
            self.solo_games_per_guest,
        ];
        if positive.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
            return Err("durations and games per guest must be above 0".into());
        }
        if self.finished_ttl_secs == 0 || self.idempotency_window_secs == 0 || self.ledger_keep == 0
        {
            return Err("the policy's TTL, window and ledger length must be above 0".into());
        }
        if self.instances == 0 || self.instances > 100 || !(1..=400).contains(&self.plies_in_play) {
            return Err("--instances must be 1 to 100 and --plies-in-play 1 to 400".into());
        }
        Ok(())
    }

    /// This run's games a day, scaled.
    pub fn daily(&self) -> DailyGames {
        let g = self.games_per_day * self.scale;
        DailyGames {
            guest_free: g * self.guest_free_share,
            account_free: g * self.account_free_share,
            staked: g * self.staked_share,
            correspondence: g * self.correspondence_share,
            practice_guest: g * self.practice_share * (1.0 - self.practice_account_share),
            practice_account: g * self.practice_share * self.practice_account_share,
            ranked: g * self.ranked_share,
        }
    }

    /// This run's accounts (over the year, and a day), scaled.
    pub fn scaled_accounts(&self) -> (u32, u32) {
        let scale = |n: u32| ((f64::from(n) * self.scale).round() as u32).max(1);
        (scale(self.accounts), scale(self.daily_accounts))
    }

    /// Days the finished TTL spans: closed rooms alive at any moment are this many
    /// days' worth of closings.
    pub fn ttl_days(&self) -> f64 {
        self.finished_ttl_secs as f64 / 86_400.0
    }

    /// Live lobbies opened a day of each kind: its games ÷ (series per lobby ×
    /// games per series). A correspondence lobby plays one series.
    pub fn lobbies_per_day(&self, per_series: &GamesPerSeries) -> [f64; 4] {
        let d = self.daily();
        let lobby = f64::from(self.series_per_lobby);
        [
            d.guest_free / (lobby * per_series.guest),
            d.account_free / (lobby * per_series.account),
            d.staked / (lobby * per_series.staked),
            d.correspondence / per_series.correspondence,
        ]
    }

    /// The rooms the policy keeps at the end of a day like any other: closed ones
    /// for the finished TTL after closing, open ones for as long as they are open.
    pub fn room_counts(&self, per_series: &GamesPerSeries) -> RoomCounts {
        let d = self.daily();
        let [guest, account, staked, correspondence] = self.lobbies_per_day(per_series);
        let ttl = self.ttl_days();
        let solo_games = d.practice_guest + d.practice_account + d.ranked;
        RoomCounts {
            guest_closed: guest * ttl,
            account_closed: account * ttl,
            staked_closed: staked * ttl,
            live_in_play: (guest + account + staked) * self.live_lobby_minutes / 1440.0,
            correspondence_open: correspondence * self.correspondence_days,
            correspondence_closed: correspondence * ttl,
            practice_finished: (d.practice_guest + d.practice_account) * ttl,
            ranked_finished: d.ranked * (1.0 - self.ranked_abandon_share) * ttl,
            solo_in_play: solo_games * self.solo_game_minutes / 1440.0,
        }
    }
}

impl RoomCounts {
    /// The count of `kind` (the abandoned ranked games come from the simulation).
    pub fn of(&self, kind: RoomKind) -> f64 {
        match kind {
            RoomKind::GuestClosed => self.guest_closed,
            RoomKind::AccountClosed => self.account_closed,
            RoomKind::StakedClosed => self.staked_closed,
            RoomKind::LiveInPlay => self.live_in_play,
            RoomKind::CorrespondenceOpen => self.correspondence_open,
            RoomKind::CorrespondenceClosed => self.correspondence_closed,
            RoomKind::PracticeFinished => self.practice_finished,
            RoomKind::RankedFinished => self.ranked_finished,
            RoomKind::RankedAbandoned => 0.0,
            RoomKind::SoloInPlay => self.solo_in_play,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        mix: MixArgs,
    }

    fn defaults() -> MixArgs {
        Cli::parse_from(["year"]).mix
    }

    #[test]
    fn the_default_mix_adds_up() {
        let mix = defaults();
        mix.check().unwrap();
        let d = mix.daily();
        let total = d.guest_free
            + d.account_free
            + d.staked
            + d.correspondence
            + d.practice_guest
            + d.practice_account
            + d.ranked;
        assert!((total - 100_000.0).abs() < 1e-6);
        assert_eq!(mix.rule_sets.len(), 8);
    }

    #[test]
    fn rooms_follow_the_policy() {
        let mix = defaults();
        let one = GamesPerSeries {
            guest: 1.0,
            account: 1.0,
            staked: 1.0,
            correspondence: 1.0,
        };
        let rooms = mix.room_counts(&one);
        // 30,000 guest games a day, two series of one game a lobby: 15,000
        // lobbies closed in the last day.
        assert!((rooms.guest_closed - 15_000.0).abs() < 1e-6);
        assert!((rooms.staked_closed - 5_000.0).abs() < 1e-6);
        // 3,000 correspondence games a day, one a lobby, open ten days.
        assert!((rooms.correspondence_open - 30_000.0).abs() < 1e-6);
        assert!((rooms.correspondence_closed - 3_000.0).abs() < 1e-6);
        // 31,000 live lobbies a day, 20 minutes each.
        assert!((rooms.live_in_play - 31_000.0 * 20.0 / 1440.0).abs() < 1e-6);
        assert!((rooms.practice_finished - 25_000.0).abs() < 1e-6);
        assert!((rooms.ranked_finished - 9_500.0).abs() < 1e-6);
        // A drawn game played again makes lobbies fewer, not games.
        let drawn = GamesPerSeries { guest: 1.25, ..one };
        assert!((mix.room_counts(&drawn).guest_closed - 12_000.0).abs() < 1e-6);
    }

    #[test]
    fn a_scaled_run_scales_games_and_accounts() {
        let mut mix = defaults();
        mix.scale = 0.1;
        mix.check().unwrap();
        assert!((mix.daily().guest_free - 3_000.0).abs() < 1e-6);
        assert_eq!(mix.scaled_accounts(), (20_000, 2_000));
    }

    #[test]
    fn a_mix_that_does_not_add_up_is_refused() {
        let mut mix = defaults();
        mix.ranked_share = 0.2;
        assert!(mix.check().is_err());
        let mut mix = defaults();
        mix.daily_accounts = 100;
        assert!(
            mix.check().is_err(),
            "100 a day cannot reach 200,000 in a year"
        );
    }
}
