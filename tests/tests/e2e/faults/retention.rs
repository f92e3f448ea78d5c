//! Bounded data under faults: series played back to back in one staked
//! lobby while the ledgers keep three entries and the idempotency keys a
//! few seconds, with Redis stalled during settlements and the server
//! killed -9 right after series ends. Trimming must not cost a point or
//! count a series twice.

use std::time::Duration;

use jumpgate_e2e::{JumpgateProcess, PATIENCE, Player, RedisServer};
use jumpgate_protocol::{ClientMessage, Encoding, Phase};
use jumpgate_server::idempotency::IdempotencyWindow;
use jumpgate_server::records::{Records, RedisRecords};
use jumpgate_server::wallet::Wallets;

use super::{STALL_MS, conserved, server_env, staked_lobby, token, wallets};

/// The idempotency window of this test's servers.
const WINDOW_SECS: u64 = 6;
const STAKE: i64 = 50;
const SERIES: usize = 6;

/// Both players connected to `server` again and back in lobby `code`,
/// each numbering on from the last `seq` it used before (as PROTOCOL.md
/// asks: a lobby action repeated with the same `seq` is applied once).
async fn seat_both(server: &JumpgateProcess, code: &str, last: [u32; 2]) -> (Player, Player) {
    let mut ann = Player::connect_to(server, Encoding::Json, Some(token("rt_ann"))).await;
    let mut bob = Player::connect_to(server, Encoding::MsgPack, Some(token("rt_bob"))).await;
    while ann.seq() < last[0] {}
    while bob.seq() < last[1] {}
    ann.join(code).await;
    bob.join(code).await;
    (ann, bob)
}

/// Waits until no points are held in escrow (every settlement landed).
async fn settled(redis: &RedisServer, accounts: &[String], series: usize) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while conserved(redis, accounts).await != 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "series {series} settled in time"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Six staked series, one lobby, seats swapped by each rematch; the host's
/// seat resigns every series, so the winners alternate. Series 2 and 5 end
/// into a Redis stall longer than the server's timeout (the settlement and
/// the record are retried); series 3 and 6 end with a kill -9 right after
/// the resign is acknowledged (they are replayed by the restarted server).
/// Then: every balance is exactly its archived months plus its ledger, and
/// holds exactly the movements played (no escrow or payout twice);
/// balances plus escrow equal everything granted, with nothing held; the
/// records count each series once; and once a window has passed, the
/// idempotency keys are down to those of the last window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trimmed_ledgers_and_forgotten_keys_lose_no_point_and_count_no_series_twice() {
    let redis = RedisServer::start().await;
    let mut env = server_env(&redis);
    env.push(("JUMPGATE_LEDGER_KEEP", "3".into()));
    env.push(("JUMPGATE_IDEMPOTENCY_WINDOW_SECS", WINDOW_SECS.to_string()));
    let accounts = ["a_rt_ann".to_owned(), "a_rt_bob".to_owned()];

    let mut server = JumpgateProcess::start(&env).await;
    let mut ann = Player::connect_to(&server, Encoding::Json, Some(token("rt_ann"))).await;
    let code = staked_lobby(&mut ann, STAKE as u32).await;
    let mut bob = Player::connect_to(&server, Encoding::MsgPack, Some(token("rt_bob"))).await;
    bob.join(&code).await;
    ann.phase(Phase::Playing).await;

    let mut wins = [0i64; 2];
    for series in 1..=SERIES {
        // The host's seat resigns: ann in odd series, bob in even ones
        // (the rematch swaps the seats).
        let (loser, winner) = if series % 2 == 1 {
            (&mut ann, 1)
        } else {
            (&mut bob, 0)
        };
        loser
            .request(|seq| ClientMessage::Resign { seq })
            .await
            .expect("the resignation is stored");
        wins[winner] += 1;
        match series % 3 {
            2 => redis.pause(STALL_MS).await,
            0 => {
                server.kill_9();
                server = JumpgateProcess::start(&env).await;
                let last = [ann.seq(), bob.seq()];
                (ann, bob) = seat_both(&server, &code, last).await;
            }
            _ => {}
        }
        settled(&redis, &accounts, series).await;
        if series == SERIES {
            break;
        }
        ann.phase(Phase::Finished).await;
        ann.request(|seq| ClientMessage::Rematch { seq })
            .await
            .unwrap();
        bob.request(|seq| ClientMessage::Rematch { seq })
            .await
            .unwrap();
        ann.phase(Phase::Playing).await;
    }

    let w = wallets(&redis);
    for (i, account) in accounts.iter().enumerate() {
        let view = w.wallet(account).await.unwrap();
        let archived: i64 = view.archived.iter().map(|p| p.amount).sum();
        let recent: i64 = view.ledger.iter().map(|e| e.amount).sum();
        assert_eq!(
            view.balance,
            archived + recent,
            "{account}: the balance is exactly its archive plus its ledger"
        );
        assert_eq!(view.ledger.len(), 3, "{account}: three entries kept");
        let expected = 1000 + STAKE * (wins[i] - wins[1 - i]);
        assert_eq!(view.balance, expected, "{account}: {wins:?}");
        let movements: u64 =
            view.archived.iter().map(|p| p.count).sum::<u64>() + view.ledger.len() as u64;
        assert_eq!(
            movements,
            1 + SERIES as u64 + wins[i] as u64,
            "{account}: the initial grant, one escrow a series and one payout a win, once each"
        );
    }
    assert_eq!(conserved(&redis, &accounts).await, 0);

    let records = RedisRecords::open(
        &redis.url(),
        PATIENCE,
        IdempotencyWindow {
            ms: WINDOW_SECS * 1000,
        },
    )
    .unwrap();
    let mut won = 0;
    for account in &accounts {
        won += records
            .player(account, "american")
            .await
            .unwrap()
            .series_won;
    }
    assert_eq!(won as usize, SERIES, "each series recorded once");

    // A window later, the next movement forgets every key decided before.
    tokio::time::sleep(Duration::from_secs(WINDOW_SECS + 1)).await;
    let fresh = jumpgate_server::wallet::RedisWallets::open(
        &redis.url(),
        PATIENCE,
        jumpgate_server::wallet::WalletRules {
            ledger_keep: 3,
            window: IdempotencyWindow {
                ms: WINDOW_SECS * 1000,
            },
            ..Default::default()
        },
    )
    .unwrap();
    fresh
        .grant("a_rt_ann", 1, "after-the-window")
        .await
        .unwrap();
    let kept = redis.command(&["ZCARD", "jgw:{wallets}:done:at"]).await;
    assert_eq!(kept.trim(), ":1", "only the grant's key is left");
    let kept = redis.command(&["SCARD", "jgw:{wallets}:done"]).await;
    assert_eq!(kept.trim(), ":1");
    assert_eq!(conserved(&redis, &accounts).await, 0);
}
