//! What only the embedded store has: its data read back after every
//! handle is dropped and the directory opened again, its keys forgotten a
//! window after their decision on its own clock, and its boards' in-memory
//! order kept equal to the table whoever wrote it.

use std::time::Duration;

use crate::StoreError;
use crate::embedded::{Db, EmbeddedLeaderboards, EmbeddedRecords, EmbeddedWallets, seen};
use crate::idempotency::IdempotencyWindow;
use crate::leaderboard::{Leaderboards, RankedOutcome};
use crate::records::{Records, SeriesRecord};
use crate::wallet::{Escrow, Settled, Settlement, WalletRules, Wallets};

fn win(winner: &str, loser: &str) -> Settlement {
    Settlement::Winner {
        winner: winner.into(),
        loser: loser.into(),
    }
}

fn ann_beats_bob(id: &str, decided: u64) -> SeriesRecord {
    SeriesRecord {
        series: id.into(),
        rule_set: "russian".into(),
        players: ["a_ann".into(), "a_bob".into()],
        winner: Some(0),
        decided,
    }
}

/// Whether the data file still holds an idempotency key.
async fn kept(db: &Db, family: &'static str, key: &'static str) -> bool {
    db.call(move |t| seen::contains(t, family, key))
        .await
        .unwrap()
}

#[tokio::test]
async fn everything_survives_reopening_the_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let rules = WalletRules {
        ledger_keep: 2,
        ..WalletRules::default()
    };
    let window = IdempotencyWindow::default();
    let stakes = [("a_ann", 100), ("a_bob", 100)];
    let games = [("G1", RankedOutcome::Win), ("G2", RankedOutcome::Draw)];
    let (now, before) = {
        let db = Db::open(dir.path()).unwrap();
        let (w, r, b) = (
            EmbeddedWallets::on(db.clone(), rules),
            EmbeddedRecords::on(db.clone(), window),
            EmbeddedLeaderboards::on(db.clone(), window),
        );
        let now = db.now_ms();
        assert_eq!(w.escrow("S1", stakes, now).await.unwrap(), Escrow::Taken);
        w.settle("S1", &win("a_ann", "a_bob"), 1, now)
            .await
            .unwrap();
        assert_eq!(w.escrow("S2", stakes, now).await.unwrap(), Escrow::Taken);
        w.grant("a_cy", 5, "k1").await.unwrap();
        r.record(&ann_beats_bob("S1", now)).await.unwrap();
        for (game, outcome) in games {
            b.record(game, "russian", "a_ann", "Ann", outcome, now)
                .await
                .unwrap();
        }
        b.record("G3", "russian", "a_bob", "Bob", RankedOutcome::Loss, now)
            .await
            .unwrap();
        // A second open in this process shares the thread; the lock keeps
        // every other process out (as `flock` does a second descriptor).
        assert_eq!(Db::open(dir.path()).unwrap().path(), db.path());
        let lock = std::fs::File::open(dir.path().join(crate::embedded::LOCK_FILE)).unwrap();
        assert!(matches!(
            lock.try_lock(),
            Err(std::fs::TryLockError::WouldBlock)
        ));
        let before = (
            [
                w.wallet("a_ann").await.unwrap(),
                w.wallet("a_bob").await.unwrap(),
                w.wallet("a_cy").await.unwrap(),
            ],
            w.totals().await.unwrap(),
            r.player("a_ann", "russian").await.unwrap(),
            r.head_to_head("a_ann", "a_bob").await.unwrap(),
            b.page("russian", 1, 10).await.unwrap(),
        );
        assert_eq!(
            before.0[0].archived.len(),
            2,
            "rolled up: {:?}",
            before.0[0]
        );
        assert_eq!(before.1.escrow, 200);
        assert_eq!(before.4.total, 2);
        (now, before)
    };
    // Every handle is gone: the lock is free. (The database thread ends
    // on its own once it has nothing left; give it a moment.)
    tokio::time::sleep(Duration::from_millis(200)).await;
    let db = Db::open(dir.path()).unwrap();
    let (w, r, b) = (
        EmbeddedWallets::on(db.clone(), rules),
        EmbeddedRecords::on(db.clone(), window),
        EmbeddedLeaderboards::on(db.clone(), window),
    );
    let after = (
        [
            w.wallet("a_ann").await.unwrap(),
            w.wallet("a_bob").await.unwrap(),
            w.wallet("a_cy").await.unwrap(),
        ],
        w.totals().await.unwrap(),
        r.player("a_ann", "russian").await.unwrap(),
        r.head_to_head("a_ann", "a_bob").await.unwrap(),
        b.page("russian", 1, 10).await.unwrap(),
    );
    assert_eq!(after, before);
    // The keys came back too: retries change nothing.
    assert_eq!(w.escrow("S1", stakes, now).await.unwrap(), Escrow::Closed);
    assert_eq!(w.escrow("S2", stakes, now).await.unwrap(), Escrow::Taken);
    let again = w.settle("S1", &win("a_ann", "a_bob"), 1, now).await;
    assert_eq!(again.unwrap(), Settled::default());
    w.grant("a_cy", 5, "k1").await.unwrap();
    r.record(&ann_beats_bob("S1", now)).await.unwrap();
    for (game, outcome) in games {
        b.record(game, "russian", "a_ann", "Ann", outcome, now)
            .await
            .unwrap();
    }
    assert_eq!(w.totals().await.unwrap(), before.1);
    assert_eq!(w.wallet("a_cy").await.unwrap(), before.0[2]);
    assert_eq!(r.player("a_ann", "russian").await.unwrap(), before.2);
    assert_eq!(b.page("russian", 1, 10).await.unwrap(), before.4);
    // What was held is settled after the reopening.
    let paid = w.settle("S2", &win("a_bob", "a_ann"), 1, now).await;
    assert_eq!(paid.unwrap().paid, 200);
    let t = w.totals().await.unwrap();
    assert_eq!((t.balances, t.escrow, t.granted), (3_005, 0, 3_005));
}

/// On the data file's clock, moved on: a key outlives every write that
/// can still be accepted, is refused from 90% of the window, and is gone
/// once the whole window has passed (on the family's next write).
#[tokio::test]
async fn keys_are_forgotten_a_window_after_their_decision() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let window = IdempotencyWindow { ms: 10_000 };
    let rules = WalletRules {
        window,
        ..WalletRules::default()
    };
    let w = EmbeddedWallets::on(db.clone(), rules);
    let r = EmbeddedRecords::on(db.clone(), window);
    let b = EmbeddedLeaderboards::on(db.clone(), window);
    let decided = db.now_ms();
    let stakes = [("a_ann", 100), ("a_bob", 100)];
    assert_eq!(
        w.escrow("S1", stakes, decided).await.unwrap(),
        Escrow::Taken
    );
    r.record(&ann_beats_bob("S1", decided)).await.unwrap();
    b.record("G1", "russian", "a_ann", "Ann", RankedOutcome::Win, decided)
        .await
        .unwrap();
    db.advance(Duration::from_millis(8_000));
    assert_eq!(
        w.escrow("S1", stakes, decided).await.unwrap(),
        Escrow::Taken,
        "a retry within the window finds its key"
    );
    db.advance(Duration::from_millis(1_500));
    assert!(matches!(
        w.escrow("S1", stakes, decided).await,
        Err(StoreError::Expired(_))
    ));
    assert!(matches!(
        r.record(&ann_beats_bob("S1", decided)).await,
        Err(StoreError::Expired(_))
    ));
    assert!(matches!(
        b.record("G1", "russian", "a_ann", "Ann", RankedOutcome::Win, decided)
            .await,
        Err(StoreError::Expired(_))
    ));
    for (family, key) in [("wallet", "S1:escrow"), ("records", "S1"), ("boards", "G1")] {
        assert!(kept(&db, family, key).await, "{family} {key} still kept");
    }
    db.advance(Duration::from_millis(1_000));
    w.grant("a_cy", 1, "k1").await.unwrap();
    r.record(&ann_beats_bob("S2", 0)).await.unwrap();
    b.record("G2", "russian", "a_ann", "Ann", RankedOutcome::Win, 0)
        .await
        .unwrap();
    for (family, key) in [("wallet", "S1:escrow"), ("records", "S1"), ("boards", "G1")] {
        assert!(!kept(&db, family, key).await, "{family} {key} forgotten");
    }
    // Its settlement, repeated after its key is forgotten, still pays
    // what is held, once.
    let paid = w.settle("S1", &win("a_ann", "a_bob"), 1, decided).await;
    assert_eq!(paid.unwrap().paid, 200);
    assert_eq!(r.player("a_ann", "russian").await.unwrap().series_won, 2);
    assert_eq!(
        b.page("russian", 1, 1).await.unwrap().entries[0]
            .standing
            .wins,
        2
    );
}

/// A day's winnings are forgotten two days after their last write, as
/// Redis expires its `won:DAY` hash (the memory wallets keep them).
#[tokio::test]
async fn a_days_winnings_are_forgotten_two_days_after_their_last_write() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let rules = WalletRules {
        daily_cap: 150,
        ..WalletRules::default()
    };
    let w = EmbeddedWallets::on(db.clone(), rules);
    let stakes = [("a_ann", 100), ("a_bob", 100)];
    let mut paid = Vec::new();
    for (series, wait) in [("S1", 0), ("S2", 0), ("S3", 172_800_001), ("S4", 0)] {
        db.advance(Duration::from_millis(wait));
        assert_eq!(w.escrow(series, stakes, 0).await.unwrap(), Escrow::Taken);
        let settled = w.settle(series, &win("a_ann", "a_bob"), 7, 0).await;
        paid.push(settled.unwrap().paid);
    }
    assert_eq!(paid, [200, 150, 200, 150]);
}

/// A board's order is a cache of its table: another handle's writes and a
/// write undone under it (as by a commit the disk refused) are seen, the
/// order built again from the rows.
#[tokio::test]
async fn a_boards_order_follows_its_table() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let window = IdempotencyWindow::default();
    let one = EmbeddedLeaderboards::on(db.clone(), window);
    let two = EmbeddedLeaderboards::on(db.clone(), window);
    let names = |page: crate::leaderboard::Page| -> Vec<(String, u32)> {
        page.entries
            .into_iter()
            .map(|e| (e.standing.name, e.standing.points))
            .collect()
    };
    one.record("G1", "russian", "a_ann", "Ann", RankedOutcome::Win, 0)
        .await
        .unwrap();
    assert_eq!(
        names(one.page("russian", 1, 10).await.unwrap()),
        [("Ann".into(), 3)]
    );
    assert_eq!(
        names(two.page("russian", 1, 10).await.unwrap()),
        [("Ann".into(), 3)]
    );
    // Interleaved writes through both handles, each read through both.
    two.record("G2", "russian", "a_bob", "Bob", RankedOutcome::Win, 0)
        .await
        .unwrap();
    one.record("G3", "russian", "a_bob", "Bob", RankedOutcome::Draw, 0)
        .await
        .unwrap();
    two.record("G4", "russian", "a_ann", "Ann", RankedOutcome::Loss, 0)
        .await
        .unwrap();
    let want: Vec<(String, u32)> = vec![("Bob".into(), 4), ("Ann".into(), 3)];
    assert_eq!(names(one.page("russian", 1, 10).await.unwrap()), want);
    assert_eq!(names(two.page("russian", 1, 10).await.unwrap()), want);
    // The last write undone in the table (its line and the version), as a
    // rollback after the order was changed would leave it.
    db.call(|t| {
        t.conn.execute_batch(
            "UPDATE board_lines SET points = 1, wins = 0, draws = 1, games = 1
               WHERE rule_set = 'russian' AND account = 'a_bob';
             UPDATE board_versions SET version = version - 1 WHERE rule_set = 'russian';",
        )
    })
    .await
    .unwrap();
    let undone: Vec<(String, u32)> = vec![("Ann".into(), 3), ("Bob".into(), 1)];
    assert_eq!(names(one.page("russian", 1, 10).await.unwrap()), undone);
    // And a later write lands on the rebuilt order.
    one.record("G5", "russian", "a_cy", "Cy", RankedOutcome::Win, 0)
        .await
        .unwrap();
    let page = one.page("russian", 1, 10).await.unwrap();
    assert_eq!(page.total, 3);
    assert_eq!(
        names(page),
        [("Cy".into(), 3), ("Ann".into(), 3), ("Bob".into(), 1)],
        "Cy in fewer games"
    );
}
