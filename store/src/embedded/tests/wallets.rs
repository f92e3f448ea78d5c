//! Wallets: escrow all or nothing, settlement within the daily cap,
//! refunds and closed series, grants by key, the ledger's roll-up, late
//! escrows refused, and every point accounted for.

use std::time::Duration;

use super::{Kind, Under, on_both, open};
use crate::StoreError;
use crate::embedded::EmbeddedWallets;
use crate::idempotency::IdempotencyWindow;
use crate::wallet::{
    Escrow, LedgerEntry, MemoryWallets, Settled, Settlement, Totals, WalletRules, Wallets, month_of,
};

fn wallets(kind: Kind, rules: WalletRules) -> Under<dyn Wallets> {
    open::<dyn Wallets>(
        kind,
        || Box::new(MemoryWallets::new(rules)),
        |db| Box::new(EmbeddedWallets::on(db, rules)),
    )
}

fn win(winner: &str, loser: &str) -> Settlement {
    Settlement::Winner {
        winner: winner.into(),
        loser: loser.into(),
    }
}

fn refund(a: &str, b: &str) -> Settlement {
    Settlement::Refund {
        players: [a.into(), b.into()],
    }
}

async fn balance(w: &dyn Wallets, account: &str) -> i64 {
    w.wallet(account).await.unwrap().balance
}

/// Every point granted is in a balance or held.
async fn conserved(w: &dyn Wallets) -> Totals {
    let t = w.totals().await.unwrap();
    assert_eq!(t.balances + t.escrow, t.granted, "conserved: {t:?}");
    t
}

const DAY: u64 = 20_000;

on_both!(
    escrow_takes_both_stakes_or_nothing,
    settlement_pays_up_to_the_daily_cap,
    settling_refunds_what_is_held_and_closes_the_series,
    grants_count_once_per_key,
    the_ledger_rolls_into_monthly_totals_per_kind,
    late_escrows_are_refused_as_expired_and_settlements_never,
);

async fn escrow_takes_both_stakes_or_nothing(kind: Kind) {
    let w = wallets(kind, WalletRules::default());
    let now = w.now();
    let stakes = [("a_ann", 100), ("a_bob", 100)];
    assert_eq!(w.escrow("S1", stakes, now).await.unwrap(), Escrow::Taken);
    let held = Totals {
        balances: 1_800,
        escrow: 200,
        granted: 2_000,
    };
    assert_eq!(conserved(&*w).await, held);
    // A retry is taken already and moves nothing.
    assert_eq!(w.escrow("S1", stakes, now).await.unwrap(), Escrow::Taken);
    assert_eq!(conserved(&*w).await, held);
    let ann = w.wallet("a_ann").await.unwrap();
    let kinds: Vec<(&str, &str, i64)> = ann
        .ledger
        .iter()
        .map(|e| (e.key.as_str(), e.kind.as_str(), e.amount))
        .collect();
    assert_eq!(
        kinds,
        [
            ("initial-grant", "grant", 1_000),
            ("S1:escrow", "escrow", -100)
        ]
    );
    assert_eq!(ann.balance, 900);
    // The same series with other stakes or other accounts: closed, and
    // the other account is not even opened.
    for other in [
        [("a_ann", 100), ("a_bob", 50)],
        [("a_ann", 100), ("a_cy", 100)],
        [("a_ann", 100), ("a_ann", 100)],
    ] {
        assert_eq!(w.escrow("S1", other, now).await.unwrap(), Escrow::Closed);
    }
    assert_eq!(conserved(&*w).await, held);
    // One account short: nothing taken from either (both opened, as on
    // their first touch), and the series can still be taken later.
    let short = [("a_dan", 100), ("a_eve", 1_001)];
    assert_eq!(
        w.escrow("S2", short, now).await.unwrap(),
        Escrow::Short("a_eve".into())
    );
    assert_eq!(
        w.escrow("S2", [("a_fay", 1_001), ("a_gus", 1_001)], now)
            .await
            .unwrap(),
        Escrow::Short("a_fay".into()),
        "the first account short is named"
    );
    assert_eq!(
        conserved(&*w).await,
        Totals {
            balances: 5_800,
            escrow: 200,
            granted: 6_000,
        }
    );
    let dan = w.wallet("a_dan").await.unwrap();
    assert_eq!((dan.balance, dan.ledger.len()), (1_000, 1), "{dan:?}");
    assert_eq!(balance(&*w, "a_eve").await, 1_000);
    // Exactly the balance is enough.
    let all_in = [("a_dan", 1_000), ("a_eve", 1_000)];
    assert_eq!(w.escrow("S2", all_in, now).await.unwrap(), Escrow::Taken);
    assert_eq!(balance(&*w, "a_dan").await, 0);
    assert_eq!(conserved(&*w).await.escrow, 2_200);
}

async fn settlement_pays_up_to_the_daily_cap(kind: Kind) {
    let rules = WalletRules {
        daily_cap: 150,
        ..WalletRules::default()
    };
    let w = wallets(kind, rules);
    let now = w.now();
    let stakes = [("a_ann", 100), ("a_bob", 100)];
    let mut series = 0;
    let mut play = async |settlement: Settlement, day: u64| {
        series += 1;
        let id = format!("S{series}");
        assert_eq!(w.escrow(&id, stakes, now).await.unwrap(), Escrow::Taken);
        let settled = w.settle(&id, &settlement, day, now).await.unwrap();
        // Settled once: a retry moves nothing.
        assert_eq!(
            w.settle(&id, &settlement, day, now).await.unwrap(),
            Settled::default()
        );
        settled
    };
    let paid = |paid, refunded| Settled { paid, refunded };
    // 100 won of the cap of 150, then 50, then nothing: the rest goes back.
    assert_eq!(play(win("a_ann", "a_bob"), DAY).await, paid(200, 0));
    assert_eq!(play(win("a_ann", "a_bob"), DAY).await, paid(150, 50));
    assert_eq!(play(win("a_ann", "a_bob"), DAY).await, paid(100, 100));
    // A cap per account and per day.
    assert_eq!(play(win("a_bob", "a_ann"), DAY).await, paid(200, 0));
    assert_eq!(play(win("a_ann", "a_bob"), DAY + 1).await, paid(200, 0));
    assert_eq!(balance(&*w, "a_ann").await, 1_000 + 100 + 50 - 100 + 100);
    assert_eq!(balance(&*w, "a_bob").await, 1_000 - 100 - 50 + 100 - 100);
    let bob = w.wallet("a_bob").await.unwrap();
    let s2: Vec<(&str, i64)> = bob
        .ledger
        .iter()
        .filter(|e| e.key.starts_with("S2:"))
        .map(|e| (e.kind.as_str(), e.amount))
        .collect();
    assert_eq!(s2, [("escrow", -100), ("refund", 50)]);
    let t = conserved(&*w).await;
    assert_eq!((t.escrow, t.granted), (0, 2_000));
}

async fn settling_refunds_what_is_held_and_closes_the_series(kind: Kind) {
    let w = wallets(kind, WalletRules::default());
    let now = w.now();
    let stakes = [("a_ann", 100), ("a_bob", 300)];
    assert_eq!(w.escrow("S1", stakes, now).await.unwrap(), Escrow::Taken);
    let back = refund("a_ann", "a_bob");
    assert_eq!(
        w.settle("S1", &back, DAY, now).await.unwrap(),
        Settled {
            paid: 0,
            refunded: 400
        }
    );
    assert_eq!(balance(&*w, "a_ann").await, 1_000);
    assert_eq!(balance(&*w, "a_bob").await, 1_000);
    // Closed: a late escrow takes nothing, a repeated settlement moves
    // nothing.
    assert_eq!(w.escrow("S1", stakes, now).await.unwrap(), Escrow::Closed);
    assert_eq!(
        w.settle("S1", &win("a_ann", "a_bob"), DAY, now)
            .await
            .unwrap(),
        Settled::default()
    );
    // A settlement before any escrow closes the series too.
    assert_eq!(
        w.settle("S2", &refund("a_ann", "a_bob"), DAY, now)
            .await
            .unwrap(),
        Settled::default()
    );
    assert_eq!(w.escrow("S2", stakes, now).await.unwrap(), Escrow::Closed);
    assert_eq!(balance(&*w, "a_bob").await, 1_000);
    // Accounts held that the settlement does not name get theirs back.
    assert_eq!(w.escrow("S3", stakes, now).await.unwrap(), Escrow::Taken);
    let strangers = win("a_cy", "a_dan");
    assert_eq!(
        w.settle("S3", &strangers, DAY, now).await.unwrap(),
        Settled {
            paid: 0,
            refunded: 400
        }
    );
    let held_one = w.escrow("S4", stakes, now).await.unwrap();
    assert_eq!(held_one, Escrow::Taken);
    let half = win("a_ann", "a_eve");
    assert_eq!(
        w.settle("S4", &half, DAY, now).await.unwrap(),
        Settled {
            paid: 100,
            refunded: 300
        },
        "the winner's own stake back, the unnamed loser refunded"
    );
    assert_eq!(balance(&*w, "a_ann").await, 1_000);
    assert_eq!(balance(&*w, "a_bob").await, 1_000);
    let t = conserved(&*w).await;
    assert_eq!(
        (t.escrow, t.granted),
        (0, 2_000),
        "cy, dan, eve never opened"
    );
}

async fn grants_count_once_per_key(kind: Kind) {
    let w = wallets(kind, WalletRules::default());
    w.grant("a_ann", 50, "k1").await.unwrap();
    w.grant("a_ann", 50, "k1").await.unwrap();
    w.grant("a_ann", 25, "k2").await.unwrap();
    assert_eq!(balance(&*w, "a_ann").await, 1_075);
    // A key is one grant, whoever it names; the account is opened.
    w.grant("a_bob", 50, "k1").await.unwrap();
    assert_eq!(balance(&*w, "a_bob").await, 1_000);
    let ann = w.wallet("a_ann").await.unwrap();
    let last = &ann.ledger[2];
    assert_eq!(
        (last.key.as_str(), last.kind.as_str(), last.amount),
        ("grant:k2", "grant", 25)
    );
    assert_eq!(
        conserved(&*w).await,
        Totals {
            balances: 2_075,
            escrow: 0,
            granted: 2_075,
        }
    );
}

async fn the_ledger_rolls_into_monthly_totals_per_kind(kind: Kind) {
    let rules = WalletRules {
        ledger_keep: 3,
        ..WalletRules::default()
    };
    let w = wallets(kind, rules);
    let months = [month_of(w.now())];
    let now = w.now();
    for i in 0..5 {
        w.grant("a_ann", 10 + i, &format!("g{i}")).await.unwrap();
    }
    for i in 0..3 {
        let id = format!("S{i}");
        let stakes = [("a_ann", 100), ("a_bob", 100)];
        assert_eq!(w.escrow(&id, stakes, now).await.unwrap(), Escrow::Taken);
        w.settle(&id, &win("a_ann", "a_bob"), DAY, now)
            .await
            .unwrap();
    }
    let ann = w.wallet("a_ann").await.unwrap();
    let recent: Vec<(&str, &str, i64)> = ann
        .ledger
        .iter()
        .map(|e| (e.key.as_str(), e.kind.as_str(), e.amount))
        .collect();
    assert_eq!(
        recent,
        [
            ("S1:settle", "payout", 200),
            ("S2:escrow", "escrow", -100),
            ("S2:settle", "payout", 200),
        ],
        "the latest three, oldest first"
    );
    let archived: i64 = ann.archived.iter().map(|p| p.amount).sum();
    let in_ledger: i64 = ann.ledger.iter().map(|e| e.amount).sum();
    assert_eq!(ann.balance, archived + in_ledger, "exact");
    assert_eq!(ann.balance, 1_000 + (10..15).sum::<i64>() + 300);
    if month_of(w.now()) == months[0] {
        // (Unless the test ran across the end of a month.)
        let by_kind: Vec<(&str, &str, u64, i64)> = ann
            .archived
            .iter()
            .map(|p| (p.period.as_str(), p.kind.as_str(), p.count, p.amount))
            .collect();
        let m = months[0].as_str();
        assert_eq!(
            by_kind,
            [
                (m, "escrow", 2, -200),
                (m, "grant", 6, 1_060),
                (m, "payout", 1, 200)
            ]
        );
    }
    let bob = w.wallet("a_bob").await.unwrap();
    assert_eq!(bob.ledger.len(), 3);
    let count: u64 = bob.archived.iter().map(|p| p.count).sum();
    assert_eq!(count, 1, "the initial grant");
    let archived: i64 = bob.archived.iter().map(|p| p.amount).sum();
    let in_ledger: i64 = bob.ledger.iter().map(|e| e.amount).sum();
    assert_eq!(bob.balance, archived + in_ledger);
    assert_eq!(bob.balance, 700);
    assert!(bob.ledger.iter().all(|e: &LedgerEntry| e.at >= now));
    conserved(&*w).await;
}

async fn late_escrows_are_refused_as_expired_and_settlements_never(kind: Kind) {
    let window = IdempotencyWindow { ms: 600_000 };
    let w = wallets(
        kind,
        WalletRules {
            window,
            ..WalletRules::default()
        },
    );
    let now = w.now();
    let stakes = [("a_ann", 100), ("a_bob", 100)];
    // Decided before 90% of the window: refused, nothing taken or opened.
    for decided in [1, now - 541_000] {
        match w.escrow("S1", stakes, decided).await {
            Err(StoreError::Expired(_)) => {}
            other => panic!("decided at {decided}: {other:?}"),
        }
    }
    assert_eq!(conserved(&*w).await, Totals::default());
    // Within it: taken, and taken again by its retry.
    let decided = now - 60_000;
    for _ in 0..2 {
        assert_eq!(
            w.escrow("S2", stakes, decided).await.unwrap(),
            Escrow::Taken
        );
    }
    // A settlement decided long ago is still applied (once).
    let long_ago = now - Duration::from_secs(86_400).as_millis() as u64;
    let ann_won = win("a_ann", "a_bob");
    assert_eq!(
        w.settle("S2", &ann_won, DAY, long_ago).await.unwrap().paid,
        200
    );
    assert_eq!(
        w.settle("S2", &win("a_ann", "a_bob"), DAY, long_ago)
            .await
            .unwrap(),
        Settled::default()
    );
    assert_eq!(balance(&*w, "a_ann").await, 1_100);
    let t = conserved(&*w).await;
    assert_eq!((t.escrow, t.granted), (0, 2_000));
}
