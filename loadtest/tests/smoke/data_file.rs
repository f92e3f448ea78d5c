//! The `data-file` measurement in a tiny configuration against the workspace's
//! `jumpgate`: every lobby left in play comes back after the kill, every game is
//! played to its end, and a clean stop folds the log into the file. Nothing here
//! asserts on time.

use jumpgate_loadtest::data_file::{DataFileArgs, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_data_file_brings_every_lobby_back_and_folds_the_log() {
    let dir = std::env::temp_dir().join(format!("jumpgate-smoke-data-file-{}", std::process::id()));
    let args = DataFileArgs {
        jumpgate: jumpgate_harness::jumpgate_binary(),
        games: 30,
        lobbies: 20,
        concurrency: 4,
        data_dir: Some(dir.clone()),
        server_cpus: None,
        out_json: None,
    };
    let report = run(&args).await;
    let _ = std::fs::remove_dir_all(&dir);
    let report = report.unwrap();
    assert_eq!(
        report.lobbies_live, 20.0,
        "every lobby left in play is back"
    );
    assert!(report.after_lobbies.data + report.after_lobbies.wal > 0);
    assert!(
        report.after_games.data + report.after_games.wal
            > report.after_lobbies.data + report.after_lobbies.wal,
        "the games took room in the file"
    );
    assert_eq!(report.after_stop.wal, 0, "a clean stop folds the log in");
    assert!(report.after_stop.data > 0);
    assert!(report.table().contains("30 games played to their end"));
}
