//! Backup and restore: an older Redis snapshot restored under real `jumpgate`
//! processes, and what that restore brings back and what it forgets.

use std::net::SocketAddr;

use jumpgate_e2e::{JumpgateProcess, PATIENCE, Player, RedisServer, free_port, lobby_pair};
use jumpgate_protocol::{ClientMessage, Encoding, Phase, RoomState, RuleSet};
use jumpgate_server::store::RedisStore;
use jumpgate_server::store::prelude::*;
use jumpgate_server::wallet::{RedisWallets, Totals, WalletRules, Wallets};

use crate::persistence::play;

const ISSUER_SECRET: &[u8] = b"backup-issuer-secret-0123456789abcdef";
const STAKE: i64 = 100;
const ANN: &str = "a_backup_ann";
const BOB: &str = "a_backup_bob";

fn env(redis: &RedisServer) -> Vec<(&'static str, String)> {
    vec![
        ("JUMPGATE_REDIS_URL", redis.url()),
        // Short heartbeats: the restored data names owners whose heartbeat
        // has long expired, and the restarted instances take over at once.
        ("JUMPGATE_HEARTBEAT_TTL_MS", "1000".into()),
        // No game may end on time while the instances are down.
        ("JUMPGATE_MOVE_CLOCK_MS", "60000".into()),
        ("JUMPGATE_JWT_ISSUER", "https://id.test".into()),
        (
            "JUMPGATE_JWT_HS256",
            format!("k1={}", std::str::from_utf8(ISSUER_SECRET).unwrap()),
        ),
    ]
}

async fn account(server: &JumpgateProcess, account: &str) -> Player {
    let sub = account.strip_prefix("a_").unwrap();
    let token = jumpgate_e2e::account_token(ISSUER_SECRET, sub, sub);
    Player::connect_to(server, Encoding::Json, Some(token)).await
}

fn wallets(redis: &RedisServer) -> RedisWallets {
    RedisWallets::open(&redis.url(), PATIENCE, WalletRules::default()).unwrap()
}

/// Balances plus escrow equal everything granted, exactly (one script reads
/// all three at one instant); returns the totals.
async fn conserved(redis: &RedisServer) -> Totals {
    let totals = wallets(redis).totals().await.unwrap();
    assert_eq!(
        totals.balances + totals.escrow,
        totals.granted,
        "balances + escrow = granted: {totals:?}"
    );
    totals
}

/// An account's ledger as (key, kind, amount), checked to hold no key twice.
async fn ledger(redis: &RedisServer, account: &str) -> Vec<(String, String, i64)> {
    let view = wallets(redis).wallet(account).await.unwrap();
    let entries: Vec<_> = view
        .ledger
        .into_iter()
        .map(|e| (e.key, e.kind, e.amount))
        .collect();
    let mut keys: Vec<&str> = entries.iter().map(|(k, _, _)| k.as_str()).collect();
    keys.sort_unstable();
    let all = keys.len();
    keys.dedup();
    assert_eq!(keys.len(), all, "{account}: a ledger key applied twice");
    entries
}

async fn balance(redis: &RedisServer, account: &str) -> i64 {
    wallets(redis).wallet(account).await.unwrap().balance
}

/// A room as the store holds it: its fence and its stored version.
async fn fence_hash(redis: &RedisServer, code: &str) -> String {
    redis
        .command(&[
            "HMGET",
            &format!("jg:{{{code}}}:fence"),
            "owner",
            "epoch",
            "version",
        ])
        .await
}

/// The instance the room's fence names, which must be one of `instances`
/// and must run the room: a spectator sent straight to it (not naming the
/// room, so nothing moves it) is let in. Returns that instance and what
/// the spectator saw.
async fn owner_serving<'a>(
    redis: &RedisServer,
    code: &str,
    instances: &'a [JumpgateProcess],
) -> (&'a JumpgateProcess, RoomState) {
    let store = RedisStore::open(&redis.url(), PATIENCE).unwrap();
    let fence = store.fence(code).await.unwrap().expect("a fence");
    let owner = fence.owner.expect("an owner");
    let holder = instances
        .iter()
        .find(|p| owner == format!("test-{}", p.addr.port()))
        .unwrap_or_else(|| panic!("{code}: owned by {owner}, not a live instance"));
    let mut spectator = Player::connect_to(holder, Encoding::Json, None).await;
    (holder, spectator.watch(code).await)
}

/// Waits until the instance has taken back every room it can (`/readyz`).
async fn ready(instance: &JumpgateProcess) {
    let (status, _) = jumpgate_e2e::probe_while(
        PATIENCE,
        || jumpgate_e2e::http_get(instance.addr, "/readyz"),
        |(status, _)| *status != 200,
    )
    .await;
    assert_eq!(status, 200, "the instance never became ready");
}

fn moves(state: &RoomState) -> Vec<String> {
    state.game.as_ref().map_or(Vec::new(), |g| g.moves.clone())
}

/// Restoring a backup means going back to the moment it was taken. The
/// backup is `SAVE` and a copy of `dump.rdb`, taken while a staked best-of-3
/// series is in progress (stakes in escrow, three moves) and a plain lobby
/// has four moves. Play goes on after it: more moves, the series won and
/// paid, a rematch staked. Then every instance is stopped (SIGTERM), Redis
/// killed, its data replaced by the snapshot, and the instances started
/// again on it.
///
/// What comes back is the older snapshot, whole and consistent: every
/// lobby at the version and with the moves it had when the backup was
/// taken (the moves played after it, the win, the payout and the rematch
/// are gone: players must be told), the stakes back in escrow, balances
/// plus escrow exactly everything granted, each ledger as it was (no key
/// twice), and each room owned by one live instance that serves it. The
/// restored series plays on to its end and pays the pot once: each balance
/// ends exactly at the restored one plus what the settlement moves. A copy of
/// the AOF directory taken at the same moment restores the same rooms and
/// wallets.
///
/// How the snapshot is put back is [`RedisServer::restore_rdb`]: Redis 7.0
/// started with AOF on ignores a `dump.rdb` that has no AOF beside it. Every
/// instance is stopped first: one left running pays into the restored
/// wallets a settlement it had not paid yet when Redis went away, for a
/// series end that the snapshot does not hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restored_snapshot_resumes_every_lobby_where_the_backup_left_it() {
    let mut redis = RedisServer::start().await;
    let env = env(&redis);
    let addrs: Vec<SocketAddr> = (0..2)
        .map(|_| format!("127.0.0.1:{}", free_port()).parse().unwrap())
        .collect();
    let mut instances = Vec::new();
    for addr in &addrs {
        instances.push(JumpgateProcess::start_at(*addr, &env).await);
    }

    // A staked best-of-3 on the first instance, a plain lobby on the second.
    let mut ann = account(&instances[0], ANN).await;
    ann.request(|seq| ClientMessage::CreateLobby {
        seq,
        rule_set: RuleSet::American,
        series_length: 3,
        invite_only: false,
        stake: Some(STAKE as u32),
        pace: None,
        draw_rules: None,
    })
    .await
    .unwrap();
    let staked = ann.state_until(|_| true).await.code;
    let mut bob = account(&instances[0], BOB).await;
    bob.join(&staked).await;
    ann.phase(Phase::Playing).await;
    play(&mut ann, &mut bob, 3).await;
    let (mut host, mut guest, plain) = lobby_pair(&instances[1], RuleSet::American, 1).await;
    play(&mut host, &mut guest, 4).await;

    // The backup. Both players of each lobby have seen its last move, so
    // the store holds everything (nothing is shown before it is stored).
    let backup_dir = redis.dir.with_extension("backup");
    redis.backup(&backup_dir).await;
    let at_backup = [ann.state.clone().unwrap(), host.state.clone().unwrap()];
    let fences = [
        fence_hash(&redis, &staked).await,
        fence_hash(&redis, &plain).await,
    ];
    assert_eq!(moves(&at_backup[0]).len(), 3);
    assert_eq!(moves(&at_backup[1]).len(), 4);
    let totals = conserved(&redis).await;
    assert_eq!((totals.escrow, totals.granted), (2 * STAKE, 2000));
    let ledgers = [ledger(&redis, ANN).await, ledger(&redis, BOB).await];
    let series = ledgers[0]
        .iter()
        .find_map(|(key, kind, _)| (kind == "escrow").then(|| key.strip_suffix(":escrow")))
        .flatten()
        .expect("ann staked")
        .to_owned();

    // After the backup: more moves, Bob resigns the series (Ann is paid the
    // pot), and a rematch stakes again.
    play(&mut host, &mut guest, 2).await;
    play(&mut ann, &mut bob, 2).await;
    bob.request(|seq| ClientMessage::Resign { seq })
        .await
        .unwrap();
    ann.state_until(|s| s.series.result.is_some()).await;
    let paid =
        jumpgate_e2e::probe_while(PATIENCE, || balance(&redis, ANN), |b| *b != 1000 + STAKE).await;
    assert_eq!(paid, 1000 + STAKE, "Ann was paid the pot");
    for p in [&mut ann, &mut bob] {
        p.request(|seq| ClientMessage::Rematch { seq })
            .await
            .unwrap();
    }
    ann.state_until(|s| s.series.result.is_none() && s.phase == Phase::Playing)
        .await;
    let before_restore = conserved(&redis).await;
    assert_eq!(before_restore.escrow, 2 * STAKE, "the rematch is staked");

    // The restore: every instance stopped, Redis killed, its data replaced
    // by the snapshot; then the instances again, on the same addresses.
    for instance in &mut instances {
        assert!(instance.terminate().success());
    }
    drop((ann, bob, host, guest));
    let from_aof = RedisServer::start_from_aof(&backup_dir.join("appendonlydir")).await;
    redis.restore_rdb(&backup_dir.join("dump.rdb")).await;
    let _ = std::fs::remove_dir_all(&backup_dir);
    for (code, fence) in [&staked, &plain].into_iter().zip(&fences) {
        let restored = fence_hash(&redis, code).await;
        assert_eq!(
            restored, *fence,
            "{code}: the backup's owner, epoch, version"
        );
        assert_eq!(
            fence_hash(&from_aof, code).await,
            restored,
            "{code}: the AOF copy restores the same room"
        );
    }
    assert_eq!(
        wallets(&from_aof).totals().await.unwrap(),
        wallets(&redis).totals().await.unwrap(),
        "the AOF copy restores the same wallets"
    );
    drop(from_aof);
    let mut instances = Vec::new();
    for addr in &addrs {
        instances.push(JumpgateProcess::start_at(*addr, &env).await);
    }
    for instance in &instances {
        ready(instance).await;
    }

    // The money is the snapshot's, exactly: the stakes back in escrow, the
    // payout and the rematch's stakes gone, every ledger as it was.
    let restored = conserved(&redis).await;
    assert_eq!(restored, totals, "the wallets as the backup had them");
    assert_eq!(ledger(&redis, ANN).await, ledgers[0]);
    assert_eq!(ledger(&redis, BOB).await, ledgers[1]);
    assert_eq!(balance(&redis, ANN).await, 1000 - STAKE);
    assert_eq!(balance(&redis, BOB).await, 1000 - STAKE);

    // Every lobby at its backup version, with its backup moves and no
    // later one, run by one live instance. The spectator's arrival is the
    // one change since.
    for state in &at_backup {
        let (_, seen) = owner_serving(&redis, &state.code, &instances).await;
        assert_eq!(seen.spectators, state.spectators + 1);
        assert_eq!(
            seen.version,
            state.version + 1,
            "{}: the backup's version",
            state.code
        );
        assert_eq!(
            moves(&seen),
            moves(state),
            "{}: the backup's moves",
            state.code
        );
        assert_eq!(seen.series.result, None);
    }

    // The restored series plays on and ends; the pot is paid once.
    let (holder, _) = owner_serving(&redis, &staked, &instances).await;
    let mut ann = account(holder, ANN).await;
    let mut bob = account(holder, BOB).await;
    ann.join(&staked).await;
    bob.join(&staked).await;
    let played = play(&mut ann, &mut bob, 2).await;
    assert_eq!(moves(ann.state.as_ref().unwrap()).len(), 3 + played.len());
    ann.request(|seq| ClientMessage::Resign { seq })
        .await
        .unwrap();
    bob.state_until(|s| s.series.result.is_some()).await;
    let paid =
        jumpgate_e2e::probe_while(PATIENCE, || balance(&redis, BOB), |b| *b != 1000 + STAKE).await;
    assert_eq!(paid, 1000 + STAKE, "the restored balance plus the pot");
    assert_eq!(balance(&redis, ANN).await, 1000 - STAKE);
    let settled = conserved(&redis).await;
    assert_eq!((settled.escrow, settled.granted), (0, 2000));
    let payout = (format!("{series}:settle"), "payout".to_owned(), 2 * STAKE);
    assert_eq!(
        ledger(&redis, BOB).await,
        [ledgers[1].clone(), vec![payout]].concat(),
        "one payout for Bob"
    );
    assert_eq!(
        ledger(&redis, ANN).await,
        ledgers[0],
        "nothing more for Ann"
    );
}
