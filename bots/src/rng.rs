//! A small seeded random number generator (SplitMix64) for the bots'
//! deliberate imperfection and the ladder's openings: reproducible from a
//! seed, no crate needed, not for anything secret.

/// SplitMix64: a 64-bit state advanced by a Weyl constant and mixed.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// One SplitMix64 step as a pure function, usable in `const` context.
pub(crate) const fn mix_step(state: u64) -> (u64, u64) {
    let next = state.wrapping_add(GOLDEN_GAMMA);
    let mut z = next;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (next, z ^ (z >> 31))
}

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        let (state, out) = mix_step(self.state);
        self.state = state;
        out
    }

    /// A number in `0..n` (`n > 0`). The tiny modulo bias is irrelevant here.
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        self.next_u64() % n
    }

    /// True with probability `percent / 100`.
    pub fn chance(&mut self, percent: u32) -> bool {
        percent > 0 && self.below(100) < u64::from(percent)
    }

    /// A number in `-spread..=spread`.
    pub fn spread(&mut self, spread: i32) -> i32 {
        if spread <= 0 {
            return 0;
        }
        let width = 2 * spread as u64 + 1;
        self.below(width) as i32 - spread
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(SplitMix64::new(1).next_u64(), SplitMix64::new(2).next_u64());
    }

    #[test]
    fn ranges_hold() {
        let mut rng = SplitMix64::new(42);
        for _ in 0..1000 {
            assert!(rng.below(5) < 5);
            assert!((-3..=3).contains(&rng.spread(3)));
        }
        assert!(!rng.chance(0));
        assert!(rng.chance(100));
    }
}
