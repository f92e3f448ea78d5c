//! The accounts of a simulated year: who plays on which day and against whom, and
//! what that leaves in the stores that keep per-account data (wallets, records,
//! leaderboards) and in their idempotency windows. Pure computation, no I/O: the
//! figures follow the server's scripts (`wallet/redis.rs`, `records.rs`,
//! `leaderboard.rs`) move for move, so the writer only has to spell them out.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::DAY_MS;
use super::activity::{Rng, activity, days_played, ranked_game_id, series_id};
use super::ledger::{Entry, EntryKind, Wallet};
use super::mix::MixArgs;

/// Minutes between the series of a lobby, and from a series' start to its end.
const SERIES_GAP_MS: u64 = 5 * 60_000;
const SERIES_MS: u64 = 4 * 60_000;
/// How ranked games against the Executive end for the player.
pub const RANKED_WIN: f64 = 0.10;
pub const RANKED_DRAW: f64 = 0.10;
/// Known opponents tried before anyone playing that day.
const REGULAR_TRIES: usize = 4;
/// Tries to seat two accounts that can cover a staked lobby's stakes.
const STAKE_TRIES: usize = 20;

/// An account's state at the end of the year.
#[derive(Debug, Clone, Default)]
pub struct Account {
    /// Index into the mix's rule sets.
    pub favourite: u8,
    /// Accounts it has played a lobby against.
    pub opponents: Vec<u32>,
    pub wallet: Option<Box<Wallet>>,
    /// Series won (`jgr:{records}:won`).
    pub won: u32,
    /// When its last solo game ended (Unix ms; 0: none).
    pub last_solo: u64,
    /// It holds an abandoned ranked game, kept open.
    pub open_ranked: bool,
    /// For the daily cap: the UTC day of `won_today`.
    cap_day: u64,
    won_today: u64,
    /// Last day it played, for the daily count (`u32::MAX`: never).
    last_day: u32,
    /// Last day it was among the day's players (`u32::MAX`: never).
    planned: u32,
}

/// An account's record in one rule set.
#[derive(Debug, Clone, Copy, Default)]
pub struct RuleRecord {
    /// Played a recorded series in the rule set (a `streak:RULES` field).
    pub played: bool,
    pub streak: u32,
    /// Best streak (a `best:RULES` field once above 0).
    pub best: u32,
    /// Ranked games against the Executive: wins, draws, losses.
    pub ranked: [u32; 3],
}

/// What the year did, for the report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct YearStats {
    /// Accounts that played at least once, and on an average day.
    pub accounts_played: u64,
    pub mean_daily_accounts: f64,
    pub lobbies: u64,
    pub series_recorded: u64,
    pub staked_series: u64,
    /// Staked lobbies whose first choice of players could not cover the stakes,
    /// seated with other accounts instead; lobbies that found nobody; series not
    /// played because a player ran short between series.
    pub staked_reseated: u64,
    pub staked_lobbies_skipped: u64,
    pub staked_series_short: u64,
    pub ranked_games: u64,
    pub ranked_abandoned: u64,
    pub solo_account_games: u64,
    pub distinct_pairs: u64,
    pub wallets: u64,
    pub ledger_entries: u64,
}

/// A key decided at a time (an idempotency key still in its window).
pub type Decided = (String, u64);

/// The whole year.
#[derive(Debug, Default)]
pub struct Year {
    pub start_ms: u64,
    pub end_ms: u64,
    pub accounts: Vec<Account>,
    /// `accounts × rule sets`, row by account.
    pub rules: Vec<RuleRecord>,
    pub rule_sets: Vec<String>,
    /// Series won, by (winner, loser).
    pub h2h: HashMap<(u32, u32), u32>,
    /// Series drawn, by pair (lower index first; the writer orders the ids).
    pub draws: HashMap<(u32, u32), u32>,
    pub wallet_done: Vec<Decided>,
    pub records_done: Vec<Decided>,
    pub boards_done: Vec<Decided>,
    /// Won today and yesterday (`jgw:{wallets}:won:DAY`), by UTC day.
    pub won_days: HashMap<u64, HashMap<u32, u64>>,
    pub granted: i64,
    /// Pairs of the correspondence lobbies still open at the end.
    pub correspondence_open: Vec<[u32; 2]>,
    /// Accounts that played on the last day.
    pub last_day_accounts: Vec<u32>,
    pub stats: YearStats,
}

#[derive(Clone, Copy)]
enum Event {
    AccountLobby,
    StakedLobby,
    Correspondence,
    Ranked,
    AccountPractice,
}

/// Plays the year at the mix's rates (scaled) with `games_per_series` games in
/// each series, ending at `end_ms`.
pub fn simulate(mix: &MixArgs, games_per_series: [f64; 3], end_ms: u64) -> Year {
    let mut sim = Sim::new(mix, end_ms);
    sim.run(mix, games_per_series);
    sim.year
}

struct Sim {
    rng: Rng,
    year: Year,
    by_day: Vec<Vec<u32>>,
    pairs: HashSet<(u32, u32)>,
    next_lobby: u32,
    next_solo: u64,
    daily_counts: Vec<u32>,
    window_start: u64,
    keep: usize,
    stake: i64,
    grant: i64,
    cap: u64,
    regular: f64,
    draw: f64,
    other_rules: f64,
    series_per_lobby: u16,
    abandon: f64,
    solo_ms: u64,
    correspondence_ms: u64,
}

impl Sim {
    fn new(mix: &MixArgs, end_ms: u64) -> Sim {
        let mut rng = Rng::new(mix.seed);
        let (accounts, daily) = mix.scaled_accounts();
        let played = days_played(accounts, daily, mix.days, mix.activity_skew);
        let by_day = activity(&played, mix.days, &mut rng);
        // Favourite rule sets with weight 1/rank.
        let weights: Vec<f64> = (1..=mix.rule_sets.len()).map(|r| 1.0 / r as f64).collect();
        let total: f64 = weights.iter().sum();
        let mut accounts_state = Vec::with_capacity(accounts as usize);
        for _ in 0..accounts {
            let mut x = rng.unit() * total;
            let mut favourite = weights.len() - 1;
            for (r, w) in weights.iter().enumerate() {
                if x < *w {
                    favourite = r;
                    break;
                }
                x -= w;
            }
            accounts_state.push(Account {
                favourite: favourite as u8,
                last_day: u32::MAX,
                planned: u32::MAX,
                ..Account::default()
            });
        }
        let start_ms = end_ms - u64::from(mix.days) * DAY_MS;
        Sim {
            rng,
            year: Year {
                start_ms,
                end_ms,
                rules: vec![RuleRecord::default(); accounts as usize * mix.rule_sets.len()],
                rule_sets: mix.rule_sets.clone(),
                accounts: accounts_state,
                ..Year::default()
            },
            by_day,
            pairs: HashSet::new(),
            next_lobby: 0,
            next_solo: 0,
            daily_counts: vec![0; mix.days as usize],
            window_start: end_ms.saturating_sub(mix.idempotency_window_secs * 1000),
            keep: mix.ledger_keep,
            stake: i64::from(mix.stake),
            grant: mix.initial_grant as i64,
            cap: mix.daily_cap,
            regular: mix.regular_opponent_share,
            draw: mix.series_draw_share,
            other_rules: mix.other_rule_set_share,
            series_per_lobby: mix.series_per_lobby as u16,
            abandon: mix.ranked_abandon_share,
            solo_ms: (mix.solo_game_minutes * 60_000.0) as u64,
            correspondence_ms: (mix.correspondence_days * DAY_MS as f64) as u64,
        }
    }

    fn run(&mut self, mix: &MixArgs, games_per_series: [f64; 3]) {
        let d = mix.daily();
        let lobby = f64::from(mix.series_per_lobby);
        let rates = [
            (
                Event::AccountLobby,
                d.account_free / (lobby * games_per_series[0]),
            ),
            (Event::StakedLobby, d.staked / (lobby * games_per_series[1])),
            (
                Event::Correspondence,
                d.correspondence / games_per_series[2],
            ),
            (Event::Ranked, d.ranked),
            (Event::AccountPractice, d.practice_account),
        ];
        let mut events: Vec<(u64, Event)> = Vec::new();
        for day in 0..mix.days {
            if self.by_day[day as usize].is_empty() {
                continue;
            }
            for &a in &self.by_day[day as usize] {
                self.year.accounts[a as usize].planned = day;
            }
            let day_start = self.year.start_ms + u64::from(day) * DAY_MS;
            events.clear();
            for (event, rate) in rates {
                for _ in 0..self.rng.round(rate) {
                    events.push((day_start + self.rng.below(DAY_MS), event));
                }
            }
            events.sort_unstable_by_key(|(t, _)| *t);
            for &(t, event) in &events {
                match event {
                    Event::AccountLobby => self.lobby(day, t, false),
                    Event::StakedLobby => self.lobby(day, t, true),
                    Event::Correspondence => self.correspondence(day, t),
                    Event::Ranked => self.solo(day, t, true),
                    Event::AccountPractice => self.solo(day, t, false),
                }
            }
        }
        let last = mix.days as usize - 1;
        let year = &mut self.year;
        year.last_day_accounts = year
            .accounts
            .iter()
            .enumerate()
            .filter(|(_, a)| a.last_day as usize == last)
            .map(|(i, _)| i as u32)
            .collect();
        let stats = &mut year.stats;
        stats.accounts_played = year
            .accounts
            .iter()
            .filter(|a| a.last_day != u32::MAX)
            .count() as u64;
        stats.mean_daily_accounts =
            self.daily_counts.iter().map(|&c| f64::from(c)).sum::<f64>() / f64::from(mix.days);
        stats.distinct_pairs = self.pairs.len() as u64;
        stats.wallets = year.accounts.iter().filter(|a| a.wallet.is_some()).count() as u64;
        stats.ranked_abandoned = year.accounts.iter().filter(|a| a.open_ranked).count() as u64;
    }

    fn played(&mut self, account: u32, day: u32) {
        let a = &mut self.year.accounts[account as usize];
        if a.last_day != day {
            a.last_day = day;
            self.daily_counts[day as usize] += 1;
        }
    }

    fn anyone(&mut self, day: u32) -> u32 {
        let active = &self.by_day[day as usize];
        active[self.rng.below(active.len() as u64) as usize]
    }

    /// An opponent for `a`: someone it played before who plays today too (a few
    /// tries), or anyone playing today.
    fn opponent(&mut self, day: u32, a: u32) -> u32 {
        let known = self.year.accounts[a as usize].opponents.len();
        if known > 0 && self.rng.chance(self.regular) {
            for _ in 0..REGULAR_TRIES {
                let i = self.rng.below(known as u64) as usize;
                let b = self.year.accounts[a as usize].opponents[i];
                if self.year.accounts[b as usize].planned == day {
                    return b;
                }
            }
        }
        for _ in 0..100 {
            let b = self.anyone(day);
            if b != a {
                return b;
            }
        }
        // A day with one account: anyone at all.
        (a + 1) % self.year.accounts.len() as u32
    }

    fn pair(&mut self, day: u32) -> (u32, u32) {
        let a = self.anyone(day);
        let b = self.opponent(day, a);
        if self.pairs.insert((a.min(b), a.max(b))) {
            self.year.accounts[a as usize].opponents.push(b);
            self.year.accounts[b as usize].opponents.push(a);
        }
        (a, b)
    }

    fn rule_of(&mut self, account: u32) -> usize {
        let n = self.year.rule_sets.len();
        if n > 1 && self.rng.chance(self.other_rules) {
            self.rng.below(n as u64) as usize
        } else {
            usize::from(self.year.accounts[account as usize].favourite)
        }
    }

    /// A series' outcome: `None` drawn, else the winner's index in the pair.
    fn outcome(&mut self) -> Option<usize> {
        if self.rng.chance(self.draw) {
            None
        } else {
            Some(self.rng.below(2) as usize)
        }
    }

    fn lobby(&mut self, day: u32, t: u64, staked: bool) {
        let (mut a, mut b) = self.pair(day);
        if staked {
            let mut seated = false;
            for attempt in 0..STAKE_TRIES {
                if attempt > 0 {
                    (a, b) = self.pair(day);
                }
                self.open_wallet(a, t);
                self.open_wallet(b, t);
                if self.covers(a) && self.covers(b) {
                    seated = true;
                    self.year.stats.staked_reseated += u64::from(attempt > 0);
                    break;
                }
            }
            if !seated {
                self.year.stats.staked_lobbies_skipped += 1;
                return;
            }
        }
        self.played(a, day);
        self.played(b, day);
        self.year.stats.lobbies += 1;
        let lobby = self.next_lobby;
        self.next_lobby += 1;
        let rule = self.rule_of(a);
        for n in 1..=self.series_per_lobby {
            let begins = t + u64::from(n - 1) * SERIES_GAP_MS;
            let ends = begins + SERIES_MS;
            if staked {
                self.open_wallet(a, begins);
                self.open_wallet(b, begins);
                if !(self.covers(a) && self.covers(b)) {
                    self.year.stats.staked_series_short += 1;
                    break;
                }
                self.escrow(lobby, n, [a, b], begins);
            }
            let winner = self.outcome();
            if staked {
                self.settle(lobby, n, [a, b], winner, ends);
            }
            self.record(lobby, n, rule, [a, b], winner, ends);
        }
    }

    fn correspondence(&mut self, day: u32, t: u64) {
        let (a, b) = self.pair(day);
        self.played(a, day);
        self.played(b, day);
        self.year.stats.lobbies += 1;
        let lobby = self.next_lobby;
        self.next_lobby += 1;
        let rule = self.rule_of(a);
        let ends = t + self.correspondence_ms;
        if ends >= self.year.end_ms {
            self.year.correspondence_open.push([a, b]);
            return;
        }
        let winner = self.outcome();
        self.record(lobby, 1, rule, [a, b], winner, ends);
    }

    fn solo(&mut self, day: u32, t: u64, ranked: bool) {
        let a = self.anyone(day);
        self.played(a, day);
        self.year.stats.solo_account_games += 1;
        let rule = self.rule_of(a);
        let ends = t + self.solo_ms;
        let game = self.next_solo;
        self.next_solo += 1;
        let account = &mut self.year.accounts[a as usize];
        // Starting a solo game replaces (closes) an abandoned one.
        account.open_ranked = false;
        account.last_solo = ends;
        if !ranked {
            return;
        }
        if self.rng.chance(self.abandon) {
            account.open_ranked = true;
            return;
        }
        self.year.stats.ranked_games += 1;
        let x = self.rng.unit();
        let slot = if x < RANKED_WIN {
            0
        } else if x < RANKED_WIN + RANKED_DRAW {
            1
        } else {
            2
        };
        let n = self.year.rule_sets.len();
        self.year.rules[a as usize * n + rule].ranked[slot] += 1;
        if ends >= self.window_start {
            self.year.boards_done.push((ranked_game_id(game), ends));
        }
    }

    fn covers(&self, account: u32) -> bool {
        self.year.accounts[account as usize]
            .wallet
            .as_ref()
            .is_some_and(|w| w.balance >= self.stake)
    }

    /// Opens a wallet with the initial grant, as every wallet script does first.
    fn open_wallet(&mut self, account: u32, at: u64) {
        let a = &mut self.year.accounts[account as usize];
        if a.wallet.is_none() {
            let mut wallet = Box::<Wallet>::default();
            wallet.push(
                Entry {
                    lobby: 0,
                    series_no: 0,
                    kind: EntryKind::Grant,
                    amount: self.grant,
                    at,
                },
                self.keep,
            );
            a.wallet = Some(wallet);
            self.year.granted += self.grant;
            self.year.stats.ledger_entries += 1;
        }
    }

    fn entry(
        &mut self,
        account: u32,
        lobby: u32,
        series_no: u16,
        kind: EntryKind,
        amount: i64,
        at: u64,
    ) {
        let keep = self.keep;
        if let Some(w) = self.year.accounts[account as usize].wallet.as_mut() {
            w.push(
                Entry {
                    lobby,
                    series_no,
                    kind,
                    amount,
                    at,
                },
                keep,
            );
            self.year.stats.ledger_entries += 1;
        }
    }

    fn escrow(&mut self, lobby: u32, n: u16, players: [u32; 2], at: u64) {
        for p in players {
            self.entry(p, lobby, n, EntryKind::Escrow, -self.stake, at);
        }
        self.year.stats.staked_series += 1;
        if at >= self.window_start {
            let key = format!("{}:escrow", series_id(lobby, n));
            self.year.wallet_done.push((key, at));
        }
    }

    /// The settlement script: the winner takes its stake back and the loser's
    /// up to the daily cap, the loser gets back what the cap left; a draw
    /// refunds both.
    fn settle(&mut self, lobby: u32, n: u16, players: [u32; 2], winner: Option<usize>, at: u64) {
        match winner {
            None => {
                for p in players {
                    self.entry(p, lobby, n, EntryKind::Refund, self.stake, at);
                }
            }
            Some(w) => {
                let (winner, loser) = (players[w], players[1 - w]);
                let day = at / DAY_MS;
                let a = &mut self.year.accounts[winner as usize];
                if a.cap_day != day {
                    a.cap_day = day;
                    a.won_today = 0;
                }
                let gain = (self.stake as u64).min(self.cap.saturating_sub(a.won_today));
                a.won_today += gain;
                if day + 2 > (self.year.end_ms - 1) / DAY_MS {
                    *self
                        .year
                        .won_days
                        .entry(day)
                        .or_default()
                        .entry(winner)
                        .or_default() += gain;
                }
                let back = self.stake - gain as i64;
                self.entry(
                    winner,
                    lobby,
                    n,
                    EntryKind::Payout,
                    self.stake + gain as i64,
                    at,
                );
                if back > 0 {
                    self.entry(loser, lobby, n, EntryKind::Refund, back, at);
                }
            }
        }
        if at >= self.window_start {
            let key = format!("{}:settle", series_id(lobby, n));
            self.year.wallet_done.push((key, at));
        }
    }

    /// The records script for one series between two accounts.
    fn record(
        &mut self,
        lobby: u32,
        n: u16,
        rule: usize,
        players: [u32; 2],
        winner: Option<usize>,
        at: u64,
    ) {
        self.year.stats.series_recorded += 1;
        if at >= self.window_start {
            self.year.records_done.push((series_id(lobby, n), at));
        }
        let rules = self.year.rule_sets.len();
        let [a, b] = players;
        match winner {
            None => {
                *self.year.draws.entry((a.min(b), a.max(b))).or_default() += 1;
                for p in players {
                    let r = &mut self.year.rules[p as usize * rules + rule];
                    r.played = true;
                    r.streak = 0;
                }
            }
            Some(w) => {
                let (winner, loser) = (players[w], players[1 - w]);
                self.year.accounts[winner as usize].won += 1;
                *self.year.h2h.entry((winner, loser)).or_default() += 1;
                let r = &mut self.year.rules[winner as usize * rules + rule];
                r.played = true;
                r.streak += 1;
                r.best = r.best.max(r.streak);
                let r = &mut self.year.rules[loser as usize * rules + rule];
                r.played = true;
                r.streak = 0;
            }
        }
    }
}
