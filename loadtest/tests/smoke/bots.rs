//! Runs `bench-bots` in a tiny configuration (2 bot games, 1 s phases) against a real
//! Jumpgate server started in-process with a 20 ms Executive, and checks that every
//! part counted something. Nothing here asserts on time.

use std::time::Duration;

use jumpgate_loadtest::bots::{BotsConfig, run_bots};
use jumpgate_server::config::Settings;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_bots_bench_counts_everything() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut settings = Settings::for_address(addr);
    settings.limits = jumpgate_server::limits::LimitSettings::unlimited();
    settings.move_clock = Duration::from_secs(600);
    settings.executive_budget = Duration::from_millis(20);
    let (stop_server, stopped) = oneshot::channel::<()>();
    tokio::spawn(jumpgate_server::run(listener, settings, async {
        let _ = stopped.await;
    }));

    let mut config = BotsConfig::new(2, 20.0, 2, 1.0).unwrap();
    config.warm_up_s = 2.0;
    let report = run_bots(
        &format!("ws://{addr}/ws"),
        &config,
        "default".into(),
        "20 ms".into(),
    )
    .await;
    let _ = stop_server.send(());

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
