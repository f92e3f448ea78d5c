//! `bench-bots` in a tiny configuration (2 bot games, 1 s phases) against a real
//! `jumpgate` process with a 20 ms Executive, checking that every part counted
//! something. Nothing here asserts on time.

use jumpgate_loadtest::bots::{BotsConfig, run_bots};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_bots_bench_counts_everything() {
    let server = crate::jumpgate(&[("JUMPGATE_EXECUTIVE_MS", "20".into())]).await;

    let mut config = BotsConfig::new(2, 20.0, 2, 1.0).unwrap();
    config.warm_up_s = 2.0;
    let report = run_bots(&server.ws_url(), &config, "default".into(), "20 ms".into()).await;
    drop(server);

    assert!(report.failures.is_empty(), "{:?}", report.failures);
    for (name, phase) in [
        ("without bots", &report.without_bots),
        ("with bots", &report.with_bots),
    ] {
        let phase = phase.as_ref().expect(name);
        assert!(phase.ops > 0, "{name}: no round trips");
    }
    let solo = &report.solo;
    assert!(solo.running > 0, "no bot game started: {solo:?}");
    assert!(
        solo.human_moves > 0,
        "no human move in a bot game: {solo:?}"
    );
    assert!(solo.bot_moves > 0, "the computer never moved: {solo:?}");
    assert!(solo.move_ack_p50_us.is_some(), "{solo:?}");
    assert_eq!(report.figures.len(), 2);
    assert!(report.figures.iter().all(|f| f.ratio.is_some()));
    let table = report.table();
    assert!(table.contains("with 2 bot games"), "{table}");
    assert!(report.details().contains("bot games: "));
    serde_json::to_string(&report).unwrap();
}
