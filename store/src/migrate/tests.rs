//! A data file filled through the embedded stores' own operations is
//! copied to a real `redis-server` and back into a new data directory, and
//! the two data files hold the same; a destination that is not empty, or
//! a source with a live instance, is refused and left as it was.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::embedded::{EmbeddedLeaderboards, EmbeddedRecords, EmbeddedStore, EmbeddedWallets};
use crate::leaderboard::{Leaderboards, RankedOutcome};
use crate::records::{Records, SeriesRecord};
use crate::wallet::{Settlement, WalletRules, Wallets};
use crate::{DormantStore, MoveEffects, OwnerEpoch, RoomStore, RoomWrite, SoloStore, StoredMove};

/// A `redis-server` of this test's own, killed when dropped.
struct TestRedis {
    child: std::process::Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl TestRedis {
    async fn start() -> TestRedis {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = tempfile::tempdir().unwrap();
        let child = std::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir.path())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server runs");
        let url = format!("redis://127.0.0.1:{port}/0");
        for _ in 0..100 {
            if let Ok(mut conn) = connect(&url).await
                && ::redis::cmd("PING")
                    .query_async::<String>(&mut conn)
                    .await
                    .is_ok()
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        TestRedis {
            child,
            url,
            _dir: dir,
        }
    }
}

impl Drop for TestRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const OPTIONS: MigrateOptions = MigrateOptions {
    force: false,
    window: IdempotencyWindow {
        ms: 30 * 86_400_000,
    },
};

fn mv(game_no: u64, ply: u32, effects: Option<u64>) -> StoredMove {
    StoredMove {
        game_no,
        ply,
        path: format!("{ply},{}", ply + 4),
        text: format!("{ply}-{}", ply + 4),
        seat: (ply % 2) as u8,
        seq: ply,
        effects: effects.map(|version| MoveEffects {
            version,
            at_ms: 1_700_000_000_000 + u64::from(ply),
            deadline_ms: 1_700_000_060_000,
            to_move: Some(((ply + 1) % 2) as u8),
            submitted: format!("{{\"ply\":{ply}}}"),
        }),
    }
}

fn room(code: &str, open: bool, moves: Vec<StoredMove>, ttl: Option<u64>) -> RoomWrite {
    RoomWrite {
        code: code.into(),
        owner: OwnerEpoch::first(&Arc::from("old-instance")),
        expected_version: 0,
        version: 1,
        record: format!("{{\"version\":1,\"code\":\"{code}\"}}"),
        moves,
        finished_games: vec![(1, format!("[Event \"{code}\"] 1. 11-15 *"))],
        open,
        expire_after: ttl.map(Duration::from_secs),
        seated: vec!["a_ann".into(), "a_bob".into()],
        unseated: Vec::new(),
    }
}

/// A data file with some of everything: open, closed, unloaded and solo
/// rooms with moves appended after their record, wallets with a ledger
/// rolled into the archive, an escrow held and one settled, records and a
/// leaderboard.
async fn filled(dir: &Path) {
    let db = Db::open(dir).unwrap();
    let rooms = EmbeddedStore::on(db.clone());
    rooms
        .write(&room("OPENROOM", true, vec![mv(2, 1, None)], None))
        .await
        .unwrap();
    rooms
        .append(&crate::MoveAppend {
            code: "OPENROOM".into(),
            owner: OwnerEpoch::first(&Arc::from("old-instance")),
            expected_version: 1,
            version: 2,
            moves: vec![mv(2, 2, Some(2))],
        })
        .await
        .unwrap();
    rooms
        .write(&room("CLOSEDRM", false, vec![mv(1, 1, None)], Some(3_600)))
        .await
        .unwrap();
    rooms
        .write(&room("SLEEPING", true, Vec::new(), None))
        .await
        .unwrap();
    let owner = OwnerEpoch::first(&Arc::from("old-instance"));
    assert!(
        rooms
            .park("SLEEPING", &owner, 1_800_000_000_000)
            .await
            .unwrap()
    );
    rooms
        .write(&room("NEVERDUE", true, Vec::new(), None))
        .await
        .unwrap();
    assert!(rooms.park("NEVERDUE", &owner, u64::MAX).await.unwrap());
    rooms.index_solo("a_ann", "SSOLOGAME").await.unwrap();
    rooms
        .write_solo(&room("SSOLOGAME", true, Vec::new(), None), "a_ann")
        .await
        .unwrap();

    let rules = WalletRules {
        ledger_keep: 3,
        ..WalletRules::default()
    };
    let wallets = EmbeddedWallets::on(db.clone(), rules);
    for i in 0..4 {
        wallets
            .grant("a_ann", 10, &format!("gift{i}"))
            .await
            .unwrap();
    }
    let now = crate::sync::now_ms();
    wallets
        .escrow("S1", [("a_ann", 100), ("a_bob", 100)], now)
        .await
        .unwrap();
    wallets
        .escrow("S2", [("a_ann", 50), ("a_cy", 50)], now)
        .await
        .unwrap();
    let settlement = Settlement::Winner {
        winner: "a_ann".into(),
        loser: "a_cy".into(),
    };
    wallets
        .settle("S2", &settlement, crate::wallet::utc_day(), now)
        .await
        .unwrap();

    let records = EmbeddedRecords::on(db.clone(), OPTIONS.window);
    for (series, winner) in [("S2", Some(0)), ("S3", None), ("S4", Some(1))] {
        records
            .record(&SeriesRecord {
                series: series.into(),
                rule_set: "american".into(),
                players: ["a_ann".into(), "a_cy".into()],
                winner,
                decided: now,
            })
            .await
            .unwrap();
    }
    let boards = EmbeddedLeaderboards::on(db, OPTIONS.window);
    for (game, account, outcome) in [
        ("g1", "a_ann", RankedOutcome::Win),
        ("g2", "a_bob", RankedOutcome::Draw),
        ("g3", "a_ann", RankedOutcome::Loss),
    ] {
        boards
            .record(game, "russian", account, account, outcome, now)
            .await
            .unwrap();
    }
}

async fn snapshot_of(dir: &Path) -> Snapshot {
    let db = Db::open(dir).unwrap();
    let mut snapshot = embedded::export(&db, OPTIONS.window).await.unwrap();
    // Expiry times travel as a TTL through Redis: equal to the millisecond
    // or so, not exactly.
    for room in &mut snapshot.rooms {
        room.expires_at = room.expires_at.map(|at| at / 10_000);
    }
    for won in &mut snapshot.wallets.won {
        won.touched /= 10_000;
    }
    snapshot
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_file_copied_to_redis_and_back_is_the_same() {
    let redis = TestRedis::start().await;
    let (first, back) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    filled(first.path()).await;
    let original = snapshot_of(first.path()).await;
    let counts = original.counts();
    assert_eq!(counts.rooms, 5, "{counts}");
    assert!(counts.moves == 3 && counts.parked_rooms == 2 && counts.solo_notes == 1);
    assert!(counts.archived_periods > 0 && counts.escrows == 2 && counts.won_today == 1);
    assert!(counts.idempotency_keys > 5 && counts.records > 4 && counts.board_entries == 2);

    let there = Location::Redis(redis.url.clone());
    let summary = migrate(&Location::DataDir(first.path().into()), &there, OPTIONS)
        .await
        .unwrap();
    assert_eq!(summary.counts, counts);
    assert!(summary.money.balanced() && summary.money.escrow_held == 200);

    // Redis holds what a starting instance looks for.
    let mut conn = connect(&redis.url).await.unwrap();
    let open: Vec<String> = ::redis::cmd("SMEMBERS")
        .arg("jg:lobbies")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(open.len(), 4, "{open:?}");
    let released: Vec<String> = ::redis::cmd("SMEMBERS")
        .arg("jg:orphans")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(released.len(), 2, "the open rooms that are not unloaded");
    let fence: std::collections::HashMap<String, String> = ::redis::cmd("HGETALL")
        .arg("jg:{SLEEPING}:fence")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(fence["owner"], "");
    assert_eq!(fence["parked"], "1");
    assert_eq!(fence["epoch"], "1");
    let format: String = ::redis::cmd("GET")
        .arg(crate::keys::FORMAT_KEY)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(format, "2");

    migrate(&there, &Location::DataDir(back.path().into()), OPTIONS)
        .await
        .unwrap();
    assert_eq!(snapshot_of(back.path()).await, original);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destination_in_use_or_not_empty_is_refused_and_left_alone() {
    let redis = TestRedis::start().await;
    let (full, other) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    filled(full.path()).await;
    filled(other.path()).await;
    let there = Location::Redis(redis.url.clone());
    let mut conn = connect(&redis.url).await.unwrap();

    // A Redis with one key of ours is not empty.
    let () = ::redis::cmd("SET")
        .arg("jg:storage-format")
        .arg(2)
        .query_async(&mut conn)
        .await
        .unwrap();
    let refused = migrate(&Location::DataDir(full.path().into()), &there, OPTIONS).await;
    assert!(
        matches!(refused, Err(MigrateError::NotEmpty(..))),
        "{refused:?}"
    );
    assert_eq!(redis::scan(&mut conn, "*").await.unwrap().len(), 1);

    // A data file with rows in it is not empty either.
    let before = snapshot_of(other.path()).await;
    let refused = migrate(
        &Location::DataDir(full.path().into()),
        &Location::DataDir(other.path().into()),
        OPTIONS,
    )
    .await;
    assert!(
        matches!(refused, Err(MigrateError::NotEmpty(..))),
        "{refused:?}"
    );
    assert_eq!(snapshot_of(other.path()).await, before);

    // A Redis with a live heartbeat is not copied from, unless forced.
    let () = ::redis::cmd("SET")
        .arg("jg:alive:{one}")
        .arg("token")
        .query_async(&mut conn)
        .await
        .unwrap();
    let empty = tempfile::tempdir().unwrap();
    let to = Location::DataDir(empty.path().join("copy"));
    let refused = migrate(&there, &to, OPTIONS).await;
    assert!(
        matches!(refused, Err(MigrateError::InUse(..))),
        "{refused:?}"
    );
    assert!(!empty.path().join("copy").exists(), "nothing was created");
    let forced = MigrateOptions {
        force: true,
        ..OPTIONS
    };
    let summary = migrate(&there, &to, forced).await.unwrap();
    assert_eq!(summary.counts, Counts::default());
}

/// The check after a copy finds what differs: a count, a balance, the
/// money totals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_check_after_a_copy_names_what_differs() {
    let dir = tempfile::tempdir().unwrap();
    filled(dir.path()).await;
    let source = snapshot_of(dir.path()).await;
    assert!(source.differences(&source.clone()).is_empty());

    let mut copy = source.clone();
    copy.rooms[0].moves.pop();
    copy.wallets.accounts[0].balance += 1;
    let found = copy.differences(&source).join("\n");
    assert!(found.contains("moves: "), "{found}");
    assert!(found.contains("the balance of a_ann"), "{found}");
    assert!(found.contains("money: "), "{found}");
    let unbalanced = copy.money();
    assert!(!unbalanced.balanced(), "{unbalanced}");
}

/// What older servers left in Redis is read too: a fence without its
/// version (the record holds it) and idempotency keys without their
/// decision time (taken as decided now, as the scripts do).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_redis_layout_is_read() {
    let redis = TestRedis::start().await;
    let mut conn = connect(&redis.url).await.unwrap();
    let () = ::redis::pipe()
        .set("jg:{OLDROOM1}:room", "{\"version\":7}")
        .hset("jg:{OLDROOM1}:fence", "owner", "gone")
        .hset("jg:{OLDROOM1}:fence", "epoch", 3)
        .sadd("jg:lobbies", "OLDROOM1")
        .sadd("jgr:{records}:done", "S9")
        .ignore()
        .query_async(&mut conn)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let to = Location::DataDir(dir.path().into());
    let summary = migrate(&Location::Redis(redis.url.clone()), &to, OPTIONS)
        .await
        .unwrap();
    assert_eq!(summary.counts.rooms, 1);
    assert_eq!(summary.counts.idempotency_keys, 1);
    let copy = snapshot_of(dir.path()).await;
    let room = &copy.rooms[0];
    assert_eq!((room.version, room.epoch, room.open), (7, 3, true));
    assert_eq!(copy.seen[0].family, snapshot::Family::Records);
}
