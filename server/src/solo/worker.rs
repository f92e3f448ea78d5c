//! A searcher of the Redis job stream (see `jobs`): `jumpgate bot-worker`
//! runs one, and so does every instance with Redis and `--bot-threads` above
//! zero. Each thread takes one job at a time through the consumer group,
//! oldest first, and:
//!
//! 1. skips it if its move is already written (a duplicate);
//! 2. rebuilds the position from the job alone and searches it;
//! 3. writes the move once under the job's name (`SET NX`), announces it
//!    only if it was the first to write it, then acknowledges and deletes
//!    the job.
//!
//! A job left pending longer than `reclaim_after` (its searcher died or
//! froze) is taken over by the next free thread (`XAUTOCLAIM`), before any
//! new job: the oldest work goes first. A frozen searcher that wakes up
//! and finishes is harmless: its move is not the first written, so it is
//! dropped. The searchers' heartbeats (`jg:{search}:workers`) tell
//! instances how many threads are alive.
//!
//! Stopped (SIGTERM, as in a rolling update), a searcher removes its
//! heartbeat (instances stop counting it), takes no new job once its
//! current read returns (within a second; a job that read brings is
//! searched too), finishes and hands in the searches it has started, then
//! removes its consumers from the group. A consumer left behind by a
//! killed process, idle an hour with nothing pending, is removed by any
//! live searcher.

use std::time::Duration;

use redis::streams::{StreamAutoClaimReply, StreamId, StreamReadReply};

use super::jobs::{RESULT_TTL_SECS, RESULTS_KEPT, WireJob, encode_answer};
use super::pool::practice_share;
use crate::bots;
use crate::store::keys::{
    SEARCH_GROUP, SEARCH_JOBS, SEARCH_RESULTS, SEARCH_WORKERS, search_result_key,
};
use crate::store::{RedisConn, redis_connection};

/// How often a searcher renews its heartbeat; it lapses after three.
pub const HEARTBEAT: Duration = Duration::from_secs(2);
/// The default idle time after which a pending job is taken over.
pub const RECLAIM_AFTER: Duration = Duration::from_secs(10);
/// A consumer this idle with nothing pending belonged to a process that is
/// gone (a live one reads at least every second): it is removed.
const STALE_CONSUMER: Duration = Duration::from_secs(3600);
/// How many heartbeats apart the stale consumers are looked for.
const SWEEP_EVERY_BEATS: u32 = 30;

/// How a searcher runs.
#[derive(Debug, Clone)]
pub struct SearcherSettings {
    pub redis_url: String,
    pub redis_timeout: Duration,
    /// Searches at once (one Redis connection each).
    pub threads: usize,
    /// Its name in the consumer group and heartbeats (unique per process).
    pub name: String,
    /// A pending job idle this long is taken over.
    pub reclaim_after: Duration,
}

/// How long a blocking read waits: under the command timeout.
pub fn block_time(redis_timeout: Duration) -> Duration {
    (redis_timeout / 2).clamp(Duration::from_millis(50), Duration::from_secs(1))
}

/// Creates the job stream and its consumer group if they do not exist.
pub async fn ensure_group(conn: &mut RedisConn) -> redis::RedisResult<()> {
    let created: redis::RedisResult<()> = redis::cmd("XGROUP")
        .arg("CREATE")
        .arg(SEARCH_JOBS)
        .arg(SEARCH_GROUP)
        .arg("0")
        .arg("MKSTREAM")
        .query_async(conn)
        .await;
    match created {
        Err(e) if e.code() == Some("BUSYGROUP") => Ok(()),
        other => other,
    }
}

/// Runs the searcher's threads and heartbeat until `stop` completes, then
/// finishes the searches under way and leaves the group (see the module).
pub async fn run(
    settings: SearcherSettings,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    let mut conn =
        redis_connection(&settings.redis_url, settings.redis_timeout).map_err(|e| e.to_string())?;
    let (stopping, stopped) = tokio::sync::watch::channel(false);
    let mut threads = tokio::task::JoinSet::new();
    for thread in 0..settings.threads {
        let conn = redis_connection(&settings.redis_url, settings.redis_timeout)
            .map_err(|e| e.to_string())?;
        threads.spawn(searcher(conn, settings.clone(), thread, stopped.clone()));
    }
    let beating = tokio::spawn(heartbeat(conn.clone(), settings.clone()));
    tracing::info!(name = %settings.name, threads = settings.threads, "searching jobs");
    let mut leaving = conn.clone();
    let member = format!("{}|{}", settings.name, settings.threads);
    tokio::spawn(async move {
        stop.await;
        let _ = stopping.send(true);
        // Instances stop counting it at once, so they queue nothing more for
        // it while it finishes.
        beating.abort();
        let _ = beating.await;
        let _: redis::RedisResult<()> = redis::cmd("ZREM")
            .arg(SEARCH_WORKERS)
            .arg(&member)
            .query_async(&mut leaving)
            .await;
    });
    while threads.join_next().await.is_some() {}
    leave(&mut conn, &settings).await;
    Ok(())
}

/// Removes this searcher's consumers from the group, each only if it
/// holds no pending job (deleting a consumer drops its pending entries,
/// which would strand them).
async fn leave(conn: &mut RedisConn, settings: &SearcherSettings) {
    let mut kept = 0;
    for thread in 0..settings.threads {
        let consumer = format!("{}-{thread}", settings.name);
        if !matches!(remove_consumer_if_idle(conn, &consumer).await, Ok(true)) {
            kept += 1;
        }
    }
    tracing::info!(name = %settings.name, kept_pending = kept, "searcher stopped");
}

/// Deletes `consumer` from the group if it has no pending job; true when
/// it is gone. One script, so that no read can give it a job between the
/// check and the delete.
async fn remove_consumer_if_idle(conn: &mut RedisConn, consumer: &str) -> redis::RedisResult<bool> {
    static SCRIPT: std::sync::LazyLock<redis::Script> = std::sync::LazyLock::new(|| {
        redis::Script::new(
            r"
            if #redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2]) > 0 then
                return 0
            end
            redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
            return 1
            ",
        )
    });
    let removed: i64 = SCRIPT
        .key(SEARCH_JOBS)
        .arg(SEARCH_GROUP)
        .arg(consumer)
        .invoke_async(conn)
        .await?;
    Ok(removed == 1)
}

/// Removes consumers idle past `STALE_CONSUMER` with nothing pending: the
/// names of killed processes, which would otherwise pile up in the group.
async fn sweep_stale_consumers(conn: &mut RedisConn) -> redis::RedisResult<usize> {
    let info: redis::streams::StreamInfoConsumersReply = redis::cmd("XINFO")
        .arg("CONSUMERS")
        .arg(SEARCH_JOBS)
        .arg(SEARCH_GROUP)
        .query_async(conn)
        .await?;
    let mut removed = 0;
    for consumer in info.consumers {
        if consumer.pending == 0
            && consumer.idle as u128 > STALE_CONSUMER.as_millis()
            && remove_consumer_if_idle(conn, &consumer.name).await?
        {
            removed += 1;
        }
    }
    Ok(removed)
}

/// Keeps `NAME|THREADS` in the heartbeat set, expiring three beats ahead,
/// and now and then sweeps stale consumers.
async fn heartbeat(mut conn: RedisConn, settings: SearcherSettings) {
    let member = format!("{}|{}", settings.name, settings.threads);
    let mut beats: u32 = 0;
    loop {
        let now = crate::sync::now_ms();
        let expires = now + 3 * HEARTBEAT.as_millis() as u64;
        let beat: redis::RedisResult<()> = redis::pipe()
            .cmd("ZADD")
            .arg(SEARCH_WORKERS)
            .arg(expires)
            .arg(&member)
            .ignore()
            .cmd("ZREMRANGEBYSCORE")
            .arg(SEARCH_WORKERS)
            .arg("-inf")
            .arg(format!("({now}"))
            .ignore()
            .query_async(&mut conn)
            .await;
        if let Err(e) = beat {
            tracing::warn!(error = %e, "cannot renew the searcher heartbeat");
        }
        beats = beats.wrapping_add(1);
        if beats % SWEEP_EVERY_BEATS == 1 {
            match sweep_stale_consumers(&mut conn).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(removed = n, "removed consumers of searchers long gone"),
                Err(e) => tracing::debug!(error = %e, "cannot sweep stale consumers"),
            }
        }
        tokio::time::sleep(HEARTBEAT).await;
    }
}

/// One searcher thread: reclaimed jobs first, then new ones.
/// A read is never cancelled (its job would be left pending on a consumer
/// that is leaving): `stopped` is looked at between reads.
async fn searcher(
    mut conn: RedisConn,
    settings: SearcherSettings,
    thread: usize,
    stopped: tokio::sync::watch::Receiver<bool>,
) {
    let consumer = format!("{}-{thread}", settings.name);
    let block = block_time(settings.redis_timeout);
    let mut grouped = false;
    while !*stopped.borrow() {
        if !grouped {
            match ensure_group(&mut conn).await {
                Ok(()) => grouped = true,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot reach the search jobs; trying again");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            }
        }
        match next_job(&mut conn, &consumer, settings.reclaim_after, block).await {
            Ok(Some(entry)) => work(&mut conn, entry).await,
            Ok(None) => {}
            Err(e) => {
                // NOGROUP: Redis lost the group (a restart without
                // persistence); it is made again.
                grouped = false;
                tracing::debug!(error = %e, "cannot read search jobs; trying again");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

/// The oldest job idle past `reclaim_after`, else the next new one (waiting
/// up to `block` for it).
async fn next_job(
    conn: &mut RedisConn,
    consumer: &str,
    reclaim_after: Duration,
    block: Duration,
) -> redis::RedisResult<Option<StreamId>> {
    let claimed: StreamAutoClaimReply = redis::cmd("XAUTOCLAIM")
        .arg(SEARCH_JOBS)
        .arg(SEARCH_GROUP)
        .arg(consumer)
        .arg(reclaim_after.as_millis() as u64)
        .arg("0-0")
        .arg("COUNT")
        .arg(1)
        .query_async(conn)
        .await?;
    if let Some(entry) = claimed.claimed.into_iter().next() {
        tracing::warn!(job = ?entry.get::<String>("key"), "took over a search whose searcher stopped answering");
        crate::metrics::METRICS.search_jobs_reclaimed.inc();
        return Ok(Some(entry));
    }
    let read: Option<StreamReadReply> = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg(SEARCH_GROUP)
        .arg(consumer)
        .arg("COUNT")
        .arg(1)
        .arg("BLOCK")
        .arg(block.as_millis() as u64)
        .arg("STREAMS")
        .arg(SEARCH_JOBS)
        .arg(">")
        .query_async(conn)
        .await?;
    Ok(read.and_then(|r| r.keys.into_iter().flat_map(|k| k.ids).next()))
}

/// Searches one job and hands its move in (see the module).
async fn work(conn: &mut RedisConn, entry: StreamId) {
    let key = entry.get::<String>("key").unwrap_or_default();
    let job = entry
        .get::<String>("job")
        .and_then(|j| serde_json::from_str::<WireJob>(&j).ok());
    let result_key = search_result_key(&key);
    let done = |conn: &mut RedisConn| {
        let mut conn = conn.clone();
        let id = entry.id.clone();
        async move {
            let _: redis::RedisResult<()> = redis::pipe()
                .cmd("XACK")
                .arg(SEARCH_JOBS)
                .arg(SEARCH_GROUP)
                .arg(&id)
                .ignore()
                .cmd("XDEL")
                .arg(SEARCH_JOBS)
                .arg(&id)
                .ignore()
                .query_async(&mut conn)
                .await;
        }
    };
    let answered: redis::RedisResult<bool> = redis::cmd("EXISTS")
        .arg(&result_key)
        .query_async(conn)
        .await;
    if answered.unwrap_or(false) {
        done(conn).await;
        return;
    }
    let Some(job) = job else {
        tracing::warn!(job = %key, "dropping a search job that cannot be read");
        done(conn).await;
        return;
    };
    let mut job = job;
    if !job.ranked {
        job.budget_ms = shared_budget_ms(conn, job.budget_ms, &entry.id).await;
    }
    let level = job.level;
    let started = std::time::Instant::now();
    let chosen = tokio::task::spawn_blocking(move || {
        let game = job.position().ok()?;
        bots::choose_stored(&game, &job.config())
    })
    .await
    .ok()
    .flatten();
    let took = started.elapsed();
    let m = &crate::metrics::METRICS;
    m.bot_think_seconds
        .with_label_values(&[level.name()])
        .observe(took.as_secs_f64());
    m.searches.with_label_values(&[level.name()]).inc();
    let answer = encode_answer(chosen.as_deref());
    // Written once: a duplicate's or a late searcher's move loses here.
    let first: redis::RedisResult<Option<String>> = redis::cmd("SET")
        .arg(&result_key)
        .arg(&answer)
        .arg("NX")
        .arg("EX")
        .arg(RESULT_TTL_SECS)
        .query_async(conn)
        .await;
    match first {
        Ok(Some(_)) => {
            let announced: redis::RedisResult<String> = redis::cmd("XADD")
                .arg(SEARCH_RESULTS)
                .arg("MAXLEN")
                .arg("~")
                .arg(RESULTS_KEPT)
                .arg("*")
                .arg("key")
                .arg(&key)
                .arg("chosen")
                .arg(&answer)
                .arg("level")
                .arg(level.name())
                .arg("ms")
                .arg(took.as_millis() as u64)
                .query_async(conn)
                .await;
            // Unannounced, the waiter still reads the move back.
            if let Err(e) = announced {
                tracing::debug!(job = %key, error = %e, "search announcement failed");
            }
        }
        Ok(None) => {}
        Err(e) => {
            // Unknown whether it was written: the job stays pending, to be
            // taken over and searched again (the first move written wins).
            tracing::warn!(job = %key, error = %e, "cannot hand a search's move in");
            return;
        }
    }
    done(conn).await;
}

/// A practice search's budget at the moment it starts, as the local queue
/// works it out ([`practice_share`]): `waiting` is the jobs not yet handed
/// to a searcher, `threads` the searcher threads alive, and the time it
/// waited runs from the job's entry (its id is Redis's clock when it was
/// added) to Redis's clock now. The full budget when Redis cannot say.
async fn shared_budget_ms(conn: &mut RedisConn, budget_ms: u64, entry: &str) -> u64 {
    let counts: redis::RedisResult<(usize, redis::streams::StreamPendingReply, (u64, u64))> =
        redis::pipe()
            .cmd("XLEN")
            .arg(SEARCH_JOBS)
            .cmd("XPENDING")
            .arg(SEARCH_JOBS)
            .arg(SEARCH_GROUP)
            .cmd("TIME")
            .query_async(conn)
            .await;
    let Ok((queued, pending, (secs, micros))) = counts else {
        return budget_ms;
    };
    let Ok(threads) = super::jobs::live_threads(conn).await else {
        return budget_ms;
    };
    // Finished jobs are deleted: what is in the stream and not pending
    // waits for a searcher.
    let waiting = queued.saturating_sub(pending.count());
    let now_ms = secs * 1000 + micros / 1000;
    let added_ms = entry
        .split('-')
        .next()
        .and_then(|ms| ms.parse::<u64>().ok())
        .unwrap_or(now_ms);
    let waited = Duration::from_millis(now_ms.saturating_sub(added_ms));
    practice_share(Duration::from_millis(budget_ms), threads, waiting, waited).as_millis() as u64
}

/// `jumpgate bot-worker`: runs a searcher, and serves its metrics on
/// `metrics_listen` (`GET /metrics`) when given.
pub async fn serve_worker(
    settings: SearcherSettings,
    metrics_listen: Option<std::net::SocketAddr>,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    if let Some(addr) = metrics_listen {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let router = axum::Router::new().route(
            "/metrics",
            axum::routing::get(|| async {
                (
                    [(
                        axum::http::header::CONTENT_TYPE,
                        "text/plain; version=0.0.4",
                    )],
                    crate::metrics::METRICS.render(),
                )
            }),
        );
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, router).await {
                tracing::error!(error = %e, "the metrics listener stopped");
            }
        });
    }
    crate::metrics::METRICS
        .search_workers_alive
        .set(settings.threads as i64);
    run(settings, stop).await
}
