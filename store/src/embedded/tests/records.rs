//! Records: series won, streaks per rule set, head-to-head results and
//! draws, each series counted once, and late ones refused.

use super::{Kind, Under, on_both, open};
use crate::StoreError;
use crate::embedded::EmbeddedRecords;
use crate::idempotency::IdempotencyWindow;
use crate::records::{MemoryRecords, PlayerRecord, Records, SeriesRecord};

const WINDOW: IdempotencyWindow = IdempotencyWindow { ms: 600_000 };

fn records(kind: Kind) -> Under<dyn Records> {
    open::<dyn Records>(
        kind,
        || Box::new(MemoryRecords::new(WINDOW)),
        |db| Box::new(EmbeddedRecords::on(db, WINDOW)),
    )
}

fn series(id: &str, rules: &str, a: &str, b: &str, winner: Option<usize>, at: u64) -> SeriesRecord {
    SeriesRecord {
        series: id.into(),
        rule_set: rules.into(),
        players: [a.into(), b.into()],
        winner,
        decided: at,
    }
}

fn line(series_won: u32, streak: u32, best_streak: u32) -> PlayerRecord {
    PlayerRecord {
        series_won,
        streak,
        best_streak,
    }
}

on_both!(
    records_count_each_series_once,
    late_series_are_refused_and_count_nothing
);

async fn records_count_each_series_once(kind: Kind) {
    let r = records(kind);
    let now = r.now();
    let played = [
        series("S1", "russian", "a_ann", "a_bob", Some(0), now),
        series("S2", "russian", "a_ann", "a_bob", Some(1), now),
        series("S3", "russian", "a_bob", "a_ann", None, now),
        series("S4", "thai", "a_ann", "a_bob", Some(0), now),
        series("S5", "russian", "a_cy", "a_ann", Some(1), now),
        series("S6", "russian", "a_bob", "a_ann", Some(1), now),
        series("S7", "russian", "a_ann", "a_bob", None, 0),
    ];
    for s in &played {
        // However often it lands, a series counts once.
        r.record(s).await.unwrap();
        r.record(s).await.unwrap();
    }
    r.record(&series("S1", "russian", "a_bob", "a_ann", Some(0), now))
        .await
        .unwrap();
    // Won S1, S4, S5, S6; in russian: won, lost, drew, won, won, drew.
    assert_eq!(r.player("a_ann", "russian").await.unwrap(), line(4, 0, 2));
    assert_eq!(r.player("a_ann", "thai").await.unwrap(), line(4, 1, 1));
    assert_eq!(r.player("a_bob", "russian").await.unwrap(), line(1, 0, 1));
    assert_eq!(r.player("a_cy", "russian").await.unwrap(), line(0, 0, 0));
    assert_eq!(r.player("a_nobody", "thai").await.unwrap(), line(0, 0, 0));
    r.record(&series("S8", "russian", "a_ann", "a_cy", Some(0), now))
        .await
        .unwrap();
    assert_eq!(r.player("a_ann", "russian").await.unwrap(), line(5, 1, 2));
    assert_eq!(r.head_to_head("a_ann", "a_bob").await.unwrap(), (3, 1, 2));
    assert_eq!(r.head_to_head("a_bob", "a_ann").await.unwrap(), (1, 3, 2));
    assert_eq!(r.head_to_head("a_cy", "a_ann").await.unwrap(), (0, 2, 0));
    assert_eq!(r.head_to_head("a_bob", "a_cy").await.unwrap(), (0, 0, 0));
}

async fn late_series_are_refused_and_count_nothing(kind: Kind) {
    let r = records(kind);
    let now = r.now();
    for decided in [1, now - 541_000] {
        let late = series("S1", "russian", "a_ann", "a_bob", Some(0), decided);
        match r.record(&late).await {
            Err(StoreError::Expired(_)) => {}
            other => panic!("decided at {decided}: {other:?}"),
        }
    }
    assert_eq!(r.player("a_ann", "russian").await.unwrap(), line(0, 0, 0));
    assert_eq!(r.head_to_head("a_ann", "a_bob").await.unwrap(), (0, 0, 0));
    let in_time = series("S1", "russian", "a_ann", "a_bob", Some(0), now - 60_000);
    r.record(&in_time).await.unwrap();
    r.record(&in_time).await.unwrap();
    assert_eq!(r.player("a_ann", "russian").await.unwrap(), line(1, 1, 1));
}
