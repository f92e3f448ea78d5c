//! Search jobs through Redis Streams: with Redis configured, an instance
//! does not search itself but adds each search to the stream
//! `jg:{search}:jobs`, which any number of searchers (`jumpgate bot-worker`
//! processes, and the instances' own `--bot-threads`) read through one
//! consumer group, oldest first.
//!
//! - **Delivered to whoever owns the game by then.** A job is named
//!   `GAME:VERSION`; its move is written once (`SET NX`) under that name
//!   and announced on `jg:{search}:results`. Every instance tails that
//!   stream and also reads the name back every [`POLL`], so a game that
//!   moved to another instance while its job was out (the new owner asks
//!   again for the same name) gets the same move.
//! - **Applied at most once, to its own ply.** A waiter takes one answer;
//!   the game applies it only if its version is still the one it asked
//!   at (see `SoloCommand::BotMoved`), so a stale or duplicate answer is
//!   dropped.
//! - **Never lost.** A job whose searcher died is reclaimed by another
//!   (`XAUTOCLAIM`, see `worker`); a job that vanished from Redis (a
//!   restart without persistence) is added again by the waiting instance.
//! - **Seen and bounded.** Every [`REFRESH`] (while its games wait; every
//!   [`IDLE_REFRESH`] otherwise) the instance reads the queue
//!   (jobs not yet handed out, in order; jobs being searched; searcher
//!   threads alive from their heartbeats) to say where each of its games
//!   stands and to refuse a new game when the expected wait passes
//!   `--max-search-wait-secs`, or when no searcher is alive at all.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use jumpgate_protocol::SearchQueuePlace;
use redis::streams::{StreamInfoGroupsReply, StreamRangeReply, StreamReadReply};
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use super::pool::{Busy, SearchJob, SearchTimes, Ticket};
use crate::bots::{BotConfig, Level};
use crate::rules::{DrawRules, Variant, VariantGame};
use crate::store::RedisConn;
use crate::store::keys::{
    SEARCH_GROUP, SEARCH_JOBS, SEARCH_RESULTS, SEARCH_WORKERS, search_result_key,
};

/// How often a waiting game reads its job's answer back (in case the
/// announcement was missed) and checks that its job is still queued.
pub const POLL: Duration = Duration::from_secs(2);
/// How often an instance reads the queue's length and the searchers alive
/// while some of its games wait for the computer ...
pub const REFRESH: Duration = Duration::from_millis(500);
/// ... and while none does (for admission only).
pub const IDLE_REFRESH: Duration = Duration::from_secs(2);
/// How long a found move stays readable under its job's name.
pub const RESULT_TTL_SECS: u64 = 600;
/// How many announcements `jg:{search}:results` keeps (approximately).
pub const RESULTS_KEPT: usize = 1_000;

/// A job as it travels: enough to rebuild the position and search it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireJob {
    pub rule_set: Variant,
    /// The game's own seed (the starting position of a space game).
    pub game_seed: u64,
    /// The moves so far, in the stored form.
    pub moves: Vec<String>,
    pub level: Level,
    /// The search's seed.
    pub seed: u64,
    pub ranked: bool,
    /// A practice search's time budget when nothing else waits; the
    /// searcher shares it out under load when the search starts (ranked
    /// searches ignore it).
    pub budget_ms: u64,
}

impl WireJob {
    /// The position to search.
    pub fn position(&self) -> Result<VariantGame, String> {
        let moves: Vec<&str> = self.moves.iter().map(String::as_str).collect();
        VariantGame::replay(self.rule_set, self.game_seed, DrawRules::Standard, &moves)
            .map(|(game, _)| game)
    }

    /// How to search it: ranked on the fixed node budget, anything else on
    /// its time budget.
    pub fn config(&self) -> BotConfig {
        if self.ranked && self.level == Level::Executive {
            return BotConfig::ranked_executive().with_seed(self.seed);
        }
        BotConfig::new(self.level)
            .with_seed(self.seed)
            .with_time_budget(Duration::from_millis(self.budget_ms).max(Duration::from_millis(1)))
    }
}

/// An answer as stored: the move, or empty when the search found none.
pub fn encode_answer(chosen: Option<&str>) -> String {
    chosen.unwrap_or_default().to_owned()
}

pub fn decode_answer(stored: String) -> Option<String> {
    (!stored.is_empty()).then_some(stored)
}

/// The instance's side of the job stream, shared by its solo games.
pub struct JobQueue {
    conn: RedisConn,
    /// This instance's own searcher threads: alive as long as it is, so
    /// counted before their first heartbeat is seen.
    own_threads: usize,
    executive_budget: Duration,
    max_wait: Duration,
    next_id: AtomicU64,
    state: Mutex<JobState>,
}

impl std::fmt::Debug for JobQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JobQueue { .. }")
    }
}

struct JobState {
    /// The games waiting for an answer, by job name.
    waiters: HashMap<String, Waiter>,
    view: QueueView,
}

struct Waiter {
    id: u64,
    level: Level,
    /// Its entry in the job stream, once added.
    entry: Option<String>,
    reply: oneshot::Sender<Option<String>>,
}

/// What the last refresh saw.
#[derive(Debug, Default)]
struct QueueView {
    /// Whether a refresh has succeeded yet (until then nobody is refused).
    seen: bool,
    /// Jobs not yet handed to a searcher, oldest first: entry id and level.
    undelivered: Vec<(String, Level)>,
    /// Jobs handed out and not yet finished.
    running: usize,
    /// Searcher threads alive.
    threads: usize,
    /// Recent search time per level (from the announcements).
    times: SearchTimes,
}

impl QueueView {
    /// How long a job of `level` waits behind `ahead` queued jobs and the
    /// running ones, then searches.
    fn estimate(&self, ahead: &[Level], level: Level) -> Duration {
        let own = self.times.of(level);
        let threads = self.threads.max(1);
        let idle = threads.saturating_sub(self.running);
        let before = if ahead.len() < idle {
            0.0
        } else {
            // A running search is on average half done.
            let running = self.running as f64 * self.times.of(Level::Executive) / 2.0;
            let queued: f64 = ahead.iter().map(|l| self.times.of(*l)).sum();
            (running + queued) / threads as f64
        };
        Duration::from_secs_f64((before + own) / 1000.0)
    }
}

impl JobQueue {
    /// The queue on `conn`; its background tasks (the announcement tail on
    /// `tail_conn`, a connection of its own since it blocks, and the
    /// refresher) stop when the queue is dropped.
    pub fn start(
        conn: RedisConn,
        tail_conn: RedisConn,
        own_threads: usize,
        block: Duration,
        executive_budget: Duration,
        max_wait: Duration,
    ) -> Arc<JobQueue> {
        let queue = Arc::new(JobQueue {
            conn,
            own_threads,
            executive_budget,
            max_wait,
            next_id: AtomicU64::new(1),
            state: Mutex::new(JobState {
                waiters: HashMap::new(),
                view: QueueView {
                    times: SearchTimes::new(executive_budget),
                    ..QueueView::default()
                },
            }),
        });
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(tail(Arc::downgrade(&queue), tail_conn, block));
            runtime.spawn(refresh(Arc::downgrade(&queue)));
        }
        queue
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, JobState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a new game against the computer may start (see the module).
    pub fn admit(&self, level: Level) -> Result<(), Busy> {
        let state = self.lock();
        let view = &state.view;
        if !view.seen {
            return Ok(());
        }
        if view.threads == 0 {
            crate::metrics::METRICS.search_refusals.inc();
            return Err(Busy::NoSearchers);
        }
        let ahead: Vec<Level> = view.undelivered.iter().map(|(_, l)| *l).collect();
        let own = Duration::from_secs_f64(view.times.of(level) / 1000.0);
        let wait = view.estimate(&ahead, level).saturating_sub(own);
        if wait > self.max_wait {
            crate::metrics::METRICS.search_refusals.inc();
            return Err(Busy::Wait(wait));
        }
        Ok(())
    }

    /// Adds a search to the stream; its answer arrives on the ticket.
    pub fn submit(self: &Arc<Self>, job: SearchJob) -> Ticket {
        let (reply, chosen) = oneshot::channel();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        {
            let mut state = self.lock();
            // A second ask for the same job (a game resumed here) replaces
            // the first: its ticket's game is gone.
            state.waiters.insert(
                job.key.clone(),
                Waiter {
                    id,
                    level: job.level,
                    entry: None,
                    reply,
                },
            );
        }
        let wire = WireJob {
            rule_set: job.rule_set,
            game_seed: job.game_seed,
            moves: job.moves,
            level: job.level,
            seed: job.seed,
            ranked: job.ranked,
            // The searcher shares it out when the search starts.
            budget_ms: self.executive_budget.as_millis() as u64,
        };
        let queue = self.clone();
        tokio::spawn(async move { queue.follow(job.key, id, wire).await });
        Ticket { id, chosen }
    }

    /// Where a ticket's job stands; `None` once answered.
    pub fn place(&self, id: u64) -> Option<SearchQueuePlace> {
        let state = self.lock();
        let waiter = state.waiters.values().find(|w| w.id == id)?;
        let view = &state.view;
        let at = match &waiter.entry {
            Some(entry) => view.undelivered.iter().position(|(e, _)| e == entry),
            None => Some(view.undelivered.len()),
        };
        let Some(at) = at else {
            // Being searched.
            return Some(SearchQueuePlace {
                ahead: 0,
                expected_ms: view.times.of(waiter.level).round() as u64,
            });
        };
        let ahead: Vec<Level> = view.undelivered[..at].iter().map(|(_, l)| *l).collect();
        Some(SearchQueuePlace {
            // Not started: it waits for the queued ones and the running ones
            // (at most one a searcher: jobs pending on a dead one do not count).
            ahead: (at + view.running.min(view.threads)) as u32,
            expected_ms: view.estimate(&ahead, waiter.level).as_millis() as u64,
        })
    }

    /// Whether the ticket `id` still waits for `key`. A game that went away
    /// closed its ticket: it is forgotten, and the job's entry (if any) is
    /// returned so that it can be taken off the stream.
    fn still_waiting(&self, key: &str, id: u64) -> Result<(), Option<String>> {
        let mut state = self.lock();
        match state.waiters.get(key) {
            Some(w) if w.id == id && !w.reply.is_closed() => Ok(()),
            Some(w) if w.id == id => Err(state.waiters.remove(key).and_then(|w| w.entry)),
            _ => Err(None),
        }
    }

    /// Hands `key`'s answer to its waiter, if it still has one.
    fn deliver(&self, key: &str, chosen: Option<String>) {
        let waiter = self.lock().waiters.remove(key);
        if let Some(waiter) = waiter {
            let _ = waiter.reply.send(chosen);
        }
    }

    /// Keeps one job alive until it is answered: reads the answer back,
    /// adds the job if it is not (or no longer) in the stream.
    async fn follow(self: Arc<Self>, key: String, id: u64, wire: WireJob) {
        let Ok(payload) = serde_json::to_string(&wire) else {
            self.deliver(&key, None);
            return;
        };
        let result_key = search_result_key(&key);
        let mut conn = self.conn.clone();
        loop {
            if let Err(abandoned) = self.still_waiting(&key, id) {
                // Nobody wants it any more: not searched unless already begun.
                if let Some(entry) = abandoned {
                    let _: redis::RedisResult<()> = redis::cmd("XDEL")
                        .arg(SEARCH_JOBS)
                        .arg(&entry)
                        .query_async(&mut conn)
                        .await;
                }
                return;
            }
            let entry = self.lock().waiters.get(&key).and_then(|w| w.entry.clone());
            let mut pipe = redis::pipe();
            pipe.get(&result_key);
            if let Some(entry) = &entry {
                pipe.cmd("XRANGE").arg(SEARCH_JOBS).arg(entry).arg(entry);
            }
            let read: redis::RedisResult<(Option<String>, Option<StreamRangeReply>)> =
                if entry.is_some() {
                    pipe.query_async(&mut conn).await
                } else {
                    pipe.query_async::<(Option<String>,)>(&mut conn)
                        .await
                        .map(|(answer,)| (answer, None))
                };
            match read {
                Ok((Some(answer), _)) => {
                    self.deliver(&key, decode_answer(answer));
                    return;
                }
                // Still queued or being searched.
                Ok((None, Some(range))) if !range.ids.is_empty() => {}
                Ok((None, _)) => {
                    // Not in the stream (not added yet, or lost): add it.
                    // Adding it twice is harmless: the answer is written once.
                    let added: redis::RedisResult<String> = redis::cmd("XADD")
                        .arg(SEARCH_JOBS)
                        .arg("*")
                        .arg("key")
                        .arg(&key)
                        .arg("level")
                        .arg(wire.level.name())
                        .arg("job")
                        .arg(&payload)
                        .query_async(&mut conn)
                        .await;
                    match added {
                        Ok(added) => {
                            if let Some(w) = self.lock().waiters.get_mut(&key)
                                && w.id == id
                            {
                                w.entry = Some(added);
                            }
                        }
                        Err(e) => {
                            tracing::warn!(job = %key, error = %e, "cannot queue a search; trying again");
                            tokio::time::sleep(Duration::from_millis(500)).await;
                            continue;
                        }
                    }
                }
                Err(e) => {
                    tracing::debug!(job = %key, error = %e, "cannot read a search's answer yet");
                }
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

/// Reads the announcements of finished searches and hands them to their
/// waiters, for as long as the queue exists.
async fn tail(queue: Weak<JobQueue>, mut conn: RedisConn, block: Duration) {
    let mut last: Option<String> = None;
    loop {
        if queue.upgrade().is_none() {
            return;
        }
        let Some(from) = last.clone() else {
            let newest: redis::RedisResult<StreamRangeReply> = redis::cmd("XREVRANGE")
                .arg(SEARCH_RESULTS)
                .arg("+")
                .arg("-")
                .arg("COUNT")
                .arg(1)
                .query_async(&mut conn)
                .await;
            match newest {
                Ok(newest) => {
                    last = Some(
                        newest
                            .ids
                            .first()
                            .map_or_else(|| "0-0".to_owned(), |e| e.id.clone()),
                    )
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
            }
            continue;
        };
        let read: redis::RedisResult<Option<StreamReadReply>> = redis::cmd("XREAD")
            .arg("COUNT")
            .arg(100)
            .arg("BLOCK")
            .arg(block.as_millis() as u64)
            .arg("STREAMS")
            .arg(SEARCH_RESULTS)
            .arg(&from)
            .query_async(&mut conn)
            .await;
        let Some(queue) = queue.upgrade() else { return };
        match read {
            Ok(Some(reply)) => {
                for entry in reply.keys.into_iter().flat_map(|k| k.ids) {
                    last = Some(entry.id.clone());
                    let (Some(key), Some(chosen)) =
                        (entry.get::<String>("key"), entry.get::<String>("chosen"))
                    else {
                        continue;
                    };
                    if let (Some(level), Some(ms)) = (
                        entry
                            .get::<String>("level")
                            .and_then(|l| l.parse::<Level>().ok()),
                        entry.get::<f64>("ms"),
                    ) {
                        queue.lock().view.times.record(level, ms);
                    }
                    queue.deliver(&key, decode_answer(chosen));
                }
            }
            Ok(None) => {}
            Err(e) => {
                tracing::debug!(error = %e, "cannot read search announcements; trying again");
                drop(queue);
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

/// Reads the queue's state every [`REFRESH`], for as long as the queue exists.
async fn refresh(queue: Weak<JobQueue>) {
    loop {
        let Some(strong) = queue.upgrade() else {
            return;
        };
        let mut conn = strong.conn.clone();
        drop(strong);
        if let Ok(view) = read_view(&mut conn).await
            && let Some(queue) = queue.upgrade()
        {
            let m = &crate::metrics::METRICS;
            m.search_workers_alive.set(view.threads as i64);
            for level in Level::ALL {
                let n = view.undelivered.iter().filter(|(_, l)| *l == level).count();
                m.search_queue_depth
                    .with_label_values(&[level.name()])
                    .set(n as i64);
            }
            let mut state = queue.lock();
            let times = state.view.times;
            state.view = QueueView {
                seen: true,
                times,
                threads: view.threads.max(queue.own_threads),
                ..view
            };
        }
        let busy = queue
            .upgrade()
            .is_some_and(|q| !q.lock().waiters.is_empty());
        tokio::time::sleep(if busy { REFRESH } else { IDLE_REFRESH }).await;
    }
}

/// How many threads the live heartbeats in `jg:{search}:workers` declare.
pub async fn live_threads(conn: &mut RedisConn) -> redis::RedisResult<usize> {
    let now = crate::sync::now_ms();
    let members: Vec<String> = redis::cmd("ZRANGE")
        .arg(SEARCH_WORKERS)
        .arg(now)
        .arg("+inf")
        .arg("BYSCORE")
        .query_async(conn)
        .await?;
    Ok(members
        .iter()
        .filter_map(|m| m.rsplit_once('|')?.1.parse::<usize>().ok())
        .sum())
}

async fn read_view(conn: &mut RedisConn) -> redis::RedisResult<QueueView> {
    let threads = live_threads(conn).await?;
    let groups: redis::RedisResult<StreamInfoGroupsReply> = redis::cmd("XINFO")
        .arg("GROUPS")
        .arg(SEARCH_JOBS)
        .query_async(conn)
        .await;
    // No stream or no group yet: nothing queued.
    let Some(group) = groups
        .ok()
        .and_then(|g| g.groups.into_iter().find(|g| g.name == SEARCH_GROUP))
    else {
        return Ok(QueueView {
            threads,
            ..QueueView::default()
        });
    };
    let waiting: StreamRangeReply = redis::cmd("XRANGE")
        .arg(SEARCH_JOBS)
        .arg(format!("({}", group.last_delivered_id))
        .arg("+")
        .arg("COUNT")
        .arg(1_000)
        .query_async(conn)
        .await?;
    let undelivered = waiting
        .ids
        .iter()
        .map(|e| {
            // A job added by an earlier version has no `level` field: read
            // from the job itself; an Executive if neither says (the costliest).
            let level = e
                .get::<String>("level")
                .and_then(|l| l.parse::<Level>().ok())
                .or_else(|| {
                    e.get::<String>("job")
                        .and_then(|j| serde_json::from_str::<WireJob>(&j).ok())
                        .map(|j| j.level)
                })
                .unwrap_or(Level::Executive);
            (e.id.clone(), level)
        })
        .collect();
    Ok(QueueView {
        seen: true,
        undelivered,
        running: group.pending,
        threads,
        times: SearchTimes::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::RuleSet;

    #[test]
    fn a_job_rebuilds_its_position_and_keeps_ranked_on_nodes() {
        let job = WireJob {
            rule_set: Variant::Draughts(RuleSet::Russian),
            game_seed: 3,
            moves: vec![],
            level: Level::Executive,
            seed: 9,
            ranked: true,
            budget_ms: 250,
        };
        let text = serde_json::to_string(&job).unwrap();
        let back: WireJob = serde_json::from_str(&text).unwrap();
        assert_eq!(back, job);
        assert!(back.position().is_ok());
        assert_eq!(
            format!("{:?}", back.config()),
            format!("{:?}", BotConfig::ranked_executive().with_seed(9))
        );
        let practice = WireJob {
            ranked: false,
            ..job
        };
        assert_eq!(
            format!("{:?}", practice.config()),
            format!(
                "{:?}",
                BotConfig::new(Level::Executive)
                    .with_seed(9)
                    .with_time_budget(Duration::from_millis(250))
            )
        );
    }

    fn job(key: &str) -> SearchJob {
        let rule_set = Variant::Draughts(RuleSet::Russian);
        SearchJob {
            key: key.to_owned(),
            game: VariantGame::new(rule_set, 1),
            rule_set,
            game_seed: 1,
            moves: Vec::new(),
            level: Level::Warden,
            seed: 1,
            ranked: false,
        }
    }

    /// No Redis answers here: only the hand-over to waiters is tested.
    fn unreachable_queue() -> Arc<JobQueue> {
        let conn = || {
            crate::store::redis_connection("redis://127.0.0.1:1", Duration::from_millis(50))
                .unwrap()
        };
        JobQueue::start(
            conn(),
            conn(),
            1,
            Duration::from_millis(20),
            Duration::from_millis(100),
            Duration::from_secs(10),
        )
    }

    #[tokio::test]
    async fn an_answer_reaches_its_own_ply_once_and_a_stale_or_duplicate_one_nobody() {
        let queue = unreachable_queue();
        let ticket = queue.submit(job("SGAME:4"));
        assert!(queue.place(ticket.id).is_some());
        // An answer for an earlier ply of the same game is nobody's.
        queue.deliver("SGAME:3", Some("a1-b2".to_owned()));
        queue.deliver("SGAME:4", Some("c3-d4".to_owned()));
        // A duplicate announcement finds no waiter.
        queue.deliver("SGAME:4", Some("e3-f4".to_owned()));
        assert_eq!(ticket.chosen.await.unwrap(), Some("c3-d4".to_owned()));
        assert_eq!(queue.place(ticket.id), None);
    }

    #[tokio::test]
    async fn asking_again_for_the_same_job_replaces_the_first_ticket() {
        let queue = unreachable_queue();
        let first = queue.submit(job("SGAME:2"));
        let second = queue.submit(job("SGAME:2"));
        queue.deliver("SGAME:2", Some("c3-d4".to_owned()));
        assert!(
            first.chosen.await.is_err(),
            "the first ticket's game is gone"
        );
        assert_eq!(second.chosen.await.unwrap(), Some("c3-d4".to_owned()));
    }

    #[test]
    fn an_empty_answer_means_no_move() {
        assert_eq!(decode_answer(encode_answer(None)), None);
        assert_eq!(
            decode_answer(encode_answer(Some("11-15"))),
            Some("11-15".to_owned())
        );
    }
}
