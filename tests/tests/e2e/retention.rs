//! Bounded data in the stores themselves, on one Redis, on a three-master
//! Redis Cluster, in a data directory's file and in memory: idempotency keys forgotten a window after
//! their write was decided and late writes refused rather than applied
//! twice; keys written before decision times existed given one; ledgers
//! rolled into monthly archives with the balance exact.

use std::sync::Arc;
use std::time::Duration;

use jumpgate_e2e::{RedisCluster, RedisServer};
use jumpgate_server::idempotency::{IdempotencyWindow, now_ms};
use jumpgate_server::leaderboard::{
    Leaderboards, MemoryLeaderboards, RankedOutcome, RedisLeaderboards,
};
use jumpgate_server::records::{MemoryRecords, Records, RedisRecords, SeriesRecord};
use jumpgate_server::store::StoreError;
use jumpgate_server::store::embedded::{
    Db, EmbeddedLeaderboards, EmbeddedRecords, EmbeddedWallets,
};
use jumpgate_server::wallet::{
    Escrow, MemoryWallets, RedisWallets, Settlement, WalletRules, Wallets, utc_day,
};

const WINDOW: IdempotencyWindow = IdempotencyWindow { ms: 1_500 };
const PATIENCE: Duration = Duration::from_secs(2);

fn rules() -> WalletRules {
    WalletRules {
        ledger_keep: 4,
        window: WINDOW,
        ..WalletRules::default()
    }
}

/// Waits out the window (and a little: the clocks are Redis's and ours).
async fn after_the_window() {
    tokio::time::sleep(Duration::from_millis(WINDOW.ms + 300)).await;
}

/// An escrow and its settlement are remembered for the window: a late
/// escrow is closed, a repeated settlement moves nothing. Past the window
/// their keys are gone (in Redis: from the set and the times), the same
/// escrow is refused as expired and takes nothing, and the settlement
/// still moves nothing. Every balance stays exactly its archive plus its
/// ledger, and the stores agree on every month's totals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wallet_keys_are_forgotten_after_the_window_and_late_escrows_refused() {
    let redis = RedisServer::start().await;
    let cluster = RedisCluster::start().await;
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let stores: Vec<(&str, Arc<dyn Wallets>)> = vec![
        (
            "redis",
            Arc::new(RedisWallets::open(&redis.url(), PATIENCE, rules()).unwrap()),
        ),
        (
            "cluster",
            Arc::new(RedisWallets::open(&cluster.url(), PATIENCE, rules()).unwrap()),
        ),
        ("embedded", Arc::new(EmbeddedWallets::on(db, rules()))),
        ("memory", Arc::new(MemoryWallets::new(rules()))),
    ];
    let mut archives = Vec::new();
    for (name, w) in &stores {
        let decided = now_ms();
        let stakes = [("a_ann", 100), ("a_bob", 100)];
        let win = Settlement::Winner {
            winner: "a_ann".into(),
            loser: "a_bob".into(),
        };
        assert_eq!(
            w.escrow("S1", stakes, decided).await.unwrap(),
            Escrow::Taken
        );
        assert_eq!(
            w.settle("S1", &win, utc_day(), decided).await.unwrap().paid,
            200
        );
        assert_eq!(
            w.escrow("S1", stakes, decided).await.unwrap(),
            Escrow::Closed,
            "{name}"
        );
        assert_eq!(
            w.settle("S1", &win, utc_day(), decided).await.unwrap().paid,
            0
        );

        after_the_window().await;
        // Any write forgets what was decided before the window.
        w.grant("a_cy", 5, "k1").await.unwrap();
        if *name == "redis" {
            for key in ["S1:escrow", "S1:settle"] {
                let member = redis
                    .command(&["SISMEMBER", "jgw:{wallets}:done", key])
                    .await;
                assert_eq!(member.trim(), ":0", "{key} forgotten");
                let time = redis
                    .command(&["ZSCORE", "jgw:{wallets}:done:at", key])
                    .await;
                assert!(time.starts_with("$-1") || time.starts_with("_"), "{time}");
            }
        }
        match w.escrow("S1", stakes, decided).await {
            Err(StoreError::Expired(_)) => {}
            other => panic!("{name}: a late escrow must be refused, got {other:?}"),
        }
        assert_eq!(
            w.settle("S1", &win, utc_day(), decided).await.unwrap().paid,
            0,
            "{name}: a settlement repeated after its key is gone finds no escrow"
        );
        // Enough movements to roll the ledgers.
        for i in 0..6 {
            w.grant("a_ann", 10 + i, &format!("g{i}")).await.unwrap();
        }
        let t = w.totals().await.unwrap();
        assert_eq!(t.balances + t.escrow, t.granted, "{name}: conserved");
        assert_eq!(t.escrow, 0, "{name}: nothing held");
        for (account, balance) in [("a_ann", 1100 + 75), ("a_bob", 900), ("a_cy", 1005)] {
            let view = w.wallet(account).await.unwrap();
            let archived: i64 = view.archived.iter().map(|p| p.amount).sum();
            let recent: i64 = view.ledger.iter().map(|e| e.amount).sum();
            assert_eq!(view.balance, balance, "{name} {account}");
            assert_eq!(view.balance, archived + recent, "{name} {account}: exact");
            assert!(
                view.ledger.len() <= 4,
                "{name} {account}: {:?}",
                view.ledger
            );
        }
        let ann = w.wallet("a_ann").await.unwrap();
        assert_eq!(ann.ledger.len(), 4);
        archives.push(ann.archived);
    }
    assert!(
        archives.windows(2).all(|w| w[0] == w[1]),
        "every store archives the same months: {archives:?}"
    );
}

/// A series record and a ranked result count once within the window; past
/// it, the same write is refused as expired and counts nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_and_results_count_once_and_are_refused_after_the_window() {
    let redis = RedisServer::start().await;
    let cluster = RedisCluster::start().await;
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let records: Vec<Box<dyn Records>> = vec![
        Box::new(RedisRecords::open(&redis.url(), PATIENCE, WINDOW).unwrap()),
        Box::new(RedisRecords::open(&cluster.url(), PATIENCE, WINDOW).unwrap()),
        Box::new(EmbeddedRecords::on(db.clone(), WINDOW)),
        Box::new(MemoryRecords::new(WINDOW)),
    ];
    let boards: Vec<Box<dyn Leaderboards>> = vec![
        Box::new(RedisLeaderboards::open(&redis.url(), PATIENCE, WINDOW).unwrap()),
        Box::new(RedisLeaderboards::open(&cluster.url(), PATIENCE, WINDOW).unwrap()),
        Box::new(EmbeddedLeaderboards::on(db, WINDOW)),
        Box::new(MemoryLeaderboards::new(WINDOW)),
    ];
    let decided = now_ms();
    let series = SeriesRecord {
        series: "K7M2QX9P:1:0000abcd".into(),
        rule_set: "russian".into(),
        players: ["a_x".into(), "a_y".into()],
        winner: Some(0),
        decided,
    };
    // Each store's pair of writes is decided just before it, so that a slow
    // first connection cannot push a repeat out of its window.
    for r in &records {
        let series = SeriesRecord {
            decided: now_ms(),
            ..series.clone()
        };
        r.record(&series).await.unwrap();
        r.record(&series).await.unwrap();
    }
    for b in &boards {
        let decided = now_ms();
        for _ in 0..2 {
            b.record(
                "SGAME:1",
                "russian",
                "a_x",
                "X",
                RankedOutcome::Win,
                decided,
            )
            .await
            .unwrap();
        }
    }
    after_the_window().await;
    for r in &records {
        assert!(matches!(
            r.record(&series).await,
            Err(StoreError::Expired(_))
        ));
        assert_eq!(r.player("a_x", "russian").await.unwrap().series_won, 1);
    }
    for b in &boards {
        let late = b
            .record(
                "SGAME:1",
                "russian",
                "a_x",
                "X",
                RankedOutcome::Win,
                decided,
            )
            .await;
        assert!(matches!(late, Err(StoreError::Expired(_))), "{late:?}");
        let page = b.page("russian", 1, 10).await.unwrap();
        assert_eq!(page.entries.len(), 1);
        assert_eq!(page.entries[0].standing.games, 1, "counted once");
    }
}

/// Keys written by a version without decision times (plain set members)
/// are given a time by the first writes of this one, and forgotten a
/// window later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_from_before_decision_times_are_forgotten_a_window_later() {
    let redis = RedisServer::start().await;
    for i in 0..120 {
        redis
            .command(&["SADD", "jgr:{records}:done", &format!("OLD{i}")])
            .await;
    }
    let records = RedisRecords::open(&redis.url(), PATIENCE, WINDOW).unwrap();
    let record = |n: u32| SeriesRecord {
        series: format!("NEW{n}"),
        rule_set: "italian".into(),
        players: ["a_p".into(), "a_q".into()],
        winner: None,
        decided: 0,
    };
    // Each write backfills a batch; a few writes cover the 120.
    for n in 0..6 {
        records.record(&record(n)).await.unwrap();
    }
    let timed = redis.command(&["ZCARD", "jgr:{records}:done:at"]).await;
    assert_eq!(timed.trim(), ":126", "every old key has a time");
    let scan = redis.command(&["GET", "jgr:{records}:done:scan"]).await;
    assert!(scan.contains("complete"), "{scan}");
    after_the_window().await;
    records.record(&record(99)).await.unwrap();
    records.record(&record(100)).await.unwrap();
    let left = redis.command(&["SCARD", "jgr:{records}:done"]).await;
    assert_eq!(left.trim(), ":2", "only the two new keys are left");
    let left = redis.command(&["ZCARD", "jgr:{records}:done:at"]).await;
    assert_eq!(left.trim(), ":2");
}
