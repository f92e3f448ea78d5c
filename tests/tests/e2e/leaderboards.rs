//! Leaderboards in Redis (pages also in the embedded store): pages read by place from the sorted order, the
//! tie order across pages, the cache header of the public endpoint, a
//! result counted once however often it lands (concurrently, and after a
//! stall longer than the timeout), and boards written before the sorted
//! order filled into it.

use std::time::Duration;

use jumpgate_e2e::{RedisServer, TestServer};

/// Pages are read by place from the sorted order: ties in the full order
/// across pages, the last page and past it, and the cache header on the
/// public endpoint (never on a refusal).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaderboard_pages_by_place_with_ties_and_a_cache_header() {
    use jumpgate_server::leaderboard::RedisLeaderboards;
    let window = jumpgate_server::idempotency::IdempotencyWindow::default();
    let redis = RedisServer::start().await;
    let boards = RedisLeaderboards::open(&redis.url(), Duration::from_secs(2), window).unwrap();
    pages_by_place_with_ties(&boards).await;
    // The same on the data directory's file.
    let dir = tempfile::tempdir().unwrap();
    let db = jumpgate_server::store::embedded::Db::open(dir.path()).unwrap();
    pages_by_place_with_ties(&jumpgate_server::store::embedded::EmbeddedLeaderboards::on(
        db, window,
    ))
    .await;

    let url = redis.url();
    let server = TestServer::start(move |s| s.redis_url = Some(url)).await;
    let (status, response) =
        jumpgate_e2e::http_get(server.addr, "/api/leaderboards/spanish?page=2&per_page=20").await;
    assert_eq!(status, 200);
    let lower = response.to_ascii_lowercase();
    assert!(
        lower.contains("cache-control: public, max-age="),
        "{response}"
    );
    assert!(response.contains("\"place\":21"), "{response}");
    redis.pause(3_000).await;
    let (status, response) = jumpgate_e2e::http_get(server.addr, "/api/leaderboards/spanish").await;
    assert_eq!(status, 503);
    assert!(
        response
            .to_ascii_lowercase()
            .contains("cache-control: no-store")
    );
}

/// A game that lands twice counts once: the same results recorded by many
/// tasks at once, and again after a stall longer than the client's
/// timeout (whose first attempts may or may not have landed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ranked_result_counts_once_however_often_and_however_late_it_lands() {
    use jumpgate_server::leaderboard::{Leaderboards, RankedOutcome as O, RedisLeaderboards};
    use std::sync::Arc;
    let redis = RedisServer::start().await;
    let boards = Arc::new(
        RedisLeaderboards::open(
            &redis.url(),
            Duration::from_millis(200),
            jumpgate_server::idempotency::IdempotencyWindow::default(),
        )
        .unwrap(),
    );
    let outcome = |g: usize| [O::Win, O::Draw, O::Loss][g % 3];
    // Sends game `g` until it is known to have landed, as the server does
    // with a write whose outcome is unknown (a reply slower than the short
    // timeout on a loaded machine is one).
    let record_until_ok = move |boards: Arc<RedisLeaderboards>, g: usize| async move {
        let account = format!("a_{}", g % 6);
        let game = format!("S{g:08}");
        for _ in 0..50 {
            match boards
                .record(&game, "italian", &account, &account, outcome(g), 0)
                .await
            {
                Ok(_) => return,
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        panic!("game {g} never landed");
    };
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let boards = boards.clone();
        tasks.spawn(async move {
            for g in 0..60 {
                record_until_ok(boards.clone(), g).await;
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    // A stall: the first attempts time out, and are sent again after it.
    redis.pause(1_000).await;
    let mut unknown = Vec::new();
    for g in 60..90 {
        let account = format!("a_{}", g % 6);
        let game = format!("S{g:08}");
        if boards
            .record(&game, "italian", &account, &account, outcome(g), 0)
            .await
            .is_err()
        {
            unknown.push(g);
        }
    }
    assert!(!unknown.is_empty(), "the stall outlasted the timeout");
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    for g in 60..90 {
        record_until_ok(boards.clone(), g).await;
    }
    let page = boards.page("italian", 1, 100).await.unwrap();
    assert_eq!(page.total, 6);
    let games: u32 = page.entries.iter().map(|e| e.standing.games).sum();
    let points: u32 = page.entries.iter().map(|e| e.standing.points).sum();
    assert_eq!(games, 90, "each game once");
    assert_eq!(points, 30 * 3 + 30, "30 wins, 30 draws, 30 losses");
}

/// Boards written before the sorted order existed (standings in a hash
/// only) are filled into the order in the background on their first read,
/// in batches, and then read by place like any other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_board_from_before_the_sorted_order_is_migrated() {
    use jumpgate_server::leaderboard::{Leaderboards, RedisLeaderboards, Standing, order};
    let redis = RedisServer::start().await;
    let mut expected = Vec::new();
    for chunk in 0..12 {
        let mut args = vec!["HSET".to_owned(), "jgl:{boards}:russian".to_owned()];
        for i in 0..100 {
            let n = chunk * 100 + i;
            let (wins, draws, losses) = (n % 7, n % 3, n % 5);
            let s = Standing {
                name: format!("P{}", n % 50),
                points: 3 * wins + draws,
                wins,
                draws,
                losses,
                games: wins + draws + losses,
            };
            args.push(format!("a_{n}"));
            args.push(serde_json::to_string(&s).unwrap());
            expected.push(s);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        redis.command(&args).await;
    }
    order(&mut expected);
    let boards = RedisLeaderboards::open(
        &redis.url(),
        Duration::from_secs(2),
        jumpgate_server::idempotency::IdempotencyWindow::default(),
    )
    .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while boards.page("russian", 1, 1).await.unwrap().total < 1200 {
        assert!(tokio::time::Instant::now() < deadline, "never filled in");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut got = Vec::new();
    for page in 1..=12 {
        let p = boards.page("russian", page, 100).await.unwrap();
        got.extend(p.entries.into_iter().map(|e| e.standing));
    }
    assert_eq!(got, expected);
    // Marked done: a later process does not fill it in again.
    assert!(
        redis
            .command(&["EXISTS", "jgl:{boards}:russian:ordered"])
            .await
            .starts_with(":1")
    );
}

/// Paging parameters that are not in range, or not numbers at all, are read
/// leniently (clamped, or taken as absent): still a JSON page, never a
/// plain-text 400.
#[tokio::test]
async fn odd_paging_parameters_still_get_a_json_page() {
    let server = TestServer::start(|_| {}).await;
    for (query, page, per_page) in [
        ("per_page=-5", 1, 1),
        ("per_page=1000000000000", 1, 100),
        ("page=-3&per_page=abc", 1, 25),
        ("page=99999999999999999999999", u32::MAX, 25),
    ] {
        let (status, body) =
            jumpgate_e2e::http_get(server.addr, &format!("/api/leaderboards/american?{query}"))
                .await;
        assert_eq!(status, 200, "{query}: {body}");
        let json = body.split("\r\n\r\n").nth(1).unwrap();
        let json: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(json["page"], page, "{query}");
        assert_eq!(json["per_page"], per_page, "{query}");
    }
}

/// 3 × 7 players, seven to a line told apart by name only, read back five
/// to a page: places in order, ties in the full order, the last page short.
async fn pages_by_place_with_ties(boards: &dyn jumpgate_server::leaderboard::Leaderboards) {
    use jumpgate_server::leaderboard::RankedOutcome as O;
    // 3 × 7 players: seven share each line, told apart by name only.
    let lines: [&[O]; 3] = [&[O::Win, O::Loss], &[O::Draw, O::Draw, O::Draw], &[O::Win]];
    for (l, outcomes) in lines.iter().enumerate() {
        for p in 0..7 {
            let account = format!("a_{l}_{p}");
            let name = format!("N{}", 6 - p);
            for (g, o) in outcomes.iter().enumerate() {
                let game = format!("{account}-{g}");
                boards
                    .record(&game, "spanish", &account, &name, *o, 0)
                    .await
                    .unwrap();
            }
        }
    }
    let mut seen = Vec::new();
    for page in 1..=5 {
        let p = boards.page("spanish", page, 5).await.unwrap();
        assert_eq!(p.total, 21);
        for e in &p.entries {
            assert_eq!(e.place as usize, seen.len() + 1);
            seen.push((
                e.standing.points,
                e.standing.wins,
                e.standing.games,
                e.standing.name.clone(),
            ));
        }
    }
    assert_eq!(seen.len(), 21, "the last page is short, then nothing");
    // 3 points in 1 game, then 3 in 3 (a draw each: 0 wins), then 3 points
    // with 1 win in 2 games comes second: more wins beat fewer games.
    let first_of_each: Vec<_> = seen.iter().step_by(7).cloned().collect();
    assert_eq!(
        first_of_each,
        [
            (3, 1, 1, "N0".to_owned()),
            (3, 1, 2, "N0".to_owned()),
            (3, 0, 3, "N0".to_owned())
        ]
    );
    let rank = |l: &(u32, u32, u32, String)| {
        use std::cmp::Reverse;
        (Reverse(l.0), Reverse(l.1), l.2, l.3.clone())
    };
    assert!(
        seen.windows(2).all(|w| rank(&w[0]) <= rank(&w[1])),
        "{seen:?}"
    );
}
