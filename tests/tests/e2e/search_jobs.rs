//! The computer's searches as Redis Stream jobs, with real processes:
//! instances that search nothing themselves (`--bot-threads 0`),
//! `jumpgate bot-worker` processes killed with SIGKILL, frozen, stopped
//! with SIGTERM or stalled by Redis in the middle of a search, games that
//! move to another instance while their job is out, and the order jobs are
//! served in.

use std::time::Duration;

use jumpgate_e2e::{BotWorkerProcess, JumpgateProcess, Player, RedisServer};
use jumpgate_protocol::{
    BotLevel, ClientMessage, Encoding, ErrorCode, RuleSet, ServerMessage, SoloMode, SoloState,
};

/// Jobs idle this long are taken over (short, so the tests are quick).
const RECLAIM_MS: &str = "1500";

/// An instance's environment: Redis, no searcher threads of its own.
fn instance_env(redis: &RedisServer, executive_ms: u64) -> Vec<(&'static str, String)> {
    vec![
        ("JUMPGATE_REDIS_URL", redis.url()),
        ("JUMPGATE_BOT_THREADS", "0".to_owned()),
        ("JUMPGATE_SEARCH_RECLAIM_MS", RECLAIM_MS.to_owned()),
        ("JUMPGATE_EXECUTIVE_MS", executive_ms.to_string()),
        ("JUMPGATE_HEARTBEAT_TTL_MS", "1000".to_owned()),
    ]
}

/// [`instance_env`] for a test that stalls Redis: the default ownership
/// lease, which outlasts the pause.
fn stall_env(redis: &RedisServer, executive_ms: u64) -> Vec<(&'static str, String)> {
    let mut env = instance_env(redis, executive_ms);
    env.retain(|(k, _)| *k != "JUMPGATE_HEARTBEAT_TTL_MS");
    env
}

/// A worker whose Redis commands time out after 300 ms, well inside a stall.
async fn stalled_worker(redis: &RedisServer) -> BotWorkerProcess {
    BotWorkerProcess::start(
        "stalled",
        &redis.url(),
        1,
        &[
            ("JUMPGATE_SEARCH_RECLAIM_MS", RECLAIM_MS.to_owned()),
            ("JUMPGATE_REDIS_TIMEOUT_MS", "300".to_owned()),
        ],
    )
    .await
}

async fn worker(name: &str, redis: &RedisServer, threads: usize) -> BotWorkerProcess {
    BotWorkerProcess::start(
        name,
        &redis.url(),
        threads,
        &[("JUMPGATE_SEARCH_RECLAIM_MS", RECLAIM_MS.to_owned())],
    )
    .await
}

/// Waits (up to 5 s) until the searcher `name` has written its heartbeat:
/// a worker serves its metrics a moment before its first heartbeat lands.
async fn wait_for_heartbeat(redis: &RedisServer, name: &str) {
    let mut tries = 0;
    while !redis
        .values(&["ZRANGE", "jg:{search}:workers", "0", "-1"])
        .await
        .iter()
        .any(|member| member.split('|').next() == Some(name))
    {
        tries += 1;
        assert!(tries < 100, "the worker {name} never wrote its heartbeat");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Jobs handed to a searcher and not yet finished.
async fn pending(redis: &RedisServer) -> u64 {
    redis
        .values(&["XPENDING", "jg:{search}:jobs", "searchers"])
        .await
        .first()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Waits (up to 5 s) until a searcher has taken a job: one is pending.
async fn wait_until_taken(redis: &RedisServer) {
    let mut tries = 0;
    while pending(redis).await == 0 {
        tries += 1;
        assert!(tries < 100, "the worker never took the job");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits (up to 10 s) until no job is pending: every search taken was
/// finished and acknowledged.
async fn wait_until_finished(redis: &RedisServer) {
    let mut tries = 0;
    while pending(redis).await != 0 {
        tries += 1;
        assert!(tries < 200, "a job was never finished");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The job names of the finished searches, in the order they finished.
async fn finished_jobs(redis: &RedisServer) -> Vec<String> {
    let v = redis
        .values(&["XRANGE", "jg:{search}:results", "-", "+"])
        .await;
    // id, then field/value pairs: key, chosen, level, ms.
    v.chunks(9)
        .filter_map(|entry| {
            let at = entry.iter().position(|f| f == "key")?;
            entry.get(at + 1).cloned()
        })
        .collect()
}

async fn start_solo(
    p: &mut Player,
    rule_set: RuleSet,
    level: BotLevel,
) -> Result<SoloState, ErrorCode> {
    let seq = p
        .send(|seq| ClientMessage::StartSolo {
            seq,
            rule_set,
            mode: SoloMode::Computer,
            level: Some(level),
            ranked: false,
        })
        .await;
    loop {
        match p.recv().await {
            ServerMessage::Error {
                seq: Some(s), code, ..
            } if s == seq => return Err(code),
            ServerMessage::Ack { seq: s } if s == seq => break,
            _ => {}
        }
    }
    Ok(my_turn(p).await)
}

/// [`start_solo`], again while it is refused `computer_busy` because the
/// instance has not yet seen the worker just started (it reads the
/// searchers' heartbeats every 2 s while none of its games waits).
async fn start_admitted(p: &mut Player, rule_set: RuleSet, level: BotLevel) -> SoloState {
    for _ in 0..80 {
        match start_solo(p, rule_set, level).await {
            Ok(s) => return s,
            Err(ErrorCode::ComputerBusy) => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(code) => panic!("refused: {code:?}"),
        }
    }
    panic!("never admitted");
}

/// The next state where the player is to move (or the game is over).
async fn my_turn(p: &mut Player) -> SoloState {
    p.solo_until(|s| !s.thinking && (!s.game.legal_moves.is_empty() || s.game.result.is_some()))
        .await
}

/// Plays the first legal move; returns the ply after it.
async fn play(p: &mut Player, s: &SoloState) -> u32 {
    let text = s.game.legal_moves[0].notation.clone();
    let seq = p
        .send(|seq| ClientMessage::Move {
            seq,
            notation: Some(text),
            path: None,
        })
        .await;
    p.expect_ack(seq).await;
    s.game.ply + 1
}

/// The state now, asked for (so nothing queued earlier is mistaken for it).
async fn current(p: &mut Player) -> SoloState {
    p.request(|seq| ClientMessage::Resync { seq, since: 0 })
        .await
        .unwrap();
    p.solo_until(|_| true).await
}

/// A worker killed with SIGKILL while it searches: its job is taken over by
/// another worker after the reclaim time and searched again, and the game
/// gets exactly one computer move, at the ply it asked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_search_is_replaced_and_the_game_gets_one_move() {
    let redis = RedisServer::start().await;
    // Space games have no opening book: every Executive move is a search
    // of the whole time budget.
    let instance = JumpgateProcess::start(&instance_env(&redis, 4_000)).await;
    let mut doomed = worker("doomed", &redis, 1).await;
    let mut p = Player::connect_to(&instance, Encoding::Json, None).await;
    let s = start_admitted(&mut p, RuleSet::Space, BotLevel::Executive).await;
    let asked_at = play(&mut p, &s).await;
    // The doomed worker has taken the job and searches it.
    wait_until_taken(&redis).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    doomed.kill_9();
    assert!(finished_jobs(&redis).await.is_empty(), "killed mid-search");
    let rescuer = worker("rescuer", &redis, 1).await;
    let s = my_turn(&mut p).await;
    assert_eq!(s.game.ply, asked_at + 1, "one computer move");
    assert!(rescuer.metric("jumpgate_search_jobs_reclaimed_total").await >= 1.0);
    let jobs = finished_jobs(&redis).await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert!(jobs[0].starts_with(&format!("{}:", s.id)), "{jobs:?}");
    // Nothing more arrives: no second search of the job, no second move.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let now = current(&mut p).await;
    assert_eq!(now.game.ply, asked_at + 1);
    assert_eq!(now.version, s.version);
    assert_eq!(finished_jobs(&redis).await.len(), 1);
    assert_eq!(pending(&redis).await, 0);
}

/// A worker frozen (SIGSTOP) in the middle of a search: another takes
/// its job over and answers; when the frozen one wakes and finishes, its
/// move is not the first written, so it is dropped: one announcement, one
/// computer move.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_worker_that_wakes_after_its_job_was_taken_over_changes_nothing() {
    let redis = RedisServer::start().await;
    let instance = JumpgateProcess::start(&instance_env(&redis, 3_000)).await;
    let frozen = worker("frozen", &redis, 1).await;
    let mut p = Player::connect_to(&instance, Encoding::Json, None).await;
    let s = start_admitted(&mut p, RuleSet::Space, BotLevel::Executive).await;
    let asked_at = play(&mut p, &s).await;
    wait_until_taken(&redis).await;
    frozen.signal("STOP");
    let _rescuer = worker("rescuer", &redis, 1).await;
    let s = my_turn(&mut p).await;
    assert_eq!(s.game.ply, asked_at + 1);
    frozen.signal("CONT");
    // It finishes the search it was in (or, frozen just before it began,
    // the whole search) and tries to hand its move in.
    let mut tries = 0;
    while frozen.metric("jumpgate_searches_total").await < 1.0 {
        tries += 1;
        assert!(tries < 200, "the woken worker never finished its search");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let now = current(&mut p).await;
    assert_eq!((now.game.ply, now.version), (s.game.ply, s.version));
    let jobs = finished_jobs(&redis).await;
    assert_eq!(jobs.len(), 1, "announced once: {jobs:?}");
    assert_eq!(pending(&redis).await, 0);
}

/// A worker stopped with SIGTERM (a rolling update) in the middle of a
/// search finishes it and hands the move in before it exits: the game gets
/// its move from it, with no other searcher running and nothing left to
/// take over; it leaves no heartbeat and no consumer behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_stopped_mid_search_hands_its_move_in_and_leaves_the_group() {
    let redis = RedisServer::start().await;
    let instance = JumpgateProcess::start(&instance_env(&redis, 2_000)).await;
    let mut leaving = worker("leaving", &redis, 2).await;
    let mut p = Player::connect_to(&instance, Encoding::Json, None).await;
    let s = start_admitted(&mut p, RuleSet::Space, BotLevel::Executive).await;
    let asked_at = play(&mut p, &s).await;
    wait_until_taken(&redis).await;
    leaving.signal("TERM");
    let s = my_turn(&mut p).await;
    assert_eq!(s.game.ply, asked_at + 1, "its move arrived");
    let mut status = None;
    for _ in 0..100 {
        status = leaving.try_wait();
        if status.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(status.expect("it exits").success(), "{status:?}");
    assert_eq!(finished_jobs(&redis).await.len(), 1);
    assert_eq!(pending(&redis).await, 0);
    let beats = redis
        .values(&["ZRANGE", "jg:{search}:workers", "0", "-1"])
        .await;
    assert!(beats.is_empty(), "heartbeat left: {beats:?}");
    let consumers = redis
        .command(&["XINFO", "CONSUMERS", "jg:{search}:jobs", "searchers"])
        .await;
    assert!(
        !consumers.contains("leaving"),
        "consumer left: {consumers:?}"
    );
    // With no searcher left, a new game is refused (the instance reads the
    // heartbeats every 2 s while none of its games waits).
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    let mut q = Player::connect_to(&instance, Encoding::Json, None).await;
    assert_eq!(
        start_solo(&mut q, RuleSet::Space, BotLevel::Executive)
            .await
            .err(),
        Some(ErrorCode::ComputerBusy),
        "the instance still counts the worker that left"
    );
}

/// Redis stalls (`CLIENT PAUSE`, longer than the worker's command timeout)
/// just as the worker writes its move: the write's outcome is unknown to
/// it (Redis runs it when the pause ends), so it neither announces nor
/// acknowledges; the job is taken over after the reclaim time, found
/// answered and dropped without a second search; the game reads the move
/// back and gets it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_stall_while_the_worker_hands_its_move_in_gives_one_move() {
    let redis = RedisServer::start().await;
    // The instance keeps its default ownership lease, which outlasts the
    // pause: only the worker's writes are in question here.
    let instance = JumpgateProcess::start(&stall_env(&redis, 1_500)).await;
    let stalled = stalled_worker(&redis).await;
    let mut p = Player::connect_to(&instance, Encoding::Json, None).await;
    let s = start_admitted(&mut p, RuleSet::Space, BotLevel::Executive).await;
    let asked_at = play(&mut p, &s).await;
    wait_until_taken(&redis).await;
    // The timed search ends 0.75-1.5 s after it began: inside the pause.
    tokio::time::sleep(Duration::from_millis(300)).await;
    redis.pause(2_000).await;
    let s = my_turn(&mut p).await;
    assert_eq!(s.game.ply, asked_at + 1, "one computer move");
    wait_until_finished(&redis).await;
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let now = current(&mut p).await;
    assert_eq!((now.game.ply, now.version), (s.game.ply, s.version));
    assert_eq!(
        stalled.metric("jumpgate_searches_total").await,
        1.0,
        "searched once: the answer written in the pause was found"
    );
    assert!(stalled.metric("jumpgate_search_jobs_reclaimed_total").await >= 1.0);
    assert!(finished_jobs(&redis).await.len() <= 1);
}

/// Redis stalls (`CLIENT PAUSE`, longer than every process's command
/// timeout) at moments spread over a move against the computer: while the
/// move is stored, while the instance queues its search (`XADD`), while
/// the worker takes the job, searches it, writes its answer, announces
/// and acknowledges it. Whatever a stall cut, each stored human move gets
/// exactly one computer reply, at the ply after it; no job is announced
/// twice, and none is left pending or queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_stalls_anywhere_in_a_computer_move_give_one_reply_per_move() {
    let redis = RedisServer::start().await;
    // Default ownership lease (it outlasts a pause); short command timeouts.
    let mut env = stall_env(&redis, 300);
    env.push(("JUMPGATE_REDIS_TIMEOUT_MS", "300".to_owned()));
    let instance = JumpgateProcess::start(&env).await;
    let _worker = stalled_worker(&redis).await;
    let mut p = Player::connect_to(&instance, Encoding::Json, None).await;
    let mut s = start_admitted(&mut p, RuleSet::Space, BotLevel::Executive).await;
    let mut replies = 0;
    // Milliseconds from sending the move to the stall: from inside the
    // move's own write to the end of the (300 ms) search and after.
    for delay in [0, 1, 2, 4, 7, 12, 20, 35, 60, 120, 250, 330, 400, 600] {
        if s.game.result.is_some() {
            break;
        }
        let before = s.game.ply;
        let text = s.game.legal_moves[0].notation.clone();
        let seq = p
            .send(|seq| ClientMessage::Move {
                seq,
                notation: Some(text),
                path: None,
            })
            .await;
        tokio::time::sleep(Duration::from_millis(delay)).await;
        redis.pause(1_000).await;
        match p.answer(seq).await {
            Ok(()) | Err(ErrorCode::StorageUnavailable) => {}
            Err(code) => panic!("move at delay {delay} ms refused: {code:?}"),
        }
        // Past the stall, ask where the game stands: a refused move may
        // have been stored or not (never guessed), but never half.
        tokio::time::sleep(Duration::from_millis(1_100)).await;
        s = current(&mut p).await;
        if s.game.ply == before {
            assert!(
                !s.thinking,
                "delay {delay} ms: no move stored, yet the computer thinks"
            );
            continue;
        }
        if s.thinking {
            assert_eq!(s.game.ply, before + 1, "delay {delay} ms: one human move");
            s = my_turn(&mut p).await;
        }
        if s.game.result.is_none() {
            assert_eq!(
                s.game.ply,
                before + 2,
                "delay {delay} ms: one computer reply"
            );
            replies += 1;
        }
    }
    assert!(replies >= 8, "only {replies} rounds got through");
    wait_until_finished(&redis).await;
    // Nothing late arrives: a second answer to any of those jobs.
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    let now = current(&mut p).await;
    assert_eq!((now.game.ply, now.version), (s.game.ply, s.version));
    let jobs = finished_jobs(&redis).await;
    let mut unique = jobs.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), jobs.len(), "a job announced twice: {jobs:?}");
    // A reply whose announcement a stall cut is read from its answer key.
    let answers = redis.values(&["KEYS", "jg:{search}:result:*"]).await;
    assert!(
        answers.len() >= replies,
        "{} answers for {replies} replies",
        answers.len()
    );
    let queued = redis.values(&["XLEN", "jg:{search}:jobs"]).await;
    assert_eq!(queued, ["0"], "jobs left in the stream");
}

/// With no searcher anywhere (`--bot-threads 0` and no worker), a game
/// against the computer is refused with the retryable `computer_busy`;
/// once a worker runs, it starts and gets its replies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_searcher_anywhere_a_game_is_refused_until_a_worker_runs() {
    let redis = RedisServer::start().await;
    let instance = JumpgateProcess::start(&instance_env(&redis, 50)).await;
    let mut p = Player::connect_to(&instance, Encoding::Json, None).await;
    // The instance has read the queue once it refuses.
    let mut refused = None;
    for _ in 0..40 {
        match start_solo(&mut p, RuleSet::American, BotLevel::Tamer).await {
            Err(code) => {
                refused = Some(code);
                break;
            }
            Ok(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    assert_eq!(refused, Some(ErrorCode::ComputerBusy));
    let _worker = worker("late", &redis, 1).await;
    let s = start_admitted(&mut p, RuleSet::American, BotLevel::Tamer).await;
    let asked_at = play(&mut p, &s).await;
    assert_eq!(my_turn(&mut p).await.game.ply, asked_at + 1);
}

/// One worker serves two instances, then a second worker joins and both
/// search for one instance's games; every game gets one reply per move.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_serve_every_instance_and_share_the_work() {
    let redis = RedisServer::start().await;
    let env = instance_env(&redis, 300);
    let a = JumpgateProcess::start(&env).await;
    let b = JumpgateProcess::start(&env).await;
    let first = worker("first", &redis, 1).await;
    // One worker, two instances.
    for instance in [&a, &b] {
        let mut p = Player::connect_to(instance, Encoding::Json, None).await;
        let s = start_admitted(&mut p, RuleSet::Russian, BotLevel::Warden).await;
        let asked_at = play(&mut p, &s).await;
        assert_eq!(my_turn(&mut p).await.game.ply, asked_at + 1);
    }
    // Two workers, one instance: four games, three moves each, at once.
    let second = worker("second", &redis, 1).await;
    let mut games = Vec::new();
    for _ in 0..4 {
        let mut p = Player::connect_to(&a, Encoding::Json, None).await;
        let s = start_admitted(&mut p, RuleSet::Space, BotLevel::Executive).await;
        games.push(tokio::spawn(async move {
            let mut s = s;
            for _ in 0..3 {
                if s.game.result.is_some() {
                    break;
                }
                let asked_at = play(&mut p, &s).await;
                s = my_turn(&mut p).await;
                assert!(s.game.ply > asked_at, "the computer replied");
            }
        }));
    }
    for game in games {
        game.await.unwrap();
    }
    let (one, two) = (
        first.metric("jumpgate_searches_total").await,
        second.metric("jumpgate_searches_total").await,
    );
    assert!(one >= 3.0 && two >= 1.0, "both searched: {one} and {two}");
    assert_eq!(pending(&redis).await, 0);
}

/// A game whose instance dies while its job waits for a searcher (none is
/// running yet) is taken over by another instance, which asks again for
/// the same ply; when a worker comes, the game gets exactly one reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_that_moves_to_another_instance_while_its_job_is_out_gets_one_reply() {
    let redis = RedisServer::start().await;
    let env = instance_env(&redis, 200);
    let mut a = JumpgateProcess::start(&env).await;
    let b = JumpgateProcess::start(&env).await;
    // A worker that dies at once leaves a heartbeat behind, so the
    // instance admits the game while no searcher actually runs.
    let mut gone = worker("gone", &redis, 1).await;
    wait_for_heartbeat(&redis, "gone").await;
    gone.kill_9();
    let mut p = Player::connect_to(&a, Encoding::Json, None).await;
    let s = start_admitted(&mut p, RuleSet::Space, BotLevel::Executive).await;
    let asked_at = play(&mut p, &s).await;
    // The job is in the stream, waiting.
    let mut tries = 0;
    while redis.values(&["XLEN", "jg:{search}:jobs"]).await[0] == "0" {
        tries += 1;
        assert!(tries < 100, "the job was never queued");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    a.kill_9();
    // The player comes back through the other instance, which resumes the
    // game once the dead one's heartbeat lapses.
    let mut p = Player::connect_to(&b, Encoding::Json, Some(p.token.clone())).await;
    let mut resumed = false;
    for _ in 0..50 {
        if p.request(|seq| ClientMessage::ResumeSolo { seq })
            .await
            .is_ok()
        {
            resumed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(resumed, "the game resumed on the other instance");
    let _worker = worker("late", &redis, 1).await;
    let s = my_turn(&mut p).await;
    assert_eq!(s.game.ply, asked_at + 1, "one computer move");
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let now = current(&mut p).await;
    assert_eq!((now.game.ply, now.version), (s.game.ply, s.version));
    let jobs = finished_jobs(&redis).await;
    assert_eq!(jobs.len(), 1, "the job was answered once: {jobs:?}");
}

/// Fairness: with more games than searchers, jobs are served oldest
/// first, so between two searches of one game every other waiting game
/// gets at most one (no game is passed over while others go twice).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_more_games_than_searchers_no_game_is_passed_over() {
    let redis = RedisServer::start().await;
    let instance = JumpgateProcess::start(&instance_env(&redis, 150)).await;
    let _worker = worker("only", &redis, 1).await;
    const GAMES: usize = 4;
    const MOVES: usize = 4;
    let mut games = Vec::new();
    for _ in 0..GAMES {
        let mut p = Player::connect_to(&instance, Encoding::Json, None).await;
        let s = start_admitted(&mut p, RuleSet::Space, BotLevel::Executive).await;
        games.push(tokio::spawn(async move {
            let mut s = s;
            for _ in 0..MOVES {
                if s.game.result.is_some() {
                    break;
                }
                play(&mut p, &s).await;
                s = my_turn(&mut p).await;
            }
        }));
    }
    for game in games {
        game.await.unwrap();
    }
    let order: Vec<String> = finished_jobs(&redis)
        .await
        .into_iter()
        .map(|key| key.rsplit_once(':').unwrap().0.to_owned())
        .collect();
    assert!(order.len() >= GAMES * 2, "{order:?}");
    for game in order.iter().collect::<std::collections::BTreeSet<_>>() {
        let at: Vec<usize> = order
            .iter()
            .enumerate()
            .filter(|(_, g)| *g == game)
            .map(|(i, _)| i)
            .collect();
        for pair in at.windows(2) {
            let between = &order[pair[0] + 1..pair[1]];
            let distinct: std::collections::BTreeSet<&String> = between.iter().collect();
            assert_eq!(
                between.len(),
                distinct.len(),
                "a game went twice while {game} waited: {order:?}"
            );
            assert!(between.len() < GAMES, "{order:?}");
        }
    }
}
