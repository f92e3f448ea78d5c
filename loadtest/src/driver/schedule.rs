//! The open-loop schedule of one game or echo pair, and what a game or pair brings
//! back from a phase.

use super::*;

/// The open-loop schedule of one game or pair.
#[derive(Debug)]
pub(super) struct Schedule {
    pub(super) next: Instant,
    pub(super) gap: Option<Duration>,
}

impl Schedule {
    pub(super) fn new(pace: Pace, games: usize, index: usize, start: Instant) -> Schedule {
        match pace {
            Pace::Open { rate } => {
                let gap = Duration::from_secs_f64(games as f64 / rate);
                // Spread the games' first sends evenly over one gap, and their
                // phase within a millisecond too. tokio's timer fires on whole
                // milliseconds, so sends sharing one phase would all wake late
                // by the same amount, set by chance anew in every phase, and a
                // phase's percentiles would move with it.
                let within_ms = (index as f64 * GOLDEN_RATIO_FRACTION).fract();
                let offset = gap.mul_f64(index as f64 / games as f64)
                    + Duration::from_secs_f64(within_ms / 1000.0);
                Schedule {
                    next: start + offset,
                    gap: Some(gap),
                }
            }
            Pace::Closed => Schedule {
                next: start,
                gap: None,
            },
        }
    }

    /// Waits for the next intended send time and returns it; `None` if it falls after
    /// `deadline`. Closed loop: now.
    pub(super) async fn wait(&mut self, deadline: Instant) -> Option<Instant> {
        let Some(gap) = self.gap else {
            return Some(Instant::now());
        };
        let intended = self.next;
        if intended >= deadline {
            return None;
        }
        self.next += gap;
        sleep_until(intended).await;
        Some(intended)
    }

    /// After a pause that is not part of the load (a new lobby), start again from
    /// `not_before` (no earlier than now).
    pub(super) fn rebase(&mut self, not_before: Instant) {
        self.next = self.next.max(not_before).max(Instant::now());
    }
}

/// What one game or pair brings back.
#[derive(Debug)]
pub(super) struct Outcome {
    pub(super) ops: u64,
    pub(super) lobbies: u64,
    pub(super) latency_us: Histogram<u64>,
    pub(super) error: Option<String>,
    /// Moves whose frames were all counted in `move_traffic`.
    pub(super) metered_moves: u64,
    /// Both members' frames for those moves.
    pub(super) move_traffic: Traffic,
    /// Protocol 2 gaps seen (and resynced).
    pub(super) gaps: u64,
}

impl Outcome {
    pub(super) fn new() -> Outcome {
        Outcome {
            ops: 0,
            lobbies: 0,
            latency_us: new_histogram(),
            error: None,
            metered_moves: 0,
            move_traffic: Traffic::default(),
            gaps: 0,
        }
    }
}

pub(super) fn micros(from: Instant, to: Instant) -> u64 {
    u64::try_from(to.saturating_duration_since(from).as_micros()).unwrap_or(u64::MAX)
}
