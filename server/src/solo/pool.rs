//! The computer's search queue: every search a solo game asks for waits
//! here, first come first served, until one of the `--bot-threads`
//! searchers is free, so searches never run on the async workers and never
//! take every core from human games.
//!
//! - **Fair.** A game has at most one search queued or running (it asks
//!   for the next only once it has the last), and searches start in the
//!   order they were asked for: the game that has waited longest goes
//!   first, and no game can jump ahead of another.
//! - **Seen.** [`SearchQueue::place`] says how many searches start before
//!   a game's and estimates its wait from what each level has recently
//!   taken (the game's `solo_state.queue`).
//! - **Bounded.** [`SearchQueue::admit`] refuses a new game against the
//!   computer when a search asked for now would wait past `--max-search-wait-secs`.
//! - **Ranked play is load-independent.** A ranked game's Executive searches
//!   [`bots::RANKED_EXECUTIVE_NODES`] nodes whatever the load; a practice
//!   Executive shortens its time budget when searches queue, and by the
//!   time it already waited (see [`practice_share`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jumpgate_protocol::SearchQueuePlace;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::bots::{self, BotConfig, Level};
use crate::rules::{Variant, VariantGame};

/// A practice Executive never searches for less than this, however long
/// the queue.
pub const PRACTICE_FLOOR: Duration = Duration::from_millis(200);

/// What a solo game asks the computer for.
#[derive(Debug)]
pub struct SearchJob {
    /// `GAME:VERSION`: the game and the ply it asks for.
    pub key: String,
    pub game: VariantGame,
    /// How to rebuild `game` elsewhere (a search job on Redis).
    pub rule_set: Variant,
    pub game_seed: u64,
    pub moves: Vec<String>,
    pub level: Level,
    pub seed: u64,
    /// Ranked: the fixed node budget, whatever the load.
    pub ranked: bool,
}

/// Why a new game against the computer is refused (`computer_busy`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Busy {
    /// A search asked for now would wait about this long before it starts.
    Wait(Duration),
    /// No searcher is alive (Redis, `--bot-threads 0` and no bot-worker).
    NoSearchers,
}

impl Busy {
    /// What the player is told.
    pub fn message(self) -> String {
        match self {
            Busy::Wait(wait) => format!(
                "the computer is busy: its moves would keep you waiting about {} s each; \
                 try again in a minute",
                wait.as_secs().max(1)
            ),
            Busy::NoSearchers => "the computer is not available right now: nothing is running \
                 to work out its moves; try again in a minute"
                .to_owned(),
        }
    }
}

/// A search asked for: its number (for [`SearchQueue::place`]) and where
/// its move arrives (`None` if the search found none).
#[derive(Debug)]
pub struct Ticket {
    pub id: u64,
    pub chosen: oneshot::Receiver<Option<String>>,
}

/// The queue and its searchers; shared by every solo game of an instance.
#[derive(Debug)]
pub struct SearchQueue {
    threads: usize,
    executive_budget: Duration,
    max_wait: Duration,
    state: Mutex<QueueState>,
}

#[derive(Debug)]
struct QueueState {
    waiting: VecDeque<Queued>,
    /// Searches running: their ticket, level and start.
    running: Vec<(u64, Level, Instant)>,
    /// Recent search time per level.
    times: SearchTimes,
    next_id: u64,
}

#[derive(Debug)]
struct Queued {
    id: u64,
    job: SearchJob,
    reply: oneshot::Sender<Option<String>>,
    asked: Instant,
}

/// A practice search's time budget when it starts, `waited` after it was
/// asked for while `waiting` others wait for `threads` searchers: `budget`
/// shared out, `budget × threads / (threads + waiting)`, and no more than
/// what is left of `budget` since it was asked for, so a player waits
/// about `budget` for a practice move whatever the queue; never below
/// [`PRACTICE_FLOOR`]. Ranked searches never use it.
pub fn practice_share(
    budget: Duration,
    threads: usize,
    waiting: usize,
    waited: Duration,
) -> Duration {
    let threads = threads.max(1);
    let shared = budget.mul_f64(threads as f64 / (threads + waiting) as f64);
    shared
        .min(budget.saturating_sub(waited))
        .max(PRACTICE_FLOOR)
}

/// The level's place in per-level arrays (`Level::ALL` order).
fn level_index(level: Level) -> usize {
    Level::ALL.iter().position(|l| *l == level).unwrap_or(3)
}

/// How long each level's searches have recently taken, in ms: the queue's
/// estimate of what a search will cost (both the local queue and the job
/// stream's view keep one).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct SearchTimes([f64; 4]);

impl SearchTimes {
    /// Before any search: a guess per level, the Executive at its budget.
    pub(super) fn new(executive_budget: Duration) -> SearchTimes {
        SearchTimes([20.0, 40.0, 60.0, executive_budget.as_secs_f64() * 1000.0])
    }

    /// The recent mean for `level`, in ms.
    pub(super) fn of(&self, level: Level) -> f64 {
        self.0[level_index(level)]
    }

    /// Counts a search of `level` that took `ms`: recent searches count
    /// most, a fifth of each new one.
    pub(super) fn record(&mut self, level: Level, ms: f64) {
        let mean = &mut self.0[level_index(level)];
        *mean = 0.8 * *mean + 0.2 * ms;
    }
}

impl QueueState {
    /// What is left, by its level's recent mean, of a search started at `started`.
    fn left_ms(&self, level: Level, started: Instant) -> f64 {
        (self.times.of(level) - started.elapsed().as_secs_f64() * 1000.0).max(0.0)
    }
}

impl SearchQueue {
    /// A queue worked by `threads` searchers (at least one); practice
    /// Executives think `executive_budget` when nothing waits; `max_wait`
    /// bounds the expected wait of a new game's search.
    pub fn new(threads: usize, executive_budget: Duration, max_wait: Duration) -> SearchQueue {
        crate::metrics::METRICS
            .search_workers_alive
            .set(threads.max(1) as i64);
        SearchQueue {
            threads: threads.max(1),
            executive_budget,
            max_wait,
            state: Mutex::new(QueueState {
                waiting: VecDeque::new(),
                running: Vec::new(),
                times: SearchTimes::new(executive_budget),
                next_id: 1,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a new game against the computer may start: `Err` with the
    /// expected wait when a search asked for now would wait longer than
    /// the bound before it starts (its own search time is not counted, so
    /// the bound does not depend on `--executive-ms`).
    pub fn admit(&self, level: Level) -> Result<(), Busy> {
        let state = self.lock();
        let ahead: Vec<Level> = state.waiting.iter().map(|q| q.job.level).collect();
        let own = Duration::from_secs_f64(state.times.of(level) / 1000.0);
        let wait = self.estimate(&state, &ahead, level).saturating_sub(own);
        if wait > self.max_wait {
            crate::metrics::METRICS.search_refusals.inc();
            return Err(Busy::Wait(wait));
        }
        Ok(())
    }

    /// Queues a search; it starts as soon as a searcher is free and every
    /// search asked for before it has started.
    pub fn submit(self: &Arc<Self>, job: SearchJob) -> Ticket {
        let (reply, chosen) = oneshot::channel();
        let id = {
            let mut state = self.lock();
            let id = state.next_id;
            state.next_id += 1;
            state.waiting.push_back(Queued {
                id,
                job,
                reply,
                asked: Instant::now(),
            });
            id
        };
        self.start_free();
        self.publish_depth();
        Ticket { id, chosen }
    }

    /// Where a ticket stands: `None` once its move has arrived (or it was
    /// never asked for).
    pub fn place(&self, id: u64) -> Option<SearchQueuePlace> {
        let state = self.lock();
        if let Some(&(_, level, started)) = state.running.iter().find(|(t, _, _)| *t == id) {
            return Some(SearchQueuePlace {
                ahead: 0,
                expected_ms: state.left_ms(level, started).round() as u64,
            });
        }
        let at = state.waiting.iter().position(|q| q.id == id)?;
        let ahead: Vec<Level> = state.waiting.iter().take(at).map(|q| q.job.level).collect();
        let wait = self.estimate(&state, &ahead, state.waiting[at].job.level);
        Some(SearchQueuePlace {
            // Not started: it waits for the queued ones and the running ones.
            ahead: (at + state.running.len()) as u32,
            expected_ms: wait.as_millis() as u64,
        })
    }

    /// How long a search of `level` waits behind `ahead` (queued before
    /// it) and the running searches, then searches: the work before it
    /// shared over the searchers, plus its own search.
    fn estimate(&self, state: &QueueState, ahead: &[Level], level: Level) -> Duration {
        let running: f64 = state
            .running
            .iter()
            .map(|&(_, l, started)| state.left_ms(l, started))
            .sum();
        let queued: f64 = ahead.iter().map(|l| state.times.of(*l)).sum();
        // The searchers still idle start the first searches at once.
        let idle = self.threads.saturating_sub(state.running.len());
        let before = if ahead.len() < idle {
            0.0
        } else {
            (running + queued) / self.threads as f64
        };
        Duration::from_secs_f64((before + state.times.of(level)) / 1000.0)
    }

    /// Starts waiting searches while searchers are free.
    fn start_free(self: &Arc<Self>) {
        loop {
            let next = {
                let mut state = self.lock();
                if state.running.len() >= self.threads {
                    return;
                }
                // A game that went away no longer wants its search.
                let Some(queued) = state.waiting.pop_front() else {
                    return;
                };
                if queued.reply.is_closed() {
                    continue;
                }
                let waiting = state.waiting.len();
                state
                    .running
                    .push((queued.id, queued.job.level, Instant::now()));
                (queued, waiting)
            };
            let (queued, waiting) = next;
            let queue = self.clone();
            let config = self.config(&queued.job, waiting, queued.asked.elapsed());
            tokio::spawn(async move {
                let Queued { id, job, reply, .. } = queued;
                let level = job.level;
                let started = Instant::now();
                let chosen =
                    tokio::task::spawn_blocking(move || bots::choose_stored(&job.game, &config))
                        .await
                        .ok()
                        .flatten();
                queue.finished(id, level, started.elapsed());
                let m = &crate::metrics::METRICS;
                m.bot_think_seconds
                    .with_label_values(&[level.name()])
                    .observe(started.elapsed().as_secs_f64());
                m.searches.with_label_values(&[level.name()]).inc();
                let _ = reply.send(chosen);
                queue.start_free();
                queue.publish_depth();
            });
        }
    }

    /// The search's configuration: ranked on the fixed node budget, a
    /// practice Executive on its share of the time budget.
    fn config(&self, job: &SearchJob, waiting: usize, waited: Duration) -> BotConfig {
        if job.ranked && job.level == Level::Executive {
            return BotConfig::ranked_executive().with_seed(job.seed);
        }
        BotConfig::new(job.level)
            .with_seed(job.seed)
            .with_time_budget(practice_share(
                self.executive_budget,
                self.threads,
                waiting,
                waited,
            ))
    }

    fn finished(&self, id: u64, level: Level, took: Duration) {
        let mut state = self.lock();
        state.running.retain(|(t, _, _)| *t != id);
        state.times.record(level, took.as_secs_f64() * 1000.0);
    }

    fn publish_depth(&self) {
        let state = self.lock();
        let m = &crate::metrics::METRICS;
        for level in Level::ALL {
            let n = state
                .waiting
                .iter()
                .filter(|q| q.job.level == level)
                .count();
            m.search_queue_depth
                .with_label_values(&[level.name()])
                .set(n as i64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_times_follow_recent_searches() {
        let mut times = SearchTimes::new(Duration::from_millis(1000));
        assert_eq!(times.of(Level::Executive), 1000.0);
        times.record(Level::Executive, 0.0);
        assert_eq!(times.of(Level::Executive), 800.0, "a fifth of each new one");
        for _ in 0..50 {
            times.record(Level::Executive, 200.0);
        }
        assert!((times.of(Level::Executive) - 200.0).abs() < 1.0);
        assert_eq!(times.of(Level::Warden), 60.0, "other levels untouched");
    }

    fn queue(threads: usize, executive_ms: u64, max_wait_secs: u64) -> Arc<SearchQueue> {
        Arc::new(SearchQueue::new(
            threads,
            Duration::from_millis(executive_ms),
            Duration::from_secs(max_wait_secs),
        ))
    }

    fn job(level: Level) -> SearchJob {
        let rule_set = Variant::Draughts(crate::rules::RuleSet::Russian);
        SearchJob {
            key: "game:1".to_owned(),
            game: VariantGame::new(rule_set, 1),
            rule_set,
            game_seed: 1,
            moves: Vec::new(),
            level,
            seed: 7,
            ranked: false,
        }
    }

    #[tokio::test]
    async fn searches_start_in_the_order_they_were_asked_for() {
        let queue = queue(1, 300, 60);
        let first = queue.submit(job(Level::Executive));
        let tickets: Vec<Ticket> = (0..4).map(|_| queue.submit(job(Level::Warden))).collect();
        // The first runs; the others wait in order.
        assert_eq!(queue.place(first.id).map(|p| p.ahead), Some(0));
        for (i, t) in tickets.iter().enumerate() {
            let place = queue.place(t.id).expect("queued");
            assert_eq!(
                place.ahead as usize,
                i + 1,
                "the running one and those before"
            );
            assert!(place.expected_ms > 0);
        }
        // Each waits longer than the one before it.
        let waits: Vec<u64> = tickets
            .iter()
            .map(|t| queue.place(t.id).unwrap().expected_ms)
            .collect();
        assert!(waits.windows(2).all(|w| w[0] < w[1]), "{waits:?}");
        let mut done = Vec::new();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for (i, t) in std::iter::once(first).chain(tickets).enumerate() {
            let tx = tx.clone();
            tokio::spawn(async move {
                let chosen = t.chosen.await.expect("answered");
                let _ = tx.send((i, chosen.is_some()));
            });
        }
        drop(tx);
        while let Some((i, found)) = rx.recv().await {
            assert!(found);
            done.push(i);
        }
        assert_eq!(done, vec![0, 1, 2, 3, 4]);
    }

    #[tokio::test]
    async fn a_game_that_went_away_is_skipped_and_its_place_forgotten() {
        let queue = queue(1, 200, 60);
        let running = queue.submit(job(Level::Warden));
        let gone = queue.submit(job(Level::Warden));
        let kept = queue.submit(job(Level::Warden));
        let gone_id = gone.id;
        drop(gone);
        assert!(kept.chosen.await.expect("answered").is_some());
        assert!(running.chosen.await.is_ok());
        assert_eq!(queue.place(gone_id), None);
        assert_eq!(queue.place(kept.id), None);
    }

    #[tokio::test]
    async fn a_new_game_is_refused_when_the_wait_passes_the_bound() {
        let queue = queue(1, 1000, 3);
        assert!(queue.admit(Level::Executive).is_ok());
        let tickets: Vec<Ticket> = (0..5)
            .map(|_| queue.submit(job(Level::Executive)))
            .collect();
        let busy = queue.admit(Level::Executive).expect_err("too long a wait");
        assert!(
            matches!(busy, Busy::Wait(wait) if wait > Duration::from_secs(3)),
            "{busy:?}"
        );
        drop(tickets);
    }

    #[test]
    fn a_practice_budget_shrinks_with_the_queue_and_the_wait_but_not_below_the_floor() {
        let second = Duration::from_millis(1000);
        let share = |threads, waiting, waited_ms| {
            practice_share(second, threads, waiting, Duration::from_millis(waited_ms))
        };
        assert_eq!(share(2, 0, 0), second);
        assert_eq!(share(2, 2, 0), Duration::from_millis(500));
        assert_eq!(share(2, 100, 0), PRACTICE_FLOOR);
        // A search that waited 700 ms of its second gets what is left.
        assert_eq!(share(2, 0, 700), Duration::from_millis(300));
        assert_eq!(share(2, 2, 300), Duration::from_millis(500));
        assert_eq!(share(2, 0, 5_000), PRACTICE_FLOOR);
        assert_eq!(share(0, 0, 0), second, "no searcher counted: one");
    }
}
