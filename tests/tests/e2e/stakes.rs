//! Bold Points against a real Redis (and the embedded and in-memory wallets, which must
//! agree): escrow, payouts, refunds, the daily cap, idempotent retries and
//! the conservation invariant under concurrency.

use std::sync::Arc;
use std::time::Duration;

use jumpgate_e2e::RedisServer;
use jumpgate_server::wallet::{
    Escrow, MemoryWallets, RedisWallets, Settled, Settlement, WalletRules, Wallets,
};

/// The wallets on one Redis, on a three-master Redis Cluster, in a data
/// directory's file and in memory: all four must agree.
async fn both() -> (
    (RedisServer, jumpgate_e2e::RedisCluster, tempfile::TempDir),
    Vec<Arc<dyn Wallets>>,
) {
    let dir = tempfile::tempdir().unwrap();
    let db = jumpgate_server::store::embedded::Db::open(dir.path()).unwrap();
    let redis = RedisServer::start().await;
    let cluster = jumpgate_e2e::RedisCluster::start().await;
    let rules = WalletRules::default();
    let r = RedisWallets::open(&redis.url(), Duration::from_secs(2), rules).unwrap();
    let c = RedisWallets::open(&cluster.url(), Duration::from_secs(2), rules).unwrap();
    (
        (redis, cluster, dir),
        vec![
            Arc::new(r),
            Arc::new(c),
            Arc::new(jumpgate_server::store::embedded::EmbeddedWallets::on(
                db, rules,
            )),
            Arc::new(MemoryWallets::new(rules)),
        ],
    )
}

async fn balance(w: &dyn Wallets, account: &str) -> i64 {
    w.wallet(account).await.unwrap().balance
}

async fn conserved(w: &dyn Wallets) {
    let t = w.totals().await.unwrap();
    assert_eq!(
        t.balances + t.escrow,
        t.granted,
        "balances + escrow = granted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn win_draw_and_retries_move_exact_amounts() {
    let (_redis, wallets) = both().await;
    for w in wallets {
        let w = w.as_ref();
        assert_eq!(
            balance(w, "a_ann").await,
            1000,
            "a new account starts with the grant"
        );

        // A win: the winner takes the pot.
        assert_eq!(
            w.escrow("S1", [("a_ann", 100), ("a_bob", 100)], 0)
                .await
                .unwrap(),
            Escrow::Taken
        );
        assert_eq!(balance(w, "a_ann").await, 900);
        assert_eq!(balance(w, "a_bob").await, 900);
        conserved(w).await;
        let win = Settlement::Winner {
            winner: "a_ann".into(),
            loser: "a_bob".into(),
        };
        let s = w.settle("S1", &win, 1, 0).await.unwrap();
        assert_eq!(
            s,
            Settled {
                paid: 200,
                refunded: 0
            }
        );
        // Retried: nothing moves twice, and a settled series takes nothing.
        assert_eq!(
            w.settle("S1", &win, 1, 0).await.unwrap(),
            Settled::default()
        );
        assert_eq!(
            w.escrow("S1", [("a_ann", 100), ("a_bob", 100)], 0)
                .await
                .unwrap(),
            Escrow::Closed
        );
        assert_eq!(balance(w, "a_ann").await, 1100);
        assert_eq!(balance(w, "a_bob").await, 900);

        // A draw: every stake comes back.
        assert_eq!(
            w.escrow("S2", [("a_ann", 50), ("a_bob", 50)], 0)
                .await
                .unwrap(),
            Escrow::Taken
        );
        let draw = Settlement::Refund {
            players: ["a_ann".into(), "a_bob".into()],
        };
        assert_eq!(
            w.settle("S2", &draw, 1, 0).await.unwrap(),
            Settled {
                paid: 0,
                refunded: 100
            }
        );
        assert_eq!(balance(w, "a_ann").await, 1100);
        assert_eq!(balance(w, "a_bob").await, 900);

        // Not enough: nothing is taken from anyone.
        assert_eq!(
            w.escrow("S3", [("a_ann", 1000), ("a_bob", 1000)], 0)
                .await
                .unwrap(),
            Escrow::Short("a_bob".to_owned())
        );
        assert_eq!(balance(w, "a_ann").await, 1100);
        assert_eq!(balance(w, "a_bob").await, 900);

        let ledger: Vec<(String, i64)> = w
            .wallet("a_ann")
            .await
            .unwrap()
            .ledger
            .into_iter()
            .map(|e| (e.kind, e.amount))
            .collect();
        let expected: Vec<(String, i64)> = [
            ("grant", 1000),
            ("escrow", -100),
            ("payout", 200),
            ("escrow", -50),
            ("refund", 50),
        ]
        .iter()
        .map(|(k, a)| ((*k).to_owned(), *a))
        .collect();
        assert_eq!(ledger, expected);
        conserved(w).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daily_cap_sends_the_excess_back_to_the_loser() {
    let (_redis, wallets) = both().await;
    for w in wallets {
        let w = w.as_ref();
        w.grant("a_rich", 10_000, "seed-rich").await.unwrap();
        w.grant("a_rich", 10_000, "seed-rich").await.unwrap(); // idempotent
        w.grant("a_champ", 10_000, "seed-champ").await.unwrap();
        assert_eq!(balance(w, "a_rich").await, 11_000);
        let win = Settlement::Winner {
            winner: "a_champ".into(),
            loser: "a_rich".into(),
        };
        // Five wins of 1,000 reach the 5,000 cap exactly.
        for i in 0..5 {
            let series = format!("C{i}");
            assert_eq!(
                w.escrow(&series, [("a_champ", 1000), ("a_rich", 1000)], 0)
                    .await
                    .unwrap(),
                Escrow::Taken
            );
            let s = w.settle(&series, &win, 7, 0).await.unwrap();
            assert_eq!(
                s,
                Settled {
                    paid: 2000,
                    refunded: 0
                }
            );
        }
        // The sixth the same day: the winner gets only their own stake back.
        assert_eq!(
            w.escrow("C5", [("a_champ", 1000), ("a_rich", 1000)], 0)
                .await
                .unwrap(),
            Escrow::Taken
        );
        assert_eq!(
            w.settle("C5", &win, 7, 0).await.unwrap(),
            Settled {
                paid: 1000,
                refunded: 1000
            }
        );
        // A new UTC day resets the cap.
        assert_eq!(
            w.escrow("C6", [("a_champ", 1000), ("a_rich", 1000)], 0)
                .await
                .unwrap(),
            Escrow::Taken
        );
        assert_eq!(
            w.settle("C6", &win, 8, 0).await.unwrap(),
            Settled {
                paid: 2000,
                refunded: 0
            }
        );
        assert_eq!(balance(w, "a_champ").await, 11_000 + 6000);
        assert_eq!(balance(w, "a_rich").await, 11_000 - 6000);
        conserved(w).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_series_settling_at_once_with_retries_conserve_every_point() {
    let (_redis, wallets) = both().await;
    for w in wallets {
        let mut tasks = Vec::new();
        for i in 0..40u64 {
            let w = w.clone();
            tasks.push(tokio::spawn(async move {
                let a = format!("a_p{}", i % 7);
                let b = format!("a_q{}", i % 5);
                let series = format!("M{i}");
                let stake = 10 + (i * 37) % 300;
                let escrowed = w
                    .escrow(&series, [(&a, stake), (&b, stake)], 0)
                    .await
                    .unwrap();
                if escrowed != Escrow::Taken {
                    return;
                }
                let settlement = if i % 3 == 0 {
                    Settlement::Refund {
                        players: [a.clone(), b.clone()],
                    }
                } else {
                    Settlement::Winner {
                        winner: a.clone(),
                        loser: b.clone(),
                    }
                };
                // A "crash between write and reply": the settlement is sent
                // again, twice at once, and once more later.
                let (x, y) = tokio::join!(
                    w.settle(&series, &settlement, 1, 0),
                    w.settle(&series, &settlement, 1, 0)
                );
                let (x, y) = (x.unwrap(), y.unwrap());
                let total = x.paid + x.refunded + y.paid + y.refunded;
                assert_eq!(
                    total,
                    2 * stake,
                    "exactly one of the two retries moved the pot"
                );
                let again = w.settle(&series, &settlement, 1, 0).await.unwrap();
                assert_eq!(again, Settled::default());
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let totals = w.totals().await.unwrap();
        assert_eq!(totals.escrow, 0, "every escrow settled");
        assert_eq!(totals.balances, totals.granted);
        for i in 0..7 {
            assert!(balance(w.as_ref(), &format!("a_p{i}")).await >= 0);
        }
        for i in 0..5 {
            assert!(balance(w.as_ref(), &format!("a_q{i}")).await >= 0);
        }
    }
}

mod played {
    //! Staked lobbies over real WebSockets, accounts signed by a test issuer.

    use std::time::Duration;

    use jumpgate_e2e::{Player, RedisServer, TestServer};
    use jumpgate_protocol::{ClientMessage, Encoding, ErrorCode, Phase, RuleSet};
    use jumpgate_server::identity::AccountSettings;

    const SECRET: &[u8] = b"issuer-secret-for-stake-tests";

    fn token(sub: &str, name: &str) -> String {
        jumpgate_e2e::account_token(SECRET, sub, name)
    }

    /// Where the operator API listens, per server (it is not on the
    /// public address).
    static ADMIN_ADDRS: std::sync::Mutex<Vec<(std::net::SocketAddr, std::net::SocketAddr)>> =
        std::sync::Mutex::new(Vec::new());

    fn admin_addr(server: &TestServer) -> std::net::SocketAddr {
        let addrs = ADMIN_ADDRS.lock().unwrap();
        addrs
            .iter()
            .find(|(public, _)| *public == server.addr)
            .unwrap()
            .1
    }

    async fn server(redis: &RedisServer) -> TestServer {
        let url = redis.url();
        server_configured(move |s| s.redis_url = Some(url)).await
    }

    async fn server_on(storage: &jumpgate_e2e::Storage) -> TestServer {
        server_configured(|s| storage.configure(s)).await
    }

    async fn server_configured(
        store: impl FnOnce(&mut jumpgate_server::config::Settings),
    ) -> TestServer {
        let admin = std::net::SocketAddr::from(([127, 0, 0, 1], jumpgate_e2e::free_port()));
        let server = TestServer::start(move |s| {
            store(s);
            s.break_time = Duration::from_millis(200);
            s.admin_token = Some("admin-secret".into());
            s.admin_listen = Some(admin);
            s.accounts = Some(AccountSettings {
                issuer: "https://id.test".into(),
                audience: "jumpgate".into(),
                hs256: vec![("k1".into(), SECRET.to_vec())],
                ..AccountSettings::default()
            });
        })
        .await;
        ADMIN_ADDRS.lock().unwrap().push((server.addr, admin));
        server
    }

    async fn account(server: &TestServer, sub: &str) -> Player {
        Player::connect_with(
            server,
            Encoding::Json,
            Some(token(sub, &format!("Name {sub}"))),
        )
        .await
    }

    async fn create(host: &mut Player, stake: u32, series_length: u8) -> String {
        host.state = None;
        let seq = host
            .send(|seq| ClientMessage::CreateLobby {
                seq,
                rule_set: RuleSet::American,
                series_length,
                invite_only: false,
                stake: Some(stake),
                pace: None,
                draw_rules: None,
            })
            .await;
        host.expect_ack(seq).await;
        let state = host.state_until(|_| true).await;
        assert_eq!(state.stake, stake, "the stake is shown before anyone sits");
        state.code
    }

    async fn http(server: &TestServer, path: &str, auth: bool) -> String {
        let addr = if path.starts_with("/api/admin/") {
            admin_addr(server)
        } else {
            server.addr
        };
        let headers: &[(&str, &str)] = if auth {
            &[("Authorization", "Bearer admin-secret")]
        } else {
            &[]
        };
        jumpgate_e2e::http_get_with(addr, path, headers).await.1
    }

    async fn balance(server: &TestServer, account: &str) -> i64 {
        let response = http(server, &format!("/api/admin/wallets/{account}"), true).await;
        let body = response.split("\r\n\r\n").nth(1).unwrap();
        let body = body.trim_start_matches(|c: char| c.is_ascii_hexdigit() || c.is_whitespace());
        let json: serde_json::Value = serde_json::from_str(body.split("\r\n").next().unwrap())
            .unwrap_or_else(|_| serde_json::from_str(body).unwrap());
        json["balance"].as_i64().unwrap()
    }

    /// The balance once a series' settlement is written. The room pays out
    /// just after it stores and announces the result, so a balance read the
    /// moment a snapshot shows the end may not show it yet. Waits up to ten
    /// seconds for `expected` and returns what the wallet says then.
    async fn settled_balance(server: &TestServer, account: &str, expected: i64) -> i64 {
        let limit = std::time::Duration::from_secs(10);
        jumpgate_e2e::probe_while(limit, || balance(server, account), |b| *b != expected).await
    }

    jumpgate_e2e::on_every_store!(
        resign_pays_the_winner_end_match_refunds_and_short_wallets_cannot_start,
        staked_series_on
    );

    async fn staked_series_on(storage: jumpgate_e2e::Storage) {
        let server = server_on(&storage).await;

        // Guests are refused staked play, with a clear code.
        let mut guest = Player::connect(&server, Encoding::Json).await;
        let seq = guest
            .send(|seq| ClientMessage::CreateLobby {
                seq,
                rule_set: RuleSet::American,
                series_length: 1,
                invite_only: false,
                stake: Some(100),
                pace: None,
                draw_rules: None,
            })
            .await;
        assert_eq!(
            guest.expect_error(Some(seq)).await,
            ErrorCode::AccountRequired
        );

        let mut ann = account(&server, "ann").await;
        let mut bob = account(&server, "bob").await;
        let code = create(&mut ann, 400, 3).await;
        let c = code.clone();
        let seq = guest
            .send(|seq| ClientMessage::JoinLobby {
                seq,
                code: c,
                invite: None,
            })
            .await;
        assert_eq!(
            guest.expect_error(Some(seq)).await,
            ErrorCode::AccountRequired
        );

        bob.join(&code).await;
        bob.phase(Phase::Playing).await;
        assert_eq!(
            balance(&server, "a_ann").await,
            600,
            "stakes held in escrow"
        );
        assert_eq!(balance(&server, "a_bob").await, 600);

        // Resigning concedes the series and the pot.
        let seq = bob.send(|seq| ClientMessage::Resign { seq }).await;
        bob.expect_ack(seq).await;
        ann.phase(Phase::Finished).await;
        // The series counts toward records, ranks and the head-to-head.
        let s = ann
            .state_until(|s| {
                s.players[0]
                    .as_ref()
                    .and_then(|p| p.record.as_ref())
                    .is_some_and(|r| r.series_won == 1)
            })
            .await;
        let record = s.players[0].as_ref().unwrap().record.clone().unwrap();
        assert_eq!(
            (record.rank.as_str(), record.streak, record.best_streak),
            ("Rookie", 1, 1)
        );
        assert_eq!(
            s.players[1]
                .as_ref()
                .unwrap()
                .record
                .as_ref()
                .unwrap()
                .streak,
            0
        );
        let h2h = s
            .head_to_head
            .clone()
            .expect("two accounts have a head-to-head");
        assert_eq!((h2h.wins.clone(), h2h.draws), (vec![1, 0], 0));
        assert_eq!(settled_balance(&server, "a_ann", 1400).await, 1400);
        assert_eq!(settled_balance(&server, "a_bob", 600).await, 600);

        // Rematch; the host ends the match: every stake comes back.
        for p in [&mut ann, &mut bob] {
            let seq = p.send(|seq| ClientMessage::Rematch { seq }).await;
            p.expect_ack(seq).await;
        }
        ann.state_until(|s| s.phase == Phase::Playing).await;
        assert_eq!(balance(&server, "a_bob").await, 200);
        let seq = ann.send(|seq| ClientMessage::EndMatch { seq }).await;
        ann.expect_ack(seq).await;
        ann.phase(Phase::Ended).await;
        assert_eq!(settled_balance(&server, "a_ann", 1400).await, 1400);
        assert_eq!(settled_balance(&server, "a_bob", 600).await, 600);

        // Bob leaves mid-series in a new lobby: he concedes the pot.
        let code2 = {
            let seq = ann.send(|seq| ClientMessage::Leave { seq }).await;
            ann.expect_ack(seq).await;
            let seq = bob.send(|seq| ClientMessage::Leave { seq }).await;
            bob.expect_ack(seq).await;
            create(&mut ann, 600, 1).await
        };
        bob.state = None;
        bob.join(&code2).await;
        bob.phase(Phase::Playing).await;
        assert_eq!(balance(&server, "a_bob").await, 0);
        let seq = bob.send(|seq| ClientMessage::Leave { seq }).await;
        bob.expect_ack(seq).await;
        ann.state_until(|s| s.series.result.is_some()).await;
        assert_eq!(settled_balance(&server, "a_ann", 2000).await, 2000);
        assert_eq!(balance(&server, "a_bob").await, 0);

        // Bob cannot cover a stake now: nothing is taken from anyone.
        let mut bob = account(&server, "bob").await;
        let c = code2.clone();
        let seq = bob
            .send(|seq| ClientMessage::JoinLobby {
                seq,
                code: c,
                invite: None,
            })
            .await;
        assert_eq!(
            bob.expect_error(Some(seq)).await,
            ErrorCode::InsufficientFunds
        );
        assert_eq!(balance(&server, "a_ann").await, 2000);
        assert_eq!(balance(&server, "a_bob").await, 0);

        // The admin API needs its token; nothing public shows an email.
        assert!(
            http(&server, "/api/admin/wallets/a_ann", false)
                .await
                .contains("401")
        );
        let summary = http(&server, &format!("/r/{code2}"), false).await;
        assert!(!summary.contains("private.example"));
        let metrics = http(&server, "/metrics", false).await;
        assert!(!metrics.contains("private.example"));
        assert!(metrics.contains("jumpgate_stake_points_paid_total"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_frame_sent_to_anyone_carries_an_email() {
        let redis = RedisServer::start().await;
        let server = server(&redis).await;
        let mut ann = account(&server, "ann2").await;
        let code = create(&mut ann, 50, 1).await;
        let mut raw = jumpgate_protocol::client::Client::connect(&server.ws_url(), Encoding::Json)
            .await
            .unwrap();
        raw.send(&ClientMessage::Hello {
            seq: 1,
            protocol: 1,
            token: Some(token("bob2", "Bob")),
            client: "t".into(),
            name: None,
        })
        .await
        .unwrap();
        raw.send(&ClientMessage::JoinLobby {
            seq: 2,
            code,
            invite: None,
        })
        .await
        .unwrap();
        for _ in 0..3 {
            let message = jumpgate_e2e::recv(&mut raw).await;
            let text = serde_json::to_string(&message).unwrap();
            assert!(!text.contains("private.example"), "{text}");
        }
        let s = ann.state_until(|s| s.phase == Phase::Playing).await;
        let text = serde_json::to_string(&s).unwrap();
        assert!(!text.contains("private.example"));
        assert!(text.contains("Name ann2"), "names are shown");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_count_streaks_ranks_and_head_to_head_once_per_series() {
    use jumpgate_server::records::{
        MemoryRecords, RankThresholds, Records, RedisRecords, SeriesRecord,
    };
    let redis = RedisServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let db = jumpgate_server::store::embedded::Db::open(dir.path()).unwrap();
    let stores: Vec<Box<dyn Records>> = vec![
        Box::new(
            RedisRecords::open(
                &redis.url(),
                Duration::from_secs(2),
                jumpgate_server::idempotency::IdempotencyWindow::default(),
            )
            .unwrap(),
        ),
        Box::new(jumpgate_server::store::embedded::EmbeddedRecords::on(
            db,
            jumpgate_server::idempotency::IdempotencyWindow::default(),
        )),
        Box::new(MemoryRecords::default()),
    ];
    for r in stores {
        let series = |n: u32, winner: Option<usize>| SeriesRecord {
            series: format!("R{n}"),
            rule_set: "russian".into(),
            players: ["a_x".into(), "a_y".into()],
            winner,
            decided: 0,
        };
        for (n, w) in [
            (1, Some(0)),
            (2, Some(0)),
            (3, Some(0)),
            (4, None),
            (5, Some(1)),
            (6, Some(0)),
        ] {
            r.record(&series(n, w)).await.unwrap();
            r.record(&series(n, w)).await.unwrap(); // a retry counts once
        }
        let x = r.player("a_x", "russian").await.unwrap();
        assert_eq!((x.series_won, x.streak, x.best_streak), (4, 1, 3));
        let y = r.player("a_y", "russian").await.unwrap();
        assert_eq!((y.series_won, y.streak, y.best_streak), (1, 0, 1));
        assert_eq!(
            r.player("a_x", "thai").await.unwrap().streak,
            0,
            "streaks are per rule set"
        );
        assert_eq!(r.head_to_head("a_x", "a_y").await.unwrap(), (4, 1, 1));
        assert_eq!(r.head_to_head("a_y", "a_x").await.unwrap(), (1, 4, 1));
        assert_eq!(RankThresholds::default().rank(x.series_won), "Contender");
    }
}

/// An escrow is tied to the exact accounts and amounts it took: a retry
/// with the same stakes is recognised, one with other stakes takes nothing,
/// and once a series is settled (even one whose escrow never ran, which is
/// how a series start of unknown outcome is undone) a late escrow call
/// takes nothing. A settlement that does not name everyone held still
/// gives everyone back their points.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escrow_is_bound_to_its_stakes_and_closed_by_settlement() {
    let (_redis, wallets) = both().await;
    for w in wallets {
        let w = w.as_ref();
        let stakes = [("a_x", 100), ("a_y", 100)];
        assert_eq!(w.escrow("B1", stakes, 0).await.unwrap(), Escrow::Taken);
        assert_eq!(
            w.escrow("B1", stakes, 0).await.unwrap(),
            Escrow::Taken,
            "a retry is recognised"
        );
        assert_eq!(balance(w, "a_x").await, 900, "and takes nothing more");
        assert_eq!(
            w.escrow("B1", [("a_x", 100), ("a_z", 100)], 0)
                .await
                .unwrap(),
            Escrow::Closed,
            "the series id holds other stakes"
        );
        assert_eq!(balance(w, "a_z").await, 1000);
        conserved(w).await;

        // Settled naming a different pair: everyone held is still refunded
        // or paid; nothing disappears with the escrow.
        let odd = Settlement::Winner {
            winner: "a_x".into(),
            loser: "a_z".into(),
        };
        let s = w.settle("B1", &odd, 1, 0).await.unwrap();
        assert_eq!(s.paid + s.refunded, 200);
        assert_eq!(balance(w, "a_y").await, 1000, "a_y's stake came back");
        assert_eq!(balance(w, "a_x").await, 1000);
        conserved(w).await;

        // Undoing a start whose escrow never ran closes the series.
        let refund = Settlement::Refund {
            players: ["a_x".into(), "a_y".into()],
        };
        assert_eq!(
            w.settle("B2", &refund, 1, 0).await.unwrap(),
            Settled::default()
        );
        assert_eq!(
            w.escrow("B2", stakes, 0).await.unwrap(),
            Escrow::Closed,
            "a late escrow after the refund takes nothing"
        );
        assert_eq!(balance(w, "a_x").await, 1000);
        assert_eq!(balance(w, "a_y").await, 1000);
        assert_eq!(w.totals().await.unwrap().escrow, 0);
        conserved(w).await;
    }
}
