//! The load tester's smoke tests, one binary: a short run of each maintained
//! subcommand against real processes started by the shared harness (the
//! workspace's `jumpgate` binary, `redis-server`, a Redis Cluster, HAProxy).
//! They assert on what each run counted, never on time.

mod bench;
mod bench_cluster;
mod bots;
mod data_file;
mod dormant;
mod edge;
mod leaderboard;
mod ownership;
mod seated;

use jumpgate_harness::JumpgateProcess;

/// A `jumpgate serve` of the workspace's build with the tests' defaults (no
/// per-client limits, a shared token secret), moves that never time out, and
/// `env`.
pub async fn jumpgate(env: &[(&str, String)]) -> JumpgateProcess {
    let mut all = vec![("JUMPGATE_MOVE_CLOCK_MS", "600000".to_owned())];
    all.extend_from_slice(env);
    JumpgateProcess::start(&all).await
}
