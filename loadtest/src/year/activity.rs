//! Who plays when in a simulated year, and the ids they go by: a seeded generator,
//! how many days each account plays and which, and ids shaped like the server's
//! (accounts, room codes, series and ranked game ids).

/// A seeded generator (SplitMix64): the same seed, the same year.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5851_f42d_4c95_7f2d)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.0)
    }

    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// `x` rounded down or up at random, so that the mean is `x`.
    pub fn round(&mut self, x: f64) -> u64 {
        let floor = x.floor();
        floor as u64 + u64::from(self.chance(x - floor))
    }
}

/// SplitMix64's finaliser: a well-mixed 64-bit hash of `x`.
pub fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The room-code alphabet (server/src/code.rs).
const CODE_ALPHABET: &[u8; 32] = b"23456789ABCDEFGHJKLMNPQRSTUVWXYZ";
/// An id's characters (nanoid's alphabet).
const ID_ALPHABET: &[u8; 64] = b"_-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// Eight room-code characters from `x` (not checked for uniqueness: these name
/// lobbies inside series ids and game ids, not stored rooms).
pub fn code_of(x: u64) -> String {
    let bits = mix64(x ^ 0x636f_6465);
    (0..8)
        .map(|i| char::from(CODE_ALPHABET[((bits >> (5 * i)) & 31) as usize]))
        .collect()
}

/// `len` id characters from `x`.
pub fn id_chars(x: u64, len: usize) -> String {
    let mut out = String::with_capacity(len);
    let mut bits = mix64(x);
    for i in 0..len {
        if i % 10 == 9 {
            bits = mix64(bits ^ i as u64);
        }
        out.push(char::from(ID_ALPHABET[(bits & 63) as usize]));
        bits >>= 6;
    }
    out
}

/// Account `i`'s id: `a_` and a `sub` of `sub_len` characters.
pub fn account_id(i: u32, sub_len: usize) -> String {
    format!("a_{}", id_chars(0xacc0_0000_0000 + u64::from(i), sub_len))
}

/// Account `i`'s display name.
pub fn account_name(i: u32) -> String {
    format!("Player {i}")
}

/// A series id as the server writes it: `CODE:N:INCARNATION` (8 hex digits).
pub fn series_id(lobby: u32, series_no: u16) -> String {
    let incarnation = (mix64(u64::from(lobby) ^ 0x696e_6361) as u32) | 1;
    format!(
        "{}:{series_no}:{incarnation:08x}",
        code_of(u64::from(lobby))
    )
}

/// A ranked game's leaderboard id: the solo id (`S` + a code) and its seed.
pub fn ranked_game_id(game: u64) -> String {
    format!(
        "S{}:{:016x}",
        code_of(game ^ 0x736f_6c6f_0000_0000),
        mix64(game ^ 0x7365_6564)
    )
}

/// How many days each account plays: account i plays on
/// clamp(c / (i + 1)^skew, 1, days) days (rounded), c chosen (by bisection) so that
/// the days add up to `days × daily` as nearly as they can.
pub fn days_played(accounts: u32, daily: u32, days: u32, skew: f64) -> Vec<u32> {
    let target = u64::from(daily) * u64::from(days);
    let weights: Vec<f64> = (0..accounts)
        .map(|i| f64::from(i + 1).powf(-skew))
        .collect();
    // Rounded with an offset of its own per account (a golden-ratio sequence), so
    // that accounts of equal weight round up and down in the right proportion.
    let days_of = |c: f64, i: usize, w: f64| {
        let offset = (i as f64 * 0.618_033_988_749_895).fract();
        (c * w + offset).floor().clamp(1.0, f64::from(days)) as u32
    };
    let total = |c: f64| -> u64 {
        weights
            .iter()
            .enumerate()
            .map(|(i, &w)| u64::from(days_of(c, i, w)))
            .sum()
    };
    let (mut low, mut high) = (0.0, f64::from(days) * f64::from(accounts).powf(skew) + 1.0);
    for _ in 0..100 {
        let mid = (low + high) / 2.0;
        if total(mid) < target {
            low = mid;
        } else {
            high = mid;
        }
    }
    weights
        .iter()
        .enumerate()
        .map(|(i, &w)| days_of(high, i, w))
        .collect()
}

/// Which accounts play on each day: each account's days drawn uniformly
/// (Floyd's sampling), so the day's count is `daily` on average.
pub fn activity(days_played: &[u32], days: u32, rng: &mut Rng) -> Vec<Vec<u32>> {
    let mut by_day: Vec<Vec<u32>> = vec![Vec::new(); days as usize];
    let mut chosen = vec![false; days as usize];
    let mut picked = Vec::new();
    for (account, &k) in days_played.iter().enumerate() {
        picked.clear();
        for j in (days - k)..days {
            let t = rng.below(u64::from(j) + 1) as usize;
            let day = if chosen[t] { j as usize } else { t };
            chosen[day] = true;
            picked.push(day);
        }
        for &day in &picked {
            chosen[day] = false;
            by_day[day].push(account as u32);
        }
    }
    by_day
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn days_played_add_up_to_the_daily_count() {
        for skew in [0.0, 0.5, 1.0, 1.5] {
            let days = days_played(20_000, 2_000, 365, skew);
            let total: u64 = days.iter().map(|&d| u64::from(d)).sum();
            let target = 2_000 * 365;
            assert!(
                total.abs_diff(target) < target / 100,
                "skew {skew}: {total} days against {target}"
            );
            assert!(days.iter().all(|&d| (1..=365).contains(&d)));
        }
        // Skewed: the first accounts play far more than the last.
        let days = days_played(20_000, 2_000, 365, 1.0);
        assert!(
            days[0] >= 300 && days[19_999] <= 10,
            "{} and {}",
            days[0],
            days[19_999]
        );
    }

    #[test]
    fn each_account_plays_on_its_number_of_distinct_days() {
        let played = days_played(1_000, 100, 30, 1.0);
        let by_day = activity(&played, 30, &mut Rng::new(1));
        let mut count = vec![0u32; 1_000];
        for day in &by_day {
            let distinct: HashSet<&u32> = day.iter().collect();
            assert_eq!(distinct.len(), day.len());
            for &a in day {
                count[a as usize] += 1;
            }
        }
        assert_eq!(count, played);
    }

    #[test]
    fn ids_look_like_the_servers() {
        assert_eq!(account_id(7, 28).len(), 30);
        let series = series_id(12, 3);
        let parts: Vec<&str> = series.split(':').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0].len(), 8);
        assert_eq!(parts[1], "3");
        assert_eq!(parts[2].len(), 8);
        assert!(ranked_game_id(5).starts_with('S'));
        assert_eq!(ranked_game_id(5).len(), 9 + 1 + 16);
    }
}
