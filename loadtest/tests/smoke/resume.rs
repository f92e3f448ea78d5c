//! `resume` in a tiny configuration: three lobbies opened through a seed server
//! in-process, copied in Redis to 40, and a second server in-process that must
//! resume all 40 and let a sample be retaken and watched. Structure only; the
//! lobby gauge is shared by every server in this process, so the lobbies play a
//! rule set no other smoke test plays.

use std::path::Path;
use std::time::Duration;

use jumpgate_loadtest::cluster::RedisServer;
use jumpgate_loadtest::resume::{await_resume, check, fill, open_templates, sample};
use jumpgate_protocol::RuleSet;
use jumpgate_server::config::Settings;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::time::Instant;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_resume_takes_every_copied_lobby_over() {
    let redis = RedisServer::start(Path::new("redis-server"), false, None)
        .await
        .unwrap();
    let settings_for = |addr, id: &str| {
        let mut settings = Settings::for_address(addr);
        settings.redis_url = Some(redis.url.clone());
        settings.limits = jumpgate_server::limits::LimitSettings::unlimited();
        settings.move_clock = Duration::from_secs(600);
        settings.instance_id = id.into();
        // Shared, so the seed's guest tokens hold on the resuming server.
        settings.token_secret = b"jumpgate-loadtest-smoke-resume-secret-0123456789".to_vec();
        settings
    };

    // The seed: opens the templates, then shuts down.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let seed_addr = listener.local_addr().unwrap();
    let (stop_seed, seed_stopped) = oneshot::channel::<()>();
    let seed = tokio::spawn(jumpgate_server::run(
        listener,
        settings_for(seed_addr, "smoke-seed"),
        async {
            let _ = seed_stopped.await;
        },
    ));
    let templates = open_templates(&format!("ws://{seed_addr}/ws"), 3, RuleSet::Thai)
        .await
        .unwrap();
    assert_eq!(templates.len(), 3);
    let _ = stop_seed.send(());
    seed.await.unwrap().unwrap();

    let (filled, stored) = fill(&redis.url, &templates, 40).await.unwrap();
    assert_eq!(filled.lobbies, 40);
    assert_eq!(filled.open_set, 40);
    assert_eq!(stored.len(), 40);
    assert!(filled.code_occurrences >= 1, "the record names its code");
    assert!(filled.redis_keys >= 40 * 3);
    for (i, t) in templates.iter().enumerate() {
        assert_eq!(stored[i].code, t.code);
    }
    // Copies spread over every template.
    for t in 0..3 {
        assert!(stored.iter().filter(|s| s.template == t).count() > 5);
    }

    // The resuming server.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let started = Instant::now();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(jumpgate_server::run(
        listener,
        settings_for(addr, "smoke-resumer"),
        async {
            let _ = stopped.await;
        },
    ));
    let resumed = await_resume(
        addr,
        None,
        started,
        40,
        RuleSet::Thai,
        Duration::from_secs(60),
        Duration::ZERO,
    )
    .await
    .unwrap();
    assert_eq!(resumed.lobbies_live, 40.0, "{resumed:?}");
    assert_eq!(resumed.rooms_left, 0.0);
    assert!(resumed.ready_seconds > 0.0);
    assert!(resumed.resume_seconds_metric >= 0.0);
    assert_eq!(resumed.rss_kib_at_ready, None);

    let picked = sample(&stored, 8);
    let checked = check(&format!("ws://{addr}/ws"), &templates, &picked).await;
    assert!(checked.failures.is_empty(), "{:?}", checked.failures);
    assert_eq!(
        (checked.lobbies, checked.seated, checked.watched),
        (8, 8, 8)
    );
    assert!(checked.join_p99_us >= checked.join_p50_us && checked.join_p50_us > 0);

    let _ = stop.send(());
    redis.stop().await;
}
